//! wb.background's findings and plots from the sawtooth.

use oslab_model::trace::FlushReason;
use oslab_units::human_bytes;

use super::chunk::implied_chunk_mib;
use super::claims::{SAWTOOTH, falls_to_zero, sawtooth_why};
use super::{MIB, Plan};
use oslab_harness::{Output, finding};
use oslab_services::dirty_rules::{self};
use oslab_services::sawtooth::{Rules, SawRaw, matches_prediction, output, sawtooth_of};
use oslab_services::sawtooth::{flusher, model};

pub(super) fn judge(plan: &Plan, raw: &SawRaw, seed: u64) -> Output {
    let hard = plan.hard();
    let kernel = flusher::kernel_flush(raw, FlushReason::Background, hard);
    // The chunk the kernel's own estimate gave when it flushed; without a trace,
    // the rule's hard-limit term (a device faster than hard limit / 4).
    let (chunk, period_rule) = match &kernel {
        Some(k) => {
            let chunk = (k.predicted_chunk_mib * MIB) as u64;
            (
                chunk,
                format!(
                    "chunk / rate, chunk = round_down(min(the kernel's avg_write_bandwidth {:.1} MiB/s / 2, hard limit {} / 8) + 4 MiB, 4 MiB) = {} (median over its {} background passes)",
                    k.avg_write_bw_mib_s,
                    human_bytes(hard),
                    human_bytes(chunk),
                    k.passes
                ),
            )
        }
        None => {
            let chunk = dirty_rules::background_chunk(hard);
            (
                chunk,
                format!(
                    "chunk / rate, chunk = round_down(min(write bandwidth / 2, hard limit {} / 8) + 4 MiB, 4 MiB) = {}, the hard-limit term",
                    human_bytes(hard),
                    human_bytes(chunk)
                ),
            )
        }
    };
    let p = dirty_rules::background_with_chunk(plan.rate, plan.background, chunk);
    let saw = sawtooth_of(raw, plan.rate);
    let rules = Rules {
        peak: "dirty_background_bytes".into(),
        period: period_rule,
        trough: "the background limit less one chunk".into(),
    };
    let sawtooth = matches_prediction(&SAWTOOTH, raw, &saw, &p, &rules, |o| {
        sawtooth_why(o, plan, raw, &saw, chunk, kernel.as_ref())
    });
    let claims = vec![sawtooth, falls_to_zero(&saw, &p, chunk, plan)];
    let notes = vec![
        format!(
            "writer {}/s in 10 writes a second; dirty_writeback_centisecs=0, dirty_background_bytes={}, dirty_bytes={} (journaled, restored)",
            human_bytes(plan.rate),
            human_bytes(plan.background),
            human_bytes(hard)
        ),
        raw.kernel.note(),
    ];
    let mut out = output(
        raw,
        plan.rate,
        &p,
        &saw,
        claims,
        "Dirty with periodic write back off",
        notes,
        seed,
    );
    out.findings.push(finding(
        "implied_chunk_mib",
        implied_chunk_mib(plan, &saw).unwrap_or(f64::NAN),
        "MiB",
        format!(
            "median period x the writer's rate: what each background flush wrote (the rule gives {})",
            human_bytes(chunk)
        ),
    ));
    if let Some(k) = &kernel {
        out.findings
            .extend(flusher::findings(k, FlushReason::Background));
    }
    let sysctls = oslab_wbsim::Sysctls {
        dirty_background_bytes: plan.background,
        dirty_bytes: hard,
        dirty_writeback_centisecs: 0,
        ..Default::default()
    };
    model::add_check(&mut out, plan.rate, plan.duration, sysctls, &saw);
    out
}
