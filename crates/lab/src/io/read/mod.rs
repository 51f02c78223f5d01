//! `io.read`: cold and warm reads of one file, through read(2) and through mmap.
//!
//! What: how much faster a read served by the page cache is than one that goes to
//! the device, and what each costs and causes (CPU time, major faults, device bytes,
//! growth of the page cache).
//!
//! Method: a file of `size` bytes (default 1 GiB, quick 256 MiB, at most half of the
//! memory available when the run was planned) is written to the scratch directory
//! and synced. Each round evicts it from the page cache (fsync +
//! posix_fadvise(DONTNEED), which needs no root; or, with `--set drop_caches=true`
//! as root, vm.drop_caches = 3 through the journal), then reads it cold and again
//! warm with read(2) in 1 MiB chunks, then the same through a shared mmap touching
//! one byte per page. For each read: wall time, user and system CPU time of the
//! thread (getrusage), major and minor faults, the bytes the device holding the file
//! read and wrote (/proc/diskstats) and the change of Buffers + Cached
//! (/proc/meminfo). cachestat(2) (Linux 6.5+; mincore(2) otherwise) says how much
//! of the file is cached before and after each read(2) pass. A sampler keeps the
//! /proc counters every 100 ms meanwhile (the sar series of the result).
//!
//! Pitfalls: on a virtual disk the host may cache the file too, so a "cold" read
//! can run at memory speed with the device counters still showing the bytes; the
//! result says so when the environment shows a hypervisor and the device read rate
//! is implausible for a disk. The device counters are the whole device's: another
//! reader, readahead past the end of the file or the file system's metadata can put
//! them above the file size, so they are reported as a ratio, not a share.
//! Buffers + Cached is global too: other programs' cache changes add to it. On a
//! tmpfs scratch directory there is no device and eviction may do nothing.
//!
//! References: read(2), mmap(2), posix_fadvise(2), cachestat(2), mincore(2),
//! proc(5) (/proc/meminfo, /proc/diskstats), Documentation/admin-guide/sysctl/vm.rst
//! (drop_caches); material section 3 (seed 000), the author's 1 GiB file: cold
//! 1.117 s, warm 0.134 s (../shared/spec/material.md).

mod claims;
mod figures;
mod judge;
mod measure;
#[cfg(test)]
mod tests;

use oslab_model::Environment;
use oslab_sys::sar::Snapshot;
use serde::{Deserialize, Serialize};

use crate::settings::{AnySetting, Bytes, Declared, Flag, Setting};
use oslab_harness::{Context, LabError, Meta, Needs, Output};
use oslab_harness::{Experiment, Measured, Planner};
use oslab_services::disk_probe::{DiskFacts, OpStats};

pub struct IoRead;

static META: Meta = Meta {
    id: "io.read",
    title: "Page cache: cold vs warm reads",
    section: "3",
    summary: "a file read cold and warm with read() and mmap: time, CPU, faults, device bytes, cache growth",
    needs: Needs {
        root: false,
        min_cpus: 1,
        free_disk_bytes: 0,
    },
    quick_s: 6.0,
    full_s: 30.0,
    internal: false,
    full_lab_only: false,
};

static SIZE: Setting<Bytes> = Setting {
    name: "size",
    help: "file size (at most half the available memory is used)",
    quick: 256 << 20,
    full: 1 << 30,
    bounds: Some((32 << 20, 1 << 40)),
    names: &[],
};
static DROP_CACHES: Setting<Flag> = Setting {
    name: "drop_caches",
    help: "evict with vm.drop_caches=3 instead of fadvise (root; journaled)",
    quick: false,
    full: false,
    bounds: None,
    names: &[],
};
static SETTINGS: [&dyn AnySetting; 2] = [&SIZE, &DROP_CACHES];

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Plan {
    /// The size asked for.
    pub size: u64,
    pub drop_caches: bool,
    /// Rounds of cold and warm reads.
    pub samples: usize,
    /// The size read: `size`, at most half the available memory, whole MiB.
    pub size_bytes: u64,
    /// Memory available when the run was planned (MemAvailable).
    pub available_bytes: Option<u64>,
}

/// The four reads of one round, and the file's cached pages around the read(2) pair.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Round {
    pub cold: OpStats,
    pub warm: OpStats,
    pub mmap_cold: OpStats,
    pub mmap_warm: OpStats,
    /// Pages of the file in the page cache (None: neither cachestat nor mincore worked).
    pub cached_before_cold: Option<u64>,
    pub cached_after_cold: Option<u64>,
    pub cached_after_warm: Option<u64>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Raw {
    /// The device holding the file, with its queue flags; None on tmpfs and the like.
    pub disk: Option<DiskFacts>,
    pub page_bytes: u64,
    /// How residency was read: "cachestat" or "mincore" (None: neither worked).
    pub residency_method: Option<String>,
    /// Writing and syncing the file.
    pub create: OpStats,
    pub rounds: Vec<Round>,
    /// The /proc counters every 100 ms during the run (the sar series).
    pub snapshots: Vec<Snapshot>,
}

impl Raw {
    pub fn device(&self) -> Option<&str> {
        self.disk.as_ref().map(|d| d.device.as_str())
    }
}

impl Experiment for IoRead {
    type Plan = Plan;
    type Raw = Raw;

    fn meta(&self) -> &Meta {
        &META
    }
    fn headline(&self) -> &'static str {
        "cold_read"
    }

    fn settings(&self) -> Declared {
        &SETTINGS
    }

    fn plan(&self, p: &mut Planner) -> Plan {
        let size = p.get(&SIZE);
        let drop_caches = p.get(&DROP_CACHES);
        let samples = p.samples(2, 3);
        // Bounded by memory: the warm read needs the whole file cached.
        let available_bytes = p.machine.memory.available_bytes;
        let avail = available_bytes.unwrap_or(p.machine.memory.free_bytes);
        Plan {
            size,
            drop_caches,
            samples,
            size_bytes: size.min(avail / 2) & !((1 << 20) - 1),
            available_bytes,
        }
    }

    fn measure(&self, plan: &Plan, ctx: &mut Context) -> Result<Measured<Raw>, LabError> {
        measure::measure(plan, ctx)
    }

    fn judge(&self, plan: &Plan, raw: &Raw, env: &Environment) -> Output {
        judge::judge(plan, raw, env)
    }
}
