//! `wb.wcall`: the WCALL paper's evaluation (material section 7) on the real kernel,
//! vanilla vs the governor's `wcall` and `wcall-fair`.
//!
//! What: on the testbed (a blk-throttled loop device, dirty_bytes 64 MiB, background
//! 32 MiB) a SCHED_FIFO 55 writer writes 512 KiB every 20 ms, either alone, or with
//! two SCHED_FIFO 45 writers doing the same (the paper's Fig. 2/4/5), or with two
//! non-RT bulk writers; and, as the paper's Fig. 7, one nice-4 writer alone. Every
//! cell of the matrix (run x scenario x policy) times every write() of every writer.
//!
//! Method: every writer is its own process (`oslab wcall writer`), so the governor's
//! interposer is loaded into it exactly as into any program; under vanilla nothing
//! is loaded. The groups come from the writers' scheduling classes (group auto).
//! The poller reads /proc/meminfo (Dirty, Writeback), cachestat() of the writers'
//! files and the governor's table every 100 ms. `measure` ([`run`]) keeps all of
//! that; `judge` ([`judge`], [`claims`], [`plots`]) derives the figures, the claims
//! and the paper's figures redrawn, with the simulator's prediction for the same
//! workload and the testbed's measured bandwidth beside.
//!
//! Pitfalls: a p99 of 150 writes rests on two of them, so the reference (the writer
//! alone under vanilla) pools every run. In a virtual machine that reports free
//! memory to its host, the first touch of freed memory costs a host page fault per
//! page; `backed_memory` (on by default) touches 512 MiB before each cell and drops
//! the writers' clean pages, so no policy pays for that and the others not. A short
//! run (quick: 150 writes, 3 s) can end before the kernel's pauses grow to the
//! paper's 200 ms. `--set scenarios=...,policies=...` runs part of the matrix: the
//! claims that need a cell left out are not judged, with the reason.
//!
//! References: the WCALL paper (material section 7 of ../shared/spec/material.md,
//! Fig. 1-7 and Algorithm 1); docs/wcall.md (the governor); sched(7) (SCHED_FIFO),
//! ld.so(8) (LD_PRELOAD), posix_fadvise(2), cachestat(2);
//! Documentation/admin-guide/sysctl/vm.rst (dirty_bytes, dirty_background_bytes),
//! Documentation/admin-guide/cgroup-v1/blkio-controller.rst (the throttle),
//! mm/page-writeback.c (balance_dirty_pages, MAX_PAUSE).

pub mod claims;
pub mod judge;
pub mod plots;
pub mod run;
#[cfg(test)]
pub(crate) mod tests;
pub mod verdicts;

use oslab_model::Environment;
use oslab_wbsim::policy::Policy;
use serde::{Deserialize, Serialize};

use super::trace::{Poll, WriterTrace};
use crate::experiment::{Context, LabError, Meta, Needs, Output};
use crate::settings::{AnySetting, Bytes, Choices, Count, Declared, Flag, Setting};
use crate::shape::{Lab, Measured, Planner};

pub use judge::meets_latency_target;

pub struct WbWcall;
crate::shaped_experiment!(WbWcall);

static META: Meta = Meta {
    id: "wb.wcall",
    title: "WCALL on the real kernel: a high-priority writer among competitors, vanilla vs governed",
    section: "7",
    summary: "the paper's Fig. 4-7 measured on a throttled testbed under vanilla, wcall and wcall-fair, with the simulator beside",
    needs: Needs {
        root: true,
        min_cpus: 1,
        free_disk_bytes: 0,
    },
    quick_s: 75.0,
    full_s: 650.0,
    internal: false,
};

const SCENARIO_NAMES: &[&str] = &["alone", "rt45x2", "bulkx2", "fig7-nice4"];
const POLICY_NAMES: &[&str] = &["vanilla", "wcall", "wcall-fair"];

static BANDWIDTH: Setting<Bytes> = Setting {
    name: "bandwidth",
    help: "testbed write cap per second",
    quick: 40 << 20,
    full: 40 << 20,
    bounds: Some((1 << 20, 10 << 30)),
    names: &[],
};
static WRITES: Setting<Count> = Setting {
    name: "writes",
    help: "writes of the RT-55 writer per cell",
    quick: 150,
    full: 700,
    bounds: Some((20, 10_000)),
    names: &[],
};
static RUNS: Setting<Count> = Setting {
    name: "runs",
    help: "repetitions of the whole matrix",
    quick: 1,
    full: 3,
    bounds: Some((1, 10)),
    names: &[],
};
static SCENARIO_CHOICE: Setting<Choices> = Setting {
    name: "scenarios",
    help: "which workloads to run (claims that need a missing one are not judged)",
    quick: Vec::new(),
    full: Vec::new(),
    bounds: None,
    names: SCENARIO_NAMES,
};
static POLICY_CHOICE: Setting<Choices> = Setting {
    name: "policies",
    help: "which policies to run",
    quick: Vec::new(),
    full: Vec::new(),
    bounds: None,
    names: POLICY_NAMES,
};
static COORDINATOR_FIFO: Setting<Count> = Setting {
    name: "coordinator_fifo",
    help: "SCHED_FIFO priority of the coordinator of the governor (below the RT-55 writer; 0: not real-time)",
    quick: oslab_wcall::service::COORDINATOR_FIFO as u64,
    full: oslab_wcall::service::COORDINATOR_FIFO as u64,
    bounds: Some((0, 99)),
    names: &[],
};
static BACKED_MEMORY: Setting<Flag> = Setting {
    name: "backed_memory",
    help: "touch 512 MiB before each cell and drop the written-back pages of the writers, so writes use memory a VM host already backs (see the notes)",
    quick: true,
    full: true,
    bounds: None,
    names: &[],
};
static SETTINGS: [&dyn AnySetting; 7] = [
    &BANDWIDTH,
    &WRITES,
    &RUNS,
    &SCENARIO_CHOICE,
    &POLICY_CHOICE,
    &COORDINATOR_FIFO,
    &BACKED_MEMORY,
];

/// Bytes per write() of every writer.
pub const CHUNK: u64 = 512 << 10;
/// The periodic writers' period.
pub const PERIOD_MS: f64 = 20.0;
pub const POLICIES: [Policy; 3] = [Policy::Vanilla, Policy::Wcall, Policy::WcallFair];

/// Who writes beside the RT-55 writer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Scenario {
    #[serde(rename = "alone")]
    Alone,
    #[serde(rename = "rt45x2")]
    RtLow,
    #[serde(rename = "bulkx2")]
    Bulk,
    /// The paper's Fig. 7: one nice-4 writer, no competition.
    #[serde(rename = "fig7-nice4")]
    Fig7,
}

impl Scenario {
    pub const ALL: [Scenario; 4] = [
        Scenario::Alone,
        Scenario::RtLow,
        Scenario::Bulk,
        Scenario::Fig7,
    ];
    /// The scenarios with competitors beside the RT-55 writer.
    pub const CONTESTED: [Scenario; 2] = [Scenario::RtLow, Scenario::Bulk];

    pub fn name(self) -> &'static str {
        match self {
            Scenario::Alone => SCENARIO_NAMES[0],
            Scenario::RtLow => SCENARIO_NAMES[1],
            Scenario::Bulk => SCENARIO_NAMES[2],
            Scenario::Fig7 => SCENARIO_NAMES[3],
        }
    }

    fn parse(name: &str) -> Option<Scenario> {
        Scenario::ALL.into_iter().find(|s| s.name() == name)
    }

    /// The simulator's scenario of the same workload, if it has one.
    pub fn sim_scenario(self) -> Option<&'static str> {
        match self {
            Scenario::Alone => Some("testbed-alone"),
            Scenario::RtLow => Some("testbed-fig2"),
            Scenario::Bulk => Some("testbed-bulk"),
            Scenario::Fig7 => None,
        }
    }
}

/// What will run: the settings as read (named as the parameters always were).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Plan {
    /// The testbed's write cap, bytes per second.
    pub bandwidth: u64,
    /// Writes of the RT-55 writer per cell.
    pub writes: u64,
    /// Repetitions of the matrix.
    pub runs: usize,
    pub scenarios: Vec<Scenario>,
    pub policies: Vec<Policy>,
    /// The coordinator's SCHED_FIFO priority, 0 for an ordinary thread.
    pub coordinator_fifo: u64,
    pub backed_memory: bool,
}

/// One writer's trace, named as its process was (`rt55`, `rt45-a`, `bulk-b`, ...).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct WriterRaw {
    pub name: String,
    pub trace: WriterTrace,
}

/// A group's dirty + writeback bytes and its limit (None: no limit) at one poll.
pub type GroupPoint = (u64, Option<u64>);

/// The governor's table at one poll: time, and per group (rt-high, rt-low,
/// normal) dirty + writeback and limit.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct GroupPoll {
    pub t_s: f64,
    pub groups: Vec<GroupPoint>,
}

/// What the governor counted for one group over a cell.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct GroupCount {
    pub group: String,
    pub writes: u64,
    pub delayed_writes: u64,
    pub held_ms: f64,
}

/// The governor's own account of a cell, read when it finished.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct GovernorRaw {
    pub passes: u64,
    pub pass_mean_us: f64,
    pub pass_max_us: f64,
    pub groups: Vec<GroupCount>,
}

/// What one cell (policy x scenario x run) gave. The first writer is the one the
/// claims are about (RT-55, or the nice-4 writer of Fig. 7).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Cell {
    pub policy: Policy,
    pub scenario: Scenario,
    pub run: usize,
    pub writers: Vec<WriterRaw>,
    pub polls: Vec<Poll>,
    /// Empty under vanilla (no governor).
    pub groups: Vec<GroupPoll>,
    pub governor: Option<GovernorRaw>,
    /// The kernel's account of the cell: the first writer's write() calls split
    /// by cause, every writer's throttling decisions, the bandwidth estimates.
    #[serde(default)]
    pub kernel: oslab_trace::TraceOutcome,
}

impl Cell {
    pub fn first(&self) -> &WriterTrace {
        static NONE: WriterTrace = WriterTrace {
            start_s: Vec::new(),
            latency_ms: Vec::new(),
            bytes: 0,
            error: None,
            tid: 0,
            tgid: 0,
        };
        self.writers.first().map_or(&NONE, |w| &w.trace)
    }

    /// Bytes per second the writers after the first managed while the first wrote
    /// (writes that started within its span).
    pub fn competitors_bytes_s(&self) -> f64 {
        let span = self.first().start_s.last().copied().unwrap_or(0.0) + PERIOD_MS / 1000.0;
        let writes = self
            .writers
            .iter()
            .skip(1)
            .map(|w| w.trace.start_s.iter().filter(|s| **s < span).count())
            .sum::<usize>();
        if span > 0.0 {
            writes as f64 * CHUNK as f64 / span
        } else {
            0.0
        }
    }

    /// The highest Dirty + Writeback the poller saw.
    pub fn peak_dirty_writeback(&self) -> u64 {
        self.polls
            .iter()
            .map(|p| p.dirty_bytes + p.writeback_bytes)
            .max()
            .unwrap_or(0)
    }
}

/// Everything the run measured and read.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Raw {
    /// The testbed's loop device (`/dev/loop0`).
    pub testbed_device: String,
    /// Sustained write-back throughput the testbed measured after it was built.
    pub testbed_measured_bytes_s: f64,
    /// vm.dirty_bytes and vm.dirty_background_bytes as set for the run.
    pub dirty_bytes: u64,
    pub dirty_background_bytes: u64,
    /// /sys/module/page_reporting exists: free memory is reported to a hypervisor.
    pub page_reporting: bool,
    pub cells: Vec<Cell>,
    /// What tearing the testbed down reported, if anything.
    pub teardown_errors: Vec<String>,
}

impl Lab for WbWcall {
    type Plan = Plan;
    type Raw = Raw;

    fn meta(&self) -> &Meta {
        &META
    }

    fn settings(&self) -> Declared {
        &SETTINGS
    }

    fn plan(&self, p: &mut Planner) -> Plan {
        Plan {
            bandwidth: p.get(&BANDWIDTH),
            writes: p.get(&WRITES),
            runs: p.get(&RUNS) as usize,
            scenarios: p
                .choices(&SCENARIO_CHOICE)
                .into_iter()
                .filter_map(Scenario::parse)
                .collect(),
            policies: p
                .choices(&POLICY_CHOICE)
                .into_iter()
                .filter_map(Policy::parse)
                .collect(),
            coordinator_fifo: p.get(&COORDINATOR_FIFO),
            backed_memory: p.get(&BACKED_MEMORY),
        }
    }

    fn measure(&self, plan: &Plan, ctx: &mut Context) -> Result<Measured<Raw>, LabError> {
        run::measure(plan, ctx)
    }

    fn judge(&self, plan: &Plan, raw: &Raw, env: &Environment) -> Output {
        judge::judge(plan, raw, env)
    }
}
