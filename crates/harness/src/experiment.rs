//! The one contract every experiment implements: [`Experiment`], in three steps.
//!
//! - `plan` reads the experiment's settings (and the machine, for defaults that
//!   depend on it) into a serialisable plan: what will be measured. Pure: the
//!   registry test calls it for every experiment to check that each declared
//!   setting is read and nothing undeclared is.
//! - `measure` only measures: it returns a serialisable `Raw` holding every raw
//!   sample and every fact read from the system during the run, nothing derived.
//! - `judge` is pure and deterministic: from the plan, the raw data and the
//!   environment it derives the summaries, findings, claims, plots and notes.
//!
//! The runner keeps the plan and the raw data as JSON ([`super::Recorded`]); the
//! live run is judged from that JSON too, so judging a saved raw file later
//! (`oslab judge`) gives exactly what the run printed. It reaches every experiment
//! through [`super::AnyExperiment`], which each `Experiment` is without writing
//! anything more.

use oslab_model::{Claim, Environment, Finding, Measurement, Params, Plot};
use serde::Serialize;
use serde::de::DeserializeOwned;

use super::context::Context;
use super::error::LabError;
use super::planner::Planner;
use oslab_settings::Declared;

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
    /// Left out of a quick run of `all` or of its family (wb.database: minutes of
    /// a real database); it runs when named, and in the full lab.
    pub full_lab_only: bool,
}

/// What `measure` produced.
pub enum Measured<R> {
    Raw(R),
    /// It could not run here; nothing was measured.
    Skipped {
        reason: String,
    },
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
    /// A simulation's: the machine description it ran on.
    pub simulated: Option<String>,
}

/// An experiment: its description, its settings, and plan, measure, judge.
pub trait Experiment: Sync {
    type Plan: Serialize + DeserializeOwned;
    type Raw: Serialize + DeserializeOwned;
    fn meta(&self) -> &Meta;
    /// Settings `--set` may change.
    fn settings(&self) -> Declared {
        &[]
    }
    /// The figure that stands for the experiment in `oslab history` and is held
    /// against this machine's history after a run: a measurement's or a
    /// finding's name ("": the first measurement).
    fn headline(&self) -> &'static str {
        ""
    }
    fn plan(&self, p: &mut Planner) -> Self::Plan;
    fn measure(
        &self,
        plan: &Self::Plan,
        ctx: &mut Context,
    ) -> Result<Measured<Self::Raw>, LabError>;
    fn judge(&self, plan: &Self::Plan, raw: &Self::Raw, env: &Environment) -> Output;
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
        range: None,
    }
}
