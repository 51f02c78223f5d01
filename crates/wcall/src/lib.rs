//! WCALL as a user-space governor (material section 7): the coordinator, the
//! socket programs join it through, who may join in which group, and launching
//! governed programs. The tables it shares with them are `oslab-wcall-table`; the
//! interposer itself is the cdylib crate `oslab-wcall-preload` (liboslab_wcall.so).

pub mod admission;
pub mod cgroups;
pub mod cli;
pub mod coordinator;
pub mod embedded;
pub mod facts;
pub mod family;
pub mod files;
pub mod guard;
pub mod launch;
pub mod listener;
pub mod monitor;
pub mod placer;
pub mod pusher;
pub mod quota;
pub mod reaper;
pub mod registry;
pub mod rendezvous;
pub mod roster;
pub mod serve;
pub mod service;
pub mod services;
pub mod slowproc;
#[cfg(test)]
mod testing;
pub mod trickle;
pub mod trust;
pub mod view;

/// The table shared with the interposer.
pub use oslab_wcall_table as shm;
pub use oslab_wcall_table::MAX_SILENCE_NS;
