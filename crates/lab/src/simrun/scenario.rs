//! A scenario run under several policies, as an experiment's output.

use oslab_model::{Axis, Claim, Finding, Plot, Scale, Series, SeriesStyle};
use oslab_wbsim::config::MIB;
use oslab_wbsim::{Config, Outcome as SimOutcome, Policy, simulate};

use super::{LatencyStats, latency_stats};
use crate::check::{Check, Condition, Rule};
use crate::experiment::{Output, finding, measurement};

const PROTECTS: Check = Check {
    id: "wcall-protects-high-priority",
    text: "With lower-priority writers competing, vanilla lets the high-priority writer's write() exceed 200 ms; WCALL largely removes those spikes",
    source: "material 7 (seed 004, Fig. 2, 4, 5)",
};

/// Vanilla stalls the first writer past 200 ms; wcall at least halves such writes
/// ("largely removes": a drop from 66 to 54 is not that).
fn protects_claim(writer: &str, v: &LatencyStats, w: &LatencyStats) -> Claim {
    let left = if v.over_200 > 0 {
        w.over_200 as f64 / v.over_200 as f64 * 100.0
    } else {
        0.0
    };
    PROTECTS.judge(
        &[
            Condition::new(
                format!("{writer}'s writes over 200 ms under vanilla"),
                "",
                Rule::Above(0.0),
                v.over_200 as f64,
            ),
            Condition::new(
                format!("{writer}'s writes over 200 ms under wcall, as a share of vanilla's"),
                "%",
                Rule::AtMost(50.0),
                left,
            ),
        ],
        &format!("p99 vanilla {:.0} ms, wcall {:.0} ms", v.p99, w.p99),
        |o| {
            if o.holds() {
                "in the simulation the group shares held the competitors back".into()
            } else if o.failed(0) {
                "vanilla shows no spike in this scenario, so there is nothing to remove".into()
            } else {
                "WCALL's shares follow dirty pages, so a group that has few dirty pages gets little room; see wcall-fair".into()
            }
        },
    )
}

/// One simulated writer's latencies, its figures, and its mean latency.
fn writer_figures(
    p: Policy,
    w: &oslab_wbsim::WriterResult,
    seed: u64,
) -> (oslab_model::Measurement, Vec<Finding>, f64) {
    let st = latency_stats(&w.latency_ms);
    let key = format!("{}.{}", p.name(), w.name);
    let m = measurement(
        &format!("latency.{key}"),
        &format!("simulated write() latency of {} ({})", w.name, w.group),
        "ms",
        w.latency_ms.clone(),
        seed,
        None,
    );
    let dur = w.issue_s.last().copied().unwrap_or(0.0).max(1e-9);
    let mut f = vec![
        finding(
            &format!("p99_ms.{key}"),
            st.p99,
            "ms",
            format!(
                "mean {:.1}, p50 {:.1}, p90 {:.1}, max {:.1} ms",
                st.mean, st.p50, st.p90, st.max
            ),
        ),
        finding(
            &format!("over_200ms.{key}"),
            st.over_200 as f64,
            "count",
            format!("of {} writes", st.writes),
        ),
        finding(
            &format!("throughput.{key}"),
            w.bytes as f64 / MIB as f64 / dur,
            "MiB/s",
            format!("{} group", w.group),
        ),
    ];
    if w.policy_wait_ms > 0.0 {
        f.push(finding(
            &format!("held_ms.{key}"),
            w.policy_wait_ms,
            "ms",
            "time held back by the policy",
        ));
    }
    (m, f, st.mean)
}

/// Every write's latency under one policy (the paper's Fig. 4/5).
fn latency_plot(p: Policy, out: &SimOutcome) -> Plot {
    Plot {
        id: format!("latency-{}", p.name()),
        title: format!(
            "write() latency per write, {} (the paper's Fig. 4/5)",
            p.name()
        ),
        x: Axis::new("write", "", Scale::Linear),
        y: Axis::new("latency", "ms", Scale::Linear),
        series: out
            .writers
            .iter()
            .map(|w| Series {
                name: w.name.clone(),
                style: SeriesStyle::Line,
                points: w
                    .latency_ms
                    .iter()
                    .enumerate()
                    .map(|(i, l)| [i as f64, *l])
                    .collect(),
            })
            .collect(),
        markers: vec![],
        x_labels: vec![],
    }
}

/// Runs a scenario under each policy and builds the output (measurements,
/// findings, the paper's figures redrawn, claims).
pub fn run_scenario(c: &Config, policies: &[Policy], seed: u64) -> Output {
    let runs: Vec<(Policy, SimOutcome)> = policies
        .iter()
        .map(|p| {
            let mut c = c.clone();
            c.policy = *p;
            (*p, simulate(&c))
        })
        .collect();
    let mut measurements = Vec::new();
    let mut findings: Vec<Finding> = Vec::new();
    let mut plots = Vec::new();
    let mut bars: Vec<Series> = Vec::new();
    let writer_names: Vec<String> = c.writers.iter().map(|w| w.name.clone()).collect();
    for (p, out) in &runs {
        let mut per_policy_bars = Vec::new();
        for (i, w) in out.writers.iter().enumerate() {
            let (m, f, mean) = writer_figures(*p, w, seed);
            measurements.push(m);
            findings.extend(f);
            per_policy_bars.push([i as f64, mean]);
        }
        bars.push(Series {
            name: p.name().into(),
            style: SeriesStyle::Bars,
            points: per_policy_bars,
        });
        findings.push(finding(
            &format!("events.{}", p.name()),
            out.events as f64,
            "events",
            "simulated events",
        ));
        plots.push(latency_plot(*p, out));
    }
    plots.push(Plot {
        id: "average".into(),
        title: "Average write() latency by writer and policy (the paper's Fig. 6)".into(),
        x: Axis::new("", "", Scale::Linear),
        y: Axis::new("mean latency", "ms", Scale::Linear),
        series: bars,
        markers: vec![],
        x_labels: writer_names.clone(),
    });
    plots.push(Plot {
        id: "dirty".into(),
        title: "Dirty + Writeback in the simulation".into(),
        x: Axis::new("time", "s", Scale::Linear),
        y: Axis::new("memory", "MiB", Scale::Linear),
        series: runs
            .iter()
            .map(|(p, o)| Series {
                name: p.name().into(),
                style: SeriesStyle::Line,
                points: o
                    .samples
                    .iter()
                    .map(|s| [s.t_s, (s.dirty + s.writeback) as f64 / MIB as f64])
                    .collect(),
            })
            .collect(),
        markers: vec![],
        x_labels: vec![],
    });
    let mut claims = Vec::new();
    let first = |p: Policy| {
        runs.iter()
            .find(|(q, _)| *q == p)
            .map(|(_, o)| latency_stats(&o.writers[0].latency_ms))
    };
    if c.writers.len() > 1
        && let (Some(v), Some(w)) = (first(Policy::Vanilla), first(Policy::Wcall))
    {
        claims.push(protects_claim(&writer_names[0], &v, &w));
    }
    Output {
        params: Default::default(),
        measurements,
        findings,
        claims,
        plots,
        notes: vec![format!(
            "simulated {} s with {:?} rules, {} MiB/s device, {} writers",
            c.duration_s,
            c.rules,
            c.device.bandwidth_bytes_s / MIB as f64,
            c.writers.len()
        )],
        system: Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use oslab_model::Verdict;

    /// 700 writes of 10 ms, `slow` of them 250 ms.
    fn stats(slow: usize) -> LatencyStats {
        let lat: Vec<f64> = (0..700)
            .map(|i| if i < slow { 250.0 } else { 10.0 })
            .collect();
        latency_stats(&lat)
    }

    #[test]
    fn wcall_must_at_least_halve_the_spikes_to_largely_remove_them() {
        // 66 -> 54, what the testbed-fig2 scenario gives: not "largely"
        assert_eq!(
            protects_claim("rt55", &stats(66), &stats(54)).verdict,
            Verdict::Differs
        );
        assert_eq!(
            protects_claim("rt55", &stats(66), &stats(33)).verdict,
            Verdict::Holds
        );
        assert_eq!(
            protects_claim("rt55", &stats(66), &stats(0)).verdict,
            Verdict::Holds
        );
        // no spike under vanilla: nothing to remove
        let c = protects_claim("rt55", &stats(0), &stats(0));
        assert_eq!(c.verdict, Verdict::Differs);
        assert!(c.why.contains("nothing to remove"), "{}", c.why);
    }
}
