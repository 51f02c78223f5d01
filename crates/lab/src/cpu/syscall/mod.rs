//! `cpu.syscall`: what one system call costs, and that it is no context switch.
//!
//! What: ns per call of the cheapest system calls, gettid(2) and getppid(2),
//! beside clock_gettime(CLOCK_MONOTONIC), which the vDSO serves in user space
//! without entering the kernel; and the thread's voluntary context switches per
//! million calls. The claim of material section 5 (seed 002): a system call is a
//! mode switch, not a context switch.
//!
//! Method: gettid and getppid are issued through syscall(2) so no C library cache
//! can answer them; the vDSO clock is timed beside them as the contrast. The thread
//! is pinned to the CPU it started on. Each sample is one batch (calibrated to last
//! at least 200 us) divided by its size; the probes are interleaved round by round,
//! after warm-up rounds; the cost of the empty loop is measured the same way and
//! subtracted from the others. The thread's own switch counters
//! (getrusage(RUSAGE_THREAD), the same numbers /proc/thread-self/status shows) are
//! read around the loop: a system call that switched would add one voluntary
//! switch per call.
//!
//! Pitfalls: Spectre/Meltdown mitigations (page-table isolation, retpolines, IBRS)
//! can multiply the cost of entering the kernel; the vulnerabilities files are
//! quoted in the result. Under a hypervisor a system call does not exit to the host,
//! so its cost is close to bare metal, unlike a context switch. The subtracted
//! "loop" is not an empty compiled loop (a fraction of a nanosecond): it is the
//! same loop every probe runs, an indirect call through a function pointer per
//! iteration, so what remains is the body alone; raw figures are reported beside
//! the corrected ones.
//!
//! References: syscall(2), gettid(2), vdso(7), getrusage(2);
//! Documentation/admin-guide/hw-vuln/; material section 5.

mod calls;
mod claims;
mod judge;
mod measure;

use std::hint::black_box;

use oslab_model::Environment;
use oslab_sys::process::{raw_getppid, raw_gettid};
use serde::{Deserialize, Serialize};

use crate::cpu::common::timing::empty_body;
use oslab_harness::{Context, LabError, Meta, Needs, Output};
use oslab_harness::{Experiment, Measured, Planner};

pub struct Syscall;

static META: Meta = Meta {
    id: "cpu.syscall",
    title: "The cost of a system call",
    section: "5",
    summary: "raw gettid and getppid vs vDSO clock_gettime, ns per call; no context switch",
    needs: Needs {
        root: false,
        min_cpus: 1,
        free_disk_bytes: 0,
    },
    quick_s: 2.0,
    full_s: 10.0,
    internal: false,
    full_lab_only: false,
};

const WARMUP_ROUNDS: usize = 3;

fn vdso_clock() {
    black_box(oslab_sys::clock::monotonic_ns());
}

fn gettid() {
    black_box(raw_gettid());
}

fn getppid() {
    black_box(raw_getppid());
}

/// The probes, in the order they are interleaved; the first is the loop itself.
const PROBES: [(&str, &str, fn()); 4] = [
    (
        "loop",
        "empty loop iteration (subtracted from the others)",
        empty_body,
    ),
    ("gettid", "gettid(2) via syscall(2)", gettid),
    ("getppid", "getppid(2) via syscall(2)", getppid),
    (
        "clock_gettime_vdso",
        "clock_gettime(CLOCK_MONOTONIC), served by the vDSO",
        vdso_clock,
    ),
];

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Plan {
    /// Interleaved rounds, one sample of each probe per round.
    pub samples: usize,
}

/// One probe's batch size and its per-call times, uncorrected.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProbeRaw {
    pub name: String,
    pub batch: u64,
    pub ns_per_call: Vec<f64>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Raw {
    /// The CPU the thread was pinned to, and where it was seen after the loop.
    pub cpu: u32,
    pub ran_on: Option<u32>,
    pub probes: Vec<ProbeRaw>,
    /// The thread's switches during the timed rounds (getrusage RUSAGE_THREAD).
    pub voluntary_switches: u64,
    pub involuntary_switches: u64,
    /// CPU vulnerability mitigations in force (name: state).
    pub mitigations: Vec<String>,
}

impl Experiment for Syscall {
    type Plan = Plan;
    type Raw = Raw;

    fn meta(&self) -> &Meta {
        &META
    }
    fn headline(&self) -> &'static str {
        "gettid"
    }

    fn plan(&self, p: &mut Planner) -> Plan {
        Plan {
            samples: p.samples(100, 1000),
        }
    }

    fn measure(&self, plan: &Plan, ctx: &mut Context) -> Result<Measured<Raw>, LabError> {
        measure::measure(plan, ctx)
    }

    fn judge(&self, plan: &Plan, raw: &Raw, env: &Environment) -> Output {
        judge::judge(plan, raw, env.seed)
    }
}

#[cfg(test)]
mod tests;
