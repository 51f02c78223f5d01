//! Judging `cpu.ctxsw`: summaries, switch counts, the system calls alone, perf
//! bench beside ours, the plot; the claims are in `claims`.

use oslab_model::{Axis, Environment, Plot, Scale, Series, SeriesStyle};

use super::cpu_mask::cpus_of;
use super::modes::Spread;
use super::{CellRaw, Plan, Raw};
use oslab_harness::{Output, finding, measurement};
use oslab_stats::median;

/// Steal above this share of CPU time during a cell makes it suspect.
const STEAL_NOTE: f64 = 0.05;

pub(super) fn judge(plan: &Plan, raw: &Raw, env: &Environment) -> Output {
    let mut out = Output::default();
    cells(&mut out, raw, env.seed);
    syscalls(&mut out, raw, env.seed);
    perf(&mut out, raw);
    super::kernel_count::judge(&raw.kernel, &mut out);
    out.claims = super::claims::claims(raw, env);
    out.notes.push(format!(
        "{} launches x {} batches x {} round trips per cell; a sample is one batch; unpinned and cross-CPU figures are wake-ups, not switch costs",
        plan.launches, plan.samples, plan.round_trips
    ));
    out
}

/// What a cell's samples are per handoff.
fn what(c: &CellRaw) -> &'static str {
    match c.placement.as_str() {
        "same-cpu" => "per switch (handoff on one CPU)",
        "unpinned" => "per handoff, unpinned (not a switch cost)",
        _ => "per cross-CPU wake-up (not a switch cost)",
    }
}

fn cells(out: &mut Output, raw: &Raw, seed: u64) {
    let mut bars = Vec::new();
    let mut labels = Vec::new();
    let mut modes = Vec::new();
    for (i, c) in raw.cells.iter().enumerate() {
        let key = c.key();
        let samples = c.samples();
        let s = c.switch_counts();
        let steal = c.steal();
        out.findings.push(finding(
            &format!("switches_per_round_trip.{key}"),
            s.own.0 + s.own.1 + s.peer.0 + s.peer.1,
            "switches",
            format!(
                "both sides together; measuring side {:.2} voluntary + {:.3} involuntary, peer {:.2} + {:.3}; ran on cpus {} / {}; steal {}{}",
                s.own.0,
                s.own.1,
                s.peer.0,
                s.peer.1,
                cpus_of(s.own_cpus),
                cpus_of(s.peer_cpus),
                steal.map_or_else(|| "unknown".into(), |x| format!("{:.1} %", x * 100.0)),
                if s.flagged > 0 {
                    format!("; {} of {} launches flagged", s.flagged, c.launches.len())
                } else {
                    String::new()
                }
            ),
        ));
        if let Some(x) = steal.filter(|x| *x > STEAL_NOTE) {
            out.notes.push(format!(
                "{key}: steal {:.1} % during the cell: contaminated",
                x * 100.0
            ));
        }
        if c.placement == "unpinned" {
            let spread = Spread::of(&samples);
            modes.push(finding(
                &format!("unpinned_modes.{}.{}", c.tasks, c.mechanism),
                if matches!(spread, Spread::Bimodal(_)) {
                    2.0
                } else {
                    1.0
                },
                "modes",
                format!("{key}: {}", spread.describe(samples.len())),
            ));
        }
        bars.push([i as f64, median(&samples).unwrap_or(f64::NAN)]);
        labels.push(
            key.replace("processes", "proc")
                .replace("threads", "thr")
                .replace("cross-cpu.", "x-"),
        );
        out.measurements.push(measurement(
            &format!("ns.{key}"),
            what(c),
            "ns",
            samples,
            seed,
            None,
        ));
    }
    out.findings.extend(modes);
    out.plots.push(Plot {
        id: "matrix".into(),
        title: "ns per handoff: processes/threads, futex/pipe, placement".into(),
        x: Axis::new("", "", Scale::Linear),
        y: Axis::new("time per handoff", "ns", Scale::Linear),
        series: vec![Series {
            name: "median".into(),
            style: SeriesStyle::Bars,
            points: bars,
        }],
        markers: vec![],
        x_labels: labels,
    });
}

fn syscalls(out: &mut Output, raw: &Raw, seed: u64) {
    let cell = |k: &str| raw.cell(k).and_then(|c| median(&c.samples()));
    out.measurements.push(measurement(
        "ns.futex_wake_no_waiter",
        "FUTEX_WAKE with nobody waiting",
        "ns",
        raw.futex_wake_no_waiter_ns.clone(),
        seed,
        None,
    ));
    out.measurements.push(measurement(
        "ns.futex_wait_mismatch",
        "FUTEX_WAIT that returns at once (value changed)",
        "ns",
        raw.futex_wait_mismatch_ns.clone(),
        seed,
        None,
    ));
    if let Some(pipe) = &raw.pipe_write_read_ns {
        out.measurements.push(measurement(
            "ns.pipe_write_read",
            "non-blocking pipe write + read of one byte",
            "ns",
            pipe.clone(),
            seed,
            None,
        ));
    }
    if let (Some(s), Some(wake), Some(wait)) = (
        cell("processes.futex.same-cpu"),
        median(&raw.futex_wake_no_waiter_ns),
        median(&raw.futex_wait_mismatch_ns),
    ) {
        out.findings.push(finding(
            "estimate.switch_alone.futex",
            s - wake - wait,
            "ns",
            "ESTIMATE: same-CPU futex handoff minus one wake and one wait system call",
        ));
    }
    if let (Some(s), Some(pipe)) = (
        cell("processes.pipe.same-cpu"),
        raw.pipe_write_read_ns.as_deref().and_then(median),
    ) {
        out.findings.push(finding(
            "estimate.switch_alone.pipe",
            s - pipe,
            "ns",
            "ESTIMATE: same-CPU pipe handoff minus one non-blocking write + read",
        ));
    }
}

/// Why a spread does not let its median be compared, or None when it does.
fn unfit(whose: &str, s: &Spread, n: usize) -> Option<String> {
    match s {
        Spread::Steady { .. } => None,
        Spread::Noisy { cv } => Some(format!("{whose} is noisy (CV {:.0} %)", cv * 100.0)),
        Spread::Bimodal(_) => Some(format!("{whose} is bimodal ({})", s.describe(n))),
        Spread::Unknown => Some(format!(
            "{whose} comes from {n} run(s): its spread is unknown"
        )),
    }
}

/// perf bench sched pipe beside our pipe cells; the ratio is an agreement check
/// only when both figures are steady.
fn perf(out: &mut Output, raw: &Raw) {
    let Some(perf) = &raw.perf else {
        out.notes
            .push("perf is not installed: no perf bench sched pipe comparison".into());
        return;
    };
    for p in perf {
        let key = format!("{}.pipe.{}", p.tasks, p.placement);
        let name = format!("{}.{}", p.tasks, p.placement);
        let runs: Vec<f64> = p
            .usecs_per_op
            .iter()
            .flatten()
            .map(|us| us * 500.0)
            .collect();
        let ours_samples = raw.cell(&key).map(|c| c.samples()).unwrap_or_default();
        let (Some(perf_ns), Some(ours)) = (median(&runs), median(&ours_samples)) else {
            out.notes.push(format!(
                "perf bench sched pipe ({name}): {} of {} runs gave a figure, our {key} cell {} samples: no comparison",
                runs.len(),
                p.usecs_per_op.len(),
                ours_samples.len()
            ));
            continue;
        };
        let ratio = ours / perf_ns;
        let reasons: Vec<String> = [
            unfit("our figure", &Spread::of(&ours_samples), ours_samples.len()),
            unfit("perf's figure", &Spread::of(&runs), runs.len()),
        ]
        .into_iter()
        .flatten()
        .collect();
        let mut verdict = if reasons.is_empty() {
            format!("ours / perf = {ratio:.2}, both steady: the ratio is an agreement check")
        } else {
            format!(
                "ours / perf = {ratio:.2} is no agreement check: {}",
                reasons.join("; ")
            )
        };
        if p.cpu.is_none()
            && let Some(c) = raw.cell(&key)
        {
            let s = c.switch_counts();
            verdict.push_str(&format!(
                " (unpinned: our tasks were seen on cpus {} / {}; where perf's ran is not recorded)",
                cpus_of(s.own_cpus),
                cpus_of(s.peer_cpus)
            ));
        }
        out.findings.push(finding(
            &format!("perf_bench.{name}"),
            perf_ns,
            "ns",
            format!(
                "perf bench sched pipe{} {}: {:.3} us per round trip = {perf_ns:.0} ns per handoff (median of {} runs of {} loops); {verdict}",
                if p.tasks == "threads" { " -T" } else { "" },
                match p.cpu {
                    Some(c) => format!("pinned to cpu{c} with taskset"),
                    None => "unpinned".into(),
                },
                perf_ns / 500.0,
                runs.len(),
                p.loops
            ),
        ));
        out.findings.push(finding(
            &format!("ours_over_perf.{name}"),
            ratio,
            "x",
            format!("our {key} median over perf's: {verdict}"),
        ));
        if !reasons.is_empty() {
            out.notes.push(format!(
                "perf_bench.{name}: ours / perf = {ratio:.2} is no agreement check: {}",
                reasons.join("; ")
            ));
        }
    }
}
