//! Judging `wb.cases`: each case's peak Dirty, device load and write-back
//! episodes, and the claim that case 2 trades a lower peak for more episodes.

use oslab_model::trace::FlushReason;
use oslab_model::{Axis, Claim, Environment, Finding, Plot, Scale, Series, SeriesStyle};
use oslab_services::sawtooth::flusher;
use oslab_units::human_bytes;

use super::{CASES, Case, Plan, Raw, SCALED_MEMORY};
use oslab_harness::check::{Check, Condition, Rule};
use oslab_harness::{Output, finding};
use oslab_services::sawtooth::measure::POLL;
use oslab_services::sawtooth::model::{self, DIRTYABLE_FAR};
use oslab_services::sawtooth::{SawRaw, best_window, device_rates, sawtooth_of};
use oslab_services::timed_writer::mib;
use oslab_stats::sawtooth::Sawtooth;
use oslab_wbsim::Config;

const FLUSH_OFTEN: Check = Check {
    id: "flush-often-lowers-peak",
    tolerates: &oslab_harness::interference::TIMES,
    text: "Flushing more often lowers the peak device load but wakes the flusher more",
    source: "Kang Jin-woo, \"Linux Kernel Story for DevOps and SE\" (in Korean, Insight 2017), ch. 10 (case 1 vs case 2: 800 MB vs 80 MB peaks, util 100 % vs 98 %)",
};

/// The device counts as writing above this share of the cap.
const ACTIVE_SHARE: f64 = 0.05;

/// Flush episodes (idle -> writing transitions) and the longest writing stretch in
/// s, from device write rates sampled every `dt` s; writing = above `active`.
pub fn episodes(rates: &[f64], dt: f64, active: f64) -> (usize, f64) {
    let (mut n, mut best, mut cur) = (0, 0.0f64, 0.0);
    let mut was = false;
    for r in rates {
        let on = *r > active;
        if on {
            if !was {
                n += 1;
            }
            cur += dt;
            best = best.max(cur);
        } else {
            cur = 0.0;
        }
        was = on;
    }
    (n, best)
}

/// What one case showed.
pub struct CaseFigures {
    pub peak_dirty_mib: f64,
    pub flushes: usize,
    pub peak_write_mib_s: f64,
    pub busy_share: f64,
    pub longest_busy_s: f64,
    pub dirty: Vec<[f64; 2]>,
    pub writes: Vec<[f64; 2]>,
}

pub fn figures(raw: &SawRaw, cap_bytes_s: u64) -> CaseFigures {
    let writes = device_rates(&raw.polls);
    let rates: Vec<f64> = writes.iter().map(|w| w[1]).collect();
    let active = mib(cap_bytes_s) * ACTIVE_SHARE;
    let (flushes, longest_busy_s) = episodes(&rates, POLL.as_secs_f64(), active);
    let dirty: Vec<[f64; 2]> = raw
        .polls
        .iter()
        .map(|p| [p.poll.t_s, mib(p.poll.dirty_bytes)])
        .collect();
    CaseFigures {
        peak_dirty_mib: dirty.iter().map(|d| d[1]).fold(0.0, f64::max),
        flushes,
        peak_write_mib_s: best_window(&writes, 10).unwrap_or(0.0),
        busy_share: rates.iter().filter(|r| **r > active).count() as f64
            / rates.len().max(1) as f64,
        longest_busy_s,
        dirty,
        writes,
    }
}

fn case_findings(c: &Case, r: &CaseFigures) -> Vec<Finding> {
    let k = c.name.replace(' ', "");
    vec![
        finding(
            &format!("{k}.peak_dirty_mib"),
            r.peak_dirty_mib,
            "MiB",
            format!(
                "background {} %, hard {} %, expire {} s of {} scaled memory",
                c.bg_pct,
                c.hard_pct,
                c.expire_cs / 100,
                human_bytes(SCALED_MEMORY)
            ),
        ),
        finding(
            &format!("{k}.flushes"),
            r.flushes as f64,
            "count",
            "write-back episodes: the device going from idle to writing",
        ),
        finding(
            &format!("{k}.peak_write_mib_s"),
            r.peak_write_mib_s,
            "MiB/s",
            "device writes, best 1 s window",
        ),
        finding(
            &format!("{k}.busy_share"),
            r.busy_share,
            "fraction",
            "of the run the device was writing",
        ),
        finding(
            &format!("{k}.longest_busy_s"),
            r.longest_busy_s,
            "s",
            "longest stretch of continuous writing",
        ),
    ]
}

/// Each case simulated blind on the testbed (its cap, its probe, the case's
/// limits, the writer's rate) beside its measured sawtooth, one claim for both.
fn model_check(plan: &Plan, raw: &Raw, env: &Environment) -> (Vec<Finding>, Claim) {
    // the raw file is untrusted: simulate only what the settings' bounds allow
    let sane = (1 << 20..=1 << 30).contains(&plan.rate)
        && plan.duration > 0.0
        && plan.duration <= 3600.0
        && (1..=10 << 30).contains(&raw.testbed.bandwidth_bytes_s)
        && raw.testbed.measured_bytes_s.is_finite()
        && raw.testbed.measured_bytes_s > 0.0;
    if !sane {
        return (
            Vec::new(),
            model::PREDICTS.not_judged(
                "each case's peak, trough and period within 10 % or 1 MiB / 0.2 s",
                "the recorded rate, duration or testbed bandwidth is outside the settings' bounds",
            ),
        );
    }
    let hz = env.machine.kernel.hz.value().map_or(250, |h| h.hz as u64);
    let runs: Vec<(String, Config, Sawtooth)> = CASES
        .iter()
        .zip(&raw.cases)
        .map(|(c, r)| {
            let mut cfg =
                model::config(plan.rate as f64, plan.duration, c.sysctls(), DIRTYABLE_FAR);
            cfg.hz = hz;
            let cfg = model::on_device(
                cfg,
                raw.testbed.bandwidth_bytes_s as f64,
                true,
                raw.testbed.measured_bytes_s,
            );
            (
                format!("{}.", c.name.replace(' ', "")),
                cfg,
                sawtooth_of(r, plan.rate),
            )
        })
        .collect();
    let refs: Vec<(&str, &Config, &Sawtooth)> =
        runs.iter().map(|(p, c, s)| (p.as_str(), c, s)).collect();
    model::check_each(&refs)
}

pub fn judge(plan: &Plan, raw: &Raw, env: &Environment) -> Output {
    let cap = raw.testbed.bandwidth_bytes_s;
    let figs: Vec<CaseFigures> = raw.cases.iter().map(|c| figures(c, cap)).collect();
    let mut out = Output::default();
    for (c, f) in CASES.iter().zip(&figs) {
        out.findings.extend(case_findings(c, f));
    }
    for (c, r) in CASES.iter().zip(&raw.cases) {
        out.findings.extend(kernel_findings(c, r));
    }
    out.findings.push(finding(
        "testbed_measured_mib_s",
        raw.testbed.measured_bytes_s / (1u64 << 20) as f64,
        "MiB/s",
        format!(
            "write-back throughput of {} measured when it was built (capped at {}/s: {})",
            raw.testbed.device,
            human_bytes(cap),
            oslab_services::testbed::Cap::describe_recorded(raw.testbed.cap.as_ref())
        ),
    ));
    out.claims.push(match (figs.first(), figs.get(1)) {
        (Some(a), Some(b)) => flush_often(raw, a, b),
        _ => FLUSH_OFTEN.not_judged(
            "case 2 has the lower peak Dirty, no higher peak device write rate, and at least as many write-back episodes",
            format!("{} of the 2 cases were measured", figs.len()),
        ),
    });
    let series = |f: fn(&CaseFigures) -> &Vec<[f64; 2]>| -> Vec<Series> {
        CASES
            .iter()
            .zip(&figs)
            .map(|(c, r)| Series {
                name: c.name.into(),
                style: SeriesStyle::Line,
                points: f(r).clone(),
            })
            .collect()
    };
    out.plots = vec![
        Plot {
            id: "dirty".into(),
            title: "Dirty: case 1 vs case 2".into(),
            x: Axis::new("time", "s", Scale::Linear),
            y: Axis::new("Dirty", "MiB", Scale::Linear),
            series: series(|r| &r.dirty),
            markers: vec![],
            x_labels: vec![],
        },
        Plot {
            id: "device".into(),
            title: "Device writes: case 1 vs case 2".into(),
            x: Axis::new("time", "s", Scale::Linear),
            y: Axis::new("writes", "MiB/s", Scale::Linear),
            series: series(|r| &r.writes),
            markers: vec![],
            x_labels: vec![],
        },
    ];
    out.notes = notes(plan, raw);
    let (findings, claim) = model_check(plan, raw, env);
    out.findings.extend(findings);
    out.claims.push(claim);
    out
}

/// The flusher's own episodes of a case, by reason, and the kernel's estimate.
fn kernel_findings(c: &Case, r: &SawRaw) -> Vec<Finding> {
    let k = c.name.replace(' ', "");
    let hard = r
        .thresholds
        .dirty_pages
        .map_or(SCALED_MEMORY / 5, |p| p * r.page_bytes);
    let mut out = Vec::new();
    for reason in [FlushReason::Background, FlushReason::Periodic] {
        if let Some(f) = flusher::kernel_flush(r, reason, hard) {
            out.push(finding(
                &format!("{k}.kernel.{}_episodes", reason.name()),
                f.episodes as f64,
                "count",
                format!(
                    "{} passes of the flusher in runs less than 100 ms apart, median {:.1} MiB each",
                    reason.name(),
                    f.episode_mib
                ),
            ));
            if reason == FlushReason::Background {
                out.push(finding(
                    &format!("{k}.kernel.avg_write_bw_mib_s"),
                    f.avg_write_bw_mib_s,
                    "MiB/s",
                    "the kernel's avg_write_bandwidth of the testbed when its background passes began",
                ));
            }
        }
    }
    out
}

fn notes(plan: &Plan, raw: &Raw) -> Vec<String> {
    let mut notes = vec![format!(
        "writer {}/s for {} s per case on a testbed capped at {}/s (measured {:.1} MiB/s); limits scaled from the author's 8 GiB to {}",
        human_bytes(plan.rate),
        plan.duration,
        human_bytes(raw.testbed.bandwidth_bytes_s),
        raw.testbed.measured_bytes_s / (1u64 << 20) as f64,
        human_bytes(SCALED_MEMORY)
    )];
    for (c, r) in CASES.iter().zip(&raw.cases) {
        let limit = |p| {
            r.threshold_mib(p)
                .map_or_else(|| "unread".into(), |m| format!("{m:.1} MiB"))
        };
        notes.push(format!(
            "{}: the kernel's limits while writing: background {}, hard {} (/proc/vmstat)",
            c.name,
            limit(r.thresholds.background_pages),
            limit(r.thresholds.dirty_pages)
        ));
        notes.push(format!("{}: {}", c.name, r.kernel.note()));
        for (name, set, now) in r.sysctls_changed() {
            notes.push(format!(
                "{}: {name} was set to {set} but the kernel reported {now} at the end",
                c.name
            ));
        }
    }
    notes
}

/// Peak write rates within this share of each other are the same rate: the peak is
/// the best one-second window, and two runs at a device's cap differ by noise.
const SAME_RATE_TOLERANCE: f64 = 0.05;

fn flush_often(raw: &Raw, a: &CaseFigures, b: &CaseFigures) -> Claim {
    let conditions = [
        Condition::new(
            "case 2's peak Dirty over case 1's",
            "x",
            Rule::Below(1.0),
            b.peak_dirty_mib / a.peak_dirty_mib,
        ),
        // two runs at the testbed's cap read the same rate within a few percent
        Condition::new(
            "case 2's peak device write rate over case 1's",
            "x",
            Rule::AtMost(1.0 + SAME_RATE_TOLERANCE),
            b.peak_write_mib_s / a.peak_write_mib_s,
        ),
        Condition::new(
            "case 2's write-back episodes minus case 1's",
            "",
            Rule::AtLeast(0.0),
            b.flushes as f64 - a.flushes as f64,
        ),
    ];
    let context = format!(
        "peak Dirty {:.1} vs {:.1} MiB; peak device writes {:.1} vs {:.1} MiB/s; episodes {} vs {}; longest writing stretch {:.1} vs {:.1} s",
        a.peak_dirty_mib,
        b.peak_dirty_mib,
        a.peak_write_mib_s,
        b.peak_write_mib_s,
        a.flushes,
        b.flushes,
        a.longest_busy_s,
        b.longest_busy_s
    );
    let measured = raw.testbed.measured_bytes_s / (1u64 << 20) as f64;
    FLUSH_OFTEN.judge(&conditions, &context, |o| {
        if o.holds() {
            return "small, frequent flushes keep the device's bursts short".into();
        }
        let mut parts = Vec::new();
        if o.failed(0) {
            parts.push(format!(
                "case 2's lower background limit did not lower peak Dirty ({:.1} vs {:.1} MiB): the writer at its rate stayed under both limits, or other dirtiers added to Dirty",
                b.peak_dirty_mib, a.peak_dirty_mib
            ));
        }
        if o.failed(1) {
            let capped = a.peak_write_mib_s >= 0.8 * measured && b.peak_write_mib_s >= 0.8 * measured;
            parts.push(if capped {
                format!(
                    "both cases wrote at the testbed's pace ({:.1} and {:.1} MiB/s, measured {measured:.1} MiB/s): the cap, not the flush size, set the peak",
                    a.peak_write_mib_s, b.peak_write_mib_s
                )
            } else {
                format!(
                    "case 2's flushes reached the device faster ({:.1} vs {:.1} MiB/s in the best second)",
                    b.peak_write_mib_s, a.peak_write_mib_s
                )
            });
        }
        if o.failed(2) {
            parts.push(format!(
                "case 2 had fewer write-back episodes ({} vs {}): its flushes ran together into continuous writing (longest stretch {:.1} s)",
                b.flushes, a.flushes, b.longest_busy_s
            ));
        }
        parts.push("the scaled run did not separate the cases (try a longer duration or a slower device)".into());
        parts.join("; ")
    })
}
