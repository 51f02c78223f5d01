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
}
