//! The cells of a run by policy, scenario and run, and the governor's latency
//! target for one run: what the judging, the claims and the plots read.

use oslab_wbsim::policy::Policy;

use oslab_services::cells::record::{Cell, POLICIES, Scenario};
use oslab_services::write_latency::latency_stats;

/// The cells of a run, looked up by policy, scenario and run.
pub struct Matrix<'a> {
    pub cells: &'a [Cell],
    /// How many runs of the matrix were made.
    pub runs: usize,
}

impl<'a> Matrix<'a> {
    pub fn new(cells: &'a [Cell]) -> Matrix<'a> {
        Matrix {
            cells,
            runs: cells.iter().map(|c| c.run + 1).max().unwrap_or(0),
        }
    }

    pub fn of(&self, p: Policy, s: Scenario) -> impl Iterator<Item = &'a Cell> + '_ {
        self.cells
            .iter()
            .filter(move |c| c.policy == p && c.scenario == s)
    }

    pub fn has(&self, p: Policy, s: Scenario) -> bool {
        self.of(p, s).next().is_some()
    }

    pub fn cell(&self, p: Policy, s: Scenario, run: usize) -> Option<&'a Cell> {
        self.of(p, s).find(|c| c.run == run)
    }

    /// Every write() latency of the first writer, all runs pooled.
    pub fn pooled(&self, p: Policy, s: Scenario) -> Vec<f64> {
        self.of(p, s)
            .flat_map(|c| c.first().latency_ms.iter().copied())
            .collect()
    }

    /// The scenarios and the policies that ran, in the usual order.
    pub fn present(&self) -> (Vec<Scenario>, Vec<Policy>) {
        let scenarios = Scenario::ALL
            .into_iter()
            .filter(|s| self.cells.iter().any(|c| c.scenario == *s))
            .collect();
        let policies = POLICIES
            .into_iter()
            .filter(|p| self.cells.iter().any(|c| c.policy == *p))
            .collect();
        (scenarios, policies)
    }
}

/// The governor's targets for one run: with competitors the RT-55 writer's p99
/// within 2x of its p99 alone (vanilla) and no write over 200 ms.
pub fn meets_latency_target(alone_p99: f64, with: &[f64]) -> bool {
    let r = latency_stats(with);
    r.p99 <= 2.0 * alone_p99.max(0.001) && r.over_200 == 0
}
