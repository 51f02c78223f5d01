//! `sched.slices`: N CPU-bound processes pinned to one CPU. Each spins reading
//! CLOCK_MONOTONIC and records every stretch longer than 50 us when it was not
//! running; its runs on the CPU lie between. From them: slice lengths (median, p10,
//! p90), waits, turns and shares, beside what the kernel says (se.slice from
//! /proc/PID/sched, the timer tick from HZ) and predicts: under EEVDF a slice is
//! max(se.slice, one tick), since the slice is only enforced at a tick; the wait is
//! (N - 1) slices; each share 1/N. Work is measured as the workers' own run time,
//! never as loop counts (the host's speed varies). `--set trace=FILE` writes the
//! runs as a Chrome trace for ui.perfetto.dev.

use oslab_model::{Axis, Claim, Plot, Scale, Series, SeriesStyle, Verdict};
use oslab_sys::spinners::{self, Spec};

use super::analysis::{
    chrome_trace, local_timer_count, nearest_hz, progress, sched_fields, schedstat, stats, timeline,
};
use crate::experiment::{
    Context, Experiment, LabError, Meta, Needs, Outcome, Output, finding, measurement,
};
use crate::settings::{AnySetting, Declared, FilePath, Seconds, Setting};

pub struct SchedSlices;

static META: Meta = Meta {
    id: "sched.slices",
    title: "Time slices: N processes sharing one CPU",
    section: "6",
    summary: "slice lengths, waits and shares of 1..N spinning processes on one CPU vs the kernel's slice and tick",
    needs: Needs {
        root: false,
        min_cpus: 1,
        free_disk_bytes: 0,
    },
    quick_s: 6.0,
    full_s: 25.0,
    internal: false,
};

static TRACE: Setting<FilePath> = Setting {
    name: "trace",
    help: "write the runs of the largest N as a Chrome/Perfetto trace JSON to FILE",
    quick: None,
    full: None,
    bounds: None,
    names: &[],
};
static DURATION: Setting<Seconds> = Setting {
    name: "duration",
    help: "seconds per N",
    quick: 1.0,
    full: 3.0,
    bounds: Some((0.2, 60.0)),
    names: &[],
};
static SETTINGS: [&dyn AnySetting; 2] = [&TRACE, &DURATION];

/// The gap that counts as "off the CPU": far above a clock read (~20 ns), far
/// below a tick.
pub const GAP_NS: u64 = 50_000;

impl Experiment for SchedSlices {
    fn meta(&self) -> &Meta {
        &META
    }

    fn settings(&self) -> Declared {
        &SETTINGS
    }

    fn run(&self, ctx: &mut Context) -> Result<Outcome, LabError> {
        let quick = ctx.config.quick();
        let secs = ctx.get(&DURATION);
        let trace_file = ctx.get(&TRACE);
        let ns: Vec<usize> = if quick {
            vec![1, 2, 4]
        } else {
            vec![1, 2, 3, 4, 6, 8]
        };
        let cpu = oslab_sys::process::affinity()
            .ok()
            .and_then(|v| v.first().copied())
            .unwrap_or(0);
        let hz = ctx
            .machine
            .kernel
            .hz
            .value()
            .map(|h| h.hz)
            .filter(|h| *h > 0);
        let tick_ms = hz.map(|h| 1000.0 / h as f64);
        let seed = ctx.config.seed;
        let mut measurements = Vec::new();
        let mut findings = Vec::new();
        let mut med_points = Vec::new();
        let mut pred_points = Vec::new();
        let mut se_slice_ms = None;
        let mut checks = Vec::new();
        let mut last_traces = Vec::new();
        let mut measured_hz: Vec<f64> = Vec::new();
        for (k, &n) in ns.iter().enumerate() {
            ctx.progress.stage(&format!("{n} process(es)"));
            let specs = vec![
                Spec {
                    cpu: Some(cpu),
                    nice: 0,
                    work_ns: 0
                };
                n
            ];
            let mut fields = (None, None);
            let mut tick_rate = None;
            let mut kernel_share = None;
            let traces = spinners::run(&specs, (secs * 1e9) as u64, GAP_NS, 200_000, |pids| {
                std::thread::sleep(std::time::Duration::from_millis(300));
                if let Some(p) = pids.first() {
                    fields = sched_fields(
                        &std::fs::read_to_string(format!("/proc/{p}/sched")).unwrap_or_default(),
                    );
                }
                // the tick rate of the busy CPU (a tickless kernel still ticks there)
                let count = || {
                    local_timer_count(
                        &std::fs::read_to_string("/proc/interrupts").unwrap_or_default(),
                        cpu as usize,
                    )
                };
                let stat = || {
                    pids.first().and_then(|p| {
                        schedstat(
                            &std::fs::read_to_string(format!("/proc/{p}/schedstat"))
                                .unwrap_or_default(),
                        )
                    })
                };
                let (c0, s0, t0) = (count(), stat(), oslab_sys::clock::monotonic_ns());
                std::thread::sleep(std::time::Duration::from_secs_f64(
                    (secs * 0.5).clamp(0.05, 1.0),
                ));
                let (c1, s1) = (count(), stat());
                let dt = (oslab_sys::clock::monotonic_ns() - t0) as f64 / 1e9;
                if let (Some(a), Some(b)) = (c0, c1) {
                    tick_rate = Some(b.saturating_sub(a) as f64 / dt);
                }
                if let (Some(a), Some(b)) = (s0, s1) {
                    kernel_share = Some((
                        b.0.saturating_sub(a.0) as f64 / 1e9 / dt,
                        b.2.saturating_sub(a.2),
                    ));
                }
            })
            .map_err(|e| LabError::Failed(e.to_string()))?;
            if let Some(s) = fields.0 {
                se_slice_ms = Some(s as f64 / 1e6);
            }
            if let Some(r) = tick_rate
                && n > 1
            {
                measured_hz.push(r);
            }
            let st: Vec<_> = traces.iter().map(stats).collect();
            let slices: Vec<f64> = traces
                .iter()
                .flat_map(|t| {
                    let r = super::analysis::runs(t);
                    if r.len() > 2 {
                        r[1..r.len() - 1]
                            .iter()
                            .map(|(a, b)| (b - a) as f64 / 1e6)
                            .collect::<Vec<_>>()
                    } else {
                        vec![]
                    }
                })
                .collect();
            let shares: Vec<String> = st.iter().map(|s| format!("{:.3}", s.share)).collect();
            let med = oslab_stats::median(&slices).unwrap_or(f64::NAN);
            let wait = oslab_stats::median(
                &st.iter()
                    .map(|s| s.wait_p50_ms)
                    .filter(|w| w.is_finite())
                    .collect::<Vec<_>>(),
            )
            .unwrap_or(f64::NAN);
            if n > 1 && !slices.is_empty() {
                measurements.push(measurement(
                    &format!("slice_ms.n{n}"),
                    &format!("every complete run of {n} processes on CPU {cpu}"),
                    "ms",
                    slices.clone(),
                    seed,
                    None,
                ));
            }
            let predicted = match (se_slice_ms, tick_ms) {
                (Some(s), Some(t)) => Some(s.max(t)),
                (None, Some(t)) => Some(t),
                (Some(s), None) => Some(s),
                _ => None,
            };
            findings.push(finding(
                &format!("n{n}"),
                med,
                "ms",
                format!(
                    "slice median {med:.2} ms (p10 {:.2}, p90 {:.2}); wait median {wait:.2} ms (predicted {}); shares {}{}; {} involuntary switches per process{}",
                    oslab_stats::quantile(&slices, 0.1).unwrap_or(f64::NAN),
                    oslab_stats::quantile(&slices, 0.9).unwrap_or(f64::NAN),
                    predicted.map(|p| format!("{:.2}", p * (n as f64 - 1.0))).unwrap_or_else(|| "-".into()),
                    shares.join(" / "),
                    match kernel_share {
                        Some((sh, slices)) => format!(" (schedstat says process 1 ran {sh:.3} of the time in {slices} timeslices)"),
                        None => String::new(),
                    },
                    traces.iter().map(|t| t.involuntary).sum::<u64>() / n as u64,
                    if traces.iter().any(|t| t.overflow) { "; some gaps were not recorded (buffer full)" } else { "" }
                ),
            ));
            if n > 1 && med.is_finite() {
                med_points.push([n as f64, med]);
                if let Some(p) = predicted {
                    pred_points.push([n as f64, p]);
                    checks.push((n, med, p, wait));
                }
            }
            ctx.progress.fraction((k + 1) as f64 / ns.len() as f64);
            last_traces = traces;
        }
        let mut notes = vec![format!(
            "workers are processes forked from oslab (one session, so one autogroup), pinned to CPU {cpu}; a gap over {} us counts as off the CPU; {secs} s per N",
            GAP_NS / 1000
        )];
        if let Some(path) = &trace_file {
            let names: Vec<String> = (0..last_traces.len())
                .map(|i| format!("worker {i}"))
                .collect();
            let text = serde_json::to_string(&chrome_trace(&last_traces, &names))
                .map_err(|e| LabError::Failed(e.to_string()))?;
            std::fs::write(path, text)
                .map_err(|e| LabError::Failed(format!("{}: {e}", path.display())))?;
            notes.push(format!(
                "the runs of {} processes are in {} (open it in ui.perfetto.dev)",
                last_traces.len(),
                path.display()
            ));
        }
        let per_reading: Vec<f64> = last_traces
            .iter()
            .filter(|t| t.readings > 0)
            .map(|t| {
                let off: u64 = t.gaps.iter().map(|(a, b)| b - a).sum();
                (t.end_ns - t.start_ns).saturating_sub(off) as f64 / t.readings as f64
            })
            .collect();
        if let Some(r) = oslab_stats::median(&per_reading) {
            findings.push(finding(
                "recording_ns",
                r,
                "ns",
                format!("the recording's cost and resolution: one clock reading every {r:.1} ns of run time; gaps under {} us are not counted as off the CPU", GAP_NS / 1000),
            ));
        }
        if let Some(r) = oslab_stats::median(&measured_hz) {
            findings.push(finding(
                "timer_hz",
                r,
                "Hz",
                format!(
                    "local timer interrupts on the busy CPU: {r:.1} per second, so HZ = {}{}",
                    nearest_hz(r),
                    match hz {
                        Some(h) if h == nearest_hz(r) => format!(" (CONFIG_HZ says {h}: agrees)"),
                        Some(h) => format!(" (CONFIG_HZ says {h}: DISAGREES)"),
                        None => " (CONFIG_HZ unknown here)".into(),
                    }
                ),
            ));
        }
        let sched = format!("{:?}", ctx.machine.kernel.scheduler);
        let n_last = last_traces.len();
        let lanes = timeline(&last_traces, 100.0, 0.25);
        let prog = progress(&last_traces);
        let holds =
            !checks.is_empty() && checks.iter().all(|(_, m, p, _)| (m / p - 1.0).abs() <= 0.5);
        let claim = Claim {
            id: "slice-is-tick-bound".into(),
            text: "Each of N CPU-bound processes on one CPU runs a slice of max(kernel slice, one tick) per turn and waits (N - 1) slices".into(),
            source: "material 6 (seed 003), checked against EEVDF on 6.6+ kernels".into(),
            expectation: format!(
                "slice within 50 % of {} ms (se.slice {} ms, tick {} ms); scheduler {sched}",
                checks.first().map(|c| format!("{:.2}", c.2)).unwrap_or_else(|| "-".into()),
                se_slice_ms.map(|s| format!("{s:.2}")).unwrap_or_else(|| "?".into()),
                tick_ms.map(|t| format!("{t:.2}")).unwrap_or_else(|| "?".into())
            ),
            observed: checks.iter().map(|(n, m, _, w)| format!("N={n}: slice {m:.2} ms, wait {w:.2} ms")).collect::<Vec<_>>().join("; "),
            verdict: if checks.is_empty() { Verdict::NotTestable } else if holds { Verdict::Holds } else { Verdict::Differs },
            why: if holds {
                "the slice is only enforced at the timer tick, so a CPU-bound task keeps the CPU until the first tick after its slice is used up".into()
            } else {
                "see the figures (a CFS kernel shrinks the slice as N grows)".into()
            },
        };
        Ok(Outcome::Completed(Output {
            measurements,
            findings,
            claims: vec![claim],
            plots: vec![
                Plot {
                    id: "timeline".into(),
                    title: format!("who ran when: {n_last} processes on one CPU, the first 100 ms"),
                    x: Axis::new("time", "ms", Scale::Linear),
                    y: Axis::new("process", "", Scale::Linear),
                    series: lanes
                        .into_iter()
                        .enumerate()
                        .map(|(i, p)| Series {
                            name: format!("process {}", i + 1),
                            style: SeriesStyle::Points,
                            points: p,
                        })
                        .collect(),
                    markers: vec![],
                    x_labels: vec![],
                },
                Plot {
                    id: "progress".into(),
                    title: format!("run time vs wall time, {n_last} processes on one CPU"),
                    x: Axis::new("wall time", "ms", Scale::Linear),
                    y: Axis::new("run time", "ms", Scale::Linear),
                    series: prog
                        .into_iter()
                        .enumerate()
                        .map(|(i, p)| Series {
                            name: format!("process {}", i + 1),
                            style: SeriesStyle::Line,
                            points: p,
                        })
                        .collect(),
                    markers: vec![],
                    x_labels: vec![],
                },
                Plot {
                    id: "slices".into(),
                    title: "median slice vs processes sharing one CPU".into(),
                    x: Axis::new("processes", "", Scale::Linear),
                    y: Axis::new("slice", "ms", Scale::Linear),
                    series: vec![
                        Series {
                            name: "measured".into(),
                            style: SeriesStyle::LinePoints,
                            points: med_points,
                        },
                        Series {
                            name: "max(se.slice, tick)".into(),
                            style: SeriesStyle::Line,
                            points: pred_points,
                        },
                    ],
                    markers: vec![],
                    x_labels: vec![],
                },
            ],
            notes,
            ..Default::default()
        }))
    }
}
