//! The experiments and the harness that runs them.
//!
//! An experiment is mostly its idea: it implements [`Experiment`] and returns an
//! [`Output`]; the [`runner`] owns the environment snapshot, load and steal
//! recording, timing, statistics and assembling the [`oslab_model::ExperimentResult`].
#![forbid(unsafe_code)]

pub mod check;
pub mod cpu;
pub mod experiment;
pub mod harness;
pub mod io;
pub mod load;
pub mod mem;
pub mod null;
pub mod rawfile;
pub mod registry;
pub mod runner;
pub mod sampler;
pub mod sched;
pub mod scratch;
pub mod settings;
pub mod shape;
pub mod simrun;
pub mod wb;

pub use experiment::{
    Context, Experiment, LabError, Meta, Needs, NoProgress, Outcome, Output, Progress, RunConfig,
    finding, measurement,
};
pub use registry::{Registry, UnknownId};
