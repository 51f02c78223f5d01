//! Measuring a sawtooth: a writer at a steady rate with sysctls in force, polled
//! at 10 Hz for what the kernel reports.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use oslab_sys::clock::monotonic_ns;
use oslab_sys::fsread::Root;
use oslab_sys::parse::bdi;
use oslab_sys::sar::parse_diskstats;

use super::{KernelPoll, SawRaw, Thresholds};
use crate::disk_probe::disk_facts;
use crate::knobs::Knobs;
use crate::timed_writer::{self, WriterSpec, WriterTrace};
use oslab_harness::kernel_trace::KernelTrace;
use oslab_harness::scratch::Scratch;
use oslab_harness::{Context, LabError};
use oslab_trace::TraceOutcome;

/// The dirty sysctls read back at the end of a run.
pub const DIRTY_SYSCTLS: [&str; 6] = [
    "vm.dirty_background_ratio",
    "vm.dirty_background_bytes",
    "vm.dirty_ratio",
    "vm.dirty_bytes",
    "vm.dirty_writeback_centisecs",
    "vm.dirty_expire_centisecs",
];

/// The poll interval.
pub const POLL: Duration = Duration::from_millis(100);

/// The dirty sysctls as the kernel reports them now.
pub fn sysctls_now() -> BTreeMap<String, String> {
    let root = Root::live();
    DIRTY_SYSCTLS
        .iter()
        .filter_map(|n| {
            oslab_sys::sysctl::read(&root, n)
                .ok()
                .map(|v| (n.to_string(), v))
        })
        .collect()
}

/// The kernel's dirty limits now (/proc/vmstat).
pub fn thresholds_now() -> Thresholds {
    let text = Root::live().read("/proc/vmstat").unwrap_or_default();
    let v = |k: &str| oslab_sys::parse::vmstat::value(&text, k);
    Thresholds {
        dirty_pages: v("nr_dirty_threshold"),
        background_pages: v("nr_dirty_background_threshold"),
    }
}

/// What the poller reads of one device besides memory.
pub struct DeviceProbe {
    /// The device as /proc/diskstats names it.
    pub name: String,
    /// The "MAJ:MIN" of its bdi, when debugfs shows that bdi's stats.
    pub bdi: Option<String>,
    root: Root,
}

impl DeviceProbe {
    /// `name` in /proc/diskstats; `bdi` is the "MAJ:MIN" of the disk whose bdi
    /// holds the file system.
    pub fn new(name: &str, bdi: Option<&str>) -> DeviceProbe {
        let root = Root::live();
        DeviceProbe {
            name: name.to_string(),
            bdi: bdi
                .filter(|b| root.exists(&bdi::stats_path(b)))
                .map(str::to_string),
            root,
        }
    }

    fn written_bytes(&self) -> Option<u64> {
        let text = self.root.read("/proc/diskstats").ok()?;
        parse_diskstats(&text)
            .get(&self.name)
            .map(|d| d.sectors_written * 512)
    }

    fn bdi_bandwidth(&self) -> Option<u64> {
        bdi::read_write_bandwidth_kbps(&self.root, self.bdi.as_deref()?)
    }
}

/// How long a polled run lasts: `most`, or less once Dirty has sawed
/// `cycles.0` whole cycles (drops of at least `cycles.1` MiB, each with its
/// trough confirmed, as [`oslab_stats::sawtooth`] finds them).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Length {
    pub most: Duration,
    pub cycles: Option<(usize, f64)>,
}

impl From<Duration> for Length {
    fn from(most: Duration) -> Length {
        Length { most, cycles: None }
    }
}

impl Length {
    /// Whether the polls so far hold enough whole cycles.
    fn enough(&self, polls: &[KernelPoll]) -> bool {
        let Some((cycles, min_drop)) = self.cycles else {
            return false;
        };
        let t: Vec<f64> = polls.iter().map(|p| p.poll.t_s).collect();
        let y: Vec<f64> = polls
            .iter()
            .map(|p| p.poll.dirty_bytes as f64 / (1u64 << 20) as f64)
            .collect();
        oslab_stats::sawtooth::confirmed_cycles(&t, &y, min_drop) >= cycles
    }
}

/// Runs the writers for `length` (or until they finish their counts) while
/// polling every 100 ms: [`timed_writer::poll_once`] and the device. `progress`
/// gets the elapsed fraction of the longest run.
pub fn run_polled(
    writers: Vec<WriterSpec>,
    length: Length,
    device: Option<&DeviceProbe>,
    progress: &dyn Fn(f64),
) -> (Vec<WriterTrace>, Vec<KernelPoll>) {
    let duration = length.most;
    let files: Vec<PathBuf> = writers.iter().map(|w| w.path.clone()).collect();
    let stop = Arc::new(AtomicBool::new(false));
    let start = monotonic_ns() + 50_000_000; // let every thread get ready
    let handles: Vec<_> = writers
        .into_iter()
        .map(|w| {
            let s = stop.clone();
            std::thread::spawn(move || timed_writer::run_writer(w, start, s))
        })
        .collect();
    let page = oslab_sys::machine::page_size();
    let mut polls = Vec::new();
    let step = POLL.as_nanos() as u64;
    let end = start + duration.as_nanos() as u64;
    let mut k = 0u64;
    loop {
        let target = start + k * step;
        let now = monotonic_ns();
        if target > now {
            std::thread::sleep(Duration::from_nanos(target - now));
        }
        polls.push(KernelPoll {
            poll: timed_writer::poll_once(start, &files, page),
            device_written_bytes: device.and_then(DeviceProbe::written_bytes),
            bdi_write_bandwidth_kbps: device.and_then(DeviceProbe::bdi_bandwidth),
        });
        k += 1;
        progress(
            ((monotonic_ns().saturating_sub(start)) as f64 / duration.as_nanos() as f64).min(1.0),
        );
        if monotonic_ns() >= end || handles.iter().all(|h| h.is_finished()) || length.enough(&polls)
        {
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

/// A steady writer of `rate / 10` bytes every 100 ms on `path`.
pub fn steady_writer(path: PathBuf, rate: u64) -> WriterSpec {
    WriterSpec {
        path,
        chunk: (rate / 10).max(4096) as usize,
        period: Duration::from_millis(100),
        count: None,
        fifo_priority: None,
        nice: None,
    }
}

/// Writes at `rate` bytes/s for `duration` with `knobs` in force on `path`, and
/// records what the kernel reported (`disk` is left for the caller to fill). The
/// knobs are put back before returning.
pub fn run_with_knobs(
    knobs: &[(&str, String)],
    path: PathBuf,
    rate: u64,
    length: Length,
    device: Option<&DeviceProbe>,
    progress: &dyn Fn(f64),
) -> Result<SawRaw, LabError> {
    timed_writer::settle();
    let k = Knobs::set(knobs)?;
    let (traces, polls) = run_polled(vec![steady_writer(path, rate)], length, device, progress);
    let sysctls_in_force = sysctls_now();
    let thresholds = thresholds_now();
    drop(k);
    let writer = traces.into_iter().next().unwrap_or_default();
    if let Some(e) = &writer.error {
        return Err(LabError::Failed(format!("writer: {e}")));
    }
    Ok(SawRaw {
        sysctls_set: knobs
            .iter()
            .map(|(n, v)| (n.to_string(), v.clone()))
            .collect(),
        sysctls_in_force,
        thresholds,
        page_bytes: oslab_sys::machine::page_size(),
        disk: None,
        polls,
        writer,
        bdi: None,
        kernel: Default::default(),
    })
}

/// Runs one writer at `rate` bytes/s (10 writes a second) in the scratch directory
/// with `knobs` in force.
pub fn run_sawtooth(
    ctx: &mut Context,
    id: &str,
    knobs: &[(&str, String)],
    rate: u64,
    duration: Duration,
) -> Result<SawRaw, LabError> {
    let base = ctx.config.scratch_dir.clone();
    run_sawtooth_in(ctx, &base, id, knobs, rate, duration.into())
}

/// As [`run_sawtooth`], on the file system of `base` (a scratch folder of its own
/// under it, removed afterwards).
pub fn run_sawtooth_in(
    ctx: &mut Context,
    base: &Path,
    id: &str,
    knobs: &[(&str, String)],
    rate: u64,
    length: Length,
) -> Result<SawRaw, LabError> {
    let scratch = Scratch::create(
        base,
        id,
        rate * length.most.as_secs().max(1) * 2 + (64 << 20),
    )?;
    let disk = disk_facts(scratch.dir());
    let bdi = disk
        .as_ref()
        .and_then(|d| Root::live().read_trim(&format!("/sys/block/{}/dev", d.disk)));
    let probe = disk
        .as_ref()
        .map(|d| DeviceProbe::new(&d.device, bdi.as_deref()));
    let progress = ctx.progress;
    let kernel = KernelTrace::writeback(ctx.machine);
    let mut raw = run_with_knobs(
        knobs,
        scratch.file("writer.dat"),
        rate,
        length,
        probe.as_ref(),
        &|f| progress.fraction(f),
    )?;
    raw.disk = disk;
    raw.bdi = bdi;
    raw.kernel = flusher_view(kernel.finish());
    Ok(raw)
}

/// What a sawtooth keeps of the kernel's records: the flusher's passes, the
/// estimates, the limits and the dirtiers; not every write of the steady writer.
pub fn flusher_view(mut outcome: TraceOutcome) -> TraceOutcome {
    if let TraceOutcome::Traced(c) = &mut outcome {
        c.writes.clear();
        c.offcpu.clear();
    }
    outcome
}
