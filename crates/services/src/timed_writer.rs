//! Writers and a 10 Hz poller for the write-back experiments.
//!
//! A writer writes `chunk` bytes every `period` (or back to back when the period is
//! zero) on a fixed time grid, and records how long each write() took. The poller
//! reads /proc/meminfo (Dirty, Writeback) and cachestat() of the writers' files, so
//! the experiment sees both what the kernel decides on (global Dirty) and its own
//! share of it exactly.

use std::io::Write;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use oslab_sys::clock::monotonic_ns;
use oslab_sys::fileio::{AlignedBuf, cachestat};
use serde::{Deserialize, Serialize};

/// What a writer does.
#[derive(Debug, Clone)]
pub struct WriterSpec {
    pub path: PathBuf,
    pub chunk: usize,
    /// Zero: write back to back (a bulk writer).
    pub period: Duration,
    /// Stop after this many writes, if set.
    pub count: Option<u64>,
    /// SCHED_FIFO priority, if the writer should be real-time.
    pub fifo_priority: Option<i32>,
    /// Nice value for a writer that is not real-time (the paper's Fig. 7 uses 4).
    pub nice: Option<i32>,
}

/// What a writer saw.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct WriterTrace {
    /// Time of each write() call since the common start, s.
    pub start_s: Vec<f64>,
    /// Duration of each write() call, ms.
    pub latency_ms: Vec<f64>,
    pub bytes: u64,
    pub error: Option<String>,
    /// The writer's thread id, to find its calls in the kernel's trace.
    #[serde(default)]
    pub tid: u32,
    /// Its process id (oslab's, or a writer process's).
    #[serde(default)]
    pub tgid: u32,
}

/// One poll.
#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize)]
pub struct Poll {
    pub t_s: f64,
    pub dirty_bytes: u64,
    pub writeback_bytes: u64,
    /// Dirty pages of the experiment's own files (cachestat), in bytes.
    pub files_dirty_bytes: u64,
    pub files_writeback_bytes: u64,
}

/// Runs one writer on the calling thread from `start` (CLOCK_MONOTONIC ns) until
/// its count is done or `stop` is set.
pub fn run_writer(spec: WriterSpec, start: u64, stop: Arc<AtomicBool>) -> WriterTrace {
    let mut tr = WriterTrace {
        tid: oslab_sys::process::raw_gettid() as u32,
        tgid: std::process::id(),
        ..WriterTrace::default()
    };
    if let Some(n) = spec.nice
        && let Err(e) = oslab_sys::process::set_nice(n)
    {
        tr.error = Some(format!("nice {n}: {e}"));
        return tr;
    }
    if let Some(p) = spec.fifo_priority
        && let Err(e) = oslab_sys::process::set_fifo(p)
    {
        tr.error = Some(format!("SCHED_FIFO {p}: {e}"));
        return tr;
    }
    let buf = AlignedBuf::new(spec.chunk, spec.chunk as u64);
    let mut f = match std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&spec.path)
    {
        Ok(f) => f,
        Err(e) => {
            tr.error = Some(format!("{}: {e}", spec.path.display()));
            return tr;
        }
    };
    let step = spec.period.as_nanos() as u64;
    let mut k = 0u64;
    while !stop.load(Ordering::Relaxed) && spec.count.is_none_or(|c| k < c) {
        // Periodic writers keep to their grid; bulk writers only wait for the start.
        let target = start + k * step;
        let now = monotonic_ns();
        if target > now {
            std::thread::sleep(Duration::from_nanos(target - now));
        }
        let t0 = monotonic_ns();
        if let Err(e) = f.write_all(buf.as_slice()) {
            tr.error = Some(e.to_string());
            break;
        }
        let t1 = monotonic_ns();
        tr.start_s.push((t0 - start) as f64 / 1e9);
        tr.latency_ms.push((t1 - t0) as f64 / 1e6);
        tr.bytes += spec.chunk as u64;
        k += 1;
    }
    tr
}

pub fn poll_once(start: u64, files: &[PathBuf], page: u64) -> Poll {
    let m = oslab_sys::fsread::Root::live()
        .read("/proc/meminfo")
        .ok()
        .and_then(|t| oslab_sys::parse::meminfo::parse_meminfo(&t).ok());
    let (mut fd, mut fw) = (0, 0);
    for p in files {
        if let Ok(f) = std::fs::File::open(p)
            && let Ok(cs) = cachestat(&f)
        {
            fd += cs.dirty * page;
            fw += cs.writeback * page;
        }
    }
    Poll {
        t_s: (monotonic_ns() - start) as f64 / 1e9,
        dirty_bytes: m.as_ref().map_or(0, |m| m.dirty_bytes),
        writeback_bytes: m.as_ref().map_or(0, |m| m.writeback_bytes),
        files_dirty_bytes: fd,
        files_writeback_bytes: fw,
    }
}

/// Runs the writers for `duration` (or until they finish their counts) while polling
/// every `interval`; `progress` gets the elapsed fraction.
pub fn run(
    writers: Vec<WriterSpec>,
    duration: Duration,
    interval: Duration,
    progress: &dyn Fn(f64),
) -> (Vec<WriterTrace>, Vec<Poll>) {
    let files: Vec<PathBuf> = writers.iter().map(|w| w.path.clone()).collect();
    let stop = Arc::new(AtomicBool::new(false));
    let start = monotonic_ns() + 50_000_000; // let every thread get ready
    let handles: Vec<_> = writers
        .into_iter()
        .map(|w| {
            let s = stop.clone();
            std::thread::spawn(move || run_writer(w, start, s))
        })
        .collect();
    let page = oslab_sys::machine::page_size();
    let mut polls = Vec::new();
    let step = interval.as_nanos() as u64;
    let end = start + duration.as_nanos() as u64;
    let mut k = 0u64;
    loop {
        let target = start + k * step;
        let now = monotonic_ns();
        if target > now {
            std::thread::sleep(Duration::from_nanos(target - now));
        }
        polls.push(poll_once(start, &files, page));
        k += 1;
        progress(
            ((monotonic_ns().saturating_sub(start)) as f64 / duration.as_nanos() as f64).min(1.0),
        );
        if monotonic_ns() >= end || handles.iter().all(|h| h.is_finished()) {
            break;
        }
    }
    stop.store(true, Ordering::Relaxed);
    let traces = handles
        .into_iter()
        .map(|h| h.join().unwrap_or_default())
        .collect();
    (traces, polls)
}

/// Bytes as MiB for plots and tables.
pub fn mib(b: u64) -> f64 {
    b as f64 / (1u64 << 20) as f64
}

/// Writes back everything dirty now, so an experiment starts from a clean state.
pub fn settle() {
    oslab_sys::process::sync_all();
}

/// A file writer in a hurry: `bytes` buffered, no sync (for warming up).
pub fn write_bytes(path: &std::path::Path, bytes: u64) -> std::io::Result<()> {
    let mut f = std::fs::File::create(path)?;
    let b = vec![7u8; 1 << 20];
    let mut left = bytes;
    while left > 0 {
        let n = left.min(1 << 20) as usize;
        f.write_all(&b[..n])?;
        left -= n as u64;
    }
    Ok(())
}
