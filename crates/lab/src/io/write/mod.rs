//! `io.write`: buffered, O_DIRECT and O_DSYNC writes, and when the bytes reach the device.
//!
//! What: how long write() takes to return in each mode, and how much of what was
//! written is on the device when it returns (O_DIRECT, O_DSYNC) or only later, in
//! write back (buffered).
//!
//! Method: for each mode and block size (4 KiB and 1 MiB quick, 64 KiB too in full
//! mode) a new file of `size` bytes is written in the scratch directory from a
//! 4 KiB-aligned buffer of varied bytes (synchronous modes with blocks under 64 KiB
//! write at most 64 MiB, 32 MiB quick, to bound the run time). For each write: the
//! time until the last write() returned, Dirty and Writeback right after it
//! (/proc/meminfo), the bytes the device wrote during the calls and after them
//! (/proc/diskstats); for buffered writes also the fdatasync that follows. Two probes
//! explain the figures: the cost of touching a fresh page for the first time
//! (anonymous memory), and an overwrite of pages already cached. The device's queue
//! flags (write_cache, rotational) are read during the run; the sampler keeps the
//! /proc counters every 100 ms (the sar series of the result).
//!
//! Pitfalls: a device with a volatile write cache ("write back"), or a virtual disk
//! whose host caches it, acknowledges O_DIRECT writes at memory speed, so O_DIRECT
//! need not be slow; and under a hypervisor new page-cache pages can cost
//! microseconds each (a virtio balloon with free page reporting hands freed memory to
//! the host, so touching it again faults on the host), so a buffered write into a
//! new file may run slower than expected, the experiment's first buffered write most:
//! each write deletes its file, and the writes after it can reuse the pages it freed
//! before the host takes them (about 2 s later), so block sizes are not compared on
//! equal pages. The result names which of these the environment shows, instead of
//! assuming one. The device counters are the whole
//! device's: the file system's journal and metadata, or another writer, can put the
//! bytes on the device above the bytes written (a ratio above 1). A file system that
//! refuses O_DIRECT (tmpfs) is reported, not failed.
//!
//! References: write(2), open(2) (O_DIRECT, O_DSYNC), fdatasync(2), proc(5),
//! Documentation/block/queue-sysfs.rst (write_cache, rotational); material section 3
//! (seed 000): 1 GiB O_DIRECT 2.50 s (429 MB/s) vs buffered 0.84 s (1.3 GB/s)
//! (../shared/spec/material.md).

mod claims;
mod figures;
mod judge;
mod measure;
#[cfg(test)]
mod tests;

use oslab_model::Environment;
use oslab_sys::fileio::{O_DIRECT, O_DSYNC};
use oslab_sys::sar::Snapshot;
use serde::{Deserialize, Serialize};

use crate::settings::{AnySetting, Bytes, Declared, Setting};
use oslab_harness::{Context, LabError, Meta, Needs, Output};
use oslab_harness::{Experiment, Measured, Planner};
use oslab_services::disk_probe::DiskFacts;

pub struct IoWrite;

static META: Meta = Meta {
    id: "io.write",
    title: "Write paths: buffered vs O_DIRECT vs O_DSYNC",
    section: "3",
    summary: "write() return time, MB/s, and how much reached the device during vs after the call",
    needs: Needs {
        root: false,
        min_cpus: 1,
        free_disk_bytes: 0,
    },
    quick_s: 12.0,
    full_s: 90.0,
    internal: false,
    full_lab_only: false,
};

static SIZE: Setting<Bytes> = Setting {
    name: "size",
    help: "bytes written per mode and block size (whole MiB)",
    quick: 256 << 20,
    full: 1 << 30,
    bounds: Some((1 << 20, 1 << 40)),
    names: &[],
};
static SETTINGS: [&dyn AnySetting; 1] = [&SIZE];

/// Block sizes under this write at most `small_cap` in the synchronous modes.
pub const SMALL_BLOCK: u64 = 64 << 10;

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Mode {
    Buffered,
    Direct,
    Dsync,
}

pub const MODES: [Mode; 3] = [Mode::Buffered, Mode::Direct, Mode::Dsync];

impl Mode {
    pub fn name(self) -> &'static str {
        match self {
            Mode::Buffered => "buffered",
            Mode::Direct => "direct",
            Mode::Dsync => "dsync",
        }
    }
    fn flags(self) -> i32 {
        match self {
            Mode::Buffered => 0,
            Mode::Direct => O_DIRECT,
            Mode::Dsync => O_DSYNC,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Plan {
    /// Bytes written per mode and block size: the size asked for, in whole MiB.
    pub size: u64,
    /// Runs per mode and block size.
    pub samples: usize,
    pub block_sizes: Vec<u64>,
    /// What synchronous modes with blocks under 64 KiB write at most.
    pub small_cap: u64,
}

impl Plan {
    /// The bytes one write of `mode` with `block`-byte blocks writes.
    pub fn bytes_for(&self, mode: Mode, block: u64) -> u64 {
        if mode != Mode::Buffered && block < SMALL_BLOCK {
            self.size.min(self.small_cap)
        } else {
            self.size
        }
    }
}

/// One write of one file.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct WriteRun {
    pub bytes: u64,
    /// From the first write() to the return of the last.
    pub write_s: f64,
    /// The fdatasync after buffered writes.
    pub sync_s: Option<f64>,
    /// /proc/meminfo right after the last write() returned.
    pub dirty_after: Option<u64>,
    pub writeback_after: Option<u64>,
    /// Bytes the device wrote while write() ran, and after it until fdatasync returned.
    pub dev_during: u64,
    pub dev_after: u64,
}

/// Every run of one mode and block size.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Cell {
    /// "buffered", "direct" or "dsync".
    pub mode: String,
    pub block: u64,
    pub runs: Vec<WriteRun>,
}

/// The first-touch probe: `bytes` of fresh anonymous memory written one byte per
/// page, then again.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct TouchProbe {
    pub bytes: u64,
    pub first_ns: u64,
    pub again_ns: u64,
}

/// The overwrite probe: `bytes` of a file whose pages are all cached, rewritten.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct OverwriteProbe {
    pub bytes: u64,
    pub secs: f64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Raw {
    /// The device holding the files, with its queue flags; None on tmpfs and the like.
    pub disk: Option<DiskFacts>,
    pub page_bytes: u64,
    pub cells: Vec<Cell>,
    /// Why the file system refused O_DIRECT, if it did.
    pub refused: Option<String>,
    pub touch: TouchProbe,
    pub overwrite: OverwriteProbe,
    /// The /proc counters every 100 ms during the run (the sar series).
    pub snapshots: Vec<Snapshot>,
}

impl Raw {
    pub fn device(&self) -> Option<&str> {
        self.disk.as_ref().map(|d| d.device.as_str())
    }

    pub fn cell(&self, mode: Mode, block: u64) -> Option<&Cell> {
        self.cells
            .iter()
            .find(|c| c.mode == mode.name() && c.block == block && !c.runs.is_empty())
    }
}

pub fn bs_label(bs: u64) -> String {
    if bs >= 1 << 20 {
        format!("{}M", bs >> 20)
    } else {
        format!("{}K", bs >> 10)
    }
}

impl Experiment for IoWrite {
    type Plan = Plan;
    type Raw = Raw;

    fn meta(&self) -> &Meta {
        &META
    }
    fn headline(&self) -> &'static str {
        "write_rate.buffered.1M"
    }

    fn settings(&self) -> Declared {
        &SETTINGS
    }

    fn plan(&self, p: &mut Planner) -> Plan {
        // written in 1 MiB blocks: whole MiB, and the size recorded is the one written
        let size = p.get(&SIZE) & !((1 << 20) - 1);
        let samples = p.samples(1, 3);
        let quick = p.quick();
        Plan {
            size,
            samples,
            block_sizes: if quick {
                vec![4 << 10, 1 << 20]
            } else {
                vec![4 << 10, 64 << 10, 1 << 20]
            },
            small_cap: if quick { 32 << 20 } else { 64 << 20 },
        }
    }

    fn measure(&self, plan: &Plan, ctx: &mut Context) -> Result<Measured<Raw>, LabError> {
        measure::measure(plan, ctx).map(Measured::Raw)
    }

    fn judge(&self, plan: &Plan, raw: &Raw, env: &Environment) -> Output {
        judge::judge(plan, raw, env)
    }
}
