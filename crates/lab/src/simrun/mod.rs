//! Simulator runs as oslab results: scenarios under several policies, sweeps, and
//! validation against the real kernel.

pub mod advise;
mod sawtooth;
mod scenario;
mod sweep;
pub mod testbed;

use oslab_wbsim::scenario::{Scenario, apply_set};
use oslab_wbsim::{Config, Policy};

use crate::experiment::{Experiment, LabError, Meta, Needs, Outcome};

pub use sawtooth::{config_for_real, validate};
pub use scenario::run_scenario;
pub use sweep::{SweepPoint, sweep};
pub use testbed::SimValidate;

/// A scenario dressed as an experiment, so results share the one model.
pub struct SimExperiment {
    meta: Meta,
    config: Config,
    policies: Vec<Policy>,
}

impl SimExperiment {
    pub fn new(s: &Scenario, config: Config, policies: Vec<Policy>) -> SimExperiment {
        let leak = |x: String| -> &'static str { Box::leak(x.into_boxed_str()) };
        SimExperiment {
            meta: Meta {
                id: leak(format!("sim.{}", s.name)),
                title: leak(s.title.clone()),
                section: "4, 7",
                summary: leak(s.description.clone()),
                needs: Needs::default(),
                quick_s: 0.1,
                full_s: 0.1,
                internal: false,
            },
            config,
            policies,
        }
    }
}

impl Experiment for SimExperiment {
    fn meta(&self) -> &Meta {
        &self.meta
    }

    fn run(&self, ctx: &mut crate::experiment::Context) -> Result<Outcome, LabError> {
        ctx.params.insert(
            "config".into(),
            serde_json::to_value(&self.config).unwrap_or_default(),
        );
        ctx.params.insert(
            "policies".into(),
            serde_json::json!(self.policies.iter().map(|p| p.name()).collect::<Vec<_>>()),
        );
        Ok(Outcome::Completed(run_scenario(
            &self.config,
            &self.policies,
            ctx.config.seed,
        )))
    }
}

/// `oslab sim validate --sawtooth`: the real wb.background and wb.periodic, then
/// the simulator on their settings.
pub struct SimSawtooth;

static VALIDATE_META: Meta = Meta {
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
};

impl Experiment for SimSawtooth {
    fn meta(&self) -> &Meta {
        &VALIDATE_META
    }

    fn run(&self, ctx: &mut crate::experiment::Context) -> Result<Outcome, LabError> {
        let mut real = Vec::new();
        for e in [
            &crate::wb::background::Background as &dyn Experiment,
            &crate::wb::periodic::Periodic,
        ] {
            ctx.progress.stage(e.meta().id);
            let r = crate::runner::run(e, ctx.config, ctx.machine, ctx.progress).result;
            if let oslab_model::Status::Failed { error } = &r.status {
                return Err(LabError::Failed(format!("{}: {error}", e.meta().id)));
            }
            real.push(r);
        }
        Ok(Outcome::Completed(validate(&real)))
    }
}

/// Latency figures of one writer.
#[derive(Debug, Clone, Copy, Default)]
pub struct LatencyStats {
    pub mean: f64,
    pub p50: f64,
    pub p90: f64,
    pub p99: f64,
    pub max: f64,
    pub over_200: usize,
    pub writes: usize,
}

pub fn latency_stats(lat: &[f64]) -> LatencyStats {
    let q = |p| oslab_stats::quantile(lat, p).unwrap_or(0.0);
    LatencyStats {
        mean: oslab_stats::mean(lat).unwrap_or(0.0),
        p50: q(0.5),
        p90: q(0.9),
        p99: q(0.99),
        max: q(1.0),
        over_200: lat.iter().filter(|l| **l > 200.0).count(),
        writes: lat.len(),
    }
}

/// Applies `--set` values to a scenario's configuration.
pub fn configure(s: &Scenario, sets: &[(String, String)]) -> Result<Config, String> {
    let mut c = s.config.clone();
    for (k, v) in sets {
        apply_set(&mut c, k, v)?;
    }
    Ok(c)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn latency_stats_by_hand() {
        let lat: Vec<f64> = (1..=100).map(|x| x as f64).chain([250.0, 300.0]).collect();
        let r = latency_stats(&lat);
        assert_eq!((r.max, r.over_200, r.writes), (300.0, 2, 102));
        assert!((r.mean - (5050.0 + 550.0) / 102.0).abs() < 1e-9);
    }
}
