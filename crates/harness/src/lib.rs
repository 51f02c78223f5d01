//! What runs the experiments: the contract ([`Experiment`], seen by the runner as
//! [`AnyExperiment`]), the runner and the raw files it keeps, and what
//! experiments use while they run: scratch folders, load accounting, the
//! kernel's trace, the /proc sampler, and claims judged by typed checks.
//!
//! The harness knows no experiment and no service: `oslab-services` and the
//! experiments (`oslab-lab`) build on it, never the other way (the house test
//! holds the crates to it).
#![forbid(unsafe_code)]

pub mod any;
pub mod check;
pub mod context;
pub mod error;
pub mod experiment;
pub mod interference;
pub mod kernel_trace;
pub mod load;
pub mod planner;
pub mod rawcheck;
pub mod rawfile;
pub mod runner;
pub mod sampler;
pub mod scratch;
pub mod sets;
#[cfg(any(test, feature = "testing"))]
pub mod testing;

pub use any::{AnyExperiment, Recorded};
pub use context::{Context, NoProgress, Progress, RunConfig, Sets};
pub use error::{LabError, Unreadable};
pub use experiment::{Experiment, Measured, Meta, Needs, Output, finding, measurement};
pub use planner::Planner;
