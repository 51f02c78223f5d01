//! `wb.cases`: the material's case comparison (section 4, experiment C), scaled.
//!
//! What: whether flushing early and often (case 2) lowers the peak of Dirty and the
//! device's peak load against flushing late and big (case 1), at the price of more
//! write-back episodes.
//!
//! Method: case 1: background 10 %, hard 20 %, writeback every 5 s, expire 30 s.
//! Case 2: background 1 %, hard 20 %, writeback 5 s, expire 10 s. The author's
//! 8 GiB box is scaled to 512 MiB of "memory" (so 10 % is 51.2 MiB), the limits are
//! set in bytes through the journal, and a steady writer runs on the testbed (a
//! loop device with ext4 and a blkio write cap, [`oslab_services::testbed`]), whose
//! write-back throughput is measured when it is built. For each case the 10 Hz
//! poller of [`oslab_services::sawtooth`] reads Dirty, Writeback, the test file's own pages and
//! the loop device's written sectors; the dirty sysctls and the kernel's limits are
//! read back at the end of the writing. Judging derives the device's write rate
//! between polls, the number of write-back episodes (the device going from idle,
//! under 5 % of the cap, to writing), the best 1 s of writing and the longest
//! stretch of continuous writing. Where kernel tracing is available the flusher's
//! own passes (writeback_start/writeback_written) are kept too: per case how many
//! background and periodic episodes it ran and what they wrote, and the kernel's
//! bandwidth estimate of the testbed beside the throughput measured when it was built.
//!
//! Pitfalls: a throttled loop device shows no %util, because blk-throttle holds
//! requests before they reach it, so the load is read as MiB/s written; an episode
//! seen at the device and one of the flusher's need not match one to one (a
//! periodic pass may find a background one in progress); the testbed needs root, loop devices and the cgroup v1 blkio
//! throttle (otherwise the run is skipped with the reason).
//!
//! References: Documentation/admin-guide/sysctl/vm.rst,
//! Documentation/admin-guide/cgroup-v1/blkio-controller.rst, loop(4); material
//! section 4, seed 001, the case comparison (../shared/spec/material.md).

mod judge;
mod measure;
#[cfg(test)]
mod tests;

use oslab_model::Environment;
use serde::{Deserialize, Serialize};

use crate::settings::{AnySetting, Declared, Rate, Seconds, Setting};
use oslab_harness::{Context, LabError, Meta, Needs, Output};
use oslab_harness::{Experiment, Measured, Planner};
use oslab_services::sawtooth::SawRaw;
use oslab_services::testbed::Testbed;

pub use judge::episodes;

pub struct Cases;

static META: Meta = Meta {
    id: "wb.cases",
    title: "Flush early and often vs late and big (case 1 vs case 2)",
    section: "4",
    summary: "Kang Jin-woo's case comparison scaled to a testbed: peak Dirty, device load, flush count",
    needs: Needs {
        root: true,
        min_cpus: 1,
        free_disk_bytes: 0,
    },
    quick_s: 28.0,
    full_s: 130.0,
    internal: false,
    full_lab_only: false,
};

static RATE: Setting<Rate> = oslab_services::sawtooth::rate_setting(8 << 20, 8 << 20);
static BANDWIDTH: Setting<Rate> = oslab_services::testbed::bandwidth_setting(20 << 20, 20 << 20);
static DURATION: Setting<Seconds> = Setting {
    name: "duration",
    help: "seconds per case",
    quick: 12.0,
    full: 60.0,
    bounds: Some((1.0, 3600.0)),
    names: &[],
};
static SETTINGS: [&dyn AnySetting; 3] = [&RATE, &BANDWIDTH, &DURATION];

/// The author's 8 GiB, scaled.
pub const SCALED_MEMORY: u64 = 512 << 20;

pub struct Case {
    pub name: &'static str,
    pub bg_pct: u64,
    pub hard_pct: u64,
    pub writeback_cs: u64,
    pub expire_cs: u64,
}

pub const CASES: [Case; 2] = [
    Case {
        name: "case 1",
        bg_pct: 10,
        hard_pct: 20,
        writeback_cs: 500,
        expire_cs: 3000,
    },
    Case {
        name: "case 2",
        bg_pct: 1,
        hard_pct: 20,
        writeback_cs: 500,
        expire_cs: 1000,
    },
];

impl Case {
    /// The case's limits, scaled to [`SCALED_MEMORY`] and set in bytes.
    pub fn sysctls(&self) -> oslab_wbsim::Sysctls {
        oslab_wbsim::Sysctls {
            dirty_background_bytes: SCALED_MEMORY * self.bg_pct / 100,
            dirty_bytes: SCALED_MEMORY * self.hard_pct / 100,
            dirty_ratio: 0,
            dirty_background_ratio: 0,
            dirty_writeback_centisecs: self.writeback_cs,
            dirty_expire_centisecs: self.expire_cs,
        }
    }

    fn knobs(&self) -> [(&'static str, String); 4] {
        let s = self.sysctls();
        [
            (
                "vm.dirty_background_bytes",
                s.dirty_background_bytes.to_string(),
            ),
            ("vm.dirty_bytes", s.dirty_bytes.to_string()),
            (
                "vm.dirty_writeback_centisecs",
                s.dirty_writeback_centisecs.to_string(),
            ),
            (
                "vm.dirty_expire_centisecs",
                s.dirty_expire_centisecs.to_string(),
            ),
        ]
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Plan {
    /// The writer's bytes per second.
    pub rate: u64,
    /// The testbed's write cap, bytes per second.
    pub bandwidth: u64,
    /// Seconds of writing per case.
    pub duration: f64,
}

/// The testbed as it was built.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TestbedFacts {
    /// The loop device as /proc/diskstats names it.
    pub device: String,
    /// Its "MAJ:MIN".
    pub dev: String,
    pub size_bytes: u64,
    /// The write cap.
    pub bandwidth_bytes_s: u64,
    /// How the cap was made; None in runs recorded before it was kept.
    #[serde(default)]
    pub cap: Option<oslab_services::testbed::Cap>,
    /// Write-back throughput measured after it was built (buffered writes + fsync).
    pub measured_bytes_s: f64,
}

impl TestbedFacts {
    fn of(tb: &Testbed) -> TestbedFacts {
        TestbedFacts {
            device: tb.disk_name(),
            dev: tb.dev.clone(),
            size_bytes: tb.size_bytes,
            bandwidth_bytes_s: tb.bandwidth_bytes_s,
            cap: Some(tb.cap.clone()),
            measured_bytes_s: tb.measured_bytes_s,
        }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Raw {
    pub testbed: TestbedFacts,
    /// One run per case of [`CASES`], in order.
    pub cases: Vec<SawRaw>,
}

impl Experiment for Cases {
    type Plan = Plan;
    type Raw = Raw;

    fn meta(&self) -> &Meta {
        &META
    }
    fn headline(&self) -> &'static str {
        "case1.peak_dirty_mib"
    }

    fn settings(&self) -> Declared {
        &SETTINGS
    }

    fn plan(&self, p: &mut Planner) -> Plan {
        Plan {
            rate: p.get(&RATE),
            bandwidth: p.get(&BANDWIDTH),
            duration: p.get(&DURATION),
        }
    }

    fn measure(&self, plan: &Plan, ctx: &mut Context) -> Result<Measured<Raw>, LabError> {
        measure::measure(plan, ctx)
    }

    fn judge(&self, plan: &Plan, raw: &Raw, env: &Environment) -> Output {
        judge::judge(plan, raw, env)
    }
}
