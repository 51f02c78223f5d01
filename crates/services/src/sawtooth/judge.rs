//! Judging a sawtooth run: the sawtooth of global Dirty, the figures beside it
//! (the device's writes, Dirty beside the test file, the kernel's limits) and the
//! claim that it matches the prediction.

use oslab_model::{Axis, Claim, Finding, Plot, Scale, Series, SeriesStyle};
use oslab_stats::sawtooth::{Sawtooth, sawtooth};

use super::{KernelPoll, SawRaw, rel_err};
use crate::dirty_rules::Prediction;
use crate::timed_writer::mib;
use oslab_harness::check::{Check, Condition, Outcome, Rule};
use oslab_harness::{Output, finding, measurement};

/// How close to the prediction "matches" is: 10 % of the figure (of the peak for
/// troughs, which may be ~0).
pub const TOLERANCE: f64 = 0.10;

const NO_DROP: &str =
    "Dirty never dropped by half a second of writing in the run: run longer (full mode)";
const ONE_DROP: &str =
    "fewer than two drops of Dirty in the run, so no period: run longer (full mode)";

/// The rule behind each predicted figure, in words, for the claim's expectation.
pub struct Rules {
    pub peak: String,
    pub period: String,
    pub trough: String,
}

/// The sawtooth of global Dirty; a drop counts when it is at least half a second of
/// writing (1 MiB at least).
pub fn sawtooth_of(raw: &SawRaw, rate: u64) -> Sawtooth {
    let t: Vec<f64> = raw.polls.iter().map(|p| p.poll.t_s).collect();
    let y: Vec<f64> = raw.polls.iter().map(|p| mib(p.poll.dirty_bytes)).collect();
    sawtooth(&t, &y, (mib(rate) * 0.5).max(1.0))
}

/// The sawtooth of the test file's own dirty pages (cachestat): the writer's share
/// of Dirty, without other programs' pages.
pub fn file_sawtooth_of(raw: &SawRaw, rate: u64) -> Sawtooth {
    let t: Vec<f64> = raw.polls.iter().map(|p| p.poll.t_s).collect();
    let y: Vec<f64> = raw
        .polls
        .iter()
        .map(|p| mib(p.poll.files_dirty_bytes))
        .collect();
    sawtooth(&t, &y, (mib(rate) * 0.5).max(1.0))
}

/// What the test file's own dirty pages did, in words, when other programs' dirty
/// pages were a sizeable part of Dirty (above the tolerance of the predicted peak).
pub fn others_text(raw: &SawRaw, rate: u64, predicted_peak_mib: f64) -> Option<String> {
    let other = other_dirty_mib(&raw.polls)?;
    if other <= TOLERANCE * predicted_peak_mib {
        return None;
    }
    let f = file_sawtooth_of(raw, rate);
    let own = match (f.peak_median, f.trough_median, f.period) {
        (Some(p), Some(t), Some(per)) => format!(
            "; the test file's own dirty pages sawed between {p:.1} and {t:.1} MiB every {per:.2} s"
        ),
        _ => String::new(),
    };
    Some(format!(
        "other programs kept {other:.1} MiB dirty beside the test file (median), which moves global Dirty{own}{}",
        other_dirtiers(raw)
    ))
}

/// The processes besides oslab that dirtied most pages during the run, by the
/// kernel's count: "; the kernel counted cargo (pid 12) 40.0 MiB, ...".
fn other_dirtiers(raw: &SawRaw) -> String {
    let Some(c) = raw.kernel.captured() else {
        return String::new();
    };
    let named: Vec<String> = c
        .dirtiers
        .iter()
        .filter(|d| d.tgid != raw.writer.tgid && d.pages * c.page_size >= 1 << 20)
        .take(3)
        .map(|d| {
            format!(
                "{} (pid {}) {:.1} MiB",
                d.comm,
                d.tgid,
                mib(d.pages * c.page_size)
            )
        })
        .collect();
    if named.is_empty() {
        String::new()
    } else {
        format!("; the kernel counted pages dirtied by {}", named.join(", "))
    }
}

/// The device's write rate between consecutive polls: (end time, MiB/s).
pub fn device_rates(polls: &[KernelPoll]) -> Vec<[f64; 2]> {
    polls
        .windows(2)
        .filter_map(|w| {
            let (a, b) = (w[0].device_written_bytes?, w[1].device_written_bytes?);
            let dt = w[1].poll.t_s - w[0].poll.t_s;
            (dt > 0.0).then(|| [w[1].poll.t_s, mib(b.saturating_sub(a)) / dt])
        })
        .collect()
}

/// The best mean over `n` consecutive rates (1 s of 10 Hz polls for n = 10).
pub fn best_window(rates: &[[f64; 2]], n: usize) -> Option<f64> {
    rates
        .windows(n.max(1))
        .map(|w| w.iter().map(|r| r[1]).sum::<f64>() / w.len() as f64)
        .reduce(f64::max)
}

/// The median of Dirty beside the test file's own dirty pages, MiB.
pub fn other_dirty_mib(polls: &[KernelPoll]) -> Option<f64> {
    let v: Vec<f64> = polls
        .iter()
        .map(|p| mib(p.poll.dirty_bytes.saturating_sub(p.poll.files_dirty_bytes)))
        .collect();
    oslab_stats::median(&v)
}

fn prediction_findings(saw: &Sawtooth, p: &Prediction) -> Vec<Finding> {
    let m = |x: Option<f64>| x.unwrap_or(f64::NAN);
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
        finding(
            "peak_mib",
            m(saw.peak_median),
            "MiB",
            format!("median of {} peaks", saw.peaks.len()),
        ),
        finding("trough_mib", m(saw.trough_median), "MiB", "median trough"),
        finding("period_s", m(saw.period), "s", "median time between peaks"),
        finding(
            "first_peak_s",
            m(saw.first_peak_t),
            "s",
            "time of the first peak",
        ),
    ];
    let errors = [
        (
            "peak_error",
            saw.peak_median.map(|x| rel_err(x, p.peak_mib)),
            "|measured - predicted| / predicted",
        ),
        (
            "trough_error",
            saw.trough_median
                .map(|x| (x - p.trough_mib).abs() / p.peak_mib.max(1e-9)),
            "|measured - predicted| / predicted peak",
        ),
        (
            "period_error",
            saw.period.map(|x| rel_err(x, p.period_s)),
            "|measured - predicted| / predicted",
        ),
    ];
    for (name, e, detail) in errors {
        if let Some(e) = e {
            f.push(finding(name, e, "fraction", detail));
        }
    }
    f
}

/// The claim that the sawtooth matches the prediction: median peak and period within
/// 10 % of theirs, median trough within 10 % of the peak of its own.
pub fn matches_prediction(
    check: &Check,
    raw: &SawRaw,
    saw: &Sawtooth,
    p: &Prediction,
    rules: &Rules,
    why: impl FnOnce(&Outcome) -> String,
) -> Claim {
    let rel = |target| Rule::WithinRel {
        target,
        tol: TOLERANCE,
    };
    let conditions = [
        Condition::from_option(
            format!("median peak ({})", rules.peak),
            "MiB",
            rel(p.peak_mib),
            saw.peak_median,
            NO_DROP,
        ),
        Condition::from_option(
            format!("median period ({})", rules.period),
            "s",
            rel(p.period_s),
            saw.period,
            ONE_DROP,
        ),
        Condition::from_option(
            format!("median trough ({})", rules.trough),
            "MiB",
            Rule::WithinAbs {
                target: p.trough_mib,
                tol: TOLERANCE * p.peak_mib,
            },
            saw.trough_median,
            NO_DROP,
        ),
    ];
    check.judge(&conditions, &context(raw, saw), why)
}

fn context(raw: &SawRaw, saw: &Sawtooth) -> String {
    let limit = |pages| {
        raw.threshold_mib(pages)
            .map_or_else(|| "unread".into(), |m| format!("{m:.1} MiB"))
    };
    format!(
        "{} peaks, the first at {:.1} s; the kernel's limits while writing: background {}, hard {} (/proc/vmstat)",
        saw.peaks.len(),
        saw.first_peak_t.unwrap_or(f64::NAN),
        limit(raw.thresholds.background_pages),
        limit(raw.thresholds.dirty_pages)
    )
}

/// Dirty and the test file's dirty pages over time, with the prediction's lines.
pub fn dirty_plot(polls: &[KernelPoll], p: &Prediction, title: &str) -> Plot {
    let horizon = polls.last().map_or(0.0, |x| x.poll.t_s);
    let line = |name: &str, f: fn(&KernelPoll) -> u64| Series {
        name: name.into(),
        style: SeriesStyle::Line,
        points: polls.iter().map(|x| [x.poll.t_s, mib(f(x))]).collect(),
    };
    let level = |name: &str, y: f64| Series {
        name: name.into(),
        style: SeriesStyle::Line,
        points: vec![[0.0, y], [horizon, y]],
    };
    Plot {
        id: "dirty".into(),
        title: title.into(),
        x: Axis::new("time", "s", Scale::Linear),
        y: Axis::new("memory", "MiB", Scale::Linear),
        series: vec![
            line("Dirty (meminfo)", |x| x.poll.dirty_bytes),
            line("test file dirty (cachestat)", |x| x.poll.files_dirty_bytes),
            line("Writeback", |x| x.poll.writeback_bytes),
            level("predicted peak", p.peak_mib),
            level("predicted trough", p.trough_mib),
        ],
        markers: vec![],
        x_labels: vec![],
    }
}

/// The figures of the run beside the sawtooth: the writer's slowest write, the
/// device's best second, Dirty beside the test file and the file's own sawtooth,
/// the kernel's estimate.
fn run_findings(raw: &SawRaw, rate: u64) -> Vec<Finding> {
    let mut f = Vec::new();
    let own = file_sawtooth_of(raw, rate);
    let m = |x: Option<f64>| x.unwrap_or(f64::NAN);
    for (name, v, unit, detail) in [
        (
            "file_peak_mib",
            own.peak_median,
            "MiB",
            "median peak of the test file's own dirty pages (cachestat)",
        ),
        (
            "file_trough_mib",
            own.trough_median,
            "MiB",
            "median trough of the test file's own dirty pages",
        ),
        (
            "file_period_s",
            own.period,
            "s",
            "median time between the test file's own peaks",
        ),
    ] {
        f.push(finding(name, m(v), unit, detail));
    }
    if let Some(max) = raw.writer.latency_ms.iter().copied().reduce(f64::max) {
        f.push(finding(
            "max_write_ms",
            max,
            "ms",
            "slowest write() of the writer",
        ));
    }
    let device = raw
        .disk
        .as_ref()
        .map_or("the device", |d| d.device.as_str());
    f.push(finding(
        "device_peak_write_mib_s",
        best_window(&device_rates(&raw.polls), 10).unwrap_or(f64::NAN),
        "MiB/s",
        format!("{device} writing, best 1 s window (/proc/diskstats; the whole device)"),
    ));
    f.push(finding(
        "other_dirty_mib",
        other_dirty_mib(&raw.polls).unwrap_or(f64::NAN),
        "MiB",
        "median of global Dirty less the test file's own dirty pages: other dirtiers",
    ));
    let bdi: Vec<f64> = raw
        .polls
        .iter()
        .filter_map(|p| p.bdi_write_bandwidth_kbps.map(|b| b as f64))
        .collect();
    if let Some(b) = oslab_stats::median(&bdi) {
        f.push(finding(
            "bdi_write_bandwidth_kbps",
            b,
            "kB/s",
            "the kernel's write bandwidth estimate for the device, median (debugfs)",
        ));
    }
    f
}

/// Assembles the output of a sawtooth experiment.
#[allow(clippy::too_many_arguments)]
pub fn output(
    raw: &SawRaw,
    rate: u64,
    p: &Prediction,
    saw: &Sawtooth,
    claims: Vec<Claim>,
    title: &str,
    mut notes: Vec<String>,
    seed: u64,
) -> Output {
    let mut findings = prediction_findings(saw, p);
    findings.extend(run_findings(raw, rate));
    for (name, set, now) in raw.sysctls_changed() {
        notes.push(format!(
            "{name} was set to {set} but the kernel reported {now} at the end: something else changed it during the run"
        ));
    }
    if raw
        .polls
        .iter()
        .all(|p| p.bdi_write_bandwidth_kbps.is_none())
        && raw.kernel.captured().is_none()
    {
        notes.push(
            "the kernel's write bandwidth estimate was not readable (debugfs is not mounted)"
                .into(),
        );
    }
    let mut plots = vec![dirty_plot(&raw.polls, p, title)];
    let rates = device_rates(&raw.polls);
    if let (Some(d), false) = (&raw.disk, rates.is_empty()) {
        plots.push(Plot {
            id: "device".into(),
            title: format!("Device {} writes during the run", d.device),
            x: Axis::new("time", "s", Scale::Linear),
            y: Axis::new("writes", "MiB/s", Scale::Linear),
            series: vec![Series {
                name: "write".into(),
                style: SeriesStyle::Line,
                points: rates,
            }],
            markers: vec![],
            x_labels: vec![],
        });
    }
    let mut out = Output {
        measurements: vec![measurement(
            "write_latency",
            "every write() of the writer",
            "ms",
            raw.writer.latency_ms.clone(),
            seed,
            None,
        )],
        plots,
        claims,
        findings,
        notes,
        ..Default::default()
    };
    out.params.insert(
        "sysctls_in_force".into(),
        serde_json::json!(raw.sysctls_in_force),
    );
    out.params.insert(
        "device".into(),
        serde_json::json!(raw.disk.as_ref().map(|d| &d.device)),
    );
    out
}
