//! `wb.background` and `wb.periodic`: one steady writer, a sawtooth in Dirty, and
//! the sawtooth the kernel's rules predict.
//!
//! wb.background (material section 4, experiment A): periodic write back off
//! (dirty_writeback_centisecs = 0), a background limit in bytes, a writer at a set
//! rate. Dirty climbs to the limit, then the background flusher writes chunks of
//! round_down(min(write bandwidth / 2, hard limit / 8) + 4 MiB, 4 MiB) until Dirty
//! is under the limit again (fs/fs-writeback.c, writeback_chunk_size), so Dirty
//! saws between the limit and one chunk below it with a period of chunk / rate.
//! The prediction takes the hard-limit term (a device faster than hard limit / 4);
//! the write bandwidth is the kernel's own estimate for the device
//! (wb->avg_write_bandwidth), which the run reads where debugfs shows it. The
//! author's 5.13 kernel was seen falling to ~0 instead.
//!
//! wb.periodic (experiment B): limits far away, expire and writeback intervals set.
//! The flusher first wakes one writeback interval after the file got dirty and then
//! every interval; it writes the whole inode once its dirtied_when is older than the
//! expire interval. So Dirty drops to ~0 every writeback x ceil(expire / writeback)
//! seconds, with a peak of rate x that.
//!
//! Method: both run on the scratch directory's file system, after a sync so that
//! other dirty data does not mix in; the sysctls are set through the journal and put
//! back afterwards. A writer thread writes rate / 10 bytes every 100 ms on a fixed
//! grid, timing each write(). A poller at 10 Hz reads global Dirty and Writeback
//! (/proc/meminfo: what the kernel decides on), the test file's own dirty and
//! writeback pages (cachestat(2)), the device's written sectors (/proc/diskstats)
//! and, where debugfs is mounted, the kernel's write bandwidth estimate
//! (/sys/kernel/debug/bdi/MAJ:MIN/stats). At the end of the writing the dirty
//! sysctls and the kernel's limits (/proc/vmstat nr_dirty_threshold,
//! nr_dirty_background_threshold) are read as the kernel reports them. Judging finds
//! the peaks, troughs and period of global Dirty (a drop counts when it is at least
//! half a second of writing) and holds them against the prediction.
//!
//! Pitfalls: global Dirty includes every other program's dirty pages (the figure
//! beside the test file's own is reported); the background flusher's chunk depends on
//! the kernel's bandwidth estimate, which a slow or idle device keeps low (then the
//! chunk is 4 MiB and the period chunk / rate shorter than predicted); a 10 Hz poll
//! sees peaks to within one write.
//!
//! References: Documentation/admin-guide/sysctl/vm.rst (dirty_*),
//! mm/page-writeback.c, fs/fs-writeback.c (wb_writeback, writeback_chunk_size,
//! wb_check_old_data_flush), cachestat(2); material section 4, seed 001
//! (../shared/spec/material.md) and ../shared/spec/writeback-kernel.md.

pub mod flusher;
mod judge;
pub mod measure;
pub mod model;
#[cfg(any(test, feature = "testing"))]
pub mod testing;
#[cfg(test)]
mod tests;

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::disk_probe::DiskFacts;
use crate::timed_writer::{Poll, WriterTrace};
use oslab_settings::{Rate, Seconds, Setting};

pub use judge::{
    Rules, TOLERANCE, best_window, device_rates, dirty_plot, file_sawtooth_of, matches_prediction,
    other_dirty_mib, others_text, output, sawtooth_of,
};
pub use measure::{Length, run_sawtooth, run_sawtooth_in};

/// The least rate a sawtooth's writer takes, bytes per second.
pub const MIN_RATE: u64 = 1 << 20;

/// The most: the writer holds a tenth of it in one buffer, written every 100 ms.
pub const MAX_RATE: u64 = 1 << 30;

/// A sawtooth writer's rate as every experiment that runs one declares it
/// (`--set rate=8MiB/s`): one rate, its bounds here, each experiment giving its
/// own defaults for a quick and a full run.
pub const fn rate_setting(quick: u64, full: u64) -> Setting<Rate> {
    Setting {
        name: "rate",
        help: "writer rate per second",
        quick,
        full,
        bounds: Some((MIN_RATE, MAX_RATE)),
        names: &[],
    }
}

/// The writer's rate, shared by wb.background and wb.periodic.
pub static RATE: Setting<Rate> = rate_setting(4 << 20, 4 << 20);

/// How long the writer writes, shared by wb.background and wb.periodic.
pub static DURATION: Setting<Seconds> = Setting {
    name: "duration",
    help: "seconds of writing",
    quick: 16.0,
    full: 60.0,
    bounds: Some((1.0, 3600.0)),
    names: &[],
};

pub fn rel_err(measured: f64, predicted: f64) -> f64 {
    if predicted == 0.0 {
        measured.abs()
    } else {
        (measured - predicted).abs() / predicted.abs()
    }
}

/// One poll of the 10 Hz poller: Dirty, Writeback and the test file's own pages
/// ([`Poll`]), the device's written bytes and, where readable, the kernel's write
/// bandwidth estimate for it.
#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize)]
pub struct KernelPoll {
    #[serde(flatten)]
    pub poll: Poll,
    /// Bytes the device has written since boot (/proc/diskstats sectors x 512).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub device_written_bytes: Option<u64>,
    /// BdiWriteBandwidth of /sys/kernel/debug/bdi/MAJ:MIN/stats, kB/s.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bdi_write_bandwidth_kbps: Option<u64>,
}

/// The kernel's limits as /proc/vmstat reports them, pages.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Thresholds {
    pub dirty_pages: Option<u64>,
    pub background_pages: Option<u64>,
}

/// Everything one sawtooth run read: shared by wb.background and wb.periodic, and
/// per case by wb.cases.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SawRaw {
    /// The sysctls set for the run, in the order written.
    pub sysctls_set: Vec<(String, String)>,
    /// The dirty sysctls as the kernel reported them at the end of the writing.
    pub sysctls_in_force: BTreeMap<String, String>,
    /// The kernel's limits at the end of the writing.
    pub thresholds: Thresholds,
    pub page_bytes: u64,
    /// The device the test file lives on; None when it is on no block device.
    pub disk: Option<DiskFacts>,
    pub polls: Vec<KernelPoll>,
    pub writer: WriterTrace,
    /// "MAJ:MIN" of the disk whose bdi holds the test file (the kernel's name for
    /// it in its records).
    #[serde(default)]
    pub bdi: Option<String>,
    /// The kernel's account: the flusher's passes with their reason, pages and
    /// the bandwidth estimates that sized them; the processes that dirtied pages.
    #[serde(default)]
    pub kernel: oslab_trace::TraceOutcome,
}

impl SawRaw {
    /// A limit from /proc/vmstat in MiB.
    pub fn threshold_mib(&self, pages: Option<u64>) -> Option<f64> {
        pages.map(|p| (p * self.page_bytes) as f64 / (1u64 << 20) as f64)
    }

    /// Set sysctls the kernel reported with another value at the end (name, set,
    /// reported).
    pub fn sysctls_changed(&self) -> Vec<(String, String, String)> {
        self.sysctls_set
            .iter()
            .filter_map(|(name, set)| {
                let now = self.sysctls_in_force.get(name)?;
                (now != set).then(|| (name.clone(), set.clone(), now.clone()))
            })
            .collect()
    }
}
