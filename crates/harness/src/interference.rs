//! Verdicts a busy machine cannot flip: each claim's [`Check`] says what other
//! programs' work its method tolerates ([`Tolerance`]); a claim measured while
//! more went on is measured again (the runner, once) and, still disturbed, not
//! judged, with the figures and the interference in its "why", never `differs`
//! (nor `holds`: a busy CPU can push a figure either way).
//!
//! The interference is the run's [`LoadRecord`]: other programs' share of all
//! CPUs' time (busy time less oslab's own threads and children and the kernel's
//! threads, [`super::load`]) and the hypervisor's steal. A record without the
//! share (a raw file from before it was kept, a window under 0.2 s) leaves the
//! verdicts as they are.
//!
//! [`Check`]: super::check::Check

use std::borrow::Cow;

use oslab_model::{Claim, LoadRecord, Tolerance, Verdict};

/// Counts, sizes and states the kernel keeps (switch counts, bytes lost or
/// written, its own arithmetic): other programs' work does not change them.
pub const ANY: Tolerance = Tolerance {
    others_cpu: 1.0,
    steal: 1.0,
    why: Cow::Borrowed(
        "it judges counts and states the kernel keeps, which other programs' work does not change",
    ),
};

/// Times taken as the median of many repetitions: other programs on the other
/// CPUs leave them alone, but once they take a quarter of the machine they share
/// the measuring CPU, its caches and the disk's queue.
pub const TIMES: Tolerance = Tolerance {
    others_cpu: 0.25,
    steal: 0.15,
    why: Cow::Borrowed(
        "its figures are times of many repetitions: other programs taking more than a quarter of the CPUs' time share the CPU, the caches and the device it times",
    ),
};

/// Processes' shares of a CPU and how long they take to finish: every other
/// runnable program takes its share from them.
pub const CPU_SHARES: Tolerance = Tolerance {
    others_cpu: 0.10,
    steal: 0.15,
    why: Cow::Borrowed(
        "its figures are processes' shares of a CPU and their turnaround, from which every other runnable program takes its own share",
    ),
};

/// Why the interference in `load` is more than `t` tolerates, or None.
pub fn beyond(t: &Tolerance, load: &LoadRecord) -> Option<String> {
    let others = load.others_cpu_fraction?;
    let mut parts = Vec::new();
    if others > t.others_cpu {
        parts.push(format!(
            "other programs kept {:.0} % of the CPUs busy (it tolerates {:.0} %)",
            others * 100.0,
            t.others_cpu * 100.0
        ));
    }
    if load.steal_fraction > t.steal {
        parts.push(format!(
            "the hypervisor stole {:.1} % of the CPU time (it tolerates {:.0} %)",
            load.steal_fraction * 100.0,
            t.steal * 100.0
        ));
    }
    (!parts.is_empty()).then(|| parts.join(" and "))
}

/// Whether a claim judged holds or differs was measured under more interference
/// than its method tolerates.
pub fn disturbed(c: &Claim, load: &LoadRecord) -> bool {
    matches!(c.verdict, Verdict::Holds | Verdict::Differs)
        && c.tolerates.as_ref().and_then(|t| beyond(t, load)).is_some()
}

/// Every disturbed claim made `not judged`: the figures stay in `observed`, the
/// "why" says what went on, what the method tolerates and why, and what the
/// figures alone would have said.
pub fn judge_disturbed(claims: &mut [Claim], load: &LoadRecord) {
    let attempts = load.attempts.unwrap_or(1);
    for c in claims.iter_mut().filter(|c| disturbed(c, load)) {
        let Some(t) = &c.tolerates else { continue };
        let Some(what) = beyond(t, load) else {
            continue;
        };
        let measured = match attempts {
            1 => "while it measured".to_string(),
            n => format!("in each of its {n} measurements"),
        };
        c.why = format!(
            "not judged: {what} {measured}; {}; the figures alone would say it {}",
            t.why,
            c.verdict.label()
        );
        c.verdict = Verdict::NotJudged;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn claim(verdict: Verdict, tolerates: Option<Tolerance>) -> Claim {
        Claim {
            id: "c".into(),
            text: "on one CPU real time grows as N x alone".into(),
            source: "s".into(),
            expectation: "e".into(),
            observed: "one CPU, N=4: mean real 0.61 s".into(),
            verdict,
            why: "off".into(),
            tolerates,
        }
    }

    fn load(others: Option<f64>, steal: f64) -> LoadRecord {
        LoadRecord {
            others_cpu_fraction: others,
            steal_fraction: steal,
            ..Default::default()
        }
    }

    /// Regression: "on one CPU real time grows as N x alone" held in one
    /// experiment and differed in another of the same run, whose reason read
    /// "other programs kept about 45 % of the CPUs busy".
    #[test]
    fn a_claim_measured_beside_more_work_than_it_tolerates_is_not_judged() {
        for v in [Verdict::Differs, Verdict::Holds] {
            let mut c = [claim(v, Some(CPU_SHARES))];
            judge_disturbed(&mut c, &load(Some(0.45), 0.0));
            assert_eq!(c[0].verdict, Verdict::NotJudged);
            assert!(
                c[0].why.starts_with(
                    "not judged: other programs kept 45 % of the CPUs busy (it tolerates 10 %) while it measured; its figures are processes' shares"
                ),
                "{}",
                c[0].why
            );
            assert!(c[0].why.ends_with(&format!("would say it {}", v.label())));
            assert_eq!(
                c[0].observed, "one CPU, N=4: mean real 0.61 s",
                "figures kept"
            );
        }
    }

    #[test]
    fn within_the_tolerance_or_unknown_interference_the_verdict_stands() {
        for (t, l) in [
            (Some(CPU_SHARES), load(Some(0.05), 0.02)),
            (Some(TIMES), load(Some(0.20), 0.0)),
            (Some(ANY), load(Some(0.99), 0.5)),
            (None, load(Some(0.99), 0.5)),
            // a record from before the share was kept
            (Some(CPU_SHARES), load(None, 0.0)),
        ] {
            let mut c = [claim(Verdict::Differs, t)];
            judge_disturbed(&mut c, &l);
            assert_eq!(c[0].verdict, Verdict::Differs);
            assert_eq!(c[0].why, "off");
        }
    }

    #[test]
    fn steal_counts_and_claims_not_judged_or_not_testable_are_left_alone() {
        let mut c = [claim(Verdict::Holds, Some(TIMES))];
        let mut l = load(Some(0.0), 0.30);
        l.attempts = Some(2);
        judge_disturbed(&mut c, &l);
        assert_eq!(c[0].verdict, Verdict::NotJudged);
        assert!(
            c[0].why.contains(
                "the hypervisor stole 30.0 % of the CPU time (it tolerates 15 %) in each of its 2 measurements"
            ),
            "{}",
            c[0].why
        );
        for v in [Verdict::NotTestable, Verdict::NotJudged] {
            let mut c = [claim(v, Some(CPU_SHARES))];
            judge_disturbed(&mut c, &load(Some(0.9), 0.0));
            assert_eq!((c[0].verdict, c[0].why.as_str()), (v, "off"));
        }
    }
}
