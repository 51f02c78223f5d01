//! The experiments and the harness that runs them.
//!
//! An experiment is mostly its idea: it implements [`Experiment`] and returns an
//! [`Output`]; the [`runner`] owns the environment snapshot, load and steal
//! recording, timing, statistics and assembling the [`oslab_model::ExperimentResult`].
// Functions over 80 lines (clippy.toml) fail the lints outside tests (issue 28).
#![cfg_attr(not(test), warn(clippy::too_many_lines))]
#![forbid(unsafe_code)]

pub mod check;
pub mod cpu;
pub mod experiment;
pub mod harness;
pub mod io;
pub mod kernel_trace;
pub mod load;
pub mod mem;
pub mod null;
pub mod rawcheck;
pub mod rawfile;
pub mod registry;
pub mod runner;
pub mod sampler;
pub mod sched;
pub mod scratch;
pub mod shape;
pub mod simrun;
pub mod wb;

/// Typed settings (`Setting<Bytes>`, ...), in their own crate so the simulator
/// declares its keys the same way; every `crate::settings::...` path still works.
pub use oslab_settings as settings;

pub use experiment::{
    Context, Experiment, LabError, Meta, Needs, NoProgress, Outcome, Output, Progress, RunConfig,
    finding, measurement,
};
pub use registry::{Registry, UnknownId};
