//! What a simulation is given.

use serde::{Deserialize, Serialize};

use crate::policy::Policy;

pub const MS: u64 = 1_000_000;
pub const SEC: u64 = 1_000_000_000;
pub const MIB: u64 = 1 << 20;

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

#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct DeviceCfg {
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
