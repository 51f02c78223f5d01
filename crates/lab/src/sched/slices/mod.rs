//! `sched.slices`: how long each of N CPU-bound processes on one CPU runs per turn.
//!
//! What: slice lengths (median, p10, p90), waits, turns and shares of N = 1..4
//! (quick) or 1..8 processes pinned to one CPU, beside what the kernel says
//! (se.slice from /proc/PID/sched, the timer tick from HZ) and predicts: under
//! EEVDF a slice is max(se.slice, one tick), since the slice is only enforced at a
//! tick; the wait is (N - 1) slices; each share 1/N.
//!
//! Method: every worker is a process forked from oslab (oslab_probe::spinners) that
//! spins reading CLOCK_MONOTONIC and records every stretch longer than 50 us when
//! it was not running; its runs on the CPU lie between. Work is measured as the
//! workers' own run time, never as loop counts (the host's speed varies). While
//! they run, the parent reads the first worker's /proc/PID/sched (se.slice), its
//! /proc/PID/schedstat and the busy CPU's local timer interrupts (/proc/interrupts)
//! over a window, so the tick rate is measured, not assumed. Where kernel tracing
//! is available (root, eBPF) the scheduler's own sched_switch and sched_wakeup
//! records of the workers are kept too: slices from the kernel's switches beside
//! the workers' own, which must agree within 1 % of run time. `--set trace=FILE`
//! writes the largest N as a Chrome trace for ui.perfetto.dev: the kernel's
//! switches (running and runnable slices) on the real pids with CLOCK_MONOTONIC
//! timestamps, or the workers' own runs without tracing.
//!
//! Pitfalls: a gap in which no worker ran (the host took the vCPU, an interrupt
//! handler, another task) splits a run in two, so a noisy CPU shortens the median
//! run; the judge counts those gaps. The slice a kernel enforces depends on its
//! scheduler: CFS divided sched_latency_ns among the N tasks (the material's
//! 12 ms), EEVDF gives each task a base slice (sched_base_slice, scaled by
//! 1 + log2(CPUs)) and only preempts at a tick or a wake-up. Workers forked from one
//! session share an autogroup, so their nice values compare with each other only.
//!
//! References: sched(7), proc(5) (/proc/PID/sched, schedstat, interrupts),
//! Documentation/scheduler/sched-eevdf.rst, sched-design-CFS.rst, sched-stats.rst;
//! material section 6 (../shared/spec/material.md).

mod judge;
mod measure;
pub mod plots;
#[cfg(test)]
mod tests;

use std::path::PathBuf;

use oslab_model::Environment;
use oslab_sys::parse::pidsched::PidSched;
use oslab_sys::parse::schedstat::SchedStat;
use serde::{Deserialize, Serialize};

use crate::sched::common::analysis::Worker;
use crate::sched::common::probe::GAP_NS;
use crate::settings::{AnySetting, Declared, FilePath, Seconds, Setting};
use oslab_harness::{Context, LabError, Meta, Needs, Output};
use oslab_harness::{Experiment, Measured, Planner};
use oslab_trace::TraceOutcome;

pub struct SchedSlices;

static META: Meta = Meta {
    id: "sched.slices",
    title: "Time slices: N processes sharing one CPU",
    section: "6",
    summary: "slice lengths, waits and shares of 1..N spinning processes on one CPU vs the kernel's slice and tick",
    needs: Needs {
        root: false,
        min_cpus: 1,
        free_disk_bytes: 0,
    },
    quick_s: 6.0,
    full_s: 25.0,
    internal: false,
    full_lab_only: false,
};

static TRACE: Setting<FilePath> = Setting {
    name: "trace",
    help: "write the runs of the largest N as a Chrome/Perfetto trace JSON to FILE",
    quick: None,
    full: None,
    bounds: None,
    names: &[],
};
static DURATION: Setting<Seconds> = Setting {
    name: "duration",
    help: "seconds per N",
    quick: 1.0,
    full: 3.0,
    bounds: Some((0.2, 60.0)),
    names: &[],
};
static SETTINGS: [&dyn AnySetting; 2] = [&TRACE, &DURATION];

/// Most gaps a worker records.
const MAX_GAPS: usize = 200_000;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Plan {
    /// Seconds per N.
    pub duration: f64,
    /// Where the Chrome trace of the largest N goes, if anywhere.
    pub trace: Option<PathBuf>,
    /// The numbers of processes, in order.
    pub ns: Vec<usize>,
    /// A stretch longer than this between two clock readings is off the CPU.
    pub gap_ns: u64,
}

/// What the parent read over a window while the workers ran.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Window {
    /// Its length, CLOCK_MONOTONIC ns.
    pub ns: u64,
    /// Local timer interrupts of the busy CPU at its start and end.
    pub timer_before: Option<u64>,
    pub timer_after: Option<u64>,
    /// The first worker's /proc/PID/schedstat at its start and end.
    pub schedstat_before: Option<SchedStat>,
    pub schedstat_after: Option<SchedStat>,
}

/// One N.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Round {
    pub n: usize,
    pub workers: Vec<Worker>,
    /// The first worker's /proc/PID/sched, 300 ms in.
    pub first_sched: PidSched,
    pub window: Window,
    /// The scheduler's own switches and wake-ups of the workers.
    #[serde(default)]
    pub kernel: TraceOutcome,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Raw {
    /// The CPU every worker was pinned to.
    pub cpu: u32,
    pub rounds: Vec<Round>,
}

impl Experiment for SchedSlices {
    type Plan = Plan;
    type Raw = Raw;

    fn meta(&self) -> &Meta {
        &META
    }
    fn headline(&self) -> &'static str {
        "slice_ms.n2"
    }

    fn settings(&self) -> Declared {
        &SETTINGS
    }

    fn plan(&self, p: &mut Planner) -> Plan {
        Plan {
            duration: p.get(&DURATION),
            trace: p.get(&TRACE),
            ns: if p.quick() {
                vec![1, 2, 4]
            } else {
                vec![1, 2, 3, 4, 6, 8]
            },
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
