//! What a simulation is given.

use serde::{Deserialize, Serialize};

use crate::policy::Policy;

pub const MS: u64 = 1_000_000;
pub const SEC: u64 = 1_000_000_000;
pub const MIB: u64 = 1 << 20;

/// The most write back oslab's testbed (a loop device behind blk-throttle)
/// completes at once in the model: the flusher's whole chunk for an inode at the
/// testbed's limits (12 MiB), not the 8 MiB bios ext4 builds of it. The kernel's
/// Dirty and Writeback polls show write back leaving the testbed in steps of up
/// to 12 MiB within 100 ms: blk-throttle grants its budget a 100 ms slice at a
/// time and its timer fires late, so a chunk's 4 MiB tail can leave with its head.
/// Judged again with this unit, the four full `sim validate` runs recorded
/// before it hold 305 of 312 blind figures (303 with 8 MiB); docs/sim-scenarios.md
/// says what else was tried.
pub const TESTBED_REQUEST_BYTES: u64 = 12 * MIB;

/// Which kernel's rules to follow.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum RuleSet {
    /// Today's: bytes or ratio, no floor, rt +1/4 + 1/32, rate-based pauses <= 200 ms.
    #[serde(rename = "linux-6")]
    Linux6,
    /// The WCALL paper's 2.6.26: 5 % floor, rt +1/4, synchronous write back by the
    /// writer over the limit with 100 ms congestion waits.
    #[serde(rename = "linux-2.6.26")]
    Linux2626,
}

/// Which releases' linux-6 rules, where they differ. Between 6.1 and 6.18 one rule
/// the model follows moved (v6.14, "consolidate wb_thresh bumping logic into
/// __wb_calc_thresh"): the floor that keeps a device the kernel has not seen
/// write for long from a threshold near zero. The model has both forms; what else
/// moved it follows in its newer form only (docs/kernels.md lists it: before
/// about 6.10 a periodic pass also wrote inodes not yet expired).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub enum Kernel {
    /// 6.14 and later: `__wb_calc_thresh` lifts the device's share of a threshold
    /// to an eighth of the room left under it, (thresh - dirty) / 8, for the
    /// throttle and for the background test alike (there counting dirty pages
    /// only, not those under write back).
    #[default]
    #[serde(rename = "6.14")]
    Since614,
    /// 6.1 to 6.13: only `wb_position_ratio` lifts the share, to an eighth of the
    /// room under the hard limit, (limit - dirty) / 8; the background test takes
    /// the bare share. The flusher stays 6.10's and later's.
    #[serde(rename = "6.1")]
    Before614,
}

impl Kernel {
    /// The rules of the release `major.minor`.
    pub fn of_release(major: u32, minor: u32) -> Kernel {
        if (major, minor) >= (6, 14) {
            Kernel::Since614
        } else {
            Kernel::Before614
        }
    }

    /// The rules of a release string as uname gives it ("6.1.0-56-amd64",
    /// "6.13+"); one that does not start with MAJOR.MINOR (a raw file is
    /// untrusted) gets the default.
    pub fn of_uname(release: &str) -> Kernel {
        let number = |s: &str| -> Option<u32> {
            let digits: String = s.chars().take_while(char::is_ascii_digit).collect();
            digits.parse().ok()
        };
        let mut parts = release.splitn(3, '.');
        match (parts.next().and_then(number), parts.next().and_then(number)) {
            (Some(major), Some(minor)) => Kernel::of_release(major, minor),
            _ => Kernel::default(),
        }
    }

    /// The device's share of `thresh` (pages) as `__wb_calc_thresh` gives it:
    /// `share`, lifted on 6.14+ to (thresh - dirty) / 8 while `dirty` is under it.
    pub fn wb_thresh(self, share: u64, thresh: u64, dirty: u64) -> u64 {
        match self {
            Kernel::Since614 if thresh > dirty => share.max((thresh - dirty) / 8),
            _ => share,
        }
    }
}

/// vm.dirty_* as set; a non-zero `*_bytes` wins over its ratio (linux-6 only).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Sysctls {
    pub dirty_ratio: u64,
    pub dirty_bytes: u64,
    pub dirty_background_ratio: u64,
    pub dirty_background_bytes: u64,
    pub dirty_writeback_centisecs: u64,
    pub dirty_expire_centisecs: u64,
}

/// The kernel's defaults, as the `--set` keys declare them.
impl Default for Sysctls {
    fn default() -> Self {
        use crate::settings as k;
        Sysctls {
            dirty_ratio: k::DIRTY_RATIO.full,
            dirty_bytes: k::DIRTY_BYTES.full,
            dirty_background_ratio: k::DIRTY_BACKGROUND_RATIO.full,
            dirty_background_bytes: k::DIRTY_BACKGROUND_BYTES.full,
            dirty_writeback_centisecs: k::DIRTY_WRITEBACK_CENTISECS.full,
            dirty_expire_centisecs: k::DIRTY_EXPIRE_CENTISECS.full,
        }
    }
}

/// How the device takes write requests.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum DeviceKind {
    /// A disk: one request at a time, each costing bytes / bandwidth plus the
    /// request latency; submitters block while `queue_bytes` are queued.
    #[default]
    Disk,
    /// A device behind the block layer's throttle (blk-throttle, the testbed's
    /// cgroup v1 write_bps cap): bios wait in the throttle without blocking the
    /// submitter and leave at the capped rate, released on the timer's ticks.
    Throttled,
}

#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct DeviceCfg {
    pub kind: DeviceKind,
    /// Sustained write bandwidth, bytes per second.
    pub bandwidth_bytes_s: f64,
    /// Fixed cost per request (seek, command), ns.
    pub request_latency_ns: u64,
    /// Largest request, bytes.
    pub max_request_bytes: u64,
    /// Bytes that may be queued before submitters block (the request queue).
    pub queue_bytes: u64,
}

impl Default for DeviceCfg {
    fn default() -> Self {
        use crate::settings as k;
        DeviceCfg {
            kind: DeviceKind::Disk,
            bandwidth_bytes_s: k::BANDWIDTH.full as f64,
            request_latency_ns: (k::REQUEST_LATENCY_MS.full * MS as f64) as u64,
            max_request_bytes: 512 << 10,
            queue_bytes: 64 * MIB,
        }
    }
}

/// A writer's scheduling class.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Class {
    Normal { nice: i32 },
    Rt { priority: u32 },
}

impl Class {
    pub fn is_rt(self) -> bool {
        matches!(self, Class::Rt { .. })
    }
}

/// How a writer writes.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "type")]
pub enum Kind {
    /// `bytes` every `period_ms`, `count` times (the paper's 512 KiB every 20 ms).
    Periodic {
        bytes: u64,
        period_ms: f64,
        count: u64,
    },
    /// A stream at `bytes_per_s` in writes of `chunk` bytes.
    Rate { bytes_per_s: f64, chunk: u64 },
    /// Writes of `chunk` bytes back to back, as fast as allowed.
    Bulk { chunk: u64 },
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WriterCfg {
    pub name: String,
    #[serde(flatten)]
    pub kind: Kind,
    pub class: Class,
    /// The group; default from the class: rt-high (RT priority > 50), rt-low, normal.
    #[serde(default)]
    pub group: Option<String>,
    /// fsync after every N writes.
    #[serde(default)]
    pub fsync_every: Option<u64>,
    #[serde(default)]
    pub start_ms: f64,
    /// No write is issued after this time, ms (a writer that runs for a while).
    #[serde(default)]
    pub stop_ms: Option<f64>,
}

/// Everything a simulation needs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Config {
    pub rules: RuleSet,
    /// Dirtyable memory (free + file pages), bytes.
    pub dirtyable_bytes: u64,
    #[serde(default)]
    pub sysctls: Sysctls,
    #[serde(default)]
    pub device: DeviceCfg,
    /// How fast write() copies into the page cache, bytes per second.
    #[serde(default = "default_copy")]
    pub copy_bytes_s: f64,
    pub writers: Vec<WriterCfg>,
    pub duration_s: f64,
    #[serde(default)]
    pub policy: Policy,
    /// Interval of the Dirty / Writeback samples, ms.
    #[serde(default = "default_sample")]
    pub sample_ms: f64,
    /// How long a WCALL writer waits before it retries, ms (the paper: HZ/10).
    #[serde(default = "default_block")]
    pub wcall_block_ms: f64,
    pub cpus: u32,
    /// The kernel's tick rate (CONFIG_HZ): pauses and intervals are whole ticks.
    #[serde(default = "default_hz")]
    pub hz: u64,
    /// The largest page-cache folio one write dirties at once: the kernel checks
    /// the dirty limits after each folio (4 KiB pages; ext4 on 6.16+ uses folios up
    /// to the write's size).
    #[serde(default = "default_folio")]
    pub folio_bytes: u64,
    /// What a new page-cache page costs a write beyond the copy, ns (allocation,
    /// and on a VM that reports free memory, the host's fault): samples the writes
    /// take in turn, each write one sample for all its pages (none: free).
    #[serde(default)]
    pub page_alloc_ns: Vec<f64>,
    /// Write-back completions of other devices, bytes per second: they shrink this
    /// device's share of the dirty limit.
    #[serde(default)]
    pub other_writeback_bytes_s: f64,
    /// The kernel's estimates when the run starts: the steady state the writers
    /// reach from `initial`, or `initial` as given.
    #[serde(default)]
    pub start: Start,
    /// The kernel's estimates before the writers start (or before the warm-up
    /// that finds their steady state).
    #[serde(default)]
    pub initial: Initial,
    /// How the governor runs the policies.
    #[serde(default)]
    pub governor: GovernorCfg,
    /// Which releases' linux-6 rules (6.14 and later unless said).
    #[serde(default)]
    pub kernel: Kernel,
}

/// Where a run's estimates for the device come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Start {
    /// The state the kernel reaches under the scenario's own writers (the
    /// estimator's fixed point): a simulated warm-up of the writers from
    /// `initial` until the estimates stop moving; the run then starts from them
    /// with nothing dirty.
    #[default]
    Steady,
    /// `initial` as given (INIT_BW where it gives none): a device the kernel has
    /// just met, or the state a traced run began in.
    Given,
    /// The kernel's estimates read from the machine just before the run
    /// (`initial`: `oslab sim run --live`); an estimate the kernel did not show
    /// is taken from the steady state of the writers. Not a scenario file's
    /// choice: a file cannot know the machine's state when it is run.
    Live,
}

/// The device's estimates at the start, bytes per second (None: the kernel's
/// INIT_BW, 100 MiB/s, for a device it has not seen write yet), the domain's
/// smoothed hard limit (None: the normal hard limit), and the device's share of
/// recent write-back completions (None: as after a long stretch at the other
/// devices' rate and its own).
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct Initial {
    pub write_bw_bytes_s: Option<f64>,
    pub avg_write_bw_bytes_s: Option<f64>,
    pub dirty_ratelimit_bytes_s: Option<f64>,
    pub dirty_limit_bytes: Option<u64>,
    pub wb_share: Option<f64>,
}

/// The governor (crates/wcall): a coordinator pass every `pass_ms` sets each
/// group's hold from the groups' page-cache state at that moment; between passes
/// writers check the pass's figures plus what they wrote since. 0: the policy
/// decides at every write with no lag (the WCALL paper's in-kernel version).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct GovernorCfg {
    pub pass_ms: f64,
    /// A writer counts as active for this long after its last write.
    pub active_ms: f64,
}

impl Default for GovernorCfg {
    fn default() -> Self {
        GovernorCfg {
            pass_ms: crate::settings::PASS_MS.full,
            active_ms: 1000.0,
        }
    }
}

fn default_copy() -> f64 {
    2.0e9
}
fn default_sample() -> f64 {
    100.0
}
fn default_block() -> f64 {
    crate::settings::WCALL_BLOCK_MS.full
}
fn default_hz() -> u64 {
    crate::settings::HZ.full
}
fn default_folio() -> u64 {
    crate::settings::FOLIO.full
}

impl Config {
    /// A configuration with every field a scenario file may leave out at its
    /// default (vanilla policy, the kernel's default sysctls, a disk).
    pub fn new(
        rules: RuleSet,
        dirtyable_bytes: u64,
        writers: Vec<WriterCfg>,
        duration_s: f64,
        cpus: u32,
    ) -> Config {
        Config {
            rules,
            dirtyable_bytes,
            sysctls: Sysctls::default(),
            device: DeviceCfg::default(),
            copy_bytes_s: default_copy(),
            writers,
            duration_s,
            policy: Policy::Vanilla,
            sample_ms: default_sample(),
            wcall_block_ms: default_block(),
            cpus,
            hz: default_hz(),
            folio_bytes: default_folio(),
            page_alloc_ns: Vec::new(),
            other_writeback_bytes_s: 0.0,
            start: Start::default(),
            initial: Initial::default(),
            governor: GovernorCfg::default(),
            kernel: Kernel::default(),
        }
    }
}

impl WriterCfg {
    /// The group name: explicit, or RT-HIGH / RT-LOW / NORMAL from the class as the
    /// paper's task-group monitor does.
    pub fn group_name(&self) -> String {
        if let Some(g) = &self.group {
            return g.clone();
        }
        match self.class {
            Class::Rt { priority } if priority > 50 => "rt-high".into(),
            Class::Rt { .. } => "rt-low".into(),
            Class::Normal { .. } => "normal".into(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_release_picks_the_idle_devices_floor() {
        for (release, k) in [
            ("6.1.0-56-amd64", Kernel::Before614),
            ("6.12.117+deb12-rt-amd64", Kernel::Before614),
            ("5.15.0-91-generic", Kernel::Before614),
            ("6.13.7", Kernel::Before614),
            ("6.13+", Kernel::Before614),
            ("6.1_custom", Kernel::Before614),
            // a minor number past u32 is no version: the default
            ("6.99999999999999999999", Kernel::Since614),
            ("6.14.0", Kernel::Since614),
            ("6.18.0-rc1", Kernel::Since614),
            ("7.0", Kernel::Since614),
            ("", Kernel::Since614),
            ("linux", Kernel::Since614),
        ] {
            assert_eq!(Kernel::of_uname(release), k, "{release}");
        }
    }

    #[test]
    fn since_614_a_share_is_lifted_to_an_eighth_of_the_room_under_it() {
        // thresh 16384 pages, 15000 dirty: (16384 - 15000) / 8 = 173
        assert_eq!(Kernel::Since614.wb_thresh(100, 16384, 15000), 173);
        assert_eq!(Kernel::Since614.wb_thresh(400, 16384, 15000), 400);
        // at or over the threshold nothing is lifted
        assert_eq!(Kernel::Since614.wb_thresh(100, 16384, 16384), 100);
        assert_eq!(Kernel::Since614.wb_thresh(100, 16384, 20000), 100);
        // before 6.14 the share is bare here (wb_position_ratio lifts its own)
        assert_eq!(Kernel::Before614.wb_thresh(100, 16384, 15000), 100);
    }
}
