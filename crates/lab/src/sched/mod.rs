//! The scheduler (material section 6): time slices and nice shares, measured from
//! CPU-bound workers that record when they were off the CPU; turnaround and
//! throughput of N processes with equal work; what an SMT sibling adds.
//!
//! Shared: `analysis` (runs, turns and shares from the recorded gaps, the nice
//! weight table) and `probe` (the spinning workers and the /proc files read while
//! they run, through `oslab_sys::parse`).

pub mod analysis;
pub mod kernel_view;
pub mod nice;
pub mod probe;
pub mod scaling;
pub mod slices;
pub mod smt;
#[cfg(test)]
pub(crate) mod testenv;
