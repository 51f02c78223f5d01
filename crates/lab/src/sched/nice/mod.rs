//! `sched.nice`: two CPU-bound processes on one CPU, at nice 0 and nice k.
//!
//! What: the CPU share each got (from its own run time) vs the share the kernel's
//! weight table predicts, w(0) / (w(0) + w(k)); the share in every 100 ms (quick)
//! or 300 ms interval as samples; and how the CPU changes hands: each one's turn,
//! from taking the CPU to handing it to the other.
//!
//! Method: two workers forked from oslab (oslab_probe::spinners), pinned to one
//! CPU, the second at nice k, spin for the same wall time and record every gap
//! over 50 us when they were off the CPU; their runs lie between. 300 ms in, the
//! parent reads both /proc/PID/sched (se.load.weight, se.slice), and /proc/stat
//! before and after each pair (steal). The claim is judged on the ratio of the two
//! run times against w(0) / w(k), relatively: an absolute tolerance on the share
//! would pass nice 19 at 15:1 instead of 68:1.
//!
//! Pitfalls: the run between two gaps is no slice of the scheduler's: a gap in
//! which neither worker ran (the host took the vCPU, an interrupt handler, another
//! task) cuts a run in two, so its median moves with the noise of the CPU (24 ms
//! in one run, 10 ms in another). The turn, from handover to handover, does not:
//! under EEVDF nice k runs about one tick per turn (its slice is only enforced at
//! a tick) and nice 0 about w(0) / w(k) times as long. Workers forked from one
//! session share an autogroup, so their nice values weigh against each other; a
//! task in another autogroup or cgroup would not follow the table.
//!
//! References: setpriority(2), sched(7) ("The nice value"), proc(5)
//! (/proc/PID/sched, /proc/stat), kernel/sched/core.c sched_prio_to_weight,
//! Documentation/scheduler/sched-eevdf.rst; material section 6
//! (../shared/spec/material.md).

mod judge;
mod measure;
#[cfg(test)]
mod tests;

use oslab_model::Environment;
use oslab_sys::parse::pidsched::PidSched;
use oslab_sys::parse::procstat::CpuTimes;
use serde::{Deserialize, Serialize};

use crate::sched::common::analysis::{Worker, weight};
use crate::sched::common::probe::GAP_NS;
use oslab_harness::{Context, LabError, Meta, Needs, Output};
use oslab_harness::{Experiment, Measured, Planner};

pub struct SchedNice;

static META: Meta = Meta {
    id: "sched.nice",
    title: "Nice: CPU shares of nice 0 vs nice k on one CPU",
    section: "6",
    summary: "measured share vs the weight table's prediction for k = 1, 5, 10, 19; turn lengths per nice",
    needs: Needs {
        root: false,
        min_cpus: 1,
        free_disk_bytes: 0,
    },
    quick_s: 4.0,
    full_s: 13.0,
    internal: false,
    full_lab_only: false,
};

/// The share of the nice-0 task the weight table predicts against nice k.
pub fn predicted_share(k: i32) -> f64 {
    let (a, b) = (weight(0) as f64, weight(k) as f64);
    a / (a + b)
}

/// Most gaps a worker records.
const MAX_GAPS: usize = 200_000;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Plan {
    /// Seconds per k.
    pub duration: f64,
    /// The nice values set against nice 0.
    pub ks: Vec<i32>,
    /// The length of the intervals whose shares are the samples, ms.
    pub interval_ms: f64,
    /// A stretch longer than this between two clock readings is off the CPU.
    pub gap_ns: u64,
}

/// One k: the nice-0 worker and the nice-k one.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Pair {
    pub k: i32,
    /// Nice 0 first, then nice k.
    pub workers: Vec<Worker>,
    /// Their /proc/PID/sched, 300 ms in, in the same order.
    pub sched: Vec<PidSched>,
    /// /proc/stat (all CPUs) before and after.
    pub stat_before: Option<CpuTimes>,
    pub stat_after: Option<CpuTimes>,
    /// The scheduler's own switches and wake-ups of the two workers.
    #[serde(default)]
    pub kernel: oslab_trace::TraceOutcome,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Raw {
    /// The CPU both workers were pinned to.
    pub cpu: u32,
    pub pairs: Vec<Pair>,
}

impl Experiment for SchedNice {
    type Plan = Plan;
    type Raw = Raw;

    fn meta(&self) -> &Meta {
        &META
    }
    fn headline(&self) -> &'static str {
        "share.nice0_vs_5"
    }

    fn plan(&self, p: &mut Planner) -> Plan {
        let quick = p.quick();
        Plan {
            duration: if quick { 1.0 } else { 3.0 },
            ks: if quick {
                vec![5, 10]
            } else {
                vec![1, 5, 10, 19]
            },
            // about two cycles of nice 0's turn and nice k's at the largest k
            // (k = 10: 41 ms of run time; k = 19: 276 ms)
            interval_ms: if quick { 100.0 } else { 300.0 },
            gap_ns: GAP_NS,
        }
    }

    fn measure(&self, plan: &Plan, ctx: &mut Context) -> Result<Measured<Raw>, LabError> {
        measure::measure(plan, ctx)
    }

    fn judge(&self, plan: &Plan, raw: &Raw, env: &Environment) -> Output {
        judge::judge(plan, raw, env)
    }
}
