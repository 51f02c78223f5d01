//! Judging wb.throttle: the writers' latency figures, the kernel's account of the
//! slow writes, the claim and the plots. Pure: from the plan and the raw data.

use oslab_model::{Axis, Plot, Scale, Series, SeriesStyle};
use oslab_units::human_bytes;

use super::{Plan, Raw};
use crate::wb::common::stall_causes;
use crate::wb::wcall::cell_checks::judge_all;
use oslab_harness::check::{Check, Condition, Rule, figure};
use oslab_harness::{Output, finding, measurement};
use oslab_services::timed_writer::{Poll, mib};
use oslab_services::write_latency::latency_stats;

/// The longest write() that counts as a stall: half a MAX_PAUSE.
const STALL_MS: f64 = 100.0;
/// A p99 of 20 ms: the pauses are the rule, not one outlier.
const P99_MS: f64 = 20.0;

const THROTTLED: Check = Check {
    id: "writers-throttled",
    tolerates: &oslab_harness::interference::TIMES,
    text: "A writer that pushes dirty memory past the limit is made to wait inside write(): the moment write latency explodes",
    source: "Kim and Park, \"A Dynamic Allocation of Write Cache to Improve I/O Real-Time Responsiveness in Linux\" (2009)",
};

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

pub(super) fn judge(plan: &Plan, raw: &Raw, seed: u64) -> Output {
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
    writer_figures(&mut out, plan, raw, &chunk, seed);
    let tids: Vec<u32> = raw.traces.iter().map(|t| t.tid).collect();
    out.findings.extend(stall_causes::findings(
        "kernel",
        &stall_causes::calls_of(&raw.kernel, &tids),
    ));
    out.findings.extend(kernel_findings(raw, &tids));
    let hz = raw
        .kernel
        .captured()
        .map_or(250, |c| u64::from(c.hz.max(1)));
    let (model_findings, model_claim) =
        super::model::check(&super::model::simulated(plan, raw, hz), &st);
    out.findings.extend(model_findings);
    out.claims = vec![
        claim(raw, &all, peak_dw, freerun),
        stall_causes::explained_claim(&raw.kernel, &tids),
        model_claim,
    ];
    out.plots = plots(raw);
    out.notes.push(format!(
        "testbed {} capped at {}/s ({}); dirty_bytes {}, dirty_background_bytes {} (journaled, restored)",
        raw.testbed_device,
        human_bytes(plan.bandwidth),
        raw.testbed_cap.describe(),
        human_bytes(raw.dirty_bytes),
        human_bytes(raw.dirty_background_bytes)
    ));
    out.notes.extend(stall_causes::notes(&raw.kernel, &tids));
    out
}

/// Each writer's write() latencies and throughput.
fn writer_figures(out: &mut Output, plan: &Plan, raw: &Raw, chunk: &str, seed: u64) {
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
            "bytes handed to write() over the run, per second: pages still dirty or under write back at the end count, so the writers together can exceed the testbed's cap",
        ));
    }
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
