//! Judging the slices: per N the runs, waits and shares; the tick rate measured;
//! the claim that a slice is max(se.slice, one tick).

use crate::sched::common::kernel_view;
use oslab_model::machine::SchedulerKind;
use oslab_model::{Claim, Environment, Finding};

use super::{Plan, Raw, Round, plots};
use crate::sched::common::analysis::{hz_from_timer_rate, inner_runs_ms, median, stats, turns};
use oslab_harness::check::{Check, Condition, Outcome, Rule};
use oslab_harness::{Output, finding, measurement};

/// How far the median slice may be from max(se.slice, tick): the tick quantises it
/// and a gap in which no worker ran splits a run, so only the scale is judged.
const SLICE_TOLERANCE: f64 = 0.5;

const SLICE_IS_TICK_BOUND: Check = Check {
    id: "slice-is-tick-bound",
    tolerates: &oslab_harness::interference::CPU_SHARES,
    text: "Each of N CPU-bound processes on one CPU runs a slice of max(kernel slice, one tick) per turn and waits (N - 1) slices",
    source: "S. Takeuchi, \"Linux no Shikumi\", ch. \"Process scheduler\"; checked against EEVDF on 6.6+ kernels",
};

/// What one N showed.
struct Seen {
    n: usize,
    /// Every complete run of every worker, ms.
    slices: Vec<f64>,
    median: f64,
    /// The median of the workers' median waits, ms.
    wait: f64,
    /// max(se.slice, tick) as known at this N, ms.
    predicted: Option<f64>,
    /// Gaps inside turns in which no other worker ran, over all workers.
    interruptions: usize,
}

pub fn judge(plan: &Plan, raw: &Raw, env: &Environment) -> Output {
    let hz = env
        .machine
        .kernel
        .hz
        .value()
        .map(|h| h.hz)
        .filter(|h| *h > 0);
    let tick_ms = hz.map(|h| 1000.0 / h as f64);
    let mut out = Output::default();
    let mut se_slice_ms = None;
    let mut seen = Vec::new();
    for r in &raw.rounds {
        if let Some(s) = r.first_sched.slice_ns {
            se_slice_ms = Some(s as f64 / 1e6);
        }
        let predicted = match (se_slice_ms, tick_ms) {
            (Some(s), Some(t)) => Some(f64::max(s, t)),
            (s, t) => s.or(t),
        };
        let s = seen_in(r, predicted);
        if r.n > 1 && !s.slices.is_empty() {
            out.measurements.push(measurement(
                &format!("slice_ms.n{}", r.n),
                &format!("every complete run of {} processes on CPU {}", r.n, raw.cpu),
                "ms",
                s.slices.clone(),
                env.seed,
                None,
            ));
        }
        out.findings.push(round_finding(r, &s));
        seen.push(s);
    }
    let last = raw.rounds.last().map_or(&[][..], |r| &r.workers[..]);
    out.findings.extend(recording_finding(last, plan.gap_ns));
    out.findings.extend(timer_finding(raw, hz));
    let multi: Vec<&Seen> = seen.iter().filter(|s| s.n > 1).collect();
    out.claims
        .push(claim(&multi, se_slice_ms, tick_ms, hz, env));
    kernel_figures(&mut out, raw, env.load.steal_fraction);
    let medians = multi
        .iter()
        .filter(|s| s.median.is_finite())
        .map(|s| [s.n as f64, s.median])
        .collect();
    let predicted = multi
        .iter()
        .filter(|s| s.median.is_finite())
        .filter_map(|s| Some([s.n as f64, s.predicted?]))
        .collect();
    out.plots = plots::plots(last, medians, predicted);
    out.notes.push(format!(
        "workers are processes forked from oslab (one session, so one autogroup), pinned to CPU {}; a gap over {} us counts as off the CPU; {} s per N",
        raw.cpu,
        plan.gap_ns / 1000,
        plan.duration
    ));
    if let (Some(path), Some(r)) = (&plan.trace, raw.rounds.last()) {
        out.notes.push(format!(
            "the runs of {} processes are in {} (open it in ui.perfetto.dev)",
            r.workers.len(),
            path.display()
        ));
    }
    out.params.insert("cpu".into(), serde_json::json!(raw.cpu));
    out
}

/// What the kernel's trace says of every round, and whether it agrees with the
/// workers' own account.
fn kernel_figures(out: &mut Output, raw: &Raw, steal: f64) {
    for r in &raw.rounds {
        if let Some(c) = r.kernel.captured() {
            out.findings
                .extend(kernel_view::findings(&format!("n{}", r.n), c, &r.workers));
        }
    }
    let groups: Vec<(
        &oslab_trace::TraceOutcome,
        &[crate::sched::common::analysis::Worker],
    )> = raw
        .rounds
        .iter()
        .map(|r| (&r.kernel, &r.workers[..]))
        .collect();
    out.claims
        .push(kernel_view::agreement_claim(&groups, steal));
    if let Some(r) = raw.rounds.first() {
        out.notes.push(r.kernel.note());
    }
}

fn seen_in(r: &Round, predicted: Option<f64>) -> Seen {
    let slices: Vec<f64> = r.workers.iter().flat_map(inner_runs_ms).collect();
    let waits: Vec<f64> = r
        .workers
        .iter()
        .map(|w| stats(w).wait_p50_ms)
        .filter(|w| w.is_finite())
        .collect();
    Seen {
        n: r.n,
        median: median(&slices),
        wait: median(&waits),
        predicted,
        interruptions: (0..r.workers.len())
            .map(|i| turns(&r.workers, i).interruptions)
            .sum(),
        slices,
    }
}

fn round_finding(r: &Round, s: &Seen) -> Finding {
    let shares: Vec<String> = r
        .workers
        .iter()
        .map(|w| format!("{:.3}", stats(w).share))
        .collect();
    let q = |p| oslab_stats::quantile(&s.slices, p).unwrap_or(f64::NAN);
    let kernel = match (&r.window.schedstat_before, &r.window.schedstat_after) {
        (Some(a), Some(b)) if r.window.ns > 0 => {
            let d = b.since(a);
            // pcount counts switches in: none means it ran the window in one stretch
            let slices = match d.timeslices {
                0 => "in one stretch (no switch in counted)".to_string(),
                1 => "in 1 timeslice".to_string(),
                n => format!("in {n} timeslices"),
            };
            format!(
                " (schedstat says process 1 ran {:.3} of the time {slices})",
                d.run_ns as f64 / r.window.ns as f64,
            )
        }
        _ => String::new(),
    };
    let involuntary = r.workers.iter().map(|w| w.involuntary).sum::<u64>() / r.n.max(1) as u64;
    let interrupted = if r.n > 1 {
        format!(
            "; {} inside turns with no worker on the CPU",
            match s.interruptions {
                1 => "1 gap".to_string(),
                n => format!("{n} gaps"),
            }
        )
    } else {
        String::new()
    };
    let overflow = if r.workers.iter().any(|w| w.overflow) {
        "; some gaps were not recorded (buffer full)"
    } else {
        ""
    };
    finding(
        &format!("n{}", r.n),
        s.median,
        "ms",
        format!(
            "slice median {:.2} ms (p10 {:.2}, p90 {:.2}); wait median {:.2} ms (predicted {}); shares {}{kernel}; {involuntary} involuntary switches per process{interrupted}{overflow}",
            s.median,
            q(0.1),
            q(0.9),
            s.wait,
            s.predicted
                .map(|p| format!("{:.2}", p * (r.n as f64 - 1.0)))
                .unwrap_or_else(|| "-".into()),
            shares.join(" / "),
        ),
    )
}

/// The recording's cost: run time per clock reading, of the largest N.
fn recording_finding(
    last: &[crate::sched::common::analysis::Worker],
    gap_ns: u64,
) -> Option<Finding> {
    let per_reading: Vec<f64> = last
        .iter()
        .filter(|t| t.readings > 0)
        .map(|t| {
            let off: u64 = t.gaps.iter().map(|(a, b)| b - a).sum();
            t.wall_ns().saturating_sub(off) as f64 / t.readings as f64
        })
        .collect();
    let r = oslab_stats::median(&per_reading)?;
    Some(finding(
        "recording_ns",
        r,
        "ns",
        format!(
            "the recording's cost and resolution: one clock reading every {r:.1} ns of run time; gaps under {} us are not counted as off the CPU",
            gap_ns / 1000
        ),
    ))
}

/// Local timer interrupts per second on the busy CPU (N > 1, so it never idles).
fn timer_finding(raw: &Raw, hz: Option<u32>) -> Option<Finding> {
    let rates: Vec<f64> = raw
        .rounds
        .iter()
        .filter(|r| r.n > 1 && r.window.ns > 0)
        .filter_map(|r| {
            let (a, b) = (r.window.timer_before?, r.window.timer_after?);
            Some(b.saturating_sub(a) as f64 / (r.window.ns as f64 / 1e9))
        })
        .collect();
    let r = oslab_stats::median(&rates)?;
    let near = hz_from_timer_rate(r);
    Some(finding(
        "timer_hz",
        r,
        "Hz",
        format!(
            "local timer interrupts on the busy CPU: {r:.1} per second, the tick and any other timer that fired there, so HZ = {near}{}",
            match hz {
                Some(h) if h == near => format!(" (CONFIG_HZ says {h}: agrees)"),
                Some(h) => format!(" (CONFIG_HZ says {h}: DISAGREES)"),
                None => " (CONFIG_HZ unknown here)".into(),
            }
        ),
    ))
}

fn claim(
    multi: &[&Seen],
    se_slice_ms: Option<f64>,
    tick_ms: Option<f64>,
    hz: Option<u32>,
    env: &Environment,
) -> Claim {
    let scheduler = env.machine.kernel.scheduler;
    let expectation = "N > 1: median slice within 50 % of max(se.slice, one tick)";
    if multi.is_empty() {
        return SLICE_IS_TICK_BOUND.not_judged(expectation, "the plan had no N above 1");
    }
    let Some(conditions) = multi
        .iter()
        .map(|s| {
            Some(Condition::from_option(
                format!("N={}: median slice", s.n),
                "ms",
                Rule::WithinRel {
                    target: s.predicted?,
                    tol: SLICE_TOLERANCE,
                },
                s.median.is_finite().then_some(s.median),
                format!("no complete slice was recorded with N={}", s.n),
            ))
        })
        .collect::<Option<Vec<Condition>>>()
    else {
        return SLICE_IS_TICK_BOUND.not_judged(
            expectation,
            "neither se.slice (/proc/PID/sched) nor HZ is known here, so nothing predicts the slice",
        );
    };
    let ms = |v: Option<f64>| v.map_or_else(|| "unknown".into(), |v| format!("{v:.2} ms"));
    let context = format!(
        "se.slice {}, tick {}{}; scheduler {}; waits: {}",
        ms(se_slice_ms),
        ms(tick_ms),
        hz.map(|h| format!(" (HZ {h})")).unwrap_or_default(),
        scheduler.label(),
        multi
            .iter()
            .map(|s| format!("N={} {:.2} ms", s.n, s.wait))
            .collect::<Vec<_>>()
            .join(", ")
    );
    SLICE_IS_TICK_BOUND.judge(&conditions, &context, |o| why(o, multi, scheduler, env))
}

fn why(o: &Outcome, multi: &[&Seen], scheduler: SchedulerKind, env: &Environment) -> String {
    if o.holds() {
        return match scheduler {
            SchedulerKind::Eevdf => "the slice is only enforced at the timer tick, so a CPU-bound task keeps the CPU until the first tick after its slice is used up".into(),
            _ => "each turn lasted about max(slice, tick): a CPU-bound task is only preempted at a tick".into(),
        };
    }
    let off: Vec<String> = o
        .failed
        .iter()
        .filter_map(|&i| multi.get(i))
        .map(|s| format!("N={}", s.n))
        .collect();
    let cut: usize = o
        .failed
        .iter()
        .filter_map(|&i| multi.get(i))
        .map(|s| s.interruptions)
        .sum();
    let mut why = format!(
        "the median slice is off the prediction at {}",
        off.join(", ")
    );
    if scheduler == SchedulerKind::Cfs {
        why.push_str(
            ": CFS divides sched_latency_ns among the N tasks, so the slice shrinks as N grows",
        );
    } else if cut > 0 {
        why.push_str(&format!(
            "; {cut} gaps inside those turns had no worker on the CPU and split the runs ({})",
            match &env.machine.hypervisor.name {
                Some(h) =>
                    format!("under {h} the host takes the vCPU; interrupts and other tasks too"),
                None => "interrupts or other tasks took the CPU".into(),
            }
        ));
    }
    why
}
