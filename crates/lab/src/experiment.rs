//! The experiment contract.

use std::path::PathBuf;

use oslab_model::{Claim, Finding, Measurement, Mode, Params, Plot};
use oslab_sys::machine::MachineInfo;

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

/// How the user asked for a run.
#[derive(Debug, Clone)]
pub struct RunConfig {
    pub mode: Mode,
    /// Samples per measurement, overriding the experiment's own count.
    pub repeat: Option<usize>,
    pub seed: u64,
    pub scratch_dir: PathBuf,
    /// `--set NAME=VALUE` values, checked against the experiments' settings.
    pub sets: std::collections::BTreeMap<String, String>,
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
    pub config: &'a RunConfig,
    pub machine: &'a MachineInfo,
    pub progress: &'a dyn Progress,
    pub params: Params,
}

impl Context<'_> {
    /// Records a parameter value as run, and returns it.
    pub fn param<T: serde::Serialize + Copy>(&mut self, name: &str, value: T) -> T {
        self.params.insert(
            name.to_string(),
            serde_json::to_value(value).unwrap_or(serde_json::Value::Null),
        );
        value
    }

    fn set_value(&self, name: &str, kind: crate::settings::Kind) -> Option<crate::settings::Value> {
        let text = self.config.sets.get(name)?;
        crate::settings::parse(name, kind, text).ok()
    }

    /// A size setting: `--set NAME=...` or the default for the mode.
    pub fn bytes(&mut self, name: &str, quick: u64, full: u64) -> u64 {
        let v = match self.set_value(name, crate::settings::Kind::Bytes) {
            Some(crate::settings::Value::Bytes(b)) => b,
            _ if self.config.quick() => quick,
            _ => full,
        };
        self.param(name, v)
    }

    /// A file-name setting, if given.
    pub fn path(&mut self, name: &str) -> Option<std::path::PathBuf> {
        self.set_value(name, crate::settings::Kind::Path)?;
        let p = std::path::PathBuf::from(self.config.sets.get(name)?.trim());
        self.params.insert(
            name.to_string(),
            serde_json::Value::String(p.display().to_string()),
        );
        Some(p)
    }

    /// A subset of `names` (`--set NAME=a,b`), all of them by default, in the order
    /// of `names`.
    pub fn choices(&mut self, name: &str, names: &'static [&'static str]) -> Vec<&'static str> {
        let v = match self.set_value(name, crate::settings::Kind::Choices(names)) {
            Some(_) => crate::settings::chosen(&self.config.sets[name], names),
            None => names.to_vec(),
        };
        self.params.insert(name.to_string(), serde_json::json!(v));
        v
    }

    /// A whole-number setting.
    pub fn count(&mut self, name: &str, quick: u64, full: u64) -> u64 {
        let v = match self.set_value(name, crate::settings::Kind::Count) {
            Some(crate::settings::Value::Count(n)) => n,
            _ if self.config.quick() => quick,
            _ => full,
        };
        self.param(name, v)
    }

    /// A yes/no setting.
    pub fn flag(&mut self, name: &str, default: bool) -> bool {
        let v = match self.set_value(name, crate::settings::Kind::Bool) {
            Some(crate::settings::Value::Bool(b)) => b,
            _ => default,
        };
        self.param(name, v)
    }

    /// A seconds setting.
    pub fn seconds(&mut self, name: &str, quick: f64, full: f64) -> f64 {
        let v = match self.set_value(name, crate::settings::Kind::Seconds) {
            Some(crate::settings::Value::Seconds(s)) => s,
            _ if self.config.quick() => quick,
            _ => full,
        };
        self.param(name, v)
    }

    /// The sample count: `--repeat` when given, else `quick` or `full`.
    pub fn samples(&mut self, quick: usize, full: usize) -> usize {
        let n = self
            .config
            .repeat
            .unwrap_or(if self.config.quick() { quick } else { full });
        self.param("samples", n.max(1))
    }
}

/// Everything an experiment found.
#[derive(Debug, Clone, Default)]
pub struct Output {
    pub measurements: Vec<Measurement>,
    pub findings: Vec<Finding>,
    pub claims: Vec<Claim>,
    pub plots: Vec<Plot>,
    pub notes: Vec<String>,
    /// sar records sampled during the run.
    pub system: Vec<oslab_sys::sar::SarRecord>,
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
    fn settings(&self) -> &'static [crate::settings::Setting] {
        &[]
    }
    fn run(&self, ctx: &mut Context) -> Result<Outcome, LabError>;
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
