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

mod judge;
#[cfg(test)]
mod tests;

use std::fs::File;
use std::time::Duration;

use oslab_model::Environment;
use oslab_sys::fileio::{self, Mapping, cached_pages};
use oslab_sys::journal;
use oslab_sys::parse::size::human_bytes;
use oslab_sys::process::is_root;
use oslab_sys::sar::Snapshot;
use serde::{Deserialize, Serialize};

use crate::harness::sampler::Sampler;
use crate::harness::scratch::Scratch;
use crate::harness::{Context, LabError, Meta, Needs, Output};
use crate::harness::{Experiment, Measured, Planner};
use crate::io::common::probe::{DiskFacts, OpStats, create_file, disk_facts, read_all, timed};
use crate::settings::{AnySetting, Bytes, Declared, Flag, Setting};

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

/// The smallest file worth reading: below it the reads take microseconds.
const MIN_FILE: u64 = 16 << 20;

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

fn evict(file: &File, drop_caches: bool) -> Result<(), LabError> {
    if drop_caches {
        journal::with_global(oslab_sys::sysctl::drop_caches)?;
    } else {
        fileio::evict(file)?;
    }
    Ok(())
}

fn mmap_read(file: &File, len: usize) -> std::io::Result<()> {
    let map = Mapping::file(file, len).map_err(|e| std::io::Error::other(e.to_string()))?;
    std::hint::black_box(map.touch_read(oslab_sys::machine::page_size() as usize));
    Ok(())
}

impl Experiment for IoRead {
    type Plan = Plan;
    type Raw = Raw;

    fn meta(&self) -> &Meta {
        &META
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
        if plan.drop_caches && !is_root() {
            return Ok(Measured::Skipped {
                reason: "drop_caches=true needs root; run without it to evict with fadvise".into(),
            });
        }
        if plan.size_bytes < MIN_FILE {
            return Err(LabError::Failed(format!(
                "only {} of memory is available; io.read needs at least 32 MiB",
                human_bytes(plan.available_bytes.unwrap_or(0))
            )));
        }
        measure(plan, ctx)
    }

    fn judge(&self, plan: &Plan, raw: &Raw, env: &Environment) -> Output {
        judge::judge(plan, raw, env)
    }
}

fn measure(plan: &Plan, ctx: &mut Context) -> Result<Measured<Raw>, LabError> {
    let size = plan.size_bytes;
    let scratch = Scratch::create(&ctx.config.scratch_dir, META.id, size + (64 << 20))?;
    let path = scratch.file("read-test.dat");
    let disk = disk_facts(scratch.dir());
    let device = disk.as_ref().map(|d| d.device.clone());
    let device = device.as_deref();
    let sampler = Sampler::start(Duration::from_millis(100));

    ctx.progress.stage("creating the file");
    let create = timed(device, || create_file(&path, size, ctx.config.seed))?;
    let file = File::open(&path).map_err(|e| LabError::Failed(e.to_string()))?;
    let mut method: Option<&'static str> = None;
    let mut cached = |f: &File| -> Option<u64> {
        let (n, m) = cached_pages(f).ok()?;
        method = Some(m);
        Some(n)
    };
    let rounds = plan.samples;
    let mut out = Vec::new();
    for r in 0..rounds {
        let stage = |what: &str| format!("round {} of {rounds}: {what}", r + 1);
        ctx.progress.stage(&stage("cold read"));
        evict(&file, plan.drop_caches)?;
        let cached_before_cold = cached(&file);
        let cold = timed(device, || read_all(&path).map(|_| ()))?;
        let cached_after_cold = cached(&file);
        ctx.progress.stage(&stage("warm read"));
        let warm = timed(device, || read_all(&path).map(|_| ()))?;
        let cached_after_warm = cached(&file);
        ctx.progress.stage(&stage("mmap"));
        evict(&file, plan.drop_caches)?;
        let mmap_cold = timed(device, || mmap_read(&file, size as usize))?;
        let mmap_warm = timed(device, || mmap_read(&file, size as usize))?;
        out.push(Round {
            cold,
            warm,
            mmap_cold,
            mmap_warm,
            cached_before_cold,
            cached_after_cold,
            cached_after_warm,
        });
        ctx.progress.fraction((r + 1) as f64 / rounds as f64);
    }
    let snapshots = sampler.stop_snapshots();
    drop(file);
    drop(scratch);
    Ok(Measured::Raw(Raw {
        disk,
        page_bytes: oslab_sys::machine::page_size(),
        residency_method: method.map(str::to_string),
        create,
        rounds: out,
        snapshots,
    }))
}
