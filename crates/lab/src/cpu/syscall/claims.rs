//! cpu.syscall's claims: a system call is a mode switch, not a context switch, and
//! costs tens of ns.

use super::Raw;
use super::calls::Calls;
use oslab_harness::check::{Check, Condition, Rule};

/// The material's "tens to ~100 ns per call" (section 5, 2006-2013 Xeons): tens
/// means at least 10 ns; "about 100" is read with 50 % room.
pub(super) const MATERIAL_LOW_NS: f64 = 10.0;

pub(super) const MATERIAL_HIGH_NS: f64 = 150.0;

/// Voluntary switches per million calls at or below which the calls caused none
/// (one per 100,000 calls: a page fault or the tick's work, not the calls).
pub(super) const SWITCHES_PER_MILLION: f64 = 10.0;

pub(super) const MODE_SWITCH: Check = Check {
    id: "syscall-is-mode-switch",
    tolerates: &oslab_harness::interference::ANY,
    text: "A system call is a mode switch, not a context switch",
    source: "B. Sigoure, \"How long does it take to make a context switch?\" (2010)",
};

pub(super) const COST: Check = Check {
    id: "syscall-cost-tens-of-ns",
    tolerates: &oslab_harness::interference::TIMES,
    text: "The cheapest system call (gettid) costs tens to about a hundred nanoseconds",
    source: "B. Sigoure, \"How long does it take to make a context switch?\" (2010, updated 2013: 2006-2013 Xeons; 'about 100' read as up to 150 ns)",
};

pub(super) fn mode_switch_claim(raw: &Raw, calls: &Calls) -> oslab_model::Claim {
    MODE_SWITCH.judge(
        &[Condition::new(
            "voluntary switches per million calls",
            "",
            Rule::AtMost(SWITCHES_PER_MILLION),
            calls.switches_per_million,
        )],
        &format!(
            "{} voluntary and {} involuntary switches during {} calls ({} of them system calls)",
            raw.voluntary_switches, raw.involuntary_switches, calls.all, calls.syscalls
        ),
        |o| {
            if o.holds() {
                "the thread's own switch counters did not move with the calls".into()
            } else {
                "the thread blocked during the loop; something else (page faults, a signal, a debugger) made it sleep".into()
            }
        },
    )
}

pub(super) fn cost_claim(raw: &Raw, gettid_ns: f64, getppid_ns: f64) -> oslab_model::Claim {
    COST.judge(
        &[Condition::new(
            "gettid",
            "ns",
            Rule::Range(MATERIAL_LOW_NS, MATERIAL_HIGH_NS),
            gettid_ns,
        )],
        &format!("getppid {getppid_ns:.1} ns"),
        |o| {
            if o.holds() {
                "within the range the author measured".into()
            } else if gettid_ns > MATERIAL_HIGH_NS && !raw.mitigations.is_empty() {
                format!(
                    "dearer than on the author's CPUs; kernel entry here pays for mitigations ({})",
                    raw.mitigations.join("; ")
                )
            } else if gettid_ns > MATERIAL_HIGH_NS {
                "dearer than on the author's CPUs, with no mitigation reported: a slow or heavily shared CPU".into()
            } else {
                "cheaper than on the author's CPUs: a newer CPU enters the kernel faster".into()
            }
        },
    )
}
