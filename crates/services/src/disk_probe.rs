//! Shared pieces of the I/O experiments: timing one operation together with what
//! the thread used (CPU time, faults) and what the device did meanwhile.

use std::fs::File;
use std::io::{Read, Write};
use std::path::Path;

use oslab_sys::clock::monotonic_ns;
use oslab_sys::fileio::AlignedBuf;
use oslab_sys::fsread::Root;
use oslab_sys::parse::meminfo::{MemSnapshot, parse_meminfo};
use oslab_sys::process::thread_usage;
use oslab_sys::sar::{DiskCounters, parse_diskstats};

use serde::{Deserialize, Serialize};

use oslab_harness::LabError;

pub const CHUNK: usize = 1 << 20;

/// The counters of one device now (`None` if it is not in /proc/diskstats).
pub fn disk(name: Option<&str>) -> Option<DiskCounters> {
    let text = Root::live().read("/proc/diskstats").ok()?;
    parse_diskstats(&text).remove(name?)
}

pub fn meminfo() -> Option<MemSnapshot> {
    parse_meminfo(&Root::live().read("/proc/meminfo").ok()?).ok()
}

/// What one timed operation cost and caused: the thread's own usage and the
/// device's counters, differences of readings taken around the operation.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct OpStats {
    pub secs: f64,
    pub user_s: f64,
    pub sys_s: f64,
    pub major_faults: u64,
    pub minor_faults: u64,
    pub dev_read_bytes: u64,
    pub dev_write_bytes: u64,
    /// Change of Buffers + Cached during the operation.
    pub cache_delta_bytes: i64,
}

fn sectors(a: Option<DiskCounters>, b: Option<DiskCounters>) -> (u64, u64) {
    match (a, b) {
        (Some(a), Some(b)) => (
            b.sectors_read.saturating_sub(a.sectors_read) * 512,
            b.sectors_written.saturating_sub(a.sectors_written) * 512,
        ),
        _ => (0, 0),
    }
}

fn cache_bytes(m: &Option<MemSnapshot>) -> i64 {
    m.as_ref()
        .map_or(0, |m| (m.cached_bytes + m.buffers_bytes) as i64)
}

/// Times `f` on this thread, with its usage and the device's traffic.
pub fn timed(
    device: Option<&str>,
    f: impl FnOnce() -> std::io::Result<()>,
) -> Result<OpStats, LabError> {
    let (d0, m0, u0) = (disk(device), meminfo(), thread_usage());
    let t0 = monotonic_ns();
    f().map_err(|e| LabError::Failed(e.to_string()))?;
    let t1 = monotonic_ns();
    let (u1, m1, d1) = (thread_usage(), meminfo(), disk(device));
    let u = u1.since(&u0);
    let (r, w) = sectors(d0, d1);
    Ok(OpStats {
        secs: (t1 - t0) as f64 / 1e9,
        user_s: u.user_us as f64 / 1e6,
        sys_s: u.system_us as f64 / 1e6,
        major_faults: u.major_faults,
        minor_faults: u.minor_faults,
        dev_read_bytes: r,
        dev_write_bytes: w,
        cache_delta_bytes: cache_bytes(&m1) - cache_bytes(&m0),
    })
}

/// Device traffic since `before` (bytes read, bytes written).
pub fn traffic_since(device: Option<&str>, before: Option<DiskCounters>) -> (u64, u64) {
    sectors(before, disk(device))
}

/// Writes `size` bytes of varied data to `path` in 1 MiB chunks and syncs it.
pub fn create_file(path: &Path, size: u64, seed: u64) -> std::io::Result<()> {
    let bufs: Vec<AlignedBuf> = (0..4).map(|i| AlignedBuf::new(CHUNK, seed + i)).collect();
    let mut f = File::create(path)?;
    let mut left = size;
    let mut i = 0;
    while left > 0 {
        let n = left.min(CHUNK as u64) as usize;
        f.write_all(&bufs[i % bufs.len()].as_slice()[..n])?;
        left -= n as u64;
        i += 1;
    }
    f.sync_all()
}

/// Reads the whole file with read(2) in 1 MiB chunks; returns the bytes read.
pub fn read_all(path: &Path) -> std::io::Result<u64> {
    let mut f = File::open(path)?;
    let mut buf = vec![0u8; CHUNK];
    let mut total = 0u64;
    loop {
        let n = f.read(&mut buf)?;
        if n == 0 {
            return Ok(total);
        }
        total += n as u64;
    }
}

/// MB/s (10^6 bytes per second), as the material and dd report throughput.
pub fn mb_s(bytes: u64, secs: f64) -> f64 {
    if secs > 0.0 {
        bytes as f64 / secs / 1e6
    } else {
        0.0
    }
}

/// A device rate above which reads from a virtual disk must have come from the
/// host's cache (faster than the SATA and most NVMe drives a host would hold).
pub const HOST_CACHE_MB_S: f64 = 1500.0;

/// Whether reads this fast from a virtual disk must have come from the host's cache.
pub fn implausible_for_a_disk(mb_per_s: f64, virtual_machine: bool) -> bool {
    virtual_machine && mb_per_s > HOST_CACHE_MB_S
}

/// What the kernel says about the disk under a file system, read during the run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DiskFacts {
    /// The device as /proc/diskstats names it (a partition if the file system is on one).
    pub device: String,
    /// The whole disk it belongs to.
    pub disk: String,
    /// queue/write_cache: "write back" (a volatile cache the device acknowledges
    /// writes from) or "write through".
    pub write_cache: Option<String>,
    /// queue/rotational: a spinning disk (or a device that claims to be one).
    pub rotational: Option<bool>,
}

/// The facts of the device holding `dir`; `None` when it is on no block device.
pub fn disk_facts(dir: &Path) -> Option<DiskFacts> {
    let root = Root::live();
    let device = oslab_sys::fileio::device_name_of(&root, dir)?;
    let disk = oslab_sys::fileio::parent_disk(&root, &device);
    let queue = |f: &str| root.read_trim(&format!("/sys/block/{disk}/queue/{f}"));
    Some(DiskFacts {
        write_cache: queue("write_cache"),
        rotational: queue("rotational").map(|r| r == "1"),
        device,
        disk,
    })
}
