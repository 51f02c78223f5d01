//! `sched.smt`: what a sibling hardware thread gives.
//!
//! What: the throughput of two CPU-bound workers pinned to the two threads of one
//! core, and to two separate cores, against one thread's (two workers taking turns
//! on one CPU). The material (section 6, seed 000): SMT adds about 20-30 %, not 2x.
//!
//! Method: the workers of oslab_probe::spinners spin reading CLOCK_MONOTONIC; the
//! work is the clock readings, a fixed tiny unit, per second of wall time, summed
//! over both. The pairs come from the topology (thread_siblings_list in sysfs, as
//! `oslab info` shows it), which the raw data records as seen; without an SMT
//! sibling nothing is measured and the claim is not testable here.
//!
//! Pitfalls: a clock-reading loop stresses few execution units, so two threads of
//! a core share them better than a compiler or a database would; the gain here is
//! an upper end. Under a hypervisor, vCPUs that look like siblings need not be
//! siblings on the host. Turbo frequencies drop when a second core wakes, so two
//! cores give somewhat less than 2x.
//!
//! References: /sys/devices/system/cpu/smt/control and
//! cpu*/topology/thread_siblings_list (Documentation/admin-guide/cputopology.rst),
//! sched_setaffinity(2); material section 6 (../shared/spec/material.md).

mod claims;
mod judge;
mod measure;
#[cfg(test)]
mod tests;

use oslab_model::Environment;
use oslab_model::machine::MachineInfo;
use serde::{Deserialize, Serialize};

use crate::sched::common::analysis::Worker;
use oslab_harness::{Context, LabError, Meta, Needs, Output};
use oslab_harness::{Experiment, Measured, Planner};

pub struct SchedSmt;

static META: Meta = Meta {
    id: "sched.smt",
    title: "SMT: two workers on sibling threads vs on separate cores",
    section: "6",
    summary: "throughput of two CPU-bound workers on one core's two threads vs two cores (not testable without SMT)",
    needs: Needs {
        root: false,
        min_cpus: 1,
        free_disk_bytes: 0,
    },
    quick_s: 3.0,
    full_s: 8.0,
    internal: false,
    full_lab_only: false,
};

/// Two CPUs to pin a pair of workers to.
pub type CpuPair = (u32, u32);

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Plan {
    /// Seconds per pairing.
    pub duration: f64,
}

/// One logical CPU as the topology showed it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CpuSeen {
    pub cpu: u32,
    pub core_id: Option<u32>,
    /// Its thread_siblings_list (itself included).
    pub siblings: Vec<u32>,
}

/// The three pairings, two workers each.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Runs {
    /// Both on the first sibling: one thread's throughput.
    pub one_thread: Vec<Worker>,
    pub siblings: Vec<Worker>,
    pub cores: Vec<Worker>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Raw {
    pub topology: Vec<CpuSeen>,
    /// The sysfs SMT control as read (`on`, `off`, `notsupported`), if readable.
    pub smt_control: Option<String>,
    /// Two sibling threads of one core, and two CPUs on separate cores.
    pub sibling_pair: Option<CpuPair>,
    pub separate_pair: Option<CpuPair>,
    /// Absent when there was no sibling pair to measure.
    pub runs: Option<Runs>,
}

/// (a, b) on one core and (a, c) on two cores, when the topology has both.
pub fn pairs(m: &MachineInfo) -> (Option<CpuPair>, Option<CpuPair>) {
    let mut siblings = None;
    let mut separate = None;
    for c in &m.cpu.cpus {
        if let Some(s) = c.thread_siblings.iter().find(|s| **s != c.cpu) {
            siblings.get_or_insert((c.cpu, *s));
        }
        for d in &m.cpu.cpus {
            if d.cpu != c.cpu && !c.thread_siblings.contains(&d.cpu) {
                separate.get_or_insert((c.cpu, d.cpu));
            }
        }
    }
    (siblings, separate)
}

/// The topology for people: `cpu0: core 0, no SMT sibling; cpu1: core 0, sibling cpu5`.
pub fn describe(topology: &[CpuSeen]) -> String {
    topology
        .iter()
        .map(|c| {
            let core = c
                .core_id
                .map_or_else(|| "core unknown".into(), |k| format!("core {k}"));
            let others: Vec<String> = c
                .siblings
                .iter()
                .filter(|s| **s != c.cpu)
                .map(|s| format!("cpu{s}"))
                .collect();
            let sib = match others.len() {
                0 => "no SMT sibling".into(),
                1 => format!("sibling {}", others[0]),
                _ => format!("siblings {}", others.join(", ")),
            };
            format!("cpu{}: {core}, {sib}", c.cpu)
        })
        .collect::<Vec<_>>()
        .join("; ")
}

impl Experiment for SchedSmt {
    type Plan = Plan;
    type Raw = Raw;

    fn meta(&self) -> &Meta {
        &META
    }

    fn plan(&self, p: &mut Planner) -> Plan {
        Plan {
            duration: if p.quick() { 1.0 } else { 3.0 },
        }
    }

    fn measure(&self, plan: &Plan, ctx: &mut Context) -> Result<Measured<Raw>, LabError> {
        measure::measure(plan, ctx)
    }

    fn judge(&self, _plan: &Plan, raw: &Raw, env: &Environment) -> Output {
        judge::judge(raw, env)
    }
}
