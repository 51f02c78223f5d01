//! The medians and the count of writes that the findings and the claim read.

use super::{Plan, Raw};

/// Median ns per write on each side, and the writes the children made.
#[derive(Clone, Copy)]
pub(super) struct Figures {
    /// None: no timed batch on that side.
    pub(super) plain: Option<f64>,
    pub(super) governed: Option<f64>,
    /// Governed less plain.
    pub(super) overhead: Option<f64>,
    /// The writes the children made, timed and untimed.
    pub(super) expected: u64,
}

impl Figures {
    pub(super) fn of(plan: &Plan, raw: &Raw) -> Figures {
        let med = |v: &[f64]| oslab_stats::median(v);
        let (plain, governed) = (med(&raw.plain_ns), med(&raw.governed_ns));
        Figures {
            plain,
            governed,
            overhead: plain.zip(governed).map(|(p, g)| g - p),
            expected: plan.samples as u64
                * (plan.batches as u64 * plan.per_batch + raw.warmup_calls),
        }
    }
}

/// A median in ns with one decimal, or "none".
pub(super) fn shown(v: Option<f64>) -> String {
    v.map_or("none".to_string(), |x| format!("{x:.1}"))
}
