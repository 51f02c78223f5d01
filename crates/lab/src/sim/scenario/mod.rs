//! `sim.SCENARIO` (`oslab sim run SCENARIO`): a scenario of the write-back
//! simulator under vanilla, wcall and wcall-fair, as an oslab result.
//!
//! What: every writer's simulated write() latency and throughput under each
//! policy, the paper's Fig. 4/5 (every write's latency), Fig. 6 (the mean latency
//! by writer and policy) redrawn, Dirty and Writeback apart and together, and whether WCALL removes
//! the high-priority writer's spikes that vanilla lets through.
//!
//! Method: `measure` runs the simulator (crates/wbsim) once per policy on the
//! scenario's configuration (after `--set`) and keeps each writer's writes and
//! the Dirty samples; `judge` summarises them. The simulation is deterministic,
//! so the "measurement" is the model's, not the machine's.
//!
//! Pitfalls: the figures describe the model, not this machine (the results are
//! not kept in the results database); how close the model comes to the kernel is
//! what sim.validate measures.
//!
//! References: docs/sim-scenarios.md (the scenarios and the model); the WCALL
//! paper (material section 7); mm/page-writeback.c.

mod claims;
mod judge;

pub use judge::{machine_description, setup_words};
mod measure;
mod memory;
#[cfg(test)]
mod tests;

use oslab_model::Environment;
use oslab_wbsim::outcome::Sample;
use oslab_wbsim::scenario::Scenario;
use oslab_wbsim::{Config, Policy, WriterResult};
use serde::{Deserialize, Serialize};

use oslab_harness::{Context, Experiment, LabError, Measured, Meta, Needs, Output, Planner};

/// A scenario dressed as an experiment, so results share the one model.
pub struct SimScenario {
    meta: Meta,
    config: Config,
    policies: Vec<Policy>,
    machine: String,
}

impl SimScenario {
    /// `machine` says what the configuration describes (a profile, the scenario's
    /// own machine), for the result.
    pub fn new(
        s: &Scenario,
        config: Config,
        policies: Vec<Policy>,
        machine: String,
    ) -> SimScenario {
        let leak = |x: String| -> &'static str { Box::leak(x.into_boxed_str()) };
        SimScenario {
            meta: Meta {
                id: leak(format!("sim.{}", s.name)),
                title: leak(s.title.clone()),
                section: "4, 7",
                summary: leak(s.description.clone()),
                needs: Needs::default(),
                quick_s: 0.1,
                full_s: 0.1,
                internal: false,
                full_lab_only: false,
            },
            config,
            policies,
            machine,
        }
    }
}

/// The configuration simulated and the policies it runs under.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Plan {
    pub config: Config,
    pub policies: Vec<Policy>,
    /// The machine the configuration describes, in words.
    #[serde(default)]
    pub machine: Option<String>,
}

/// What one policy's simulation gave.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SimulatedRun {
    pub policy: Policy,
    pub writers: Vec<WriterResult>,
    pub samples: Vec<Sample>,
    pub events: u64,
    /// The estimates the run started from and how they were found (absent in
    /// runs recorded before the steady-state start).
    #[serde(default)]
    pub start: Option<oslab_wbsim::outcome::StartRecord>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Raw {
    pub runs: Vec<SimulatedRun>,
}

impl Experiment for SimScenario {
    type Plan = Plan;
    type Raw = Raw;

    fn meta(&self) -> &Meta {
        &self.meta
    }

    fn plan(&self, _: &mut Planner) -> Plan {
        Plan {
            config: self.config.clone(),
            policies: self.policies.clone(),
            machine: Some(self.machine.clone()),
        }
    }

    fn measure(&self, plan: &Plan, _: &mut Context) -> Result<Measured<Raw>, LabError> {
        Ok(Measured::Raw(measure::measure(plan)))
    }

    fn judge(&self, plan: &Plan, raw: &Raw, env: &Environment) -> Output {
        judge::judge(plan, raw, env.seed)
    }
}
