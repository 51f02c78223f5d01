//! wb.wcall-overhead's measurements and findings.

use oslab_model::Environment;

use super::claims::claim;
use super::{Plan, Raw};
use oslab_harness::{Output, finding, measurement};

/// The writes the children made, timed and untimed.
pub(super) fn expected_writes(plan: &Plan, raw: &Raw) -> u64 {
    plan.samples as u64 * (plan.batches as u64 * plan.per_batch + raw.warmup_calls)
}

pub(super) fn judge(plan: &Plan, raw: &Raw, env: &Environment) -> Output {
    let med = |v: &[f64]| oslab_stats::median(v);
    let (plain, governed) = (med(&raw.plain_ns), med(&raw.governed_ns));
    let overhead = plain.zip(governed).map(|(p, g)| g - p);
    let shown = |v: Option<f64>| v.map_or("none".to_string(), |x| format!("{x:.1}"));
    let expected = expected_writes(plan, raw);
    let counted = raw.writes_counted;
    let claim = claim(plan, raw, env);
    let mut out = Output {
        measurements: vec![
            measurement(
                "ns.plain",
                "64-byte pwrite(), no interposer",
                "ns",
                raw.plain_ns.clone(),
                env.seed,
                None,
            ),
            measurement(
                "ns.governed",
                "64-byte pwrite() through the interposer, group not held",
                "ns",
                raw.governed_ns.clone(),
                env.seed,
                None,
            ),
        ],
        claims: vec![claim],
        notes: vec![format!(
            "{} rounds of plain then governed children, {} batches of {} calls each; the file {} is in the page cache throughout",
            plan.samples, plan.batches, plan.per_batch, raw.file
        )],
        ..Default::default()
    };
    out.findings = vec![
        finding(
            "overhead_ns",
            overhead.unwrap_or(f64::NAN),
            "ns",
            format!(
                "median governed {} ns - median plain {} ns",
                shown(governed),
                shown(plain)
            ),
        ),
        finding(
            "ratio",
            governed
                .zip(plain)
                .map_or(f64::NAN, |(g, p)| g / p.max(1e-9)),
            "x",
            "governed / plain",
        ),
        finding(
            "writes_counted",
            counted as f64,
            "writes",
            format!("the governor counted {counted} of the {expected} writes the children made"),
        ),
    ];
    out
}
