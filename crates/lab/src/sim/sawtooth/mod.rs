//! `sim.sawtooth` (`oslab sim validate --sawtooth`): the simulator against the
//! real kernel on one steady writer's Dirty sawtooth.
//!
//! What: the real wb.background and wb.periodic, then the simulator on the
//! settings each ran with; the errors of the simulated peak, trough and period of
//! Dirty against the real ones, and the two curves in one plot.
//!
//! Method: `measure` runs both experiments through the runner (as `oslab run`
//! does) and keeps their raw files; `judge` judges them as they were judged when
//! they ran, builds a simulator configuration from each one's parameters (its
//! rate, duration and limits, the machine's available memory as dirtyable) and
//! finds the simulated sawtooth with the same rules (`oslab_stats::sawtooth`).
//!
//! Pitfalls: the real curve includes every other program's dirty pages; the
//! simulated device is fast (1000 MiB/s), so it models the flusher's rules, not a
//! slow disk; troughs near zero are compared against the peak.
//!
//! References: wb.background and wb.periodic (their own references);
//! docs/sim-scenarios.md (the model).

mod claims;
mod judge;
mod measure;
#[cfg(test)]
mod tests;

use oslab_model::Environment;
use serde::{Deserialize, Serialize};

use oslab_harness::rawfile::RawFile;
use oslab_harness::{
    AnyExperiment, Context, Experiment, LabError, Measured, Meta, Needs, Output, Planner,
};

pub use judge::{beside_real, config_for_real};

/// sim.sawtooth, over the real experiments whose runs it simulates (wb.background
/// and wb.periodic, in that order): the registry hands them in, as a family uses
/// no other family.
pub struct SimSawtooth {
    real: [&'static dyn AnyExperiment; 2],
}

impl SimSawtooth {
    pub const fn over(
        background: &'static dyn AnyExperiment,
        periodic: &'static dyn AnyExperiment,
    ) -> Self {
        SimSawtooth {
            real: [background, periodic],
        }
    }
}

static META: Meta = Meta {
    id: "sim.sawtooth",
    title: "Simulator vs the real kernel: one writer's Dirty sawtooth",
    section: "4",
    summary: "runs wb.background and wb.periodic, simulates the same settings, reports the errors",
    needs: Needs {
        root: true,
        min_cpus: 1,
        free_disk_bytes: 0,
    },
    quick_s: 50.0,
    full_s: 120.0,
    internal: false,
    full_lab_only: false,
};

/// Nothing to choose: the real experiments plan themselves.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Plan {}

/// The real runs' raw files.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Raw {
    pub real: Vec<RawFile>,
}

impl Experiment for SimSawtooth {
    type Plan = Plan;
    type Raw = Raw;

    fn meta(&self) -> &Meta {
        &META
    }

    fn plan(&self, _: &mut Planner) -> Plan {
        Plan {}
    }

    fn measure(&self, _: &Plan, ctx: &mut Context) -> Result<Measured<Raw>, LabError> {
        Ok(Measured::Raw(measure::measure(&self.real, ctx)?))
    }

    fn judge(&self, _: &Plan, raw: &Raw, _: &Environment) -> Output {
        judge::judge(&self.real, raw)
    }
}
