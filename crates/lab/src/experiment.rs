//! The experiment contract.

use std::path::PathBuf;

use oslab_model::{Claim, Finding, Measurement, Mode, Params, Plot};

use crate::settings::Declared;
use oslab_model::machine::MachineInfo;

/// What an experiment needs from the machine before it can run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Needs {
    pub root: bool,
    pub min_cpus: usize,
    /// Free space in the scratch directory, in bytes (full mode).
    pub free_disk_bytes: u64,
}

/// The fixed description of an experiment.
#[derive(Debug, Clone, Copy)]
pub struct Meta {
    /// The one id that names it everywhere: CLI, JSON, database.
    pub id: &'static str,
    pub title: &'static str,
    /// Material section it reproduces ("5"), or "-" for internal ones.
    pub section: &'static str,
    /// One line on what it shows.
    pub summary: &'static str,
    pub needs: Needs,
    /// Estimated wall time in seconds on a small machine.
    pub quick_s: f64,
    pub full_s: f64,
    /// Internal experiments (the null pipeline test) are left out of `all`.
    pub internal: bool,
}

/// `--set` values, parsed by the CLI against each experiment's declaration, keyed
/// by (experiment id, setting name).
pub type Sets = std::collections::BTreeMap<(String, String), crate::settings::SetValue>;

/// How the user asked for a run.
#[derive(Debug, Clone)]
pub struct RunConfig {
    pub mode: Mode,
    /// Samples per measurement, overriding the experiment's own count.
    pub repeat: Option<usize>,
    pub seed: u64,
    pub scratch_dir: PathBuf,
    pub sets: Sets,
}

impl RunConfig {
    pub fn quick(&self) -> bool {
        self.mode == Mode::Quick
    }
}

/// Reports progress of a long run; the binary draws it, tests ignore it.
pub trait Progress: Sync {
    /// A new stage began ("gettid").
    fn stage(&self, _message: &str) {}
    /// Share of this experiment done, 0..=1.
    fn fraction(&self, _done: f64) {}
}

/// A progress sink that shows nothing.
pub struct NoProgress;
impl Progress for NoProgress {}

/// What an experiment sees while it runs.
pub struct Context<'a> {
    /// The id of the experiment running.
    pub experiment: &'static str,
    pub config: &'a RunConfig,
    pub machine: &'a MachineInfo,
    pub progress: &'a dyn Progress,
    pub params: Params,
}

impl Context<'_> {
    /// Records a parameter value as run, and returns it.
    pub fn param<T: serde::Serialize>(&mut self, name: &str, value: T) -> T {
        self.params.insert(
            name.to_string(),
            serde_json::to_value(&value).unwrap_or(serde_json::Value::Null),
        );
        value
    }
}

/// Everything an experiment found.
#[derive(Debug, Clone, Default)]
pub struct Output {
    /// Parameters derived while judging (added to the plan's in the result).
    pub params: Params,
    pub measurements: Vec<Measurement>,
    pub findings: Vec<Finding>,
    pub claims: Vec<Claim>,
    pub plots: Vec<Plot>,
    pub notes: Vec<String>,
    /// sar records sampled during the run.
    pub system: Vec<oslab_model::system::SarRecord>,
}

/// A run either produced output or was skipped, with the reason.
#[derive(Debug, Clone)]
pub enum Outcome {
    Completed(Output),
    Skipped { reason: String },
}

#[derive(Debug, thiserror::Error)]
pub enum LabError {
    #[error(transparent)]
    Sys(#[from] oslab_sys::SysError),
    #[error("{0}")]
    Failed(String),
}

/// The one contract every experiment implements.
pub trait Experiment: Sync {
    fn meta(&self) -> &Meta;
    /// Settings `--set` may change.
    fn settings(&self) -> Declared {
        &[]
    }
    /// An experiment in the one shape (plan, measure, judge): the runner measures
    /// and judges it through this.
    fn shaped(&self) -> Option<&dyn crate::shape::Shaped> {
        None
    }
    /// The simulator's runs, which are not in the registry, measure and judge in
    /// one step.
    fn run(&self, _ctx: &mut Context) -> Result<Outcome, LabError> {
        Err(LabError::Failed(format!(
            "{} has no single-step run",
            self.meta().id
        )))
    }
}

/// Implements [`Experiment`] for a type in the one shape ([`crate::shape::Lab`]).
#[macro_export]
macro_rules! shaped_experiment {
    ($t:ty) => {
        impl $crate::experiment::Experiment for $t {
            fn meta(&self) -> &$crate::experiment::Meta {
                <$t as $crate::shape::Lab>::meta(self)
            }
            fn settings(&self) -> $crate::settings::Declared {
                <$t as $crate::shape::Lab>::settings(self)
            }
            fn shaped(&self) -> Option<&dyn $crate::shape::Shaped> {
                Some(self)
            }
        }
    };
}

/// A measurement with its summary computed (bootstrap seeded by `seed`).
pub fn measurement(
    name: &str,
    description: &str,
    unit: &str,
    samples: Vec<f64>,
    seed: u64,
    correction: Option<String>,
) -> Measurement {
    Measurement {
        name: name.into(),
        description: description.into(),
        unit: unit.into(),
        summary: oslab_stats::summarize(&samples, seed),
        samples,
        correction,
    }
}

/// A finding in one call.
pub fn finding(name: &str, value: f64, unit: &str, detail: impl Into<String>) -> Finding {
    Finding {
        name: name.into(),
        value,
        unit: unit.into(),
        detail: detail.into(),
    }
}
