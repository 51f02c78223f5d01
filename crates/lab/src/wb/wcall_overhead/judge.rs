//! wb.wcall-overhead's measurements and findings.

use oslab_model::Environment;

use super::claims::claim;
use super::figures::{Figures, shown};
use super::{Plan, Raw};
use oslab_harness::{Output, finding, measurement};

pub(super) fn judge(plan: &Plan, raw: &Raw, env: &Environment) -> Output {
    let f = Figures::of(plan, raw);
    let Figures {
        plain,
        governed,
        overhead,
        expected,
    } = f;
    let counted = raw.writes_counted;
    let claim = claim(&f, raw, env);
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
