//! The null experiment's claims: one of each verdict.

use oslab_model::Claim;

use oslab_harness::check::{Check, Condition, Rule};

const SOURCE: &str = "none (self-test)";

/// A claim that holds, one that differs, one not testable and one not judged,
/// from the median of the samples.
pub(super) fn claims(median: f64) -> Vec<Claim> {
    let holds = Check {
        id: "null-holds",
        tolerates: &oslab_harness::interference::ANY,
        text: "The null median is 100 ns",
        source: SOURCE,
    }
    .judge(
        &[Condition::new("median", "ns", Rule::Exactly(100.0), median)],
        "",
        |_| "the median of the fixed samples is 100".into(),
    );
    let differs = Check {
        id: "null-differs",
        tolerates: &oslab_harness::interference::ANY,
        text: "The null median is 200 ns",
        source: SOURCE,
    }
    .judge(
        &[Condition::new("median", "ns", Rule::Exactly(200.0), median)],
        "",
        |_| "a deliberate contradiction".into(),
    );
    let untestable = Check {
        id: "null-untestable",
        tolerates: &oslab_harness::interference::ANY,
        text: "The null experiment says something about the kernel",
        source: SOURCE,
    }
    .not_testable("a figure of the kernel", "it measures nothing");
    let not_judged = Check {
        id: "null-not-judged",
        tolerates: &oslab_harness::interference::ANY,
        text: "The null experiment has a second figure",
        source: SOURCE,
    }
    .judge(
        &[Condition::missing(
            "second figure",
            "ns",
            Rule::AtLeast(0.0),
            "the null experiment records one figure only",
        )],
        "",
        |_| unreachable!("a missing figure is not judged"),
    );
    vec![holds, differs, untestable, not_judged]
}
