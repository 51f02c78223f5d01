use std::borrow::Cow;

use serde::{Deserialize, Serialize};

/// What a measurement says about a claim of the source material.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    Holds,
    Differs,
    /// This machine cannot test it (no SMT, no root, no such device).
    NotTestable,
    /// The run did not measure what it needs (a subset of cells was asked for, or
    /// a figure could not be determined); the reason says which.
    NotJudged,
}

impl Verdict {
    pub fn label(self) -> &'static str {
        match self {
            Verdict::Holds => "holds",
            Verdict::Differs => "differs",
            Verdict::NotTestable => "not testable here",
            Verdict::NotJudged => "not judged",
        }
    }
}

/// A sentence of the material checked against this machine.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Claim {
    /// Stable identifier, e.g. `syscall-is-mode-switch`.
    pub id: String,
    /// The claim in the material's words (translated).
    pub text: String,
    /// Where it comes from, e.g. "material 5 (seed 002)".
    pub source: String,
    /// What would confirm it, in numbers.
    pub expectation: String,
    /// What this run measured, in numbers.
    pub observed: String,
    pub verdict: Verdict,
    /// One line: why the verdict, or why it could not be tested.
    pub why: String,
    /// What other programs' work its method tolerates while it measures (absent:
    /// any, or a result from before it was kept).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tolerates: Option<Tolerance>,
}

/// What other programs' work a claim's method tolerates while it measures:
/// beyond it the figures tell of the machine's load more than of the kernel, so
/// the claim is not judged (docs/reports.md, "Verdicts a busy machine cannot
/// flip").
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Tolerance {
    /// The largest share of all CPUs' time other programs may take.
    pub others_cpu: f64,
    /// The largest share of CPU time the hypervisor may steal.
    pub steal: f64,
    /// Why the method tolerates that much and no more, in words.
    pub why: Cow<'static, str>,
}
