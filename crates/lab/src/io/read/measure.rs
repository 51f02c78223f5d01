//! io.read's measurement: a file read cold and warm, by read() and by mmap.

use std::fs::File;
use std::time::Duration;

use oslab_sys::fileio::{self, Mapping, cached_pages};
use oslab_sys::journal;
use oslab_sys::process::is_root;
use oslab_units::human_bytes;

use super::{META, Plan, Raw, Round};
use oslab_harness::Measured;
use oslab_harness::sampler::Sampler;
use oslab_harness::scratch::Scratch;
use oslab_harness::{Context, LabError};
use oslab_services::disk_probe::{create_file, disk_facts, read_all, timed};

pub(super) fn measure(plan: &Plan, ctx: &mut Context) -> Result<Measured<Raw>, LabError> {
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
    measure_files(plan, ctx)
}

/// The smallest file worth reading: below it the reads take microseconds.
pub(super) const MIN_FILE: u64 = 16 << 20;

pub(super) fn evict(file: &File, drop_caches: bool) -> Result<(), LabError> {
    if drop_caches {
        journal::with_global(oslab_sys::sysctl::drop_caches)?;
    } else {
        fileio::evict(file)?;
    }
    Ok(())
}

pub(super) fn mmap_read(file: &File, len: usize) -> std::io::Result<()> {
    let map = Mapping::file(file, len).map_err(|e| std::io::Error::other(e.to_string()))?;
    std::hint::black_box(map.touch_read(oslab_sys::machine::page_size() as usize));
    Ok(())
}

pub(super) fn measure_files(plan: &Plan, ctx: &mut Context) -> Result<Measured<Raw>, LabError> {
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
