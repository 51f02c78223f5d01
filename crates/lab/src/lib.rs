//! oslab's experiments: the families and the [`registry`] that lists them.
//!
//! The experiment families are the folders named after them (`cpu`, `mem`, `io`,
//! `sched`, `wb`, `sim`, and the pipeline's self-test `null`): in a family, each
//! folder is one experiment and `common` what its experiments share. An
//! experiment implements `oslab_harness::Experiment` (plan, measure, judge); the
//! harness (`oslab-harness`) runs it, records its raw data and assembles the
//! [`oslab_model::ExperimentResult`]. What families share, and what the commands
//! call, is in `oslab-services`; a family uses no other family (the house test
//! holds them to it), and the registry alone knows them all.
#![forbid(unsafe_code)]

pub mod cpu;
pub mod io;
pub mod mem;
pub mod null;
pub mod registry;
pub mod sched;
pub mod sim;
pub mod wb;

/// Typed settings (`Setting<Bytes>`, ...), in their own crate so the simulator
/// declares its keys the same way.
pub use oslab_settings as settings;

pub use registry::{Registry, UnknownId};
