//! oslab's experiments, and the harness that runs them and the services the
//! commands call.
//!
//! The experiment families are the folders named after them (`cpu`, `mem`, `io`,
//! `sched`, `wb`, `sim`, and the pipeline's self-test `null`): in a family, each
//! folder is one experiment and `common` what its experiments share. An
//! experiment implements [`Experiment`] (plan, measure, judge); the [`harness`]
//! runs it, records its raw data and assembles the
//! [`oslab_model::ExperimentResult`]; the [`registry`] lists every experiment.
//! [`services`] are what the commands call
//! (`oslab dirty`, `oslab testbed`, `oslab sim advise|sweep`, the writers of
//! `oslab wcall`) and what experiments of several families share (the slow
//! device and the writer cells run on it).
#![forbid(unsafe_code)]

pub mod cpu;
pub mod harness;
pub mod io;
pub mod mem;
pub mod null;
pub mod registry;
pub mod sched;
pub mod services;
pub mod sim;
pub mod wb;

/// Typed settings (`Setting<Bytes>`, ...), in their own crate so the simulator
/// declares its keys the same way.
pub use oslab_settings as settings;

pub use harness::{
    AnyExperiment, Context, Experiment, LabError, Meta, Needs, NoProgress, Output, Progress,
    RunConfig, Sets,
};
pub use registry::{Registry, UnknownId};
