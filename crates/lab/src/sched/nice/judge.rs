//! Judging the nice pairs: shares against the weight table (relatively), the
//! shares per interval as samples, and the turns of both workers.

use crate::sched::common::kernel_view;
use oslab_model::{Axis, Claim, Environment, Finding, Plot, Scale, Series, SeriesStyle};

use super::{Pair, Plan, Raw, predicted_share};
use crate::sched::common::analysis::{
    Turns, inner_runs_ms, median, median_opt, ran_by_interval, stats, turns, weight,
};
use oslab_harness::check::{Check, Condition, Outcome, Rule};
use oslab_harness::{Output, finding, measurement};

/// How far the measured run-time ratio nice 0 : nice k may be from w(0) / w(k).
/// One tick more or less of nice 19's run time over 3 s is about 9 % of it; 15 %
/// leaves room for that and still rejects equal shares at nice 1 (w(0) / w(1) is
/// 1.25, 20 % above 1).
pub const RATIO_TOLERANCE: f64 = 0.15;

const SHARES: Check = Check {
    id: "nice-shares-follow-weights",
    tolerates: &oslab_harness::interference::CPU_SHARES,
    text: "Nice values divide the CPU by the kernel's weights (about 1.25x per step)",
    source: "S. Takeuchi, \"Linux no Shikumi\", ch. \"Process scheduler\"; kernel/sched/core.c sched_prio_to_weight",
};

/// What one pair showed.
pub(super) struct Seen {
    pub k: i32,
    /// Nice 0's share of the two run times (each over its own wall time).
    pub share: f64,
    /// Run time of nice 0 over that of nice k; infinite when nice k never ran.
    pub ratio: f64,
    /// Nice 0's share in each interval.
    pub intervals: Vec<f64>,
    pub turns0: Turns,
    pub turns_k: Turns,
    /// Nice 0's runs between gaps, ms.
    pub runs0: Vec<f64>,
    /// Share of the CPU time of all CPUs the host stole meanwhile.
    pub steal: Option<f64>,
    /// The kernel's se.load.weight, nice 0 and nice k.
    pub weights: (Option<u64>, Option<u64>),
    /// Nice k's se.slice, ns.
    pub slice_k_ns: Option<u64>,
}

pub fn judge(plan: &Plan, raw: &Raw, env: &Environment) -> Output {
    let mut out = Output::default();
    let seen: Vec<Seen> = raw.pairs.iter().map(|p| seen_in(p, plan)).collect();
    let tick_ms = env
        .machine
        .kernel
        .hz
        .value()
        .filter(|h| h.hz > 0)
        .map(|h| (1000.0 / h.hz as f64, h.hz));
    for s in &seen {
        if !s.intervals.is_empty() {
            out.measurements.push(measurement(
                &format!("interval_share.nice0_vs_{}", s.k),
                &format!(
                    "nice 0's share of the two run times in each {} ms interval, against nice {}",
                    plan.interval_ms, s.k
                ),
                "fraction",
                s.intervals.clone(),
                env.seed,
                None,
            ));
        }
        out.findings.push(share_finding(s));
        out.findings
            .extend(turn_findings(s, tick_ms, plan.gap_ns, takers(s, env)));
    }
    out.claims.push(claim(&seen, raw, env));
    for p in &raw.pairs {
        if let Some(c) = p.kernel.captured() {
            let key = format!("nice0_vs_{}", p.k);
            out.findings
                .extend(kernel_view::findings(&key, c, &p.workers));
            if let Some(share) = kernel_share(c, &p.workers) {
                out.findings.push(finding(
                    &format!("kernel.{key}.share"),
                    share,
                    "fraction",
                    "nice 0's share of the two run times by the kernel's switches",
                ));
            }
        }
    }
    let groups: Vec<(
        &oslab_trace::TraceOutcome,
        &[crate::sched::common::analysis::Worker],
    )> = raw
        .pairs
        .iter()
        .map(|p| (&p.kernel, &p.workers[..]))
        .collect();
    out.claims.push(kernel_view::agreement_claim(
        &groups,
        env.load.steal_fraction,
    ));
    if let Some(p) = raw.pairs.first() {
        out.notes.push(p.kernel.note());
    }
    out.plots.push(plot(&seen));
    out.notes.push(format!(
        "two processes forked from oslab, pinned to CPU {}, {} s each k; shares from their own run time; a turn runs from taking the CPU to handing it to the other, through gaps in which neither ran",
        raw.cpu, plan.duration
    ));
    out.params.insert("cpu".into(), serde_json::json!(raw.cpu));
    out
}

/// Nice 0's share of the pair's run time over their common window, by the
/// kernel's switches.
fn kernel_share(
    c: &oslab_trace::analysis::Captured,
    workers: &[crate::sched::common::analysis::Worker],
) -> Option<f64> {
    let (w0, wk) = (workers.first()?, workers.get(1)?);
    let (from, to) = (w0.start_ns.max(wk.start_ns), w0.end_ns.min(wk.end_ns));
    let ran = |pid| -> u64 {
        kernel_view::kernel_runs(c, pid, from, to)
            .iter()
            .map(|(a, b)| b - a)
            .sum()
    };
    let (r0, rk) = (ran(w0.pid), ran(wk.pid));
    (r0 + rk > 0).then(|| r0 as f64 / (r0 + rk) as f64)
}

/// Far more intervals than a run's window holds (seconds, in steps of 100 ms or
/// more).
const MAX_INTERVALS: u64 = 1 << 20;

fn seen_in(p: &Pair, plan: &Plan) -> Seen {
    let empty = crate::sched::common::analysis::Worker::default();
    let (w0, wk) = (
        p.workers.first().unwrap_or(&empty),
        p.workers.get(1).unwrap_or(&empty),
    );
    let (s0, sk) = (stats(w0).share, stats(wk).share);
    let from = w0.start_ns.max(wk.start_ns);
    let to = w0.end_ns.min(wk.end_ns);
    let step = (plan.interval_ms * 1e6) as u64;
    // whole intervals in the common window; a raw file whose window holds more
    // than a run could (its clock readings damaged) is not split at all
    let n = match to.saturating_sub(from).checked_div(step) {
        Some(n) if n <= MAX_INTERVALS => n as usize,
        _ => 0,
    };
    let (ran0, rank) = (
        ran_by_interval(w0, from, step, n),
        ran_by_interval(wk, from, step, n),
    );
    let intervals = ran0
        .iter()
        .zip(&rank)
        .filter(|(r0, rk)| **r0 + **rk > 0)
        .map(|(r0, rk)| *r0 as f64 / (r0 + rk) as f64)
        .collect();
    let weight_of = |i: usize| p.sched.get(i).and_then(|s| s.load_weight);
    Seen {
        k: p.k,
        share: s0 / (s0 + sk).max(1e-12),
        ratio: if sk > 0.0 { s0 / sk } else { f64::INFINITY },
        intervals,
        turns0: turns(&p.workers, 0),
        turns_k: turns(&p.workers, 1),
        runs0: inner_runs_ms(w0),
        steal: match (&p.stat_before, &p.stat_after) {
            (Some(a), Some(b)) => Some(b.since(a).steal_fraction()),
            _ => None,
        },
        weights: (weight_of(0), weight_of(1)),
        slice_k_ns: p.sched.get(1).and_then(|s| s.slice_ns),
    }
}

fn table_ratio(k: i32) -> f64 {
    weight(0) as f64 / weight(k) as f64
}

fn share_finding(s: &Seen) -> Finding {
    let pred = predicted_share(s.k);
    finding(
        &format!("share.nice0_vs_{}", s.k),
        s.share,
        "fraction",
        format!(
            "nice 0 got {:.3} of the CPU, the weights {} / {} predict {pred:.3} (error {:+.3}); run times {:.2}:1, the weights {:.2}:1{}",
            s.share,
            weight(0),
            weight(s.k),
            s.share - pred,
            s.ratio,
            table_ratio(s.k),
            match s.weights {
                (Some(a), Some(b)) if b > 0 =>
                    format!("; se.load.weight {a} / {b} ({:.2}:1)", a as f64 / b as f64),
                _ => String::new(),
            }
        ),
    )
}

/// Who can take the CPU from both workers, from the facts: other tasks and
/// interrupts always; the host under a hypervisor, with the steal measured.
fn takers(s: &Seen, env: &Environment) -> String {
    match (&env.machine.hypervisor.name, s.steal) {
        (Some(h), Some(st)) => format!(
            "other tasks, interrupts or the {h} host took it; the host stole {:.1} % of all CPU time meanwhile",
            st * 100.0
        ),
        (Some(h), None) => format!("other tasks, interrupts or the {h} host took it"),
        (None, _) => "other tasks or interrupts took it".into(),
    }
}

/// The turns of both workers, and why the run between gaps is not reported as a
/// slice.
fn turn_findings(s: &Seen, tick: Option<(f64, u32)>, gap_ns: u64, takers: String) -> Vec<Finding> {
    let (Some(t0), Some(tk)) = (
        median_opt(&s.turns0.turns_ms),
        median_opt(&s.turns_k.turns_ms),
    ) else {
        return vec![];
    };
    let ratio = table_ratio(s.k);
    let runs0 = median(&s.runs0);
    let cut = s.turns0.interruptions;
    let runs_text = if cut == 0 {
        format!("; no gap inside its turns, so its runs between gaps are its turns ({runs0:.2} ms)")
    } else {
        format!(
            "; its runs between gaps over {} us are shorter (median {runs0:.2} ms): {cut} gaps ({:.1} ms in all) inside its turns had neither worker on the CPU ({takers}), and how often that happens differs from run to run, so the run between gaps is no slice of the scheduler's; the turn does not depend on it",
            gap_ns / 1000,
            s.turns0.interrupted_ms
        )
    };
    let slice = match (s.slice_k_ns, tick) {
        (Some(sl), Some((ms, hz))) => format!(
            ": its se.slice of {:.2} ms is only enforced at a tick ({ms:.2} ms at HZ {hz})",
            sl as f64 / 1e6
        ),
        (None, Some((ms, hz))) => format!(" (one tick is {ms:.2} ms at HZ {hz})"),
        (Some(sl), None) => format!(" (se.slice {:.2} ms)", sl as f64 / 1e6),
        (None, None) => String::new(),
    };
    vec![
        finding(
            &format!("turn_ms.nice0_vs_{}", s.k),
            t0,
            "ms",
            format!(
                "nice 0 ran {t0:.2} ms per turn (median of {}, run time from taking the CPU to handing it to nice {}), {:.2}x nice {}'s turn; the weights predict {ratio:.2}x, {:.2} ms{runs_text}",
                s.turns0.turns_ms.len(),
                s.k,
                t0 / tk,
                s.k,
                tk * ratio
            ),
        ),
        finding(
            &format!("turn_ms.nice{}", s.k),
            tk,
            "ms",
            format!(
                "nice {} ran {tk:.2} ms per turn (median of {}){slice}",
                s.k,
                s.turns_k.turns_ms.len(),
            ),
        ),
    ]
}

fn claim(seen: &[Seen], raw: &Raw, env: &Environment) -> Claim {
    let conditions: Vec<Condition> = seen
        .iter()
        .map(|s| {
            let subject = format!("k={}: run time of nice 0 over nice {}", s.k, s.k);
            let rule = Rule::WithinRel {
                target: table_ratio(s.k),
                tol: RATIO_TOLERANCE,
            };
            if s.ratio.is_infinite() && s.share > 0.0 {
                // nice k never ran: as far from the table as can be
                Condition {
                    subject,
                    unit: "x".into(),
                    rule,
                    figure: Ok(f64::INFINITY),
                }
            } else {
                Condition::from_option(
                    subject,
                    "x",
                    rule,
                    s.ratio.is_finite().then_some(s.ratio),
                    format!("neither worker ran with k={}", s.k),
                )
            }
        })
        .collect();
    if conditions.is_empty() {
        return SHARES.not_judged(
            "run time of nice 0 over nice k within 15 % of w(0) / w(k)",
            "the plan had no nice value to set against nice 0",
        );
    }
    let context = seen
        .iter()
        .map(|s| {
            format!(
                "k={}: share {:.3} vs {:.3}",
                s.k,
                s.share,
                predicted_share(s.k)
            )
        })
        .collect::<Vec<_>>()
        .join("; ");
    SHARES.judge(&conditions, &context, |o| why(o, seen, raw, env))
}

fn why(o: &Outcome, seen: &[Seen], raw: &Raw, env: &Environment) -> String {
    if o.holds() {
        return "run time divided as the weights say: the scheduler's virtual time advances in inverse proportion to the weight".into();
    }
    let mut parts = Vec::new();
    for s in o.failed.iter().filter_map(|&i| seen.get(i)) {
        let mut why = format!(
            "k={}: {:.1}:1 instead of {:.1}:1",
            s.k,
            s.ratio,
            table_ratio(s.k)
        );
        if let (Some(a), Some(b)) = s.weights
            && b > 0
            && ((a as f64 / b as f64) / table_ratio(s.k) - 1.0).abs() > 0.05
        {
            why.push_str(&format!(
                " (the kernel weighed them {a} / {b}, not as the table: the nice value did not take, or they were in different groups)"
            ));
        } else if let Some(st) = s.steal.filter(|st| *st > 0.05) {
            why.push_str(&format!(
                " (the host stole {:.0} % of the CPU time meanwhile{})",
                st * 100.0,
                env.machine
                    .hypervisor
                    .name
                    .as_ref()
                    .map(|h| format!(", under {h}"))
                    .unwrap_or_default()
            ));
        } else if s.turns0.interruptions + s.turns_k.interruptions > 0 {
            why.push_str(&format!(
                " ({} gaps with neither worker on CPU {}: another task shared it)",
                s.turns0.interruptions + s.turns_k.interruptions,
                raw.cpu
            ));
        }
        parts.push(why);
    }
    parts.join("; ")
}

fn plot(seen: &[Seen]) -> Plot {
    Plot {
        id: "nice".into(),
        title: "share of the nice-0 process vs the other's nice".into(),
        x: Axis::new("nice of the other", "", Scale::Linear),
        y: Axis::new("share of nice 0", "", Scale::Linear),
        series: vec![
            Series {
                name: "measured".into(),
                style: SeriesStyle::Points,
                points: seen.iter().map(|s| [s.k as f64, s.share]).collect(),
            },
            Series {
                name: "weights".into(),
                style: SeriesStyle::LinePoints,
                points: seen
                    .iter()
                    .map(|s| [s.k as f64, predicted_share(s.k)])
                    .collect(),
            },
        ],
        markers: vec![],
        x_labels: vec![],
    }
}
