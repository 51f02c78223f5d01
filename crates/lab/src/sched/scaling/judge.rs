//! Judging the scaling rounds: real, user and sys per N, throughput, and the claim
//! that past the CPU count only turnaround grows.

use oslab_model::{Axis, Claim, Environment, Finding, Plot, Scale, Series, SeriesStyle};

use super::{Plan, Raw, Round};
use oslab_harness::check::{Check, Condition, Outcome, Rule};
use oslab_harness::{Output, finding};

/// One CPU: mean real within this share of N x alone.
const ONE_CPU_TOLERANCE: f64 = 0.35;
/// All CPUs: up to the CPU count, mean real below this many times alone.
const FLAT_FACTOR: f64 = 1.35;
/// All CPUs: throughput at the largest N above this share of that at the CPU count.
const THROUGHPUT_KEPT: f64 = 0.7;

const PAST_THE_CPUS: Check = Check {
    id: "past-the-cpus-only-turnaround-grows",
    tolerates: &oslab_harness::interference::CPU_SHARES,
    text: "On one CPU real time grows as N x alone; on all CPUs it stays flat up to the CPU count, and past it only turnaround grows while throughput stays",
    source: "S. Takeuchi, \"Linux no Shikumi\", ch. \"Process scheduler\" (multiload and the scaling curves)",
};

/// One N's outcome: mean and max turnaround (s), mean user and sys (s), throughput.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Point {
    pub n: usize,
    pub real_mean: f64,
    pub real_max: f64,
    pub user_mean: f64,
    pub sys_mean: f64,
    pub throughput: f64,
}

pub fn point(n: usize, go_to_end: &[f64], user: &[f64], sys: &[f64]) -> Point {
    let mean = |v: &[f64]| oslab_stats::mean(v).unwrap_or(f64::NAN);
    let max = go_to_end.iter().copied().fold(0.0, f64::max);
    Point {
        n,
        real_mean: mean(go_to_end),
        real_max: max,
        user_mean: mean(user),
        sys_mean: mean(sys),
        throughput: if max > 0.0 { n as f64 / max } else { f64::NAN },
    }
}

/// Each process's real (from the first start), user and sys time, s.
fn times(r: &Round) -> (Vec<f64>, Vec<f64>, Vec<f64>) {
    let go = r.workers.iter().map(|x| x.start_ns).min().unwrap_or(0);
    let s = |ns: u64| ns as f64 / 1e9;
    (
        r.workers.iter().map(|x| s(x.end_ns - go)).collect(),
        r.workers.iter().map(|x| s(x.user_ns)).collect(),
        r.workers.iter().map(|x| s(x.sys_ns)).collect(),
    )
}

/// The share of all CPUs' time the host stole during `rounds`.
fn steal(rounds: &[&Round]) -> Option<f64> {
    let (mut stolen, mut total) = (0u64, 0u64);
    for r in rounds {
        let d = r.stat_after.as_ref()?.since(r.stat_before.as_ref()?);
        stolen += d.steal;
        total += d.total();
    }
    (total > 0).then(|| stolen as f64 / total as f64)
}

pub fn judge(multiload: bool, plan: &Plan, raw: &Raw, env: &Environment) -> Output {
    let mut out = Output::default();
    let mut curves: Vec<(&str, Vec<Point>)> = Vec::new();
    for (label, key, rounds) in [
        ("one CPU", "one_cpu", &raw.one_cpu),
        ("all CPUs", "all_cpus", &raw.all_cpus),
    ] {
        let mut pts = Vec::new();
        for r in rounds {
            let (real, user, sys) = times(r);
            let p = point(r.n, &real, &user, &sys);
            if multiload {
                out.findings
                    .extend(process_findings(key, r.n, &real, &user, &sys));
            }
            out.findings.push(finding(
                &format!("{key}.n{}", r.n),
                p.real_mean,
                "s",
                format!(
                    "real mean {:.3} s, max {:.3} s; user {:.3} s, sys {:.3} s per process; throughput {:.2} processes/s",
                    p.real_mean, p.real_max, p.user_mean, p.sys_mean, p.throughput
                ),
            ));
            pts.push(p);
        }
        curves.push((label, pts));
    }
    out.claims
        .push(claim(plan, raw, &curves[0].1, &curves[1].1, env));
    out.plots = plots(&curves);
    out.notes.push(format!(
        "each process does {} s of its own run time (gaps over {} us are not counted as work); real is from the common start to its end",
        plan.work,
        plan.gap_ns / 1000
    ));
    out.params
        .insert("cpu0".into(), serde_json::json!(raw.cpu0));
    out
}

fn process_findings(key: &str, n: usize, real: &[f64], user: &[f64], sys: &[f64]) -> Vec<Finding> {
    real.iter()
        .zip(user)
        .zip(sys)
        .enumerate()
        .map(|(i, ((r, u), y))| {
            finding(
                &format!("{key}.n{n}.p{}", i + 1),
                *r,
                "s",
                format!(
                    "process {} of {n}: real {r:.3} s, user {u:.3} s, sys {y:.3} s",
                    i + 1
                ),
            )
        })
        .collect()
}

fn claim(plan: &Plan, raw: &Raw, one: &[Point], all: &[Point], env: &Environment) -> Claim {
    let cpus = plan.cpus;
    let fig = |v: f64| v.is_finite().then_some(v);
    let alone = one.iter().find(|p| p.n == 1).and_then(|p| fig(p.real_mean));
    let all_alone = all.iter().find(|p| p.n == 1).and_then(|p| fig(p.real_mean));
    let at_cpus = all
        .iter()
        .find(|p| p.n == cpus)
        .and_then(|p| fig(p.throughput));
    let (Some(alone), Some(all_alone), Some(at_cpus)) = (alone, all_alone, at_cpus) else {
        return PAST_THE_CPUS.not_judged(
            "one CPU: mean real within 35 % of N x alone; all CPUs: mean real below 1.35x alone up to the CPU count, throughput at the largest N above 70 % of that at the CPU count",
            format!("a reference is missing: no process finished alone on one CPU or on all, or none at N={cpus}"),
        );
    };
    let mut c = Vec::new();
    for p in one.iter().filter(|p| p.n > 1) {
        c.push(Condition::from_option(
            format!("one CPU, N={}: mean real", p.n),
            "s",
            Rule::WithinRel {
                target: alone * p.n as f64,
                tol: ONE_CPU_TOLERANCE,
            },
            fig(p.real_mean),
            format!("no process finished at N={} on one CPU", p.n),
        ));
    }
    for p in all.iter().filter(|p| p.n > 1 && p.n <= cpus) {
        c.push(Condition::from_option(
            format!("all CPUs, N={}: mean real", p.n),
            "s",
            Rule::Below(FLAT_FACTOR * all_alone),
            fig(p.real_mean),
            format!("no process finished at N={} on all CPUs", p.n),
        ));
    }
    if let Some(last) = all.last().filter(|p| p.n > cpus) {
        c.push(Condition::from_option(
            format!("all CPUs, N={}: throughput", last.n),
            "processes/s",
            Rule::Above(THROUGHPUT_KEPT * at_cpus),
            fig(last.throughput),
            format!("no process finished at N={} on all CPUs", last.n),
        ));
    }
    let context = format!(
        "alone {alone:.3} s on one CPU, {all_alone:.3} s on all; throughput at N={cpus} {at_cpus:.2} processes/s"
    );
    PAST_THE_CPUS.judge(&c, &context, |o| why(o, &c, raw, env))
}

fn why(o: &Outcome, c: &[Condition], raw: &Raw, env: &Environment) -> String {
    if o.holds() {
        return "the scheduler time-slices runnable processes fairly; with free CPUs each gets one"
            .into();
    }
    let failed: Vec<&str> = o
        .failed
        .iter()
        .filter_map(|&i| c.get(i))
        .map(|c| c.subject.as_str())
        .collect();
    let rounds: Vec<&Round> = raw.one_cpu.iter().chain(&raw.all_cpus).collect();
    let stolen = match (steal(&rounds), &env.machine.hypervisor.name) {
        (Some(s), Some(h)) if s >= 0.01 => format!(
            "; under {h} the host stole {:.1} % of the CPU time during the rounds, and stolen time counts as real time",
            s * 100.0
        ),
        (Some(s), _) => format!(
            "; the host stole only {:.1} % of the CPU time, so the time went to other tasks here{}",
            s * 100.0,
            env.load
                .warning
                .as_ref()
                .map(|w| format!(" ({w})"))
                .unwrap_or_default()
        ),
        (None, _) => String::new(),
    };
    format!("off: {}{stolen}", failed.join(", "))
}

fn plots(curves: &[(&str, Vec<Point>)]) -> Vec<Plot> {
    let series = |f: fn(&Point) -> f64| -> Vec<Series> {
        curves
            .iter()
            .map(|(l, pts)| Series {
                name: l.to_string(),
                style: SeriesStyle::LinePoints,
                points: pts.iter().map(|p| [p.n as f64, f(p)]).collect(),
            })
            .collect()
    };
    vec![
        Plot {
            id: "turnaround".into(),
            title: "mean turnaround vs processes".into(),
            x: Axis::new("processes", "", Scale::Linear),
            y: Axis::new("turnaround", "s", Scale::Linear),
            series: series(|x| x.real_mean),
            markers: vec![],
            x_labels: vec![],
        },
        Plot {
            id: "throughput".into(),
            title: "throughput vs processes".into(),
            x: Axis::new("processes", "", Scale::Linear),
            y: Axis::new("throughput", "processes/s", Scale::Linear),
            series: series(|x| x.throughput),
            markers: vec![],
            x_labels: vec![],
        },
    ]
}
