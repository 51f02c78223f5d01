//! What the scheduler experiments share: `analysis` (runs, turns and shares from
//! the recorded gaps, the nice weight table), `probe` (the spinning workers and the
//! /proc files read while they run, through `oslab_sys::parse`), `kernel_view`
//! (the scheduler's own account of the workers, from its trace) and the unit
//! tests' synthetic workers (`testenv`).

pub mod analysis;
pub mod kernel_view;
pub mod probe;
#[cfg(test)]
pub mod testenv;
