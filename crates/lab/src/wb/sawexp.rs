//! `wb.background` and `wb.periodic`: one steady writer, a sawtooth in Dirty, and
//! the sawtooth the kernel's rules predict.
//!
//! wb.background (material section 4, experiment A): periodic write back off
//! (dirty_writeback_centisecs = 0), a background limit in bytes, a writer at a set
//! rate. Dirty climbs to the limit, then the background flusher writes chunks of
//! round_down(min(bandwidth/2, hard limit/8) + 4 MiB, 4 MiB) until Dirty is under the
//! limit again (fs/fs-writeback.c writeback_chunk_size), so Dirty saws between the
//! limit and one chunk below it with a period of chunk / rate. The author's 5.13
//! kernel was seen falling to ~0 instead.
//!
//! wb.periodic (experiment B): limits far away, expire and writeback intervals set.
//! The flusher first wakes one writeback interval after the file got dirty and then
//! every interval; it writes the whole inode once its dirtied_when is older than the
//! expire interval. So Dirty drops to ~0 every writeback x ceil(expire / writeback)
//! seconds, with a peak of rate x that.
//!
//! Both run on the scratch directory's file system, after a sync so that other dirty
//! data does not mix in; the poller reads global Dirty (what the kernel decides on)
//! and the test file's own dirty pages (cachestat) at 10 Hz.

use std::time::Duration;

use oslab_model::{Axis, Claim, Plot, Scale, Series, SeriesStyle, Verdict};
use oslab_stats::sawtooth::{Sawtooth, sawtooth};

use super::knobs::Knobs;
use super::trace::{self, Poll, WriterSpec, mib};
use crate::experiment::{Context, LabError, Outcome, Output, finding};
use crate::scratch::Scratch;
use crate::settings::{Bytes, Seconds, Setting};

/// The writer's rate, shared by wb.background and wb.periodic.
pub static RATE: Setting<Bytes> = Setting {
    name: "rate",
    help: "writer rate per second",
    quick: 4 << 20,
    full: 4 << 20,
    bounds: Some((1 << 20, 1 << 30)),
    names: &[],
};

/// How long the writer writes, shared by wb.background and wb.periodic.
pub static DURATION: Setting<Seconds> = Setting {
    name: "duration",
    help: "seconds of writing",
    quick: 25.0,
    full: 60.0,
    bounds: Some((1.0, 3600.0)),
    names: &[],
};

#[derive(Debug, Clone, Copy)]
pub struct Prediction {
    pub first_peak_s: f64,
    pub peak_mib: f64,
    pub trough_mib: f64,
    pub period_s: f64,
}

pub fn rel_err(measured: f64, predicted: f64) -> f64 {
    if predicted == 0.0 {
        measured.abs()
    } else {
        (measured - predicted).abs() / predicted.abs()
    }
}

/// Dirty and the test file's dirty pages over time, with the prediction's lines.
pub fn dirty_plot(polls: &[Poll], p: &Prediction, title: &str) -> Plot {
    let horizon = polls.last().map_or(0.0, |x| x.t_s);
    Plot {
        id: "dirty".into(),
        title: title.into(),
        x: Axis::new("time", "s", Scale::Linear),
        y: Axis::new("memory", "MiB", Scale::Linear),
        series: vec![
            Series {
                name: "Dirty (meminfo)".into(),
                style: SeriesStyle::Line,
                points: polls.iter().map(|x| [x.t_s, mib(x.dirty_bytes)]).collect(),
            },
            Series {
                name: "test file dirty (cachestat)".into(),
                style: SeriesStyle::Line,
                points: polls
                    .iter()
                    .map(|x| [x.t_s, mib(x.files_dirty_bytes)])
                    .collect(),
            },
            Series {
                name: "Writeback".into(),
                style: SeriesStyle::Line,
                points: polls
                    .iter()
                    .map(|x| [x.t_s, mib(x.writeback_bytes)])
                    .collect(),
            },
            Series {
                name: "predicted peak".into(),
                style: SeriesStyle::Line,
                points: vec![[0.0, p.peak_mib], [horizon, p.peak_mib]],
            },
            Series {
                name: "predicted trough".into(),
                style: SeriesStyle::Line,
                points: vec![[0.0, p.trough_mib], [horizon, p.trough_mib]],
            },
        ],
        markers: vec![],
        x_labels: vec![],
    }
}

/// Runs one writer at `rate` bytes/s (10 writes a second) with `knobs` in force.
pub fn run_sawtooth(
    ctx: &mut Context,
    id: &str,
    knobs: &[(&str, String)],
    rate: u64,
    duration: Duration,
) -> Result<(Vec<Poll>, Sawtooth, Vec<f64>), LabError> {
    let scratch = Scratch::create(
        &ctx.config.scratch_dir,
        id,
        rate * duration.as_secs().max(1) * 2 + (64 << 20),
    )?;
    trace::settle();
    let _k = Knobs::set(knobs)?;
    let chunk = (rate / 10).max(4096) as usize;
    let writer = WriterSpec {
        path: scratch.file("writer.dat"),
        chunk,
        period: Duration::from_millis(100),
        count: None,
        fifo_priority: None,
        nice: None,
    };
    let progress = ctx.progress;
    let (traces, polls) = trace::run(vec![writer], duration, Duration::from_millis(100), &|f| {
        progress.fraction(f)
    });
    drop(_k);
    if let Some(e) = traces.first().and_then(|t| t.error.clone()) {
        return Err(LabError::Failed(format!("writer: {e}")));
    }
    let t: Vec<f64> = polls.iter().map(|p| p.t_s).collect();
    let y: Vec<f64> = polls.iter().map(|p| mib(p.dirty_bytes)).collect();
    let min_drop = (mib(rate) * 0.5).max(1.0);
    let saw = sawtooth(&t, &y, min_drop);
    let lat = traces
        .first()
        .map(|t| t.latency_ms.clone())
        .unwrap_or_default();
    Ok((polls, saw, lat))
}

/// Findings and the "matches the prediction" claim for a measured sawtooth.
pub fn compare(
    saw: &Sawtooth,
    p: &Prediction,
    claim_id: &str,
    claim_text: &str,
    source: &str,
) -> (Vec<oslab_model::Finding>, Claim) {
    let mut f = vec![
        finding(
            "predicted_peak_mib",
            p.peak_mib,
            "MiB",
            "from the settings and the kernel's rules",
        ),
        finding("predicted_trough_mib", p.trough_mib, "MiB", ""),
        finding("predicted_period_s", p.period_s, "s", ""),
        finding("predicted_first_peak_s", p.first_peak_s, "s", ""),
        finding(
            "peaks",
            saw.peaks.len() as f64,
            "count",
            "drops of Dirty found in the series",
        ),
    ];
    let m = |x: Option<f64>| x.unwrap_or(f64::NAN);
    f.push(finding(
        "peak_mib",
        m(saw.peak_median),
        "MiB",
        format!("median of {} peaks", saw.peaks.len()),
    ));
    f.push(finding(
        "trough_mib",
        m(saw.trough_median),
        "MiB",
        "median trough",
    ));
    f.push(finding(
        "period_s",
        m(saw.period),
        "s",
        "median time between peaks",
    ));
    f.push(finding(
        "first_peak_s",
        m(saw.first_peak_t),
        "s",
        "time of the first peak",
    ));
    let (ep, et, eper) = (
        saw.peak_median.map(|x| rel_err(x, p.peak_mib)),
        saw.trough_median
            .map(|x| (x - p.trough_mib).abs() / p.peak_mib.max(1e-9)),
        saw.period.map(|x| rel_err(x, p.period_s)),
    );
    if let Some(e) = ep {
        f.push(finding(
            "peak_error",
            e,
            "fraction",
            "|measured - predicted| / predicted",
        ));
    }
    if let Some(e) = et {
        f.push(finding(
            "trough_error",
            e,
            "fraction",
            "|measured - predicted| / predicted peak",
        ));
    }
    if let Some(e) = eper {
        f.push(finding(
            "period_error",
            e,
            "fraction",
            "|measured - predicted| / predicted",
        ));
    }
    let within = |e: Option<f64>| e.is_some_and(|e| e <= 0.10);
    let verdict = if saw.peaks.len() < 2 {
        Verdict::NotTestable
    } else if within(ep) && within(eper) {
        Verdict::Holds
    } else {
        Verdict::Differs
    };
    let claim = Claim {
        id: claim_id.into(),
        text: claim_text.into(),
        source: source.into(),
        expectation: format!(
            "peaks of {:.1} MiB every {:.1} s, troughs near {:.1} MiB (within 10 %)",
            p.peak_mib, p.period_s, p.trough_mib
        ),
        observed: format!(
            "{} peaks: median {:.1} MiB every {:.2} s, troughs {:.1} MiB",
            saw.peaks.len(),
            m(saw.peak_median),
            m(saw.period),
            m(saw.trough_median)
        ),
        verdict,
        why: match verdict {
            Verdict::NotTestable | Verdict::NotJudged => "fewer than two flushes in the run: run longer (full mode)".into(),
            Verdict::Holds => "the kernel flushed where its rules say".into(),
            Verdict::Differs => "the measured sawtooth is off the prediction by more than 10 %; other dirtiers, or a device slower than the chunk assumes".into(),
        },
    };
    (f, claim)
}

/// Assembles the output of a sawtooth experiment.
#[allow(clippy::too_many_arguments)]
pub fn output(
    polls: &[Poll],
    p: &Prediction,
    claims: Vec<Claim>,
    mut findings: Vec<oslab_model::Finding>,
    title: &str,
    notes: Vec<String>,
    lat: &[f64],
    seed: u64,
) -> Outcome {
    if let Some(max) = lat.iter().copied().reduce(f64::max) {
        findings.push(finding(
            "max_write_ms",
            max,
            "ms",
            "slowest write() of the writer",
        ));
    }
    Outcome::Completed(Output {
        measurements: vec![crate::experiment::measurement(
            "write_latency",
            "every write() of the writer",
            "ms",
            lat.to_vec(),
            seed,
            None,
        )],
        plots: vec![dirty_plot(polls, p, title)],
        claims,
        findings,
        notes,
        ..Default::default()
    })
}
