//! wb.throttle beside the simulator: the same bulk writers on the same testbed
//! (its cap, its measured bandwidth, the limits), simulated blind from the
//! steady-state start; the pooled write() latency figures beside the measured
//! ones with the claim that the simulator predicts this machine, judged with the
//! stall targets (percentiles within 30 %, 1 ms below 3 ms; writes over 200 ms
//! within max(3, 30 %)).

use oslab_model::{Claim, Finding};
use oslab_wbsim::{Class, Kind, Policy, WriterCfg};

use super::{Plan, Raw};
use oslab_harness::check::{Check, Condition, Rule};
use oslab_harness::finding;
use oslab_services::cells::sim_config::{Seed, TestbedSpec, simulate_blind};
use oslab_services::write_latency::{LatencyStats, latency_stats};

const PREDICTS: Check = Check {
    id: "simulator-predicts-this-machine",
    tolerates: &oslab_harness::interference::TIMES,
    text: "The simulator predicts the throttled writers' write() latency from the workload's description alone",
    source: "docs/sim-scenarios.md (the model: mm/page-writeback.c)",
};

/// The simulated latencies of every writer of the run, pooled.
pub fn simulated(plan: &Plan, raw: &Raw, hz: u64) -> LatencyStats {
    let spec = TestbedSpec::without_page_costs(
        (raw.dirty_bytes, raw.dirty_background_bytes),
        plan.bandwidth,
        raw.testbed_measured_bytes_s,
        hz,
    );
    let writers = (0..plan.writers)
        .map(|i| WriterCfg {
            name: format!("writer{i}"),
            kind: Kind::Bulk {
                chunk: raw.chunk_bytes,
            },
            class: Class::Normal { nice: 0 },
            group: None,
            fsync_every: None,
            start_ms: 0.0,
            stop_ms: Some(plan.duration * 1e3),
        })
        .collect();
    let cfg = spec.config(Policy::Vanilla, writers, plan.duration, Seed::Blind, None);
    let out = simulate_blind(cfg);
    let all: Vec<f64> = out
        .writers
        .iter()
        .flat_map(|w| w.latency_ms.iter().copied())
        .collect();
    latency_stats(&all)
}

/// A percentile's target: within 30 %, or 1 ms where the real value is below 3 ms.
fn percentile_rule(real: f64) -> Rule {
    if real < 3.0 {
        Rule::WithinAbs {
            target: real,
            tol: 1.0,
        }
    } else {
        Rule::WithinRel {
            target: real,
            tol: 0.3,
        }
    }
}

/// The findings `model.*` and the claim, for measured figures `real`.
pub fn check(sim: &LatencyStats, real: &LatencyStats) -> (Vec<Finding>, Claim) {
    let over = |s: &LatencyStats| s.over_200 as f64;
    let rows = [
        ("p50_ms", "the simulated p50", "ms", real.p50, sim.p50),
        ("p90_ms", "the simulated p90", "ms", real.p90, sim.p90),
        ("p99_ms", "the simulated p99", "ms", real.p99, sim.p99),
    ];
    let mut findings = Vec::new();
    let mut conditions = Vec::new();
    for (key, subject, unit, r, s) in rows {
        findings.push(finding(
            &format!("model.{key}"),
            s,
            unit,
            format!("the simulator, blind; measured {r:.3} {unit}"),
        ));
        conditions.push(Condition::new(subject, unit, percentile_rule(r), s));
    }
    findings.push(finding(
        "model.writes_over_200ms",
        over(sim),
        "count",
        format!("the simulator, blind; measured {}", real.over_200),
    ));
    conditions.push(Condition::new(
        "the simulated writes over 200 ms",
        "",
        Rule::WithinAbs {
            target: over(real),
            tol: (0.3 * over(real)).max(3.0),
        },
        over(sim),
    ));
    let claim = PREDICTS.judge(&conditions, "", |o| {
        if o.holds() {
            "the model, given the writers, the testbed and the limits, lands within the stall targets".into()
        } else {
            "the model's throttling differs from the kernel's on this run (see docs/sim-scenarios.md: where the model is weakest)".into()
        }
    });
    (findings, claim)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stats(p50: f64, p90: f64, p99: f64, over_200: usize) -> LatencyStats {
        LatencyStats {
            p50,
            p90,
            p99,
            over_200,
            ..latency_stats(&[1.0])
        }
    }

    #[test]
    fn the_stall_targets_decide() {
        let real = stats(36.0, 40.0, 44.0, 0);
        let (f, near) = check(&stats(32.0, 44.0, 52.0, 2), &real);
        assert_eq!(near.verdict, oslab_model::Verdict::Holds, "{near:?}");
        assert_eq!(f.len(), 4);
        // a p99 twice the real one misses; a sub-3 ms p50 has a 1 ms allowance
        let (_, far) = check(&stats(36.0, 40.0, 88.0, 0), &real);
        assert_eq!(far.verdict, oslab_model::Verdict::Differs);
        let (_, fast) = check(&stats(2.2, 40.0, 44.0, 0), &stats(0.9, 40.0, 44.0, 0));
        assert_eq!(fast.verdict, oslab_model::Verdict::Differs);
    }
}
