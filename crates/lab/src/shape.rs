//! The one shape of an experiment: plan, measure, judge.
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
//! The runner keeps the plan and the raw data as JSON ([`Recorded`]); the live run
//! is judged from that JSON too, so judging a saved raw file later (`oslab judge`)
//! gives exactly what the run printed.

use oslab_model::Environment;
use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::experiment::{Context, LabError, Meta, Output, RunConfig};
use crate::settings::{Choices, Declared, Kind, Setting};
use oslab_model::machine::MachineInfo;

/// What `measure` produced.
pub enum Measured<R> {
    Raw(R),
    /// It could not run here; nothing was measured.
    Skipped {
        reason: String,
    },
}

/// An experiment in the one shape.
pub trait Lab: Sync {
    type Plan: Serialize + DeserializeOwned;
    type Raw: Serialize + DeserializeOwned;
    fn meta(&self) -> &Meta;
    /// Settings `--set` may change.
    fn settings(&self) -> Declared {
        &[]
    }
    fn plan(&self, p: &mut Planner) -> Self::Plan;
    fn measure(
        &self,
        plan: &Self::Plan,
        ctx: &mut Context,
    ) -> Result<Measured<Self::Raw>, LabError>;
    fn judge(&self, plan: &Self::Plan, raw: &Self::Raw, env: &Environment) -> Output;
}

/// What `plan` may read: this experiment's settings, the mode, `--repeat`, the
/// machine. It records which settings were read.
pub struct Planner<'a> {
    experiment: &'static str,
    config: &'a RunConfig,
    pub machine: &'a MachineInfo,
    read: Vec<&'static str>,
}

impl<'a> Planner<'a> {
    pub fn new(experiment: &'static str, config: &'a RunConfig, machine: &'a MachineInfo) -> Self {
        Planner {
            experiment,
            config,
            machine,
            read: Vec::new(),
        }
    }

    pub fn quick(&self) -> bool {
        self.config.quick()
    }

    /// A declared setting: the `--set` value given for this experiment, else the
    /// default for the mode.
    pub fn get<K: Kind>(&mut self, setting: &'static Setting<K>) -> K::Value {
        self.read.push(setting.name);
        self.config
            .sets
            .get(&(self.experiment.to_string(), setting.name.to_string()))
            .and_then(|v| v.get::<K>().cloned())
            .unwrap_or_else(|| setting.default_for(self.quick()))
    }

    /// A [`Choices`] setting: the names chosen, all of them by default.
    pub fn choices(&mut self, setting: &'static Setting<Choices>) -> Vec<&'static str> {
        let v = self.get(setting);
        if v.is_empty() {
            setting.names.to_vec()
        } else {
            v
        }
    }

    /// The sample count: `--repeat` when given, else `quick` or `full`.
    pub fn samples(&self, quick: usize, full: usize) -> usize {
        self.config
            .repeat
            .unwrap_or(if self.quick() { quick } else { full })
            .max(1)
    }

    /// The names of the settings read so far.
    pub fn read(&self) -> &[&'static str] {
        &self.read
    }
}

/// A run's plan and raw data as JSON, as kept with `--save-raw`.
#[derive(Debug, Clone, PartialEq, Serialize, serde::Deserialize)]
pub struct Recorded {
    pub plan: serde_json::Value,
    /// Absent when the experiment was skipped.
    pub raw: Option<serde_json::Value>,
}

/// What the object-safe side needs of a shaped experiment.
pub trait Shaped: Sync {
    /// Plans and measures; the plan and raw data as JSON.
    fn plan_and_measure(&self, ctx: &mut Context) -> Result<(Recorded, Option<String>), LabError>;
    /// Judges recorded JSON.
    fn judge_recorded(&self, rec: &Recorded, env: &Environment) -> Result<Output, String>;
    /// The settings `plan` reads for this configuration (for the registry test).
    fn settings_read(&self, config: &RunConfig, machine: &MachineInfo) -> Vec<&'static str>;
}

impl<T: Lab> Shaped for T {
    fn plan_and_measure(&self, ctx: &mut Context) -> Result<(Recorded, Option<String>), LabError> {
        let plan = {
            let mut p = Planner::new(ctx.experiment, ctx.config, ctx.machine);
            self.plan(&mut p)
        };
        let plan_json = to_json(&plan)?;
        match self.measure(&plan, ctx)? {
            Measured::Raw(raw) => Ok((
                Recorded {
                    plan: plan_json,
                    raw: Some(to_json(&raw)?),
                },
                None,
            )),
            Measured::Skipped { reason } => Ok((
                Recorded {
                    plan: plan_json,
                    raw: None,
                },
                Some(reason),
            )),
        }
    }

    fn judge_recorded(&self, rec: &Recorded, env: &Environment) -> Result<Output, String> {
        let plan: T::Plan = serde_json::from_value(rec.plan.clone())
            .map_err(|e| format!("the plan of {} cannot be read: {e}", self.meta().id))?;
        let raw = rec
            .raw
            .as_ref()
            .ok_or_else(|| format!("{} measured nothing (it was skipped)", self.meta().id))?;
        let raw: T::Raw = serde_json::from_value(raw.clone())
            .map_err(|e| format!("the raw data of {} cannot be read: {e}", self.meta().id))?;
        Ok(self.judge(&plan, &raw, env))
    }

    fn settings_read(&self, config: &RunConfig, machine: &MachineInfo) -> Vec<&'static str> {
        let mut p = Planner::new(self.meta().id, config, machine);
        self.plan(&mut p);
        p.read
    }
}

fn to_json<S: Serialize>(v: &S) -> Result<serde_json::Value, LabError> {
    serde_json::to_value(v)
        .map_err(|e| LabError::Failed(format!("cannot record the raw data: {e}")))
}
