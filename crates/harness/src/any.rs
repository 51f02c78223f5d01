//! [`AnyExperiment`]: an [`Experiment`] as the runner, the registry and the
//! commands hold it, whatever its plan and raw types. Every `Experiment` is one
//! (a blanket impl): its meta and settings are declared once, on `Experiment`.

use oslab_model::Environment;
use oslab_model::machine::MachineInfo;
use serde::Serialize;

use super::context::{Context, RunConfig};
use super::error::{LabError, Unreadable};
use super::experiment::{Experiment, Measured, Meta, Output};
use super::planner::Planner;
use oslab_settings::Declared;

/// A run's plan and raw data as JSON, as kept with `--save-raw`.
#[derive(Debug, Clone, PartialEq, Serialize, serde::Deserialize)]
pub struct Recorded {
    pub plan: serde_json::Value,
    /// Absent when the experiment was skipped.
    pub raw: Option<serde_json::Value>,
}

/// An experiment whose plan and raw data are JSON.
pub trait AnyExperiment: Sync {
    fn meta(&self) -> &Meta;
    /// Settings `--set` may change.
    fn settings(&self) -> Declared;
    /// The experiment's headline figure (see [`Experiment::headline`]).
    fn headline(&self) -> &'static str;
    /// Plans and measures; the plan and raw data as JSON, and why nothing was
    /// measured if it was skipped.
    fn plan_and_measure(&self, ctx: &mut Context) -> Result<(Recorded, Option<String>), LabError>;
    /// Judges recorded JSON.
    fn judge_recorded(&self, rec: &Recorded, env: &Environment) -> Result<Output, Unreadable>;
    /// The settings `plan` reads for this configuration (for the registry test).
    fn settings_read(&self, config: &RunConfig, machine: &MachineInfo) -> Vec<&'static str>;
}

impl<T: Experiment> AnyExperiment for T {
    fn meta(&self) -> &Meta {
        Experiment::meta(self)
    }

    fn settings(&self) -> Declared {
        Experiment::settings(self)
    }
    fn headline(&self) -> &'static str {
        Experiment::headline(self)
    }

    fn plan_and_measure(&self, ctx: &mut Context) -> Result<(Recorded, Option<String>), LabError> {
        let plan = {
            let mut p = Planner::new(ctx.experiment, ctx.config, ctx.machine);
            self.plan(&mut p)
        };
        let plan_json = to_json(&plan)?;
        Ok(match self.measure(&plan, ctx)? {
            Measured::Raw(raw) => (
                Recorded {
                    plan: plan_json,
                    raw: Some(to_json(&raw)?),
                },
                None,
            ),
            Measured::Skipped { reason } => (
                Recorded {
                    plan: plan_json,
                    raw: None,
                },
                Some(reason),
            ),
        })
    }

    fn judge_recorded(&self, rec: &Recorded, env: &Environment) -> Result<Output, Unreadable> {
        let id = Experiment::meta(self).id;
        let plan: T::Plan = serde_json::from_value(rec.plan.clone())
            .map_err(|source| Unreadable::Plan { id, source })?;
        let raw = rec.raw.as_ref().ok_or(Unreadable::NothingMeasured { id })?;
        let raw: T::Raw =
            serde_json::from_value(raw.clone()).map_err(|source| Unreadable::Raw { id, source })?;
        Ok(self.judge(&plan, &raw, env))
    }

    fn settings_read(&self, config: &RunConfig, machine: &MachineInfo) -> Vec<&'static str> {
        let mut p = Planner::new(Experiment::meta(self).id, config, machine);
        self.plan(&mut p);
        p.read().to_vec()
    }
}

fn to_json<S: Serialize>(v: &S) -> Result<serde_json::Value, LabError> {
    serde_json::to_value(v).map_err(LabError::Record)
}
