//! wb.periodic's findings and plots from the sawtooth.

use oslab_model::trace::FlushReason;
use oslab_units::human_bytes;

use super::Plan;
use super::claims::{EXPIRY, expiry_why};
use oslab_harness::Output;
use oslab_services::dirty_rules::{self};
use oslab_services::sawtooth::{Rules, SawRaw, matches_prediction, output, sawtooth_of};
use oslab_services::sawtooth::{flusher, model};

pub(super) fn judge(plan: &Plan, raw: &SawRaw, seed: u64) -> Output {
    let p = dirty_rules::periodic(plan.rate, plan.expire, plan.interval);
    let saw = sawtooth_of(raw, plan.rate);
    let rules = Rules {
        peak: format!(
            "rate x period, {}/s x {:.1} s",
            human_bytes(plan.rate),
            p.period_s
        ),
        period: format!(
            "writeback interval x ceil(expire / writeback interval) = {} s x ceil({} / {})",
            plan.interval, plan.expire, plan.interval
        ),
        trough: "~0: expiry writes the whole file".into(),
    };
    let claim = matches_prediction(&EXPIRY, raw, &saw, &p, &rules, |o| {
        expiry_why(o, plan, raw, &saw, &p)
    });
    let far = plan.far();
    let mut notes = vec![format!(
        "writer {}/s; expire {} s, writeback interval {} s; background and hard limits set to {} and {} so they never trigger (journaled, restored)",
        human_bytes(plan.rate),
        plan.expire,
        plan.interval,
        human_bytes(far),
        human_bytes(far * 2)
    )];
    notes.push(raw.kernel.note());
    let mut out = output(
        raw,
        plan.rate,
        &p,
        &saw,
        vec![claim],
        "Dirty under periodic write back",
        notes,
        seed,
    );
    if let Some(k) = flusher::kernel_flush(raw, FlushReason::Periodic, far * 2) {
        out.findings
            .extend(flusher::findings(&k, FlushReason::Periodic));
    }
    let sysctls = oslab_wbsim::Sysctls {
        dirty_background_bytes: far,
        dirty_bytes: far * 2,
        dirty_expire_centisecs: (plan.expire * 100.0).round() as u64,
        dirty_writeback_centisecs: (plan.interval * 100.0).round() as u64,
        ..Default::default()
    };
    model::add_check(&mut out, plan.rate, plan.duration, sysctls, &saw);
    out
}
