//! `wb.throttle`: writers faster than the device run into the dirty limit and wait
//! inside write() (the "fourth way" a flush starts, material section 4; seed 004).
//!
//! What: write() latency of bulk writers once dirty memory reaches the limit: the
//! p50, p99 and longest write(), the writes over 200 ms, and Dirty + Writeback
//! against the kernel's free-run point and hard limit.
//!
//! Method: on the testbed (a loop device capped at `bandwidth`), with
//! dirty_bytes = 64 MiB and dirty_background_bytes = 32 MiB, `writers` bulk writers
//! write 512 KiB chunks back to back for `duration` seconds. Every write() is timed;
//! /proc/meminfo (Dirty, Writeback) is polled every 100 ms. Once Dirty + Writeback
//! passes the free-run point ((hard + background) / 2 = 48 MiB) the kernel's
//! balance_dirty_pages() pauses the writers, up to 200 ms per pause (MAX_PAUSE), and
//! one write() can hold several pauses.
//!
//! Pitfalls: a fast or host-cached disk never lets Dirty reach the limit, hence the
//! throttled loop device; the throttle holds pages under Writeback, so Writeback,
//! not Dirty, can carry most of the 64 MiB. A run too short for the writers to fill
//! the gap between the background and the hard limit sees no pause at all.
//!
//! References: Documentation/admin-guide/sysctl/vm.rst (dirty_bytes,
//! dirty_background_bytes); mm/page-writeback.c (balance_dirty_pages, MAX_PAUSE);
//! Documentation/admin-guide/cgroup-v1/blkio-controller.rst (the throttle);
//! proc(5) (/proc/meminfo); material section 4 of ../shared/spec/material.md.

mod judge;
mod measure;
mod model;
#[cfg(test)]
mod tests;

use oslab_model::Environment;
use serde::{Deserialize, Serialize};

use crate::settings::{AnySetting, Count, Declared, Rate, Seconds, Setting};
use judge::judge;
use oslab_harness::{Context, LabError, Meta, Needs, Output};
use oslab_harness::{Experiment, Measured, Planner};
use oslab_services::timed_writer::{Poll, WriterTrace};
use oslab_trace::TraceOutcome;

pub struct Throttle;

static META: Meta = Meta {
    id: "wb.throttle",
    title: "Throttled writers: write() latency at the dirty limit",
    section: "4",
    summary: "bulk writers on a slow testbed device: write() p50/p99/max and writes over 200 ms",
    needs: Needs {
        root: true,
        min_cpus: 1,
        free_disk_bytes: 0,
    },
    quick_s: 10.0,
    full_s: 50.0,
    internal: false,
    full_lab_only: false,
};

static BANDWIDTH: Setting<Rate> = oslab_services::testbed::bandwidth_setting(10 << 20, 10 << 20);
static WRITERS: Setting<Count> = Setting {
    name: "writers",
    help: "number of bulk writers",
    quick: 2,
    full: 2,
    bounds: Some((1, 16)),
    names: &[],
};
static DURATION: Setting<Seconds> = Setting {
    name: "duration",
    help: "seconds of writing",
    quick: 7.0,
    full: 40.0,
    bounds: Some((1.0, 3600.0)),
    names: &[],
};
static SETTINGS: [&dyn AnySetting; 3] = [&BANDWIDTH, &WRITERS, &DURATION];

pub use crate::wb::common::limits::{BACKGROUND, HARD};
const CHUNK: usize = 512 << 10;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Plan {
    /// The testbed's write cap, bytes per second.
    pub bandwidth: u64,
    pub writers: usize,
    /// Seconds of writing.
    pub duration: f64,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Raw {
    /// The testbed's loop device (`/dev/loop0`).
    pub testbed_device: String,
    /// How the testbed's bandwidth was capped (v1 blkio in runs recorded before v2).
    #[serde(default)]
    pub testbed_cap: oslab_services::testbed::Cap,
    /// Sustained write-back throughput the testbed measured after it was built.
    pub testbed_measured_bytes_s: f64,
    /// vm.dirty_bytes and vm.dirty_background_bytes as set for the run.
    pub dirty_bytes: u64,
    pub dirty_background_bytes: u64,
    /// Bytes per write().
    pub chunk_bytes: u64,
    /// One trace per writer: when each write() started and how long it took.
    pub traces: Vec<WriterTrace>,
    /// Dirty and Writeback every 100 ms.
    pub polls: Vec<Poll>,
    /// "MAJOR:MINOR" of the testbed, the name of its bdi in the kernel's records.
    #[serde(default)]
    pub testbed_dev: String,
    /// The kernel's account of the run: every write() split by cause, the
    /// throttling decisions, the device's bandwidth estimates.
    #[serde(default)]
    pub kernel: TraceOutcome,
}

impl Experiment for Throttle {
    type Plan = Plan;
    type Raw = Raw;

    fn meta(&self) -> &Meta {
        &META
    }
    fn headline(&self) -> &'static str {
        "p99_ms"
    }

    fn settings(&self) -> Declared {
        &SETTINGS
    }

    fn plan(&self, p: &mut Planner) -> Plan {
        Plan {
            bandwidth: p.get(&BANDWIDTH),
            writers: p.get(&WRITERS) as usize,
            duration: p.get(&DURATION),
        }
    }

    fn measure(&self, plan: &Plan, ctx: &mut Context) -> Result<Measured<Raw>, LabError> {
        measure::measure(plan, ctx)
    }

    fn judge(&self, plan: &Plan, raw: &Raw, env: &Environment) -> Output {
        judge(plan, raw, env.seed)
    }
}
