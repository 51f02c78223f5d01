//! Local helpers of the claims: the reason a claim is not judged when its cells
//! were left out, a check whose missing figures share one reason, and a check
//! that holds when any one of its conditions holds (check.rs joins conditions
//! with "and" only). wb.throttle uses [`judge_all`] too.

use oslab_model::{Claim, Environment, Verdict};

use super::Plan;
use oslab_harness::check::{Check, Condition, Outcome};

/// The run's load warning, when the environment has one, to add to a "why" that
/// blames neither the governor nor the kernel.
pub fn load_text(env: &Environment) -> String {
    env.load
        .warning
        .as_ref()
        .map_or(String::new(), |w| format!("; during the run {w}"))
}

/// Why a figure is missing when the cells it needs were not run: `what` says
/// which, the plan what was asked for.
pub fn left_out(plan: &Plan, what: &str) -> String {
    let names = |v: Vec<&str>| v.join(",");
    format!(
        "{what}: this run asked for scenarios={} and policies={}",
        names(plan.scenarios.iter().map(|s| s.name()).collect()),
        names(plan.policies.iter().map(|p| p.name()).collect())
    )
}

/// Judges `check` on every condition; a reason shared by several missing figures
/// is given once (check.rs repeats it per condition).
pub fn judge_all(
    check: &Check,
    conditions: &[Condition],
    context: &str,
    why: impl FnOnce(&Outcome) -> String,
) -> Claim {
    let mut claim = check.judge(conditions, context, why);
    if claim.verdict == Verdict::NotJudged {
        let mut reasons: Vec<&str> = Vec::new();
        for c in conditions {
            if let Err(r) = &c.figure
                && !reasons.contains(&r.as_str())
            {
                reasons.push(r);
            }
        }
        claim.why = reasons.join("; ");
    }
    claim
}

/// A claim that holds when any one of its conditions holds (a stall is a high
/// p99 or a write past 200 ms). check.rs joins conditions with "and" only, so this
/// local helper judges the alternatives: holds when one holds, not judged when
/// none holds and a figure is missing, differs when every figure is there and
/// none holds. The observed text is check.rs's; the expectation joins the rules
/// with "or".
pub fn judge_any(
    check: &Check,
    conditions: &[Condition],
    context: &str,
    why: impl FnOnce(&Outcome) -> String,
) -> Claim {
    let holds = |c: &Condition| c.figure.as_ref().ok().map(|x| c.rule.holds(*x));
    let failed: Vec<usize> = (0..conditions.len())
        .filter(|i| holds(&conditions[*i]) == Some(false))
        .collect();
    let missing: Vec<String> = conditions
        .iter()
        .filter_map(|c| c.figure.as_ref().err().cloned())
        .collect();
    let verdict = if conditions.iter().any(|c| holds(c) == Some(true)) {
        Verdict::Holds
    } else if !missing.is_empty() {
        Verdict::NotJudged
    } else {
        Verdict::Differs
    };
    let mut claim = judge_all(check, conditions, context, |_| String::new());
    claim.expectation = conditions
        .iter()
        .map(|c| c.rule.describe(&c.subject, &c.unit))
        .collect::<Vec<_>>()
        .join(", or ");
    if verdict != Verdict::NotJudged {
        claim.why = why(&Outcome {
            verdict,
            failed,
            missing,
        });
    }
    claim.verdict = verdict;
    claim
}
