//! `io.read`: cold and warm reads of one file, through read(2) and through mmap.
//!
//! Method: a file of `size` bytes (default 1 GiB, quick 256 MiB, at most half of the
//! available memory) is written to the scratch directory and synced. Each round
//! evicts it from the page cache (fsync + posix_fadvise(DONTNEED), which needs no
//! root; or, with `--set drop_caches=true` as root, vm.drop_caches = 3 through the
//! journal), then reads it cold and again warm with read(2) in 1 MiB chunks, then
//! the same through a shared mmap touching one byte per page. For each read: wall
//! time, MB/s, user and system CPU time, major faults, the bytes the device holding
//! the file actually read (/proc/diskstats) and the change of Buffers + Cached.
//! cachestat(2) (Linux 6.5+; mincore(2) otherwise) says how much of the file is
//! cached before and after each read. A sampler records sar figures meanwhile.
//!
//! Pitfalls: on a virtual disk the host may cache the file too, so a "cold" read
//! can run at memory speed with the device counters still showing the bytes; the
//! result says so when the device read rate is implausible for a disk.
//! Reference: material section 3 (seed 000), the author's 1 GiB file: cold 1.117 s,
//! warm 0.134 s.

use std::fs::File;
use std::time::Duration;

use oslab_model::{Axis, Claim, Plot, Scale, Series, SeriesStyle, Verdict};
use oslab_sys::fileio::{self, Mapping, cached_pages, device_name_of};
use oslab_sys::journal;
use oslab_sys::parse::size::human_bytes;
use oslab_sys::process::is_root;

use super::probe::{OpStats, create_file, implausible_for_a_disk, mb_s, read_all, timed};
use crate::experiment::{
    Context, Experiment, LabError, Meta, Needs, Outcome, Output, finding, measurement,
};
use crate::sampler::{self, Sampler};
use crate::scratch::Scratch;
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

/// The four reads of one round.
struct Round {
    cold: OpStats,
    warm: OpStats,
    mmap_cold: OpStats,
    mmap_warm: OpStats,
    cached_before_cold: u64,
    cached_after_cold: u64,
    cached_after_warm: u64,
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
    fn meta(&self) -> &Meta {
        &META
    }

    fn settings(&self) -> Declared {
        &SETTINGS
    }

    fn run(&self, ctx: &mut Context) -> Result<Outcome, LabError> {
        let wanted = ctx.get(&SIZE);
        let drop_caches = ctx.get(&DROP_CACHES);
        let rounds = ctx.samples(2, 3);
        let mut notes = Vec::new();
        if drop_caches && !is_root() {
            return Ok(Outcome::Skipped {
                reason: "drop_caches=true needs root; run without it to evict with fadvise".into(),
            });
        }
        // Bounded by memory: the warm read needs the whole file cached.
        let avail = super::probe::meminfo()
            .and_then(|m| m.available_bytes)
            .unwrap_or(0);
        let size = wanted.min(avail / 2) & !((1 << 20) - 1);
        if size < (16 << 20) {
            return Err(LabError::Failed(format!(
                "only {} of memory is available; io.read needs at least 32 MiB",
                human_bytes(avail)
            )));
        }
        if size < wanted {
            notes.push(format!(
                "file shrunk from {} to {} to fit in half the available memory",
                human_bytes(wanted),
                human_bytes(size)
            ));
        }
        ctx.param("size_bytes", size);
        let scratch = Scratch::create(&ctx.config.scratch_dir, META.id, size + (64 << 20))?;
        let path = scratch.file("read-test.dat");
        let device = device_name_of(scratch.dir());
        ctx.params
            .insert("device".into(), serde_json::json!(device));
        let sampler = Sampler::start(Duration::from_millis(100));

        ctx.progress.stage("creating the file");
        let created = timed(device.as_deref(), || {
            create_file(&path, size, ctx.config.seed)
        })?;
        let file = File::open(&path).map_err(|e| LabError::Failed(e.to_string()))?;
        let page = oslab_sys::machine::page_size();
        let pages = size.div_ceil(page);
        let mut method = "cachestat";
        let mut cached = |f: &File| -> u64 {
            match cached_pages(f) {
                Ok((n, m)) => {
                    method = m;
                    n
                }
                Err(_) => 0,
            }
        };

        let mut out_rounds = Vec::new();
        for r in 0..rounds {
            ctx.progress
                .stage(&format!("round {} of {rounds}: cold read", r + 1));
            evict(&file, drop_caches)?;
            let cached_before_cold = cached(&file);
            let cold = timed(device.as_deref(), || read_all(&path).map(|_| ()))?;
            let cached_after_cold = cached(&file);
            ctx.progress
                .stage(&format!("round {} of {rounds}: warm read", r + 1));
            let warm = timed(device.as_deref(), || read_all(&path).map(|_| ()))?;
            let cached_after_warm = cached(&file);
            ctx.progress
                .stage(&format!("round {} of {rounds}: mmap", r + 1));
            evict(&file, drop_caches)?;
            let mmap_cold = timed(device.as_deref(), || mmap_read(&file, size as usize))?;
            let mmap_warm = timed(device.as_deref(), || mmap_read(&file, size as usize))?;
            out_rounds.push(Round {
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
        let system = sampler.stop();
        drop(file);
        drop(scratch);

        let seed = ctx.config.seed;
        let col = |f: fn(&Round) -> f64| -> Vec<f64> { out_rounds.iter().map(f).collect() };
        let med = |v: &[f64]| oslab_stats::median(v).unwrap_or(0.0);
        let cold_s = col(|r| r.cold.secs);
        let warm_s = col(|r| r.warm.secs);
        let mcold_s = col(|r| r.mmap_cold.secs);
        let mwarm_s = col(|r| r.mmap_warm.secs);
        let cold_dev = col(|r| r.cold.dev_read_bytes as f64);
        let warm_dev = col(|r| r.warm.dev_read_bytes as f64);
        let rate = |v: &[f64]| v.iter().map(|s| mb_s(size, *s)).collect::<Vec<f64>>();
        let measurements = vec![
            measurement(
                "cold_read",
                "read(2) after eviction",
                "s",
                cold_s.clone(),
                seed,
                None,
            ),
            measurement(
                "warm_read",
                "read(2) again, file cached",
                "s",
                warm_s.clone(),
                seed,
                None,
            ),
            measurement(
                "mmap_cold",
                "mmap, one byte per page, after eviction",
                "s",
                mcold_s.clone(),
                seed,
                None,
            ),
            measurement(
                "mmap_warm",
                "mmap again, file cached",
                "s",
                mwarm_s.clone(),
                seed,
                None,
            ),
            measurement(
                "cold_read_rate",
                "cold read(2) throughput",
                "MB/s",
                rate(&cold_s),
                seed,
                None,
            ),
            measurement(
                "warm_read_rate",
                "warm read(2) throughput",
                "MB/s",
                rate(&warm_s),
                seed,
                None,
            ),
            measurement(
                "cold_user",
                "user CPU of the cold read",
                "s",
                col(|r| r.cold.user_s),
                seed,
                None,
            ),
            measurement(
                "cold_sys",
                "system CPU of the cold read",
                "s",
                col(|r| r.cold.sys_s),
                seed,
                None,
            ),
            measurement(
                "warm_user",
                "user CPU of the warm read",
                "s",
                col(|r| r.warm.user_s),
                seed,
                None,
            ),
            measurement(
                "warm_sys",
                "system CPU of the warm read",
                "s",
                col(|r| r.warm.sys_s),
                seed,
                None,
            ),
            measurement(
                "cold_device_read",
                "bytes the device read during the cold read",
                "bytes",
                cold_dev.clone(),
                seed,
                None,
            ),
            measurement(
                "warm_device_read",
                "bytes the device read during the warm read",
                "bytes",
                warm_dev.clone(),
                seed,
                None,
            ),
            measurement(
                "mmap_cold_major_faults",
                "major faults of the cold mmap read",
                "faults",
                col(|r| r.mmap_cold.major_faults as f64),
                seed,
                None,
            ),
            measurement(
                "mmap_warm_major_faults",
                "major faults of the warm mmap read",
                "faults",
                col(|r| r.mmap_warm.major_faults as f64),
                seed,
                None,
            ),
            measurement(
                "cold_cache_growth",
                "Buffers + Cached growth during the cold read",
                "bytes",
                col(|r| r.cold.cache_delta_bytes as f64),
                seed,
                None,
            ),
            measurement(
                "warm_cache_growth",
                "Buffers + Cached growth during the warm read",
                "bytes",
                col(|r| r.warm.cache_delta_bytes as f64),
                seed,
                None,
            ),
        ];
        let last = out_rounds.last().expect("at least one round");
        let speedup = if med(&warm_s) > 0.0 {
            med(&cold_s) / med(&warm_s)
        } else {
            0.0
        };
        let cold_dev_rate = mb_s(med(&cold_dev) as u64, med(&cold_s));
        let vm = ctx.machine.hypervisor.name.is_some();
        let findings = vec![
            finding("file_bytes", size as f64, "bytes", human_bytes(size)),
            finding(
                "create_s",
                created.secs,
                "s",
                "writing and syncing the file",
            ),
            finding(
                "speedup_warm_vs_cold",
                speedup,
                "x",
                "median cold read time over median warm read time",
            ),
            finding(
                "cold_device_share",
                med(&cold_dev) / size as f64,
                "fraction",
                "device bytes read during the cold read, over the file size",
            ),
            finding(
                "warm_device_share",
                med(&warm_dev) / size as f64,
                "fraction",
                "device bytes read during the warm read, over the file size",
            ),
            finding(
                "cold_device_rate",
                cold_dev_rate,
                "MB/s",
                "device bytes during the cold read over its time",
            ),
            finding(
                "cached_before_cold",
                last.cached_before_cold as f64 / pages as f64,
                "fraction",
                format!("of the file's pages cached after eviction ({method})"),
            ),
            finding(
                "cached_after_cold",
                last.cached_after_cold as f64 / pages as f64,
                "fraction",
                format!("of the file's pages cached after the cold read ({method})"),
            ),
            finding(
                "cached_after_warm",
                last.cached_after_warm as f64 / pages as f64,
                "fraction",
                format!("after the warm read ({method})"),
            ),
        ];
        if let Some(d) = &device {
            notes.push(format!("the file lives on {d}"));
        } else {
            notes.push("the scratch directory is on no block device (tmpfs?): device bytes are zero and eviction may do nothing".into());
        }
        let host_cached = implausible_for_a_disk(cold_dev_rate, vm);
        if host_cached {
            notes.push(format!(
                "the cold read ran at {cold_dev_rate:.0} MB/s from the device counters: on this virtual disk that is the host's page cache answering, not a disk"
            ));
        }
        if last.cached_before_cold * 20 > pages {
            notes.push(format!(
                "eviction left {:.0} % of the file cached: the cold read was partly warm",
                last.cached_before_cold as f64 * 100.0 / pages as f64
            ));
        }

        let warm_share = med(&warm_dev) / size as f64;
        let holds = speedup >= 3.0 && warm_share < 0.05;
        let claim_fast = Claim {
            id: "warm-read-faster".into(),
            text: "A warm read is many times faster than a cold one and causes no device reads"
                .into(),
            source: "material 3 (seed 000: cold 1.117 s, warm 0.134 s for 1 GiB)".into(),
            expectation:
                "warm at least 3x faster; device reads during the warm read below 5 % of the file"
                    .into(),
            observed: format!(
                "cold {:.3} s, warm {:.3} s ({speedup:.1}x); device read {} cold, {} warm",
                med(&cold_s),
                med(&warm_s),
                human_bytes(med(&cold_dev) as u64),
                human_bytes(med(&warm_dev) as u64)
            ),
            verdict: if holds {
                Verdict::Holds
            } else {
                Verdict::Differs
            },
            why: if holds {
                "the second read was served from the page cache".into()
            } else if warm_share >= 0.05 {
                "the warm read still went to the device: the file did not stay cached (memory pressure?)".into()
            } else if host_cached {
                "the cold read was fast too: the host caches this virtual disk, so 'cold' is only cold for the guest".into()
            } else {
                "cold and warm reads ran at similar speed".into()
            },
        };
        let grow_cold = med(&col(|r| r.cold.cache_delta_bytes as f64));
        let grow_warm = med(&col(|r| r.warm.cache_delta_bytes as f64));
        let holds_grow = grow_cold >= 0.9 * size as f64 && grow_warm.abs() < 0.05 * size as f64;
        let claim_cache = Claim {
            id: "cache-grows-once".into(),
            text: "buff/cache grows by about the file size during the first read and not during the second".into(),
            source: "material 3 (seed 000)".into(),
            expectation: format!("growth >= 90 % of {} cold, below 5 % warm", human_bytes(size)),
            observed: format!(
                "cold {}, warm {}",
                human_bytes(grow_cold.max(0.0) as u64),
                human_bytes(grow_warm.abs() as u64)
            ),
            verdict: if holds_grow { Verdict::Holds } else { Verdict::Differs },
            why: if holds_grow {
                "the first read filled the page cache; the second found it there".into()
            } else {
                "other activity changed Buffers + Cached at the same time, or the cache did not keep the file".into()
            },
        };
        let mut plots = vec![Plot {
            id: "times".into(),
            title: "Reading the file cold and warm".into(),
            x: Axis::new("", "", Scale::Linear),
            y: Axis::new("time", "s", Scale::Linear),
            series: vec![Series {
                name: "median time".into(),
                style: SeriesStyle::Bars,
                points: [med(&cold_s), med(&warm_s), med(&mcold_s), med(&mwarm_s)]
                    .iter()
                    .enumerate()
                    .map(|(i, y)| [i as f64, *y])
                    .collect(),
            }],
            markers: vec![],
            x_labels: vec![
                "read cold".into(),
                "read warm".into(),
                "mmap cold".into(),
                "mmap warm".into(),
            ],
        }];
        plots.extend(sampler::plots(&system, device.as_deref()));
        notes.push(format!(
            "eviction by {}; residency by {method}; {rounds} rounds",
            if drop_caches {
                "vm.drop_caches=3"
            } else {
                "fsync + posix_fadvise(DONTNEED)"
            }
        ));
        Ok(Outcome::Completed(Output {
            measurements,
            findings,
            claims: vec![claim_fast, claim_cache],
            plots,
            notes,
            system,
            ..Default::default()
        }))
    }
}
