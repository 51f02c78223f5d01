//! `wb.throttle`: writers faster than the device run into the dirty limit and wait
//! inside write() (the "fourth way" a flush starts, material section 4; seed 004).
//!
//! What: write() latency of bulk writers once dirty memory reaches the limit: the
//! p50, p99 and longest write(), the writes over 200 ms, and Dirty + Writeback
//! against the kernel's free-run point and hard limit.
//!
//! Method: on the testbed (a loop device capped at `bandwidth`), with
//! dirty_bytes = 64 MiB and dirty_background_bytes = 32 MiB, `writers` bulk writers
//! write 512 KiB chunks back to back for `duration` seconds. Every write() is timed;
//! /proc/meminfo (Dirty, Writeback) is polled every 100 ms. Once Dirty + Writeback
//! passes the free-run point ((hard + background) / 2 = 48 MiB) the kernel's
//! balance_dirty_pages() pauses the writers, up to 200 ms per pause (MAX_PAUSE), and
//! one write() can hold several pauses.
//!
//! Pitfalls: a fast or host-cached disk never lets Dirty reach the limit, hence the
//! throttled loop device; the throttle holds pages under Writeback, so Writeback,
//! not Dirty, can carry most of the 64 MiB. A run too short for the writers to fill
//! the gap between the background and the hard limit sees no pause at all.
//!
//! References: Documentation/admin-guide/sysctl/vm.rst (dirty_bytes,
//! dirty_background_bytes); mm/page-writeback.c (balance_dirty_pages, MAX_PAUSE);
//! Documentation/admin-guide/cgroup-v1/blkio-controller.rst (the throttle);
//! proc(5) (/proc/meminfo); material section 4 of ../shared/spec/material.md.

use std::time::Duration;

use oslab_model::{Axis, Environment, Plot, Scale, Series, SeriesStyle};
use oslab_sys::parse::size::human_bytes;
use serde::{Deserialize, Serialize};

use super::knobs::Knobs;
use super::stall_causes;
use super::testbed::{down_for_run, parse_bandwidth, unavailable, up_for_run};
use super::trace::{self, Poll, WriterSpec, WriterTrace, mib};
use super::wcall::verdicts::judge_all;
use crate::check::{Check, Condition, Rule, figure};
use crate::experiment::{Context, LabError, Meta, Needs, Output, finding, measurement};
use crate::kernel_trace::KernelTrace;
use crate::settings::{AnySetting, Bytes, Count, Declared, Seconds, Setting};
use crate::shape::{Lab, Measured, Planner};
use crate::simrun::latency_stats;
use oslab_trace::TraceOutcome;

pub struct Throttle;
crate::shaped_experiment!(Throttle);

static META: Meta = Meta {
    id: "wb.throttle",
    title: "Throttled writers: write() latency at the dirty limit",
    section: "4",
    summary: "bulk writers on a slow testbed device: write() p50/p99/max and writes over 200 ms",
    needs: Needs {
        root: true,
        min_cpus: 1,
        free_disk_bytes: 0,
    },
    quick_s: 20.0,
    full_s: 50.0,
    internal: false,
};

static BANDWIDTH: Setting<Bytes> = Setting {
    name: "bandwidth",
    help: "testbed write cap per second",
    quick: 10 << 20,
    full: 10 << 20,
    bounds: Some((1 << 20, 10 << 30)),
    names: &[],
};
static WRITERS: Setting<Count> = Setting {
    name: "writers",
    help: "number of bulk writers",
    quick: 2,
    full: 2,
    bounds: Some((1, 16)),
    names: &[],
};
static DURATION: Setting<Seconds> = Setting {
    name: "duration",
    help: "seconds of writing",
    quick: 15.0,
    full: 40.0,
    bounds: Some((1.0, 3600.0)),
    names: &[],
};
static SETTINGS: [&dyn AnySetting; 3] = [&BANDWIDTH, &WRITERS, &DURATION];

pub const HARD: u64 = 64 << 20;
pub const BACKGROUND: u64 = 32 << 20;
const CHUNK: usize = 512 << 10;

/// The longest write() that counts as a stall: half a MAX_PAUSE.
const STALL_MS: f64 = 100.0;
/// A p99 of 20 ms: the pauses are the rule, not one outlier.
const P99_MS: f64 = 20.0;

const THROTTLED: Check = Check {
    id: "writers-throttled",
    text: "A writer that pushes dirty memory past the limit is made to wait inside write(): the moment write latency explodes",
    source: "material 4 (seed 004)",
};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Plan {
    /// The testbed's write cap, bytes per second.
    pub bandwidth: u64,
    pub writers: usize,
    /// Seconds of writing.
    pub duration: f64,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Raw {
    /// The testbed's loop device (`/dev/loop0`).
    pub testbed_device: String,
    /// Sustained write-back throughput the testbed measured after it was built.
    pub testbed_measured_bytes_s: f64,
    /// vm.dirty_bytes and vm.dirty_background_bytes as set for the run.
    pub dirty_bytes: u64,
    pub dirty_background_bytes: u64,
    /// Bytes per write().
    pub chunk_bytes: u64,
    /// One trace per writer: when each write() started and how long it took.
    pub traces: Vec<WriterTrace>,
    /// Dirty and Writeback every 100 ms.
    pub polls: Vec<Poll>,
    /// "MAJOR:MINOR" of the testbed, the name of its bdi in the kernel's records.
    #[serde(default)]
    pub testbed_dev: String,
    /// The kernel's account of the run: every write() split by cause, the
    /// throttling decisions, the device's bandwidth estimates.
    #[serde(default)]
    pub kernel: TraceOutcome,
}

impl Lab for Throttle {
    type Plan = Plan;
    type Raw = Raw;

    fn meta(&self) -> &Meta {
        &META
    }

    fn settings(&self) -> Declared {
        &SETTINGS
    }

    fn plan(&self, p: &mut Planner) -> Plan {
        Plan {
            bandwidth: p.get(&BANDWIDTH),
            writers: p.get(&WRITERS) as usize,
            duration: p.get(&DURATION),
        }
    }

    fn measure(&self, plan: &Plan, ctx: &mut Context) -> Result<Measured<Raw>, LabError> {
        if let Some(why) = unavailable() {
            return Ok(Measured::Skipped { reason: why });
        }
        parse_bandwidth(&plan.bandwidth.to_string()).map_err(LabError::Failed)?;
        ctx.progress.stage("building the testbed");
        let size = (plan.bandwidth as f64 * plan.duration * 1.5) as u64 + (512 << 20);
        let tb = up_for_run(&ctx.config.scratch_dir, size, plan.bandwidth)?;
        let kernel = KernelTrace::writeback(ctx.machine);
        let result = write_on(&tb.mount, plan, ctx);
        let kernel = kernel.finish();
        let errors = down_for_run(&tb);
        if !errors.is_empty() {
            return Err(LabError::Failed(format!(
                "testbed teardown: {}",
                errors.join("; ")
            )));
        }
        let (traces, polls) = result?;
        Ok(Measured::Raw(Raw {
            testbed_device: tb.device.display().to_string(),
            testbed_measured_bytes_s: tb.measured_bytes_s,
            dirty_bytes: HARD,
            dirty_background_bytes: BACKGROUND,
            chunk_bytes: CHUNK as u64,
            traces,
            polls,
            testbed_dev: tb.dev.clone(),
            kernel,
        }))
    }

    fn judge(&self, plan: &Plan, raw: &Raw, env: &Environment) -> Output {
        judge(plan, raw, env.seed)
    }
}

/// The writers on the mounted testbed, with the dirty limits set for as long.
fn write_on(
    mount: &std::path::Path,
    plan: &Plan,
    ctx: &mut Context,
) -> Result<(Vec<WriterTrace>, Vec<Poll>), LabError> {
    trace::settle();
    let knobs = Knobs::set(&[
        ("vm.dirty_background_bytes", BACKGROUND.to_string()),
        ("vm.dirty_bytes", HARD.to_string()),
    ])?;
    ctx.progress.stage("writing");
    let specs: Vec<WriterSpec> = (0..plan.writers)
        .map(|i| WriterSpec {
            path: mount.join(format!("bulk-{i}.dat")),
            chunk: CHUNK,
            period: Duration::ZERO,
            count: None,
            fifo_priority: None,
            nice: None,
        })
        .collect();
    let progress = ctx.progress;
    let (traces, polls) = trace::run(
        specs,
        Duration::from_secs_f64(plan.duration),
        Duration::from_millis(100),
        &|f| progress.fraction(f),
    );
    drop(knobs);
    if let Some(e) = traces.iter().find_map(|t| t.error.clone()) {
        return Err(LabError::Failed(format!("writer: {e}")));
    }
    Ok((traces, polls))
}

fn plots(raw: &Raw) -> Vec<Plot> {
    let line = |name: &str, f: &dyn Fn(&Poll) -> u64| Series {
        name: name.into(),
        style: SeriesStyle::Line,
        points: raw.polls.iter().map(|p| [p.t_s, mib(f(p))]).collect(),
    };
    vec![
        Plot {
            id: "dirty".into(),
            title: "Dirty and Writeback on the throttled testbed".into(),
            x: Axis::new("time", "s", Scale::Linear),
            y: Axis::new("memory", "MiB", Scale::Linear),
            series: vec![
                line("Dirty", &|p| p.dirty_bytes),
                line("Writeback", &|p| p.writeback_bytes),
                line("Dirty + Writeback", &|p| p.dirty_bytes + p.writeback_bytes),
            ],
            markers: vec![],
            x_labels: vec![],
        },
        Plot {
            id: "latency".into(),
            title: "write() latency of each writer".into(),
            x: Axis::new("time", "s", Scale::Linear),
            y: Axis::new("latency", "ms", Scale::Log10),
            series: raw
                .traces
                .iter()
                .enumerate()
                .map(|(i, t)| Series {
                    name: format!("writer {i}"),
                    style: SeriesStyle::Points,
                    points: t
                        .start_s
                        .iter()
                        .zip(&t.latency_ms)
                        .map(|(a, b)| [*a, b.max(0.001)])
                        .collect(),
                })
                .collect(),
            markers: vec![],
            x_labels: vec![],
        },
    ]
}

fn judge(plan: &Plan, raw: &Raw, seed: u64) -> Output {
    let all: Vec<f64> = raw
        .traces
        .iter()
        .flat_map(|t| t.latency_ms.iter().copied())
        .collect();
    let st = latency_stats(&all);
    let peak_dw = raw
        .polls
        .iter()
        .map(|p| p.dirty_bytes + p.writeback_bytes)
        .max()
        .unwrap_or(0);
    let freerun = (raw.dirty_bytes + raw.dirty_background_bytes) / 2;
    let chunk = human_bytes(raw.chunk_bytes);
    let mut out = Output {
        findings: vec![
            finding(
                "p50_ms",
                st.p50,
                "ms",
                format!("median write() of {chunk}, all writers"),
            ),
            finding("p99_ms", st.p99, "ms", ""),
            finding("max_ms", st.max, "ms", ""),
            finding(
                "writes_over_200ms",
                st.over_200 as f64,
                "count",
                format!("of {} writes", all.len()),
            ),
            finding(
                "peak_dirty_plus_writeback_mib",
                mib(peak_dw),
                "MiB",
                format!(
                    "free-run ceiling {}, hard limit {}",
                    human_bytes(freerun),
                    human_bytes(raw.dirty_bytes)
                ),
            ),
            finding(
                "testbed_measured_mib_s",
                raw.testbed_measured_bytes_s / (1 << 20) as f64,
                "MiB/s",
                format!("cap {}/s", human_bytes(plan.bandwidth)),
            ),
        ],
        ..Default::default()
    };
    for (i, t) in raw.traces.iter().enumerate() {
        out.measurements.push(measurement(
            &format!("latency.writer{i}"),
            &format!("every write() of {chunk}"),
            "ms",
            t.latency_ms.clone(),
            seed,
            None,
        ));
        let dur = t.start_s.last().copied().unwrap_or(plan.duration).max(1e-9);
        out.findings.push(finding(
            &format!("throughput.writer{i}"),
            t.bytes as f64 / dur / (1 << 20) as f64,
            "MiB/s",
            "bytes written over the run",
        ));
    }
    let tids: Vec<u32> = raw.traces.iter().map(|t| t.tid).collect();
    out.findings.extend(stall_causes::findings(
        "kernel",
        &stall_causes::calls_of(&raw.kernel, &tids),
    ));
    out.findings.extend(kernel_findings(raw, &tids));
    out.claims = vec![
        claim(raw, &all, peak_dw, freerun),
        stall_causes::explained_claim(&raw.kernel, &tids),
    ];
    out.plots = plots(raw);
    out.notes.push(format!(
        "testbed {} capped at {}/s; dirty_bytes {}, dirty_background_bytes {} (journaled, restored)",
        raw.testbed_device,
        human_bytes(plan.bandwidth),
        human_bytes(raw.dirty_bytes),
        human_bytes(raw.dirty_background_bytes)
    ));
    out.notes.extend(stall_causes::notes(&raw.kernel, &tids));
    out
}

/// The kernel's pauses of the writers and its bandwidth estimate of the testbed.
fn kernel_findings(raw: &Raw, tids: &[u32]) -> Vec<oslab_model::Finding> {
    let Some(c) = raw.kernel.captured() else {
        return Vec::new();
    };
    let pauses: Vec<f64> = c
        .pauses
        .iter()
        .filter(|p| tids.contains(&p.pid) && p.pause_jiffies > 0)
        .map(|p| oslab_trace::analysis::jiffies_ns(p.pause_jiffies, c.hz) as f64 / 1e6)
        .collect();
    let mut out = vec![finding(
        "kernel.pauses",
        pauses.len() as f64,
        "count",
        "balance_dirty_pages decisions that put a writer to sleep",
    )];
    if let Some(max) = pauses.iter().copied().reduce(f64::max) {
        out.push(finding(
            "kernel.max_pause_ms",
            max,
            "ms",
            "the longest (MAX_PAUSE is 200 ms)",
        ));
    }
    if let Some((avg, now, n)) = c.bandwidth_estimate(&raw.testbed_dev) {
        out.push(finding(
            "kernel.avg_write_bw_mib_s",
            avg / (1 << 20) as f64,
            "MiB/s",
            format!(
                "the kernel's estimate of the testbed (avg_write_bandwidth, median of {n}; write_bandwidth {:.1} MiB/s) beside the {:.1} MiB/s the testbed measured",
                now / (1 << 20) as f64,
                raw.testbed_measured_bytes_s / (1 << 20) as f64
            ),
        ));
    }
    out
}

fn claim(raw: &Raw, all: &[f64], peak_dw: u64, freerun: u64) -> oslab_model::Claim {
    let st = latency_stats(all);
    let none = "no write() completed";
    let timed = |v: f64| (!all.is_empty()).then_some(v);
    let conditions = [
        Condition::new(
            "peak Dirty + Writeback",
            "MiB",
            Rule::AtLeast(mib(freerun)),
            mib(peak_dw),
        ),
        Condition::from_option(
            "the longest write()",
            "ms",
            Rule::AtLeast(STALL_MS),
            timed(st.max),
            none,
        ),
        Condition::from_option(
            "write() p99",
            "ms",
            Rule::AtLeast(P99_MS),
            timed(st.p99),
            none,
        ),
    ];
    let context = format!(
        "write() p50 {}, {} of {} writes over 200 ms; free-run point {}",
        figure(st.p50, "ms"),
        st.over_200,
        all.len(),
        human_bytes(freerun)
    );
    let device = format!(
        "the device (measured {:.1} MiB/s)",
        raw.testbed_measured_bytes_s / (1 << 20) as f64
    );
    judge_all(&THROTTLED, &conditions, &context, |o| {
        if o.holds() {
            format!(
                "balance_dirty_pages() paused the writers (up to 200 ms a pause) once they outran {device}"
            )
        } else if o.failed(0) {
            format!(
                "Dirty + Writeback peaked at {:.1} MiB, below the free-run point: {device} kept up with the writers, so the kernel had no reason to pause them",
                mib(peak_dw)
            )
        } else {
            format!(
                "the writers reached the free-run point, but the kernel's pauses stayed short (longest {}, p99 {}): they outran {device} only by a little",
                figure(st.max, "ms"),
                figure(st.p99, "ms")
            )
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use oslab_model::Verdict;

    fn raw(latency_ms: Vec<f64>, peak_mib: u64) -> Raw {
        let start_s = (0..latency_ms.len()).map(|i| i as f64 * 0.1).collect();
        Raw {
            testbed_device: "/dev/loop9".into(),
            testbed_measured_bytes_s: 10.0 * (1 << 20) as f64,
            dirty_bytes: HARD,
            dirty_background_bytes: BACKGROUND,
            chunk_bytes: CHUNK as u64,
            traces: vec![WriterTrace {
                bytes: latency_ms.len() as u64 * CHUNK as u64,
                start_s,
                latency_ms,
                error: None,
                tid: 0,
                tgid: 0,
            }],
            polls: vec![Poll {
                t_s: 1.0,
                dirty_bytes: (peak_mib << 20) / 2,
                writeback_bytes: (peak_mib << 20) / 2,
                ..Default::default()
            }],
            testbed_dev: "7:9".into(),
            kernel: TraceOutcome::default(),
        }
    }

    fn judged(r: &Raw) -> oslab_model::Claim {
        let plan = Plan {
            bandwidth: 10 << 20,
            writers: 1,
            duration: 15.0,
        };
        judge(&plan, r, 1).claims.remove(0)
    }

    /// 100 writes: `slow` of them take `ms`, the rest 1 ms.
    fn lat(slow: usize, ms: f64) -> Vec<f64> {
        (0..100).map(|i| if i < slow { ms } else { 1.0 }).collect()
    }

    #[test]
    fn every_verdict() {
        let c = judged(&raw(lat(10, 150.0), 60));
        assert_eq!(c.verdict, Verdict::Holds, "{c:?}");
        assert!(c.expectation.contains("p99 at least 20 ms"), "{c:?}");
        // the limit never reached
        let c = judged(&raw(lat(10, 150.0), 40));
        assert_eq!(c.verdict, Verdict::Differs);
        assert!(c.why.contains("below the free-run point"), "{}", c.why);
        // one long write, but the p99 a page-cache copy: differs on the p99 alone
        let c = judged(&raw(lat(1, 150.0), 60));
        assert_eq!(c.verdict, Verdict::Differs);
        assert!(c.why.contains("stayed short"), "{}", c.why);
        // nothing written
        let c = judged(&raw(vec![], 60));
        assert_eq!(c.verdict, Verdict::NotJudged);
        assert_eq!(c.why, "no write() completed");
    }

    #[test]
    fn findings_per_writer() {
        let plan = Plan {
            bandwidth: 10 << 20,
            writers: 1,
            duration: 15.0,
        };
        let out = judge(&plan, &raw(lat(10, 250.0), 60), 1);
        let f = |n: &str| out.findings.iter().find(|f| f.name == n).unwrap().value;
        assert_eq!(f("max_ms"), 250.0);
        assert_eq!(f("writes_over_200ms"), 10.0);
        assert_eq!(f("peak_dirty_plus_writeback_mib"), 60.0);
        assert_eq!(out.measurements[0].name, "latency.writer0");
        assert!(out.notes[0].contains("/dev/loop9"));
    }
}
