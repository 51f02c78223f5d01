//! WCALL as a user-space governor (material section 7): the table shared with the
//! interposer, the coordinator, and launching governed programs. The interposer
//! itself is the cdylib crate `oslab-wcall-preload` (liboslab_wcall.so).

pub mod cgroups;
pub mod coordinator;
pub mod family;
pub mod files;
pub mod launch;
pub mod members;
pub mod monitor;
pub mod pusher;
pub mod service;
pub mod trust;
pub mod view;

/// The table shared with the interposer.
pub use oslab_wcall_table as shm;
pub use oslab_wcall_table::MAX_SILENCE_NS;
