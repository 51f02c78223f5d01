//! wb.background's claims: Dirty saws between the limits, and falls to zero.

use oslab_model::Claim;
use oslab_stats::sawtooth::Sawtooth;
use oslab_units::human_bytes;

use super::chunk::{bandwidth_for_chunk, implied_chunk_mib};
use super::{MIB, Plan};
use oslab_harness::check::{Check, Condition, Outcome, Rule};
use oslab_services::dirty_rules::Prediction;
use oslab_services::sawtooth::flusher;
use oslab_services::sawtooth::{
    SawRaw, TOLERANCE, best_window, device_rates, other_dirty_mib, others_text,
};

pub(super) const SAWTOOTH: Check = Check {
    id: "background-sawtooth",
    tolerates: &oslab_harness::interference::TIMES,
    text: "With periodic write back off, Dirty climbs to the background limit and the background flusher then holds it there",
    source: "Kang Jin-woo, \"Linux Kernel Story for DevOps and SE\" (in Korean, Insight 2017), ch. 10 (background sync test)",
};

pub(super) const FALLS_TO_ZERO: Check = Check {
    id: "background-falls-to-zero",
    tolerates: &oslab_harness::interference::TIMES,
    text: "After the background flush Dirty falls to about 0 and climbs again",
    source: "Kang Jin-woo, \"Linux Kernel Story for DevOps and SE\" (in Korean, Insight 2017), ch. 10 (background sync test: 83-85 MB, then ~0)",
};

pub(super) fn sawtooth_why(
    o: &Outcome,
    plan: &Plan,
    raw: &SawRaw,
    saw: &Sawtooth,
    chunk: u64,
    kernel: Option<&flusher::KernelFlush>,
) -> String {
    if o.holds() {
        return match kernel {
            Some(k) => format!(
                "the kernel flushed where its rules say, in chunks its own bandwidth estimate ({:.1} MiB/s) gave",
                k.avg_write_bw_mib_s
            ),
            None => {
                "the kernel flushed where its rules say: chunks from the hard-limit term".into()
            }
        };
    }
    let chunk_mib = chunk as f64 / MIB;
    let mut parts = Vec::new();
    if o.failed(0) {
        parts.push(format!(
            "peaks at {:.1} MiB against a background limit of {} ({} by /proc/vmstat); Dirty beside the test file was {:.1} MiB (other dirtiers)",
            saw.peak_median.unwrap_or(f64::NAN),
            human_bytes(plan.background),
            raw.threshold_mib(raw.thresholds.background_pages)
                .map_or_else(|| "unread".into(), |m| format!("{m:.1} MiB")),
            other_dirty_mib(&raw.polls).unwrap_or(f64::NAN)
        ));
    }
    if !o.failed(0)
        && let Some(t) = others_text(raw, plan.rate, plan.background as f64 / MIB)
    {
        parts.push(t);
    }
    let implied = implied_chunk_mib(plan, saw);
    let off = o.failed(1) || o.failed(2);
    match (implied, kernel) {
        (Some(c), Some(k)) if off => parts.push(format!(
            "Dirty fell by about {c:.1} MiB per flush; the kernel's passes wrote {:.1} MiB each where its estimate gives {:.1} MiB: {}",
            k.written_mib,
            k.predicted_chunk_mib,
            if (k.written_mib - k.predicted_chunk_mib).abs() <= TOLERANCE * k.predicted_chunk_mib {
                "the flusher kept to its rule, so the sawtooth's shape came from elsewhere (other dirty data, or the poll missing short drops)"
            } else {
                "a pass wrote another amount than one chunk (the file had fewer dirty pages, or several inodes shared the pass)"
            }
        )),
        (Some(c), None) if off && c < chunk_mib * (1.0 - TOLERANCE) => {
            let (lo, hi) = bandwidth_for_chunk(c);
            let bdi: Vec<f64> = raw
                .polls
                .iter()
                .filter_map(|p| p.bdi_write_bandwidth_kbps.map(|b| b as f64 / 1024.0))
                .collect();
            let estimate = oslab_stats::median(&bdi).map_or_else(
                || format!("; the estimate itself is not readable here ({})", raw.kernel.note()),
                |b| format!("; debugfs read {b:.1} MiB/s"),
            );
            parts.push(format!(
                "Dirty fell by about {c:.1} MiB per flush ({:.2} s at {}/s), not {chunk_mib:.0} MiB: the rule's min(write bandwidth / 2, hard limit / 8) took the bandwidth term, which gives that chunk for a write bandwidth estimate of {lo:.0} to {hi:.0} MiB/s for the device{estimate}; the device wrote at most {:.1} MiB/s in any second of the run",
                saw.period.unwrap_or(f64::NAN),
                human_bytes(plan.rate),
                best_window(&device_rates(&raw.polls), 10).unwrap_or(f64::NAN)
            ));
        }
        (Some(c), None) if off && c > chunk_mib * (1.0 + TOLERANCE) => {
            parts.push(format!(
                "Dirty fell by about {c:.1} MiB per flush, more than one chunk of {chunk_mib:.0} MiB: another flush (a sync, or write back of other dirty data) joined"
            ));
        }
        _ if o.failed(2) => parts.push(format!(
            "troughs at {:.1} MiB with flushes of the predicted size: Dirty beside the test file was {:.1} MiB",
            saw.trough_median.unwrap_or(f64::NAN),
            other_dirty_mib(&raw.polls).unwrap_or(f64::NAN)
        )),
        _ => {}
    }
    for (name, set, now) in raw.sysctls_changed() {
        parts.push(format!("{name} read {now} at the end, not the {set} set"));
    }
    if parts.is_empty() {
        "the measured sawtooth is off the prediction by more than the tolerance".into()
    } else {
        parts.join("; ")
    }
}

pub(super) fn falls_to_zero(saw: &Sawtooth, p: &Prediction, chunk: u64, plan: &Plan) -> Claim {
    let conditions = [Condition::from_option(
        "median trough",
        "MiB",
        Rule::Below(TOLERANCE * p.peak_mib),
        saw.trough_median,
        "Dirty never dropped by half a second of writing in the run: run longer (full mode)",
    )];
    let context = format!("peaks {:.1} MiB", saw.peak_median.unwrap_or(f64::NAN));
    FALLS_TO_ZERO.judge(&conditions, &context, |o| {
        if o.holds() {
            "the flusher wrote everything".into()
        } else {
            format!(
                "today's background flusher stops as soon as Dirty is under the limit, after chunks of {} (round_down(min(write bandwidth / 2, hard limit / 8) + 4 MiB, 4 MiB)){}",
                human_bytes(chunk),
                implied_chunk_mib(plan, saw)
                    .map(|c| format!("; here Dirty fell by about {c:.1} MiB per flush"))
                    .unwrap_or_default()
            )
        }
    })
}
