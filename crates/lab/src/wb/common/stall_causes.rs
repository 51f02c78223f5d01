//! Where the writers' time in write() went, by the kernel's own account: for
//! wb.throttle and wb.wcall, each write() of the experiment's writers split into
//! dirty-throttle pauses, waits for page write back, other blocking and run-queue
//! time (docs/tracing.md), and a claim that the pauses explain the slow writes.

use std::collections::BTreeMap;

use oslab_model::trace::Cause;
use oslab_model::{Claim, Finding};
use oslab_trace::TraceOutcome;
use oslab_trace::analysis::{blockers, shares_over};
use oslab_trace::records::{OffCpu, WriteCall};

use oslab_harness::check::{Check, Condition, Rule, figure};
use oslab_harness::finding;

/// A write() at least this long is a stall worth explaining.
pub const SLOW_MS: f64 = 20.0;
/// The share of slow writes' time the kernel's pauses must explain.
pub const EXPLAINED_SHARE: f64 = 0.9;

pub const EXPLAINED: Check = Check {
    id: "pauses-explain-stalls",
    tolerates: &oslab_harness::interference::TIMES,
    text: "When writers outrun the device, the time they lose in write() is the kernel's dirty-throttle pauses (balance_dirty_pages), not waiting for the disk itself",
    source: "mm/page-writeback.c balance_dirty_pages (\"IO-less\" throttling since 3.2), traced with eBPF",
};

/// The traced calls of the given threads.
pub fn calls_of<'a>(outcome: &'a TraceOutcome, tids: &[u32]) -> Vec<&'a WriteCall> {
    outcome
        .captured()
        .map(|c| c.writes.iter().filter(|w| tids.contains(&w.pid)).collect())
        .unwrap_or_default()
}

fn offcpu_of<'a>(outcome: &'a TraceOutcome, tids: &[u32]) -> Vec<&'a OffCpu> {
    outcome
        .captured()
        .map(|c| c.offcpu.iter().filter(|o| tids.contains(&o.pid)).collect())
        .unwrap_or_default()
}

fn cause_key(c: Cause) -> &'static str {
    match c {
        Cause::DirtyThrottle => "dirty_throttle",
        Cause::WritebackWait => "writeback_wait",
        Cause::Blocked => "blocked",
        Cause::RunQueue => "run_queue",
        Cause::OnCpu => "on_cpu",
    }
}

/// Findings `<prefix>.<cause>_share`: the share of the time in writes over
/// [`SLOW_MS`] each cause took, and how many such writes there were.
pub fn findings(prefix: &str, calls: &[&WriteCall]) -> Vec<Finding> {
    let slow_ns = (SLOW_MS * 1e6) as u64;
    let slow = calls.iter().filter(|w| w.dur_ns >= slow_ns).count();
    let mut out = vec![finding(
        &format!("{prefix}.writes_over_{}ms", SLOW_MS as u64),
        slow as f64,
        "count",
        format!("of {} write() calls traced", calls.len()),
    )];
    if let Some(shares) = shares_over(calls, slow_ns) {
        for (cause, share) in shares {
            out.push(finding(
                &format!("{prefix}.{}_share", cause_key(cause)),
                share,
                "fraction",
                format!(
                    "of the time in write() calls over {} ms: {}",
                    SLOW_MS as u64,
                    cause.label()
                ),
            ));
        }
    }
    out
}

/// The claim that the kernel's pauses explain the writers' slow writes.
pub fn explained_claim(outcome: &TraceOutcome, tids: &[u32]) -> Claim {
    let slow_ns = (SLOW_MS * 1e6) as u64;
    let calls = calls_of(outcome, tids);
    let subject = format!(
        "share of time in write() calls over {} ms spent in throttle pauses",
        SLOW_MS as u64
    );
    let (condition, shares) = explained_condition(outcome, &calls, slow_ns, &subject);
    let slow = calls.iter().filter(|w| w.dur_ns >= slow_ns).count();
    let context = format!(
        "{slow} of {} traced write() calls over {} ms",
        calls.len(),
        SLOW_MS as u64
    );
    let places = blockers(&offcpu_of(outcome, tids));
    EXPLAINED.judge(&[condition], &context, |o| {
        let shares = shares.unwrap_or_default();
        if o.holds() {
            return format!(
                "the kernel paused the writers in balance_dirty_pages for {} of that time; the rest was {}",
                figure(shares.get(&Cause::DirtyThrottle).copied().unwrap_or(0.0) * 100.0, "%"),
                rest(&shares)
            );
        }
        let (cause, share) = shares
            .iter()
            .filter(|(c, _)| **c != Cause::DirtyThrottle)
            .max_by(|a, b| a.1.total_cmp(b.1))
            .map(|(c, s)| (*c, *s))
            .unwrap_or((Cause::OnCpu, 0.0));
        let mut why = format!(
            "{} took {} of it",
            cause.label(),
            figure(share * 100.0, "%")
        );
        match cause {
            Cause::Blocked => {
                if let Some(p) = places.first() {
                    why.push_str(&format!(
                        " (most in {}: {} x, {})",
                        p.place,
                        p.count,
                        figure(p.total_ns as f64 / 1e6, "ms")
                    ));
                }
            }
            Cause::WritebackWait => why.push_str(": the writers rewrote pages still being written back"),
            Cause::RunQueue => why.push_str(": the writers waited for a CPU, not for the disk"),
            Cause::OnCpu => why.push_str(
                ": copying, allocating and faulting pages (on a VM also the host's faults on memory it had taken back)",
            ),
            Cause::DirtyThrottle => {}
        }
        why
    })
}

/// The throttle pauses' share of the slow calls, or why there is none; the
/// shares of every cause beside it.
fn explained_condition(
    outcome: &TraceOutcome,
    calls: &[&WriteCall],
    slow_ns: u64,
    subject: &str,
) -> (Condition, Option<BTreeMap<Cause, f64>>) {
    let rule = Rule::AtLeast(EXPLAINED_SHARE);
    match outcome {
        TraceOutcome::NotAvailable { reason } => (
            Condition::missing(
                subject,
                "",
                rule,
                format!("kernel tracing: not available ({reason})"),
            ),
            None,
        ),
        TraceOutcome::Traced(_) => match shares_over(calls, slow_ns) {
            Some(s) => (
                Condition::new(subject, "", rule, s[&Cause::DirtyThrottle]),
                Some(s),
            ),
            None => (
                Condition::missing(
                    subject,
                    "",
                    rule,
                    format!(
                        "no write() call of the writers took {} ms or more",
                        SLOW_MS as u64
                    ),
                ),
                None,
            ),
        },
    }
}

fn rest(shares: &BTreeMap<Cause, f64>) -> String {
    let parts: Vec<String> = shares
        .iter()
        .filter(|(c, s)| **c != Cause::DirtyThrottle && **s >= 0.005)
        .map(|(c, s)| format!("{} {}", c.label(), figure(s * 100.0, "%")))
        .collect();
    if parts.is_empty() {
        "negligible".into()
    } else {
        parts.join(", ")
    }
}

/// The notes a traced experiment adds: whether the kernel was asked, and where
/// slow writes blocked besides the throttle.
pub fn notes(outcome: &TraceOutcome, tids: &[u32]) -> Vec<String> {
    let mut out = vec![outcome.note()];
    for p in blockers(&offcpu_of(outcome, tids)).iter().take(3) {
        out.push(format!(
            "kernel: writers blocked in {} {} x, {} in all (longest {})",
            p.place,
            p.count,
            figure(p.total_ns as f64 / 1e6, "ms"),
            figure(p.max_ns as f64 / 1e6, "ms")
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use oslab_model::Verdict;
    use oslab_trace::analysis::Captured;

    fn call(pid: u32, dur_ms: u64, throttle_ms: u64, blocked_ms: u64) -> WriteCall {
        WriteCall {
            pid,
            tgid: 1,
            call: "write".into(),
            fd: 3,
            count: 524288,
            ret: 524288,
            start_ns: 0,
            dur_ns: dur_ms * 1_000_000,
            throttle_ns: throttle_ms * 1_000_000,
            wbwait_ns: 0,
            blocked_ns: blocked_ms * 1_000_000,
            runq_ns: 0,
            pauses: 1,
            prio: 120,

            ..WriteCall::default()
        }
    }

    fn traced(writes: Vec<WriteCall>, offcpu: Vec<OffCpu>) -> TraceOutcome {
        TraceOutcome::Traced(Box::new(Captured {
            writes,
            offcpu,
            ..Captured::default()
        }))
    }

    #[test]
    fn pauses_that_fill_the_slow_writes_hold() {
        let t = traced(
            vec![
                call(10, 100, 96, 0),
                call(10, 1, 0, 0),
                call(99, 100, 0, 100),
            ],
            vec![],
        );
        let c = explained_claim(&t, &[10]);
        assert_eq!(c.verdict, Verdict::Holds, "{c:?}");
        assert!(
            c.observed
                .contains("1 of 2 traced write() calls over 20 ms"),
            "{}",
            c.observed
        );
        assert!(c.why.contains("96 %"), "{}", c.why);
    }

    #[test]
    fn other_blocking_is_named_with_its_place() {
        let off = OffCpu {
            pid: 10,
            tgid: 1,
            call: "write".into(),
            start_ns: 0,
            dur_ns: 60_000_000,
            stack: vec![
                "schedule".into(),
                "jbd2_log_wait_commit".into(),
                "ext4_sync_file".into(),
            ],
        };
        let t = traced(vec![call(10, 100, 30, 60)], vec![off]);
        let c = explained_claim(&t, &[10]);
        assert_eq!(c.verdict, Verdict::Differs);
        assert!(c.why.contains("blocked elsewhere took 60 %"), "{}", c.why);
        assert!(
            c.why.contains("jbd2_log_wait_commit <- ext4_sync_file"),
            "{}",
            c.why
        );
        let f = findings("kernel", &calls_of(&t, &[10]));
        let share = |n: &str| f.iter().find(|x| x.name == n).unwrap().value;
        assert_eq!(share("kernel.writes_over_20ms"), 1.0);
        assert!((share("kernel.blocked_share") - 0.6).abs() < 1e-9);
    }

    #[test]
    fn without_tracing_or_slow_writes_the_claim_is_not_judged() {
        let off = TraceOutcome::NotAvailable {
            reason: "needs root".into(),
        };
        let c = explained_claim(&off, &[10]);
        assert_eq!(c.verdict, Verdict::NotJudged);
        assert_eq!(c.why, "kernel tracing: not available (needs root)");
        let fast = traced(vec![call(10, 1, 0, 0)], vec![]);
        let c = explained_claim(&fast, &[10]);
        assert_eq!(c.verdict, Verdict::NotJudged);
        assert!(c.why.contains("no write() call"), "{}", c.why);
        assert_eq!(
            notes(&off, &[10]),
            vec!["kernel tracing: not available (needs root)"]
        );
    }
}
