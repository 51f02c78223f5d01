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
//! compiled when oslab is built, see build.rs; it times its own writes with
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
//! before the kernel's pauses grow to the paper's 200 ms. A quick run has the
//! cells its claims need and no more: competitors start late only (1 s ahead),
//! the governed policies do not run the writer alone, one run; its result says
//! what the full run adds. `--set
//! scenarios=...,policies=...,starts=...` runs part of the matrix: the claims that
//! need a cell left out are not judged, with the reason.
//!
//! References: the WCALL paper (material section 7 of ../shared/spec/material.md,
//! Fig. 1-7 and Algorithm 1); docs/wcall.md (the governor); sched(7) (SCHED_FIFO),
//! ld.so(8) (LD_PRELOAD), cachestat(2); Documentation/admin-guide/sysctl/vm.rst
//! (dirty_bytes, dirty_background_bytes),
//! Documentation/admin-guide/cgroup-v1/blkio-controller.rst (the throttle),
//! mm/page-writeback.c (balance_dirty_pages, MAX_PAUSE).

pub mod cell_checks;
pub mod claims;
pub mod intact;
pub mod judge;
pub mod matrix;
pub mod measure;
pub mod plots;
pub mod poll;
pub mod predict;
pub mod run_env;
#[cfg(test)]
// a synthetic matrix judged reads best as one story per claim
#[allow(clippy::too_many_lines)]
pub(crate) mod tests;
pub mod writers;

use oslab_model::Environment;
use oslab_wbsim::policy::Policy;
use serde::{Deserialize, Serialize};

use crate::settings::{AnySetting, Choices, Command, Declared, Flag, Seconds, Setting};
use oslab_harness::{Context, LabError, Meta, Needs, Output};
use oslab_harness::{Experiment, Measured, Planner};
use oslab_services::cells::record::{Cell, SCENARIO_NAMES, START_NAMES, Scenario, Start};
use oslab_services::cells::settings::{BANDWIDTH, POLICY_CHOICE, RUNS, WRITES};

pub use matrix::meets_latency_target;

pub struct WbWcall;

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
    quick_s: 55.0,
    full_s: 900.0,
    internal: false,
    full_lab_only: false,
};

static SCENARIO_CHOICE: Setting<Choices> = Setting {
    name: "scenarios",
    help: "which workloads to run (claims that need a missing one are not judged)",
    quick: Vec::new(),
    full: Vec::new(),
    bounds: None,
    names: SCENARIO_NAMES,
};

static START_CHOICE: Setting<Choices> = Setting {
    name: "starts",
    help: "when the competitors start: late (head_start seconds before the high writer) and/or together (quick: late only)",
    quick: Vec::new(),
    full: Vec::new(),
    bounds: None,
    names: START_NAMES,
};

static HEAD_START: Setting<Seconds> = Setting {
    name: "head_start",
    help: "seconds the competitors write before the high writer starts (starts=late)",
    // the competitors fill the 64 MiB cache within half a second either way
    quick: 1.0,
    full: 2.0,
    bounds: Some((0.1, 60.0)),
    names: &[],
};

static ALONE_GOVERNED: Setting<Flag> = Setting {
    name: "alone_governed",
    help: "also run the high writer alone under the governed policies (no claim needs it; the full run does)",
    quick: false,
    full: true,
    bounds: None,
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

static SETTINGS: [&dyn AnySetting; 11] = [
    &BANDWIDTH,
    &WRITES,
    &RUNS,
    &SCENARIO_CHOICE,
    &POLICY_CHOICE,
    &START_CHOICE,
    &HEAD_START,
    &ALONE_GOVERNED,
    &HIGH_CMD,
    &COMPETITOR_CMD,
    &KILL_COORDINATOR,
];

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
    /// The alone scenario under the governed policies too, not only vanilla
    /// (runs recorded before the setting always had them).
    #[serde(default = "always")]
    pub alone_governed: bool,
    #[serde(default)]
    pub high_cmd: Option<String>,
    #[serde(default)]
    pub competitor_cmd: Option<String>,
    #[serde(default)]
    pub kill_coordinator: bool,
}
fn always() -> bool {
    true
}

/// Everything the run measured and read.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Raw {
    /// The testbed's loop device (`/dev/loop0`).
    pub testbed_device: String,
    /// How the testbed's bandwidth was capped (v1 blkio in runs recorded before v2).
    #[serde(default)]
    pub testbed_cap: oslab_services::testbed::Cap,
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

impl Experiment for WbWcall {
    type Plan = Plan;
    type Raw = Raw;

    fn meta(&self) -> &Meta {
        &META
    }
    fn headline(&self) -> &'static str {
        "p99_ms.vanilla.rt45x2"
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
            // a quick run judges every claim from the harder start: the high
            // writer arriving into a full cache
            starts: p
                .choices_quick(&START_CHOICE, &["late"])
                .into_iter()
                .filter_map(Start::parse)
                .collect(),
            head_start_s: p.get(&HEAD_START),
            alone_governed: p.get(&ALONE_GOVERNED),
            high_cmd: p.get(&HIGH_CMD),
            competitor_cmd: p.get(&COMPETITOR_CMD),
            kill_coordinator: p.get(&KILL_COORDINATOR),
        }
    }

    fn measure(&self, plan: &Plan, ctx: &mut Context) -> Result<Measured<Raw>, LabError> {
        measure::measure(plan, ctx)
    }

    fn judge(&self, plan: &Plan, raw: &Raw, env: &Environment) -> Output {
        judge::judge(plan, raw, env)
    }
}
