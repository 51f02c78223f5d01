//! `wb.throttle`: writers faster than the device run into the dirty limit and wait
//! inside write() (the "fourth way" a flush starts, material section 4; seed 004).
//!
//! Method: on the testbed (a loop device capped at `bandwidth`), with
//! dirty_bytes = 64 MiB and dirty_background_bytes = 32 MiB, two bulk writers write
//! 512 KiB chunks back to back. Every write() is timed. Once Dirty + Writeback
//! passes the free-run ceiling ((hard + background) / 2 = 48 MiB) the kernel's
//! balance_dirty_pages() pauses the writers, up to 200 ms per pause (MAX_PAUSE), and
//! one write() can hold several pauses.

use std::time::Duration;

use oslab_model::{Axis, Claim, Plot, Scale, Series, SeriesStyle, Verdict};
use oslab_sys::parse::size::human_bytes;

use super::knobs::Knobs;
use super::testbed::{down_for_run, parse_bandwidth, unavailable, up_for_run};
use super::trace::{self, WriterSpec, mib};
use crate::experiment::{
    Context, Experiment, LabError, Meta, Needs, Outcome, Output, finding, measurement,
};
use crate::settings::{AnySetting, Bytes, Count, Declared, Seconds, Setting};

pub struct Throttle;

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

impl Experiment for Throttle {
    fn meta(&self) -> &Meta {
        &META
    }

    fn settings(&self) -> Declared {
        &SETTINGS
    }

    fn run(&self, ctx: &mut Context) -> Result<Outcome, LabError> {
        if let Some(why) = unavailable() {
            return Ok(Outcome::Skipped { reason: why });
        }
        let bw = ctx.get(&BANDWIDTH);
        parse_bandwidth(&bw.to_string()).map_err(LabError::Failed)?;
        let writers = ctx.get(&WRITERS) as usize;
        let secs = ctx.get(&DURATION);
        ctx.progress.stage("building the testbed");
        let size = (bw as f64 * secs * 1.5) as u64 + (512 << 20);
        let tb = up_for_run(&ctx.config.scratch_dir, size, bw)?;
        let result = (|| -> Result<Outcome, LabError> {
            trace::settle();
            let _k = Knobs::set(&[
                ("vm.dirty_background_bytes", BACKGROUND.to_string()),
                ("vm.dirty_bytes", HARD.to_string()),
            ])?;
            ctx.progress.stage("writing");
            let specs: Vec<WriterSpec> = (0..writers)
                .map(|i| WriterSpec {
                    path: tb.mount.join(format!("bulk-{i}.dat")),
                    chunk: 512 << 10,
                    period: Duration::ZERO,
                    count: None,
                    fifo_priority: None,
                    nice: None,
                })
                .collect();
            let progress = ctx.progress;
            let (traces, polls) = trace::run(
                specs,
                Duration::from_secs_f64(secs),
                Duration::from_millis(100),
                &|f| progress.fraction(f),
            );
            drop(_k);
            if let Some(e) = traces.iter().find_map(|t| t.error.clone()) {
                return Err(LabError::Failed(format!("writer: {e}")));
            }
            let seed = ctx.config.seed;
            let all: Vec<f64> = traces.iter().flat_map(|t| t.latency_ms.clone()).collect();
            let st = crate::simrun::latency_stats(&all);
            let (p50, p99, max, over) = (st.p50, st.p99, st.max, st.over_200);
            let peak_dw = polls
                .iter()
                .map(|p| p.dirty_bytes + p.writeback_bytes)
                .max()
                .unwrap_or(0);
            let freerun = (HARD + BACKGROUND) / 2;
            let mut measurements = Vec::new();
            let mut findings = vec![
                finding(
                    "p50_ms",
                    p50,
                    "ms",
                    "median write() of 512 KiB, all writers",
                ),
                finding("p99_ms", p99, "ms", ""),
                finding("max_ms", max, "ms", ""),
                finding(
                    "writes_over_200ms",
                    over as f64,
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
                        human_bytes(HARD)
                    ),
                ),
                finding(
                    "testbed_measured_mib_s",
                    tb.measured_bytes_s / (1 << 20) as f64,
                    "MiB/s",
                    format!("cap {}/s", human_bytes(bw)),
                ),
            ];
            for (i, t) in traces.iter().enumerate() {
                measurements.push(measurement(
                    &format!("latency.writer{i}"),
                    "every write() of 512 KiB",
                    "ms",
                    t.latency_ms.clone(),
                    seed,
                    None,
                ));
                let dur = t.start_s.last().copied().unwrap_or(secs).max(1e-9);
                findings.push(finding(
                    &format!("throughput.writer{i}"),
                    t.bytes as f64 / dur / (1 << 20) as f64,
                    "MiB/s",
                    "bytes written over the run",
                ));
            }
            let holds = max >= 100.0 && p99 >= 20.0 && peak_dw >= freerun;
            let claim = Claim {
                id: "writers-throttled".into(),
                text: "A writer that pushes dirty memory past the limit is made to wait inside write(): the moment write latency explodes".into(),
                source: "material 4 (seed 004)".into(),
                expectation: format!("Dirty + Writeback reaches the free-run ceiling ({}) and write() then takes 100 ms or more", human_bytes(freerun)),
                observed: format!("peak Dirty+Writeback {:.1} MiB; write() p50 {p50:.1} ms, p99 {p99:.1} ms, max {max:.0} ms, {over} over 200 ms", mib(peak_dw)),
                verdict: if holds { Verdict::Holds } else { Verdict::Differs },
                why: if holds {
                    "balance_dirty_pages() paused the writers (up to 200 ms a pause) once they outran the device".into()
                } else {
                    "the writers were never held back long: the device kept up, or the limit was not reached".into()
                },
            };
            let plots = vec![
                Plot {
                    id: "dirty".into(),
                    title: "Dirty and Writeback on the throttled testbed".into(),
                    x: Axis::new("time", "s", Scale::Linear),
                    y: Axis::new("memory", "MiB", Scale::Linear),
                    series: vec![
                        Series {
                            name: "Dirty".into(),
                            style: SeriesStyle::Line,
                            points: polls.iter().map(|p| [p.t_s, mib(p.dirty_bytes)]).collect(),
                        },
                        Series {
                            name: "Writeback".into(),
                            style: SeriesStyle::Line,
                            points: polls
                                .iter()
                                .map(|p| [p.t_s, mib(p.writeback_bytes)])
                                .collect(),
                        },
                        Series {
                            name: "Dirty + Writeback".into(),
                            style: SeriesStyle::Line,
                            points: polls
                                .iter()
                                .map(|p| [p.t_s, mib(p.dirty_bytes + p.writeback_bytes)])
                                .collect(),
                        },
                    ],
                    markers: vec![],
                    x_labels: vec![],
                },
                Plot {
                    id: "latency".into(),
                    title: "write() latency of each writer".into(),
                    x: Axis::new("time", "s", Scale::Linear),
                    y: Axis::new("latency", "ms", Scale::Log10),
                    series: traces
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
            ];
            Ok(Outcome::Completed(Output {
                measurements,
                findings,
                claims: vec![claim],
                plots,
                notes: vec![format!(
                    "testbed {} capped at {}/s; dirty_bytes {}, dirty_background_bytes {} (journaled, restored)",
                    tb.device.display(),
                    human_bytes(bw),
                    human_bytes(HARD),
                    human_bytes(BACKGROUND)
                )],
                ..Default::default()
            }))
        })();
        let errors = down_for_run(&tb);
        if !errors.is_empty() {
            return Err(LabError::Failed(format!(
                "testbed teardown: {}",
                errors.join("; ")
            )));
        }
        result
    }
}
