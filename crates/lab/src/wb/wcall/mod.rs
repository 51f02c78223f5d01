//! `wb.wcall`: the WCALL paper's evaluation (material section 7) on the real kernel,
//! vanilla vs the governor's `wcall` and `wcall-fair`, with programs oslab did not
//! write, run as a user runs them.
//!
//! What: on the testbed (a blk-throttled loop device, dirty_bytes 64 MiB, background
//! 32 MiB) a SCHED_FIFO 55 writer writes 512 KiB every 20 ms, either alone, or with
//! two SCHED_FIFO 45 writers writing 1 MiB every 10 ms (the paper's Fig. 2/4/5), or
//! with two `dd` bulk writers; and, as the paper's Fig. 7, one nice-4 writer alone.
//! The competitors start `head_start` seconds before the high writer (`late`, the
//! case the governor must handle from the high writer's first write) or with it
//! (`together`).
//!
//! Method: the writers are ordinary programs: a small C program (paced_writer.c,
//! built with cc when the experiment runs; it times its own writes with
//! CLOCK_MONOTONIC) and `dd`; `--set high_cmd=...`/`competitor_cmd=...` put a
//! user's own programs in their place (`{file}` stands for a file on the testbed;
//! their latency then comes from the kernel's trace of their write calls). Under a
//! governed policy a governor runs as `oslab wcall daemon` and every writer is
//! started with `oslab wcall run`, exactly as a user would; under vanilla they run
//! alone. The poller reads /proc/meminfo, each writer's file (its size and
//! cachestat(), so the bytes that reached the device are known per writer) and the
//! governor's table every 100 ms; the kernel's trace splits the high writer's
//! writes by cause. After each cell every byte of every file is checked.
//! `measure` ([`run`]) keeps all of that; `judge` ([`judge`], [`claims`],
//! [`plots`]) derives the figures, the claims and the paper's figures redrawn, with
//! the simulator beside ([`predict`]: each cell's own writers, from the state the
//! kernel carried into it).
//!
//! Pitfalls: a p99 of 150 writes rests on two of them, so the reference (the writer
//! alone) pools every run. In a virtual machine that reports free memory to its
//! host, the first touch of freed memory costs a host page fault per page: the
//! experiment gives no writer any aid against it (a user's program would get none);
//! the governor's own `--recycle` (on by default where free page reporting is) is
//! part of what governed cells measure, and the first-touch cost is measured on its
//! own and reported as the machine's. A short run (quick: 150 writes, 3 s) can end
//! before the kernel's pauses grow to the paper's 200 ms. `--set
//! scenarios=...,policies=...,starts=...` runs part of the matrix: the claims that
//! need a cell left out are not judged, with the reason.
//!
//! References: the WCALL paper (material section 7 of ../shared/spec/material.md,
//! Fig. 1-7 and Algorithm 1); docs/wcall.md (the governor); sched(7) (SCHED_FIFO),
//! ld.so(8) (LD_PRELOAD), cachestat(2); Documentation/admin-guide/sysctl/vm.rst
//! (dirty_bytes, dirty_background_bytes),
//! Documentation/admin-guide/cgroup-v1/blkio-controller.rst (the throttle),
//! mm/page-writeback.c (balance_dirty_pages, MAX_PAUSE).

pub mod claims;
pub mod intact;
pub mod judge;
pub mod plots;
pub mod poll;
pub mod predict;
pub mod run;
#[cfg(test)]
pub(crate) mod tests;
pub mod verdicts;
pub mod writers;

use oslab_model::Environment;
use oslab_wbsim::policy::Policy;
use serde::{Deserialize, Serialize};

use super::trace::{Poll, WriterTrace};
use crate::experiment::{Context, LabError, Meta, Needs, Output};
use crate::settings::{
    AnySetting, Bytes, Choices, Command, Count, Declared, Flag, Seconds, Setting,
};
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
    quick_s: 100.0,
    full_s: 900.0,
    internal: false,
};

const SCENARIO_NAMES: &[&str] = &["alone", "rt45x2", "bulkx2", "fig7-nice4"];
const POLICY_NAMES: &[&str] = &["vanilla", "wcall", "wcall-fair"];
const START_NAMES: &[&str] = &["late", "together"];

pub(crate) static BANDWIDTH: Setting<Bytes> = Setting {
    name: "bandwidth",
    help: "testbed write cap per second",
    quick: 40 << 20,
    full: 40 << 20,
    bounds: Some((1 << 20, 10 << 30)),
    names: &[],
};
pub(crate) static WRITES: Setting<Count> = Setting {
    name: "writes",
    help: "writes of the RT-55 writer per cell",
    quick: 150,
    full: 700,
    bounds: Some((20, 10_000)),
    names: &[],
};
pub(crate) static RUNS: Setting<Count> = Setting {
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
pub(crate) static POLICY_CHOICE: Setting<Choices> = Setting {
    name: "policies",
    help: "which policies to run",
    quick: Vec::new(),
    full: Vec::new(),
    bounds: None,
    names: POLICY_NAMES,
};
static START_CHOICE: Setting<Choices> = Setting {
    name: "starts",
    help: "when the competitors start: late (head_start seconds before the high writer) and/or together",
    quick: Vec::new(),
    full: Vec::new(),
    bounds: None,
    names: START_NAMES,
};
static HEAD_START: Setting<Seconds> = Setting {
    name: "head_start",
    help: "seconds the competitors write before the high writer starts (starts=late)",
    quick: 2.0,
    full: 2.0,
    bounds: Some((0.1, 60.0)),
    names: &[],
};
static HIGH_CMD: Setting<Command> = Setting {
    name: "high_cmd",
    help: "your own high-priority writer instead of the paced C writer ({file}: its file on the testbed; run it as SCHED_FIFO yourself, e.g. chrt -f 55 ...)",
    quick: None,
    full: None,
    bounds: None,
    names: &[],
};
static COMPETITOR_CMD: Setting<Command> = Setting {
    name: "competitor_cmd",
    help: "your own competing writer, started twice, instead of the scenario's ({file}: its file on the testbed)",
    quick: None,
    full: None,
    bounds: None,
    names: &[],
};
static KILL_COORDINATOR: Setting<Flag> = Setting {
    name: "kill_coordinator",
    help: "SIGKILL the governor's daemon halfway through each governed cell (every byte must still arrive)",
    quick: false,
    full: false,
    bounds: None,
    names: &[],
};
static SETTINGS: [&dyn AnySetting; 10] = [
    &BANDWIDTH,
    &WRITES,
    &RUNS,
    &SCENARIO_CHOICE,
    &POLICY_CHOICE,
    &START_CHOICE,
    &HEAD_START,
    &HIGH_CMD,
    &COMPETITOR_CMD,
    &KILL_COORDINATOR,
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
}

/// When the competitors start.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Start {
    /// `head_start` seconds before the high writer: it arrives into a full cache.
    Late,
    #[default]
    Together,
}

impl Start {
    pub fn name(self) -> &'static str {
        match self {
            Start::Late => START_NAMES[0],
            Start::Together => START_NAMES[1],
        }
    }

    fn parse(name: &str) -> Option<Start> {
        [Start::Late, Start::Together]
            .into_iter()
            .find(|s| s.name() == name)
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
    #[serde(default)]
    pub starts: Vec<Start>,
    #[serde(default)]
    pub head_start_s: f64,
    #[serde(default)]
    pub high_cmd: Option<String>,
    #[serde(default)]
    pub competitor_cmd: Option<String>,
    #[serde(default)]
    pub kill_coordinator: bool,
}

/// One writer, named as its process was (`rt55`, `rt45-a`, `bulk-b`, ...): its
/// writes where it timed them (or the kernel's trace did), what of its file reached
/// the device while the first writer wrote, and whether every byte arrived.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct WriterRaw {
    pub name: String,
    pub trace: WriterTrace,
    /// Bytes of its file written back to the device over the first writer's span.
    #[serde(default)]
    pub device_bytes: Option<u64>,
    #[serde(default)]
    pub content: Content,
}

/// The check of a writer's file after the cell.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "state", content = "detail")]
pub enum Content {
    /// Every byte it wrote is there, as written.
    Intact,
    Wrong(String),
    #[default]
    NotChecked,
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
    /// The coordinator thread's CPU time over its life, percent of one CPU.
    #[serde(default)]
    pub cpu_percent: f64,
    pub groups: Vec<GroupCount>,
}

/// What one cell (policy x scenario x run) gave. The first writer is the one the
/// claims are about (RT-55, or the nice-4 writer of Fig. 7).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Cell {
    pub policy: Policy,
    pub scenario: Scenario,
    pub run: usize,
    #[serde(default)]
    pub start: Start,
    pub writers: Vec<WriterRaw>,
    pub polls: Vec<Poll>,
    /// Empty under vanilla (no governor).
    pub groups: Vec<GroupPoll>,
    pub governor: Option<GovernorRaw>,
    /// The kernel's account of the cell: the first writer's write() calls split
    /// by cause, every writer's throttling decisions, the bandwidth estimates.
    #[serde(default)]
    pub kernel: oslab_trace::TraceOutcome,
    /// When the governor's daemon was SIGKILLed on purpose (kill_coordinator).
    #[serde(default)]
    pub coordinator_killed_at_s: Option<f64>,
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

    /// The first writer's span, seconds: from its first write to one period after
    /// its last.
    pub fn span_s(&self) -> f64 {
        let t = &self.first().start_s;
        match (t.first(), t.last()) {
            (Some(a), Some(b)) => b - a + PERIOD_MS / 1000.0,
            _ => 0.0,
        }
    }

    /// Bytes per second of the competitors' files that reached the device while
    /// the first writer wrote (measured at the device: each file's size less its
    /// dirty and writeback pages). None when that was not measured.
    pub fn competitors_bytes_s(&self) -> Option<f64> {
        let span = self.span_s();
        let bytes: Option<u64> = self.writers.iter().skip(1).map(|w| w.device_bytes).sum();
        (span > 0.0).then_some(bytes? as f64 / span)
    }

    /// What the device leaves the competitors, bytes per second: its measured
    /// bandwidth less what reached it of the first writer's file over its span
    /// (else the first writer's rate, 512 KiB every 20 ms).
    pub fn left_for_competitors(&self, device_bytes_s: f64) -> f64 {
        let span = self.span_s();
        let high = match self.writers.first().and_then(|w| w.device_bytes) {
            Some(b) if span > 0.0 => b as f64 / span,
            _ => CHUNK as f64 / (PERIOD_MS / 1000.0),
        };
        (device_bytes_s - high).max(0.0)
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
    /// Its "MAJOR:MINOR", as the kernel's write-back records name it (absent in
    /// runs recorded before it was kept).
    #[serde(default)]
    pub testbed_bdi: Option<String>,
    /// Sustained write-back throughput the testbed measured after it was built.
    pub testbed_measured_bytes_s: f64,
    /// vm.dirty_bytes and vm.dirty_background_bytes as set for the run.
    pub dirty_bytes: u64,
    pub dirty_background_bytes: u64,
    /// /sys/module/page_reporting exists: free memory is reported to a hypervisor.
    pub page_reporting: bool,
    /// The first touch of fresh memory against a second touch, measured before
    /// the cells: the machine's own cost, which every writer pays alike.
    #[serde(default)]
    pub first_touch: Option<FirstTouch>,
    pub cells: Vec<Cell>,
    /// What tearing the testbed down reported, if anything.
    pub teardown_errors: Vec<String>,
}

/// Nanoseconds per 4 KiB page to touch fresh anonymous memory, and the same
/// memory again.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct FirstTouch {
    pub bytes: u64,
    pub first_ns_per_page: f64,
    pub again_ns_per_page: f64,
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
            starts: p
                .choices(&START_CHOICE)
                .into_iter()
                .filter_map(Start::parse)
                .collect(),
            head_start_s: p.get(&HEAD_START),
            high_cmd: p.get(&HIGH_CMD),
            competitor_cmd: p.get(&COMPETITOR_CMD),
            kill_coordinator: p.get(&KILL_COORDINATOR),
        }
    }

    fn measure(&self, plan: &Plan, ctx: &mut Context) -> Result<Measured<Raw>, LabError> {
        run::measure(plan, ctx)
    }

    fn judge(&self, plan: &Plan, raw: &Raw, env: &Environment) -> Output {
        judge::judge(plan, raw, env)
    }
}
