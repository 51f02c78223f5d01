//! `sched.scaling` and `sched.multiload`: N processes with the same CPU work, on
//! one CPU and then free on all CPUs.
//!
//! What: per N, each process's real time (turnaround, from the common start to its
//! end), user and sys time, and the throughput (processes finished per second).
//! On one CPU real grows as N x alone; on all CPUs it stays flat up to the CPU
//! count, after which only turnaround grows and throughput stays. `sched.multiload`
//! is the book's multiload (N = 1..2x CPUs, every process's own real, user and
//! sys); `sched.scaling` adds N = 8 and the throughput curve.
//!
//! Method: every process is a worker forked from oslab (oslab_probe::spinners) that
//! spins until it has run a fixed amount of its own run time (not a loop count:
//! the host's speed varies), all released at one instant; real is measured from
//! the first start to each one's last clock reading, user and sys by getrusage.
//! /proc/stat is read around every round, so steal is known.
//!
//! Pitfalls: under a hypervisor the host may take a vCPU (steal), and stolen time
//! counts as real time but not as run time, so real grows without any other task;
//! the result names the steal measured. The material's figures (about 4 s alone,
//! 8.5 s for two) come from a loop count on one machine; here the work is the run
//! time itself, so only the ratios compare.
//!
//! References: time(1), getrusage(2), sched_setaffinity(2), proc(5) (/proc/stat);
//! material section 6 (../shared/spec/material.md).

mod judge;
mod measure;
#[cfg(test)]
mod tests;

use oslab_model::Environment;
use oslab_sys::parse::procstat::CpuTimes;
use serde::{Deserialize, Serialize};

use crate::sched::common::analysis::Worker;
use crate::sched::common::probe::GAP_NS;
use oslab_harness::{Context, LabError, Meta, Needs, Output};
use oslab_harness::{Experiment, Measured, Planner};

pub use judge::{Point, point};

/// `sched.scaling` (N = 1..2x CPUs and 8, with throughput) or `sched.multiload`
/// (the book's multiload: N = 1..2x CPUs, real/user/sys of every process).
pub struct SchedScaling {
    pub multiload: bool,
}

static META_MULTILOAD: Meta = Meta {
    id: "sched.multiload",
    title: "Multiload: N CPU-bound processes on CPU 0, then free on all CPUs",
    section: "6",
    summary: "real, user and sys time of each of N processes with equal CPU work, one CPU vs all CPUs",
    needs: Needs {
        root: false,
        min_cpus: 1,
        free_disk_bytes: 0,
    },
    quick_s: 4.0,
    full_s: 20.0,
    internal: false,
    full_lab_only: false,
};

static META: Meta = Meta {
    id: "sched.scaling",
    title: "Turnaround and throughput vs number of processes, one CPU and all CPUs",
    section: "6",
    summary: "N processes with equal CPU work: real/user/sys per process, turnaround and throughput vs N",
    needs: Needs {
        root: false,
        min_cpus: 1,
        free_disk_bytes: 0,
    },
    quick_s: 8.0,
    full_s: 40.0,
    internal: false,
    full_lab_only: false,
};

/// Most gaps a worker records.
const MAX_GAPS: usize = 100_000;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Plan {
    /// Seconds of run time each process does.
    pub work: f64,
    /// The numbers of processes, in order.
    pub ns: Vec<usize>,
    /// The CPUs of the machine: "all CPUs" and where throughput should flatten.
    pub cpus: usize,
    /// A stretch longer than this between two clock readings is off the CPU.
    pub gap_ns: u64,
}

/// One N, on one CPU or on all.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Round {
    pub n: usize,
    pub workers: Vec<Worker>,
    /// /proc/stat (all CPUs) before and after.
    pub stat_before: Option<CpuTimes>,
    pub stat_after: Option<CpuTimes>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Raw {
    /// The CPU of the one-CPU rounds.
    pub cpu0: u32,
    pub one_cpu: Vec<Round>,
    pub all_cpus: Vec<Round>,
}

impl Experiment for SchedScaling {
    type Plan = Plan;
    type Raw = Raw;

    fn meta(&self) -> &Meta {
        if self.multiload {
            &META_MULTILOAD
        } else {
            &META
        }
    }
    fn headline(&self) -> &'static str {
        if self.multiload {
            "one_cpu.n2"
        } else {
            "one_cpu.n8"
        }
    }

    fn plan(&self, p: &mut Planner) -> Plan {
        let cpus = p.machine.cpu.cpus.len().max(1);
        let mut ns: Vec<usize> = (1..=2 * cpus).collect();
        if !self.multiload && !ns.contains(&8) {
            ns.push(8);
        }
        Plan {
            work: if p.quick() { 0.1 } else { 0.5 },
            ns,
            cpus,
            gap_ns: GAP_NS,
        }
    }

    fn measure(&self, plan: &Plan, ctx: &mut Context) -> Result<Measured<Raw>, LabError> {
        measure::measure(plan, ctx)
    }

    fn judge(&self, plan: &Plan, raw: &Raw, env: &Environment) -> Output {
        judge::judge(self.multiload, plan, raw, env)
    }
}
