//! The kernel's write-back state for one device, read from the machine just
//! before a simulation (`oslab sim run|sweep|advise --live DIR`): what the
//! user's next minute starts from, rather than the fixed point the kernel
//! reaches only after minutes under the scenario's writers.
//!
//! What is readable ([`read`]): Dirty and Writeback (/proc/meminfo), the limits
//! the kernel computed (/proc/vmstat nr_dirty_threshold and
//! nr_dirty_background_threshold), the dirty sysctls, the device's bdi settings
//! (/sys/class/bdi/MAJ:MIN: min/max ratio, strict_limit) and, where debugfs is
//! mounted, its write_bandwidth (BdiWriteBandwidth). avg_write_bandwidth, which
//! sizes the flusher's chunk, and dirty_ratelimit, where the next throttled
//! writer starts, are in no file: [`probe`] writes one page in a scratch folder
//! on the device and syncs its file system, so that the flusher makes one pass,
//! and the writeback tracepoints (eBPF) read all three off the device's
//! bdi_writeback as the pass begins, before the page moves them.
//! dirty_ratelimit moves only while a writer is throttled (bdi_dirty_ratelimit
//! fires then only), so the tracepoints of the estimator never show it on an
//! idle device; the pass does. A throttled writer during the probe shows a newer
//! one, taken instead. A kernel whose trace says nothing of the pass leaves an
//! estimate to the steady state of the scenario's writers ([`Estimate`] says
//! which, per figure).
//!
//! How far off: the traced bandwidths are the kernel's own words at the pass's
//! start. The probe's page then refreshes them once, a BANDWIDTH_INTERVAL
//! (200 ms) after its write back ends: the three-second blend keeps
//! (period - elapsed) / period of the old write_bandwidth, so it falls by about
//! 5 % (elapsed 50 of 1024 ticks at HZ 250) and avg_write_bandwidth by at most
//! an eighth of its gap to it. dirty_ratelimit does not move: nobody is
//! throttled by one page. A write of another program's to the device
//! between the read and the run moves them further. Without root (no tracing,
//! no debugfs) nothing is read: the simulation says so and starts from the
//! steady state.

mod probe;
mod read;
#[cfg(test)]
mod tests;

use std::collections::BTreeMap;
use std::path::Path;

use oslab_wbsim::config::Initial;
use serde::{Deserialize, Serialize};

pub use read::read_files;

/// Where one estimate of a live start came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Source {
    /// The writeback tracepoints around the probe's flusher pass.
    Traced,
    /// /sys/kernel/debug/bdi/MAJ:MIN/stats.
    Debugfs,
    /// Not shown by the kernel: the steady state of the scenario's writers.
    Steady,
}

impl Source {
    pub fn words(self) -> &'static str {
        match self {
            Source::Traced => "traced around a probe write",
            Source::Debugfs => "debugfs",
            Source::Steady => "not read: the steady state's",
        }
    }
}

/// One estimate, bytes per second (None: the steady state's), and its source.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Estimate {
    pub bytes_s: Option<f64>,
    pub source: Source,
}

impl Estimate {
    fn from(options: &[(Option<f64>, Source)]) -> Estimate {
        options
            .iter()
            .find_map(|&(v, source)| {
                v.map(|b| Estimate {
                    bytes_s: Some(b),
                    source,
                })
            })
            .unwrap_or(Estimate {
                bytes_s: None,
                source: Source::Steady,
            })
    }
}

/// What the files say of the machine and the device (no tracing needed).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct FileState {
    /// /proc/meminfo, bytes.
    pub dirty_bytes: u64,
    pub writeback_bytes: u64,
    /// /proc/vmstat's limits, bytes.
    pub dirty_threshold_bytes: Option<u64>,
    pub background_threshold_bytes: Option<u64>,
    /// The vm.dirty_* sysctls in force.
    pub sysctls: BTreeMap<String, String>,
    /// /sys/class/bdi/MAJ:MIN: min_ratio, max_ratio, strict_limit.
    pub bdi_settings: BTreeMap<String, String>,
    /// BdiWriteBandwidth, bytes per second (debugfs mounted only).
    pub debugfs_write_bw: Option<f64>,
}

/// The device's estimates as the probe's flusher pass showed them, bytes/s.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Traced {
    pub write_bw: Option<f64>,
    pub avg_write_bw: Option<f64>,
    pub dirty_ratelimit: Option<f64>,
}

/// The live state of one device.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LiveState {
    /// The disk as /sys/block names it, and its bdi ("253:0").
    pub disk: String,
    pub bdi: String,
    /// When it was read, seconds since the epoch.
    pub read_at_unix_s: f64,
    pub files: FileState,
    /// What the probe's trace showed, or why there was none.
    pub traced: Traced,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub not_traced: Option<String>,
    pub write_bw: Estimate,
    pub avg_write_bw: Estimate,
    pub dirty_ratelimit: Estimate,
}

impl LiveState {
    /// Picks each estimate from what was read: the trace first, then debugfs
    /// (write_bandwidth only), else the steady state.
    pub fn new(
        disk: String,
        bdi: String,
        files: FileState,
        traced: Result<Traced, String>,
    ) -> Self {
        let (t, not_traced) = match traced {
            Ok(t) => (t, None),
            Err(why) => (Traced::default(), Some(why)),
        };
        LiveState {
            write_bw: Estimate::from(&[
                (t.write_bw, Source::Traced),
                (files.debugfs_write_bw, Source::Debugfs),
            ]),
            avg_write_bw: Estimate::from(&[(t.avg_write_bw, Source::Traced)]),
            dirty_ratelimit: Estimate::from(&[(t.dirty_ratelimit, Source::Traced)]),
            disk,
            bdi,
            read_at_unix_s: oslab_sys::clock::unix_time_s(),
            files,
            traced: t,
            not_traced,
        }
    }

    /// The estimates a simulation starts from (None: the steady state's).
    pub fn initial(&self) -> Initial {
        Initial {
            write_bw_bytes_s: self.write_bw.bytes_s,
            avg_write_bw_bytes_s: self.avg_write_bw.bytes_s,
            dirty_ratelimit_bytes_s: self.dirty_ratelimit.bytes_s,
            ..Initial::default()
        }
    }

    /// One line: the device, what the cache held, and each estimate's source.
    pub fn describe(&self) -> String {
        let mib = |b: u64| b as f64 / (1u64 << 20) as f64;
        let est = |name: &str, e: &Estimate| match e.bytes_s {
            Some(b) => format!(
                "{name} {:.1} MiB/s ({})",
                b / (1u64 << 20) as f64,
                e.source.words()
            ),
            None => format!("{name} {}", e.source.words()),
        };
        let mut s = format!(
            "the live state of {} (bdi {}): Dirty {:.1} MiB, Writeback {:.1} MiB; {}, {}, {}",
            self.disk,
            self.bdi,
            mib(self.files.dirty_bytes),
            mib(self.files.writeback_bytes),
            est("write_bandwidth", &self.write_bw),
            est("avg_write_bandwidth", &self.avg_write_bw),
            est("dirty_ratelimit", &self.dirty_ratelimit),
        );
        if let Some(why) = &self.not_traced {
            s += &format!(" (not traced: {why})");
        }
        s
    }
}

/// A live state whose probe traced `bandwidths` (write_bandwidth,
/// avg_write_bandwidth, dirty_ratelimit, bytes per second) on `bdi`, with
/// nothing read from the files: what the judges' tests start from.
#[cfg(test)]
pub(crate) fn traced_for_tests(bdi: &str, bandwidths: (f64, f64, Option<f64>)) -> LiveState {
    let (write_bw, avg_write_bw, dirty_ratelimit) = bandwidths;
    LiveState::new(
        "test".into(),
        bdi.into(),
        FileState::default(),
        Ok(Traced {
            write_bw: Some(write_bw),
            avg_write_bw: Some(avg_write_bw),
            dirty_ratelimit,
        }),
    )
}

/// Why a live start was not read: one sentence for the result.
pub fn refused(why: &str) -> String {
    format!("the live state was not read ({why}); started from the steady state of the writers")
}

/// Reads the live state of the device holding `dir` (a folder on it, where the
/// probe writes one page in a scratch folder of its own); root only.
pub fn read(dir: &Path) -> Result<LiveState, String> {
    if !oslab_sys::process::is_root() {
        return Err("reading the kernel's estimates needs root (tracing, debugfs)".into());
    }
    let (disk, bdi) = read::device_of(dir)?;
    let files = read_files(&oslab_sys::fsread::Root::live(), &bdi);
    let traced = probe::trace_a_pass(dir, &bdi);
    Ok(LiveState::new(disk, bdi, files, traced))
}
