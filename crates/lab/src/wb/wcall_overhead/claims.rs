//! wb.wcall-overhead's claim: the interposer adds under a microsecond per write.

use oslab_model::Environment;

use super::Raw;
use super::figures::{Figures, shown};
use oslab_harness::check::{Check, Condition, Rule};

/// The claim's bound: well under a microsecond.
pub(super) const BOUND_NS: f64 = 1000.0;

pub(super) const OVERHEAD: Check = Check {
    id: "overhead-under-1us",
    tolerates: &oslab_harness::interference::TIMES,
    text: "The governor adds well under a microsecond to a write() it does not hold",
    source: "oslab's target for its governor (its cost: docs/wcall.md, \"How it works\", Control)",
};

/// The claim: the overhead below a microsecond and every write counted; the
/// "why" from the clocksource and the load the run saw.
pub(super) fn claim(f: &Figures, raw: &Raw, env: &Environment) -> oslab_model::Claim {
    let &Figures {
        plain,
        governed,
        overhead,
        expected,
    } = f;
    let counted = raw.writes_counted;
    let conditions = [
        Condition::from_option(
            "median overhead",
            "ns",
            Rule::Below(BOUND_NS),
            overhead,
            "no timed batch on one side (plain or governed)",
        ),
        Condition::new(
            "writes the governor counted",
            "",
            Rule::Exactly(expected as f64),
            counted as f64,
        ),
    ];
    let context = format!(
        "medians governed {} vs plain {} ns; the children made {expected} writes",
        shown(governed),
        shown(plain)
    );
    let clocksource = env
        .machine
        .kernel
        .clocksource
        .as_deref()
        .unwrap_or("unknown");
    OVERHEAD.judge(&conditions, &context, |o| {
        let mut why = Vec::new();
        if o.holds() {
            why.push("a cached descriptor class, one atomic load of the group's hold flag, a clock read and three counter updates".to_string());
        }
        if o.failed(0) {
            why.push(match (clocksource, &env.load.warning) {
                ("tsc", Some(w)) => format!(
                    "the interposer's clock read is a vDSO read of the TSC, so the difference is the run's load: {w}"
                ),
                ("tsc", None) => "the interposer's clock read is a vDSO read of the TSC and no other load was seen: its path itself cost more than a few loads and stores here".to_string(),
                (cs, _) => format!(
                    "the interposer reads the clock per write through the {cs} clocksource, which the vDSO cannot read: every clock read is a system call"
                ),
            });
        }
        if o.failed(1) {
            why.push(format!(
                "the governor counted {counted} writes where the children made {expected}: writes passed the interposer uncounted"
            ));
        }
        why.join("; ")
    })
}
