//! Claims judged by typed checks: the verdict, the expectation and the observed text
//! all come from the same conditions, so they cannot disagree.
//!
//! A [`Check`] names a claim of the material (id, text, source). It is judged on
//! [`Condition`]s: a subject ("gettid"), its unit, a [`Rule`] and the figure measured
//! (or why there is none). The expectation is the rules in words, the observed text
//! the figures; the verdict is `holds` when every condition holds, `differs` when
//! one does not, `not_judged` (with the reason) when a figure is missing. The "why"
//! is written by the experiment from the outcome and the facts of its raw data.

use oslab_model::{Claim, Tolerance, Verdict};

/// What a figure must satisfy.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Rule {
    /// `lo <= x <= hi`.
    Range(f64, f64),
    /// `x >= v`.
    AtLeast(f64),
    /// `x <= v`.
    AtMost(f64),
    /// `x < v`.
    Below(f64),
    /// `x > v`.
    Above(f64),
    /// `|x - target| <= tol * |target|`.
    WithinRel { target: f64, tol: f64 },
    /// `|x - target| <= tol`.
    WithinAbs { target: f64, tol: f64 },
    /// `x == v` (counts, and the self-test's fixed samples).
    Exactly(f64),
}

impl Rule {
    pub fn holds(&self, x: f64) -> bool {
        match *self {
            Rule::Range(lo, hi) => x >= lo && x <= hi,
            Rule::AtLeast(v) => x >= v,
            Rule::AtMost(v) => x <= v,
            Rule::Below(v) => x < v,
            Rule::Above(v) => x > v,
            Rule::WithinRel { target, tol } => (x - target).abs() <= tol * target.abs(),
            Rule::WithinAbs { target, tol } => (x - target).abs() <= tol,
            Rule::Exactly(v) => x == v,
        }
    }

    /// The rule in words, for a subject measured in `unit`.
    pub fn describe(&self, subject: &str, unit: &str) -> String {
        let u = |v: f64| figure(v, unit);
        match *self {
            Rule::Range(lo, hi) => format!("{subject} between {} and {}", u(lo), u(hi)),
            Rule::AtLeast(v) => format!("{subject} at least {}", u(v)),
            Rule::AtMost(v) => format!("{subject} at most {}", u(v)),
            Rule::Below(v) => format!("{subject} below {}", u(v)),
            Rule::Above(v) => format!("{subject} above {}", u(v)),
            Rule::WithinRel { target, tol } => {
                format!("{subject} within {:.0} % of {}", tol * 100.0, u(target))
            }
            Rule::WithinAbs { target, tol } => {
                format!("{subject} within {} of {}", u(tol), u(target))
            }
            Rule::Exactly(v) => format!("{subject} exactly {}", u(v)),
        }
    }
}

/// A number with its unit, as claims print it: enough digits to see the
/// difference a rule draws, no more.
pub fn figure(v: f64, unit: &str) -> String {
    let whole = v.fract() == 0.0 && v.abs() < 1e15;
    let digits = match v.abs() {
        _ if whole => 0,
        a if a == 0.0 || a >= 100.0 => 0,
        a if a >= 10.0 => 1,
        a if a >= 1.0 => 2,
        _ => 3,
    };
    let n = format!("{v:.digits$}");
    match unit {
        "" => n,
        "%" => format!("{n} %"),
        "x" => format!("{n}x"),
        u => format!("{n} {u}"),
    }
}

/// One condition of a claim: what is measured, the rule, and the figure.
#[derive(Debug, Clone, PartialEq)]
pub struct Condition {
    pub subject: String,
    pub unit: String,
    pub rule: Rule,
    /// The figure, or why there is none.
    pub figure: Result<f64, String>,
}

impl Condition {
    pub fn new(subject: impl Into<String>, unit: &str, rule: Rule, figure: f64) -> Condition {
        Condition {
            subject: subject.into(),
            unit: unit.into(),
            rule,
            figure: if figure.is_finite() {
                Ok(figure)
            } else {
                Err(format!("no finite figure for {}", unit_free(unit)))
            },
        }
    }

    /// A condition whose figure could not be measured, with the reason.
    pub fn missing(
        subject: impl Into<String>,
        unit: &str,
        rule: Rule,
        why: impl Into<String>,
    ) -> Condition {
        Condition {
            subject: subject.into(),
            unit: unit.into(),
            rule,
            figure: Err(why.into()),
        }
    }

    /// The figure if there is one.
    pub fn from_option(
        subject: impl Into<String>,
        unit: &str,
        rule: Rule,
        figure: Option<f64>,
        why_none: impl Into<String>,
    ) -> Condition {
        match figure {
            Some(f) => Condition::new(subject, unit, rule, f),
            None => Condition::missing(subject, unit, rule, why_none),
        }
    }

    fn holds(&self) -> Option<bool> {
        self.figure.as_ref().ok().map(|x| self.rule.holds(*x))
    }
}

fn unit_free(unit: &str) -> &str {
    if unit.is_empty() { "the figure" } else { unit }
}

/// What a check found, before the "why" is written.
#[derive(Debug, Clone, PartialEq)]
pub struct Outcome {
    pub verdict: Verdict,
    /// Index of each condition that did not hold.
    pub failed: Vec<usize>,
    /// Why the claim is not judged (missing figures), when it is not.
    pub missing: Vec<String>,
}

impl Outcome {
    pub fn holds(&self) -> bool {
        self.verdict == Verdict::Holds
    }

    /// Whether condition `i` failed.
    pub fn failed(&self, i: usize) -> bool {
        self.failed.contains(&i)
    }
}

/// A claim of the material, judged by conditions.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Check {
    pub id: &'static str,
    /// The claim in the material's words.
    pub text: &'static str,
    /// Where it comes from.
    pub source: &'static str,
    /// What other programs' work its method tolerates while it measures
    /// (`super::interference`: `ANY`, `TIMES`, `CPU_SHARES`).
    pub tolerates: &'static Tolerance,
}

impl Check {
    /// Judges the conditions; `why` explains the outcome from the run's facts
    /// (it is not called for a claim that is not judged: the missing figures are
    /// the reason). `context` is added to the observed figures (may be empty).
    pub fn judge(
        &self,
        conditions: &[Condition],
        context: &str,
        why: impl FnOnce(&Outcome) -> String,
    ) -> Claim {
        let expectation = conditions
            .iter()
            .map(|c| c.rule.describe(&c.subject, &c.unit))
            .collect::<Vec<_>>()
            .join(", and ");
        let observed_figures: Vec<String> = conditions
            .iter()
            .filter_map(|c| {
                c.figure
                    .as_ref()
                    .ok()
                    .map(|x| format!("{} = {}", c.subject, figure(*x, &c.unit)))
            })
            .collect();
        let mut observed = observed_figures.join(", ");
        if !context.is_empty() {
            if !observed.is_empty() {
                observed.push_str("; ");
            }
            observed.push_str(context);
        }
        let missing: Vec<String> = conditions
            .iter()
            .filter_map(|c| c.figure.as_ref().err().cloned())
            .collect();
        let failed: Vec<usize> = conditions
            .iter()
            .enumerate()
            .filter(|(_, c)| c.holds() == Some(false))
            .map(|(i, _)| i)
            .collect();
        let verdict = if !missing.is_empty() {
            Verdict::NotJudged
        } else if failed.is_empty() {
            Verdict::Holds
        } else {
            Verdict::Differs
        };
        let outcome = Outcome {
            verdict,
            failed,
            missing,
        };
        let why = if verdict == Verdict::NotJudged {
            outcome.missing.join("; ")
        } else {
            why(&outcome)
        };
        if observed.is_empty() {
            observed = "nothing measured".into();
        }
        Claim {
            id: self.id.into(),
            text: self.text.into(),
            source: self.source.into(),
            expectation,
            observed,
            verdict,
            why,
            tolerates: Some(self.tolerates.clone()),
        }
    }

    /// The claim cannot be tested on this machine at all (no SMT, no root, ...).
    pub fn not_testable(&self, expectation: &str, why: impl Into<String>) -> Claim {
        Claim {
            id: self.id.into(),
            text: self.text.into(),
            source: self.source.into(),
            expectation: expectation.into(),
            observed: "not measured".into(),
            verdict: Verdict::NotTestable,
            why: why.into(),
            tolerates: None,
        }
    }

    /// The run was asked not to measure what the claim needs (a subset of cells).
    pub fn not_judged(&self, expectation: &str, why: impl Into<String>) -> Claim {
        Claim {
            id: self.id.into(),
            text: self.text.into(),
            source: self.source.into(),
            expectation: expectation.into(),
            observed: "not measured".into(),
            verdict: Verdict::NotJudged,
            why: why.into(),
            tolerates: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const CHECK: Check = Check {
        id: "c",
        text: "t",
        source: "s",
        tolerates: &crate::interference::ANY,
    };

    #[test]
    fn expectation_observed_and_verdict_come_from_the_conditions() {
        let c = [
            Condition::new("gettid", "ns", Rule::Range(10.0, 150.0), 80.0),
            Condition::new("ratio", "x", Rule::AtLeast(1.5), 1.2),
        ];
        let claim = CHECK.judge(&c, "", |o| {
            assert_eq!(o.failed, vec![1]);
            "second failed".into()
        });
        assert_eq!(
            claim.expectation,
            "gettid between 10 ns and 150 ns, and ratio at least 1.50x"
        );
        assert_eq!(claim.observed, "gettid = 80 ns, ratio = 1.20x");
        assert_eq!(claim.verdict, Verdict::Differs);
        assert_eq!(claim.why, "second failed");
    }

    #[test]
    fn a_missing_figure_is_not_judged_with_its_reason() {
        let c = [
            Condition::new("a", "ns", Rule::AtMost(1.0), 0.5),
            Condition::missing("b", "MB/s", Rule::AtLeast(1.0), "O_DIRECT was refused"),
        ];
        let claim = CHECK.judge(&c, "", |_| unreachable!("not called"));
        assert_eq!(claim.verdict, Verdict::NotJudged);
        assert_eq!(claim.why, "O_DIRECT was refused");
        let nan = [Condition::new("a", "ns", Rule::AtMost(1.0), f64::NAN)];
        assert_eq!(
            CHECK.judge(&nan, "", |_| String::new()).verdict,
            Verdict::NotJudged
        );
    }

    #[test]
    fn rules_at_their_edges() {
        assert!(Rule::Range(1.0, 2.0).holds(1.0) && Rule::Range(1.0, 2.0).holds(2.0));
        assert!(!Rule::Below(1.0).holds(1.0) && Rule::AtMost(1.0).holds(1.0));
        assert!(
            Rule::WithinRel {
                target: 100.0,
                tol: 0.1
            }
            .holds(110.0)
        );
        assert!(
            !Rule::WithinRel {
                target: 100.0,
                tol: 0.1
            }
            .holds(110.1)
        );
        assert!(
            Rule::WithinAbs {
                target: 1.0,
                tol: 0.5
            }
            .holds(0.5)
        );
        assert_eq!(figure(0.1234, "ms"), "0.123 ms");
        assert_eq!(figure(1234.0, "%"), "1234 %");
        assert_eq!(figure(5.0, ""), "5", "counts print whole");
        assert_eq!(figure(1.5, "x"), "1.50x");
    }
}
