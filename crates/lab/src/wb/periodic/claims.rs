//! wb.periodic's claim: dirty pages are written back when they expire.

use oslab_stats::sawtooth::Sawtooth;

use super::Plan;
use oslab_harness::check::{Check, Outcome};
use oslab_services::dirty_rules::Prediction;
use oslab_services::sawtooth::{SawRaw, TOLERANCE, others_text};

pub(super) const EXPIRY: Check = Check {
    id: "periodic-expiry",
    tolerates: &oslab_harness::interference::TIMES,
    text: "The flusher wakes every dirty_writeback_centisecs and writes pages older than dirty_expire_centisecs, so Dirty drops to ~0 periodically",
    source: "Kang Jin-woo, \"Linux Kernel Story for DevOps and SE\" (in Korean, Insight 2017), ch. 10 (periodic sync test: ~9.5 MB peaks with expire 10 s)",
};

pub(super) fn expiry_why(
    o: &Outcome,
    plan: &Plan,
    raw: &SawRaw,
    saw: &Sawtooth,
    p: &Prediction,
) -> String {
    if o.holds() {
        return "the kernel flushed where its rules say".into();
    }
    let mut parts = Vec::new();
    match saw.period {
        Some(t) if o.failed(1) && (t - p.period_s - plan.interval).abs() <= TOLERANCE * plan.interval => {
            parts.push(format!(
                "Dirty dropped every {t:.2} s, one writeback interval ({} s) later than {:.1} s: the writer dirties the file again right after each pass, so its new dirtied_when expires just after a wake-up and waits for the next",
                plan.interval, p.period_s
            ))
        }
        Some(t) if o.failed(1) && t > p.period_s => parts.push(format!(
            "Dirty dropped every {t:.2} s, later than {:.1} s: the flusher wakes an interval after its previous pass ended, not on a fixed grid, so a long pass delays the next",
            p.period_s
        )),
        Some(t) if o.failed(1) => parts.push(format!(
            "Dirty dropped every {t:.2} s, sooner than {:.1} s: other flushes wrote (a sync, other programs' expired pages, or the background limit, {} by /proc/vmstat)",
            p.period_s,
            raw.threshold_mib(raw.thresholds.background_pages)
                .map_or_else(|| "unread".into(), |m| format!("{m:.1} MiB"))
        )),
        _ => {}
    }
    let others = others_text(raw, plan.rate, p.peak_mib);
    if o.failed(0) || o.failed(2) {
        parts.push(format!(
            "peaks of {:.1} MiB and troughs of {:.1} MiB against {:.1} and ~0",
            saw.peak_median.unwrap_or(f64::NAN),
            saw.trough_median.unwrap_or(f64::NAN),
            p.peak_mib
        ));
    }
    parts.extend(others);
    for (name, set, now) in raw.sysctls_changed() {
        parts.push(format!("{name} read {now} at the end, not the {set} set"));
    }
    if parts.is_empty() {
        "the measured sawtooth is off the prediction by more than the tolerance".into()
    } else {
        parts.join("; ")
    }
}
