//! The claim: the simulator's Dirty curve matches the real kernel's.

use oslab_model::Claim;

use oslab_harness::check::{Check, Condition, Rule};

const MATCHES: Check = Check {
    id: "simulator-matches-kernel",
    tolerates: &oslab_harness::interference::ANY,
    text: "The simulator's Dirty curve matches the real kernel's within 10 % in peak, trough and period",
    source: "oslab's target for its simulator: docs/sim-scenarios.md, \"The sawtooth cells\"",
};

/// The worst relative error of `compared` figures (peak, trough, period), held
/// against 10 %.
pub fn matches_claim(compared: usize, worst: f64) -> Claim {
    if compared == 0 {
        MATCHES.not_judged(
            "every error at most 10 %",
            "no real run to compare with (the real runs need root)",
        )
    } else {
        MATCHES.judge(
            &[Condition::new(
                "the worst error of peak, trough and period",
                "%",
                Rule::AtMost(10.0),
                worst * 100.0,
            )],
            &format!("{compared} figures compared"),
            |o| {
                if o.holds() {
                    "the modelled flusher rules reproduce the kernel's sawtooth".into()
                } else {
                    "at least one figure is off by more than 10 %; see the findings".into()
                }
            },
        )
    }
}
