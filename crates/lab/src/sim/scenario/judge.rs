//! The figures of each writer under each policy, the paper's figures redrawn,
//! and the claim.

use oslab_model::{Axis, Finding, Plot, Scale, Series, SeriesStyle};
use oslab_wbsim::Policy;
use oslab_wbsim::config::MIB;

use super::claims::protects_claim;
use super::memory;
use super::{Plan, Raw, SimulatedRun};
use oslab_harness::{Output, finding, measurement};
use oslab_services::write_latency::latency_stats;

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
fn latency_plot(p: Policy, out: &SimulatedRun) -> Plot {
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

/// The output of a scenario's runs (measurements, findings, the paper's figures
/// redrawn, claims).
pub fn judge(plan: &Plan, raw: &Raw, seed: u64) -> Output {
    let c = &plan.config;
    let runs = &raw.runs;
    let mut measurements = Vec::new();
    let mut findings: Vec<Finding> = Vec::new();
    let mut plots = Vec::new();
    let mut bars: Vec<Series> = Vec::new();
    let writer_names: Vec<String> = c.writers.iter().map(|w| w.name.clone()).collect();
    for out in runs {
        let p = out.policy;
        let mut per_policy_bars = Vec::new();
        for (i, w) in out.writers.iter().enumerate() {
            let (m, f, mean) = writer_figures(p, w, seed);
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
        findings.extend(memory::findings(out));
        if let Some(start) = &out.start {
            findings.push(start_finding(p, start));
        }
        plots.push(latency_plot(p, out));
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
    plots.extend(memory::plots(runs));
    let first = |p: Policy| {
        runs.iter()
            .find(|o| o.policy == p)
            .map(|o| latency_stats(&o.writers[0].latency_ms))
    };
    let mut claims = Vec::new();
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
        simulated: Some(
            plan.machine
                .clone()
                .unwrap_or_else(|| machine_description(c)),
        ),
    }
}

/// What the simulation knew of the machine: the scenario's own description.
pub fn machine_description(c: &oslab_wbsim::Config) -> String {
    format!("the scenario's machine ({})", setup_words(c))
}

/// The device, the writers, the tick rate and the kernel's rules of a
/// configuration, in words.
pub fn setup_words(c: &oslab_wbsim::Config) -> String {
    format!(
        "{} MiB/s {}, {} writers, HZ {}, {}",
        fmt_rate(c.device.bandwidth_bytes_s),
        match c.device.kind {
            oslab_wbsim::DeviceKind::Disk => "disk",
            oslab_wbsim::DeviceKind::Throttled => "throttled device",
        },
        c.writers.len(),
        c.hz,
        match (c.rules, c.kernel) {
            (oslab_wbsim::RuleSet::Linux2626, _) => "Linux 2.6.26's rules",
            (_, oslab_wbsim::config::Kernel::Since614) => "Linux 6.14+'s rules",
            (_, oslab_wbsim::config::Kernel::Before614) => "Linux 6.1-6.13's rules",
        }
    )
}

fn fmt_rate(bytes_s: f64) -> String {
    let m = bytes_s / MIB as f64;
    if (m - m.round()).abs() < 0.05 {
        format!("{:.0}", m)
    } else {
        format!("{m:.1}")
    }
}

/// Where the policy's run took the kernel's estimates from.
pub fn start_finding(p: Policy, s: &oslab_wbsim::outcome::StartRecord) -> Finding {
    let estimates = format!(
        "write bandwidth {} MiB/s, dirty_ratelimit {} MiB/s",
        fmt_rate(s.avg_write_bw),
        fmt_rate(s.dirty_ratelimit)
    );
    let detail = match s.start {
        oslab_wbsim::config::Start::Steady if s.settled => format!(
            "steady state of its writers (settled within {:.0} s of simulated warm-up): {estimates}",
            s.warm_up_s
        ),
        oslab_wbsim::config::Start::Steady => format!(
            "steady state of its writers, still moving after {:.0} s of simulated warm-up: {estimates}",
            s.warm_up_s
        ),
        oslab_wbsim::config::Start::Given => {
            format!(
                "from the estimates the scenario gives (--from-boot or start = \"given\"): {estimates}"
            )
        }
        oslab_wbsim::config::Start::Live => match s.steady_after_s {
            Some(t) => format!(
                "from this machine's live state (--live): {estimates}; under these writers the estimates settle within {t:.0} s"
            ),
            None => format!(
                "from this machine's live state (--live): {estimates}; under these writers the estimates are still moving after 200 s"
            ),
        },
    };
    finding(&format!("start.{}", p.name()), s.warm_up_s, "s", detail)
}
