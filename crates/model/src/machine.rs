//! The machine a result was measured on: what `oslab info --json` prints and every
//! result carries as `environment.machine`.
//!
//! These are the schema's types; `oslab_sys::machine::collect` fills them from /proc
//! and /sys (and `oslab_sys::topology` the CPU and cache topology). A field renamed
//! here changes the JSON and the stored rows: `tests/schema.rs` lists every key.

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

/// A value that may be unreadable here, with the reason when it is.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Probed<T> {
    Value(T),
    Unavailable(String),
}

impl<T> Probed<T> {
    pub fn value(&self) -> Option<&T> {
        match self {
            Probed::Value(v) => Some(v),
            Probed::Unavailable(_) => None,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TscFlags {
    pub constant_tsc: bool,
    pub nonstop_tsc: bool,
    pub tsc_known_freq: bool,
}

/// One logical CPU's place in the machine.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LogicalCpu {
    pub cpu: u32,
    pub core_id: Option<u32>,
    pub package_id: Option<u32>,
    /// CPUs sharing this CPU's core (`topology/thread_siblings_list`), itself included.
    pub thread_siblings: Vec<u32>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CpuSummary {
    pub model: String,
    pub vendor: String,
    pub logical_cpus: usize,
    pub cores: usize,
    pub sockets: usize,
    pub threads_per_core: usize,
    pub cpus: Vec<LogicalCpu>,
    /// `/sys/devices/system/cpu/smt/control`: on, off, forceoff, notsupported, notimplemented.
    pub smt_control: Probed<String>,
    pub smt_active: Option<bool>,
    pub tsc: TscFlags,
    pub mhz: Option<f64>,
}

/// One `cpuN/cache/indexM` entry as sysfs shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CacheIndex {
    pub cpu: u32,
    pub index: u32,
    pub level: u8,
    /// `Data`, `Instruction` or `Unified`.
    #[serde(rename = "type")]
    pub kind: String,
    pub size_bytes: Option<u64>,
    pub line_bytes: Option<u64>,
    pub sets: Option<u64>,
    pub ways: Option<u64>,
    pub partitions: Option<u64>,
    pub id: Option<u64>,
    pub shared_cpus: Vec<u32>,
}

/// Whether sets x ways x line x partitions equals the stated size.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "status")]
pub enum GeometryCheck {
    Consistent,
    Inconsistent {
        computed_bytes: u64,
    },
    /// A field needed for the check is missing.
    Unknown,
}

/// One physical cache of the machine (an L2 of one core, the shared L3, ...).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DistinctCache {
    pub level: u8,
    #[serde(rename = "type")]
    pub kind: String,
    pub size_bytes: Option<u64>,
    pub line_bytes: Option<u64>,
    pub sets: Option<u64>,
    pub ways: Option<u64>,
    pub partitions: Option<u64>,
    pub id: Option<u64>,
    pub shared_cpus: Vec<u32>,
    pub geometry: GeometryCheck,
    /// e.g. "L2 2 MiB, unified, 16-way, 64 B lines, private to cpu0"
    pub description: String,
}

/// The caches of one level and type across the machine: L1d, L2, ...
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CacheLevel {
    /// "L1d", "L1i", "L2", "L3"
    pub name: String,
    pub level: u8,
    #[serde(rename = "type")]
    pub kind: String,
    /// Size of one instance (the largest, if instances differ).
    pub size_bytes: Option<u64>,
    pub instances: usize,
    /// CPUs that share one instance (of the first instance).
    pub cpus_per_instance: usize,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CacheTopology {
    pub per_cpu: Vec<CacheIndex>,
    pub distinct: Vec<DistinctCache>,
    pub levels: Vec<CacheLevel>,
}

impl CacheTopology {
    /// The size of one instance of the named level ("L1d", "L2", ...).
    pub fn level_size(&self, name: &str) -> Option<u64> {
        self.levels
            .iter()
            .find(|l| l.name == name)
            .and_then(|l| l.size_bytes)
    }

    /// The largest level's name and size: the last-level cache.
    pub fn last_level(&self) -> Option<&CacheLevel> {
        self.levels
            .iter()
            .filter(|l| l.kind != "Instruction")
            .max_by_key(|l| l.level)
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MemoryInfo {
    /// The base page size.
    pub page_bytes: u64,
    pub total_bytes: u64,
    pub available_bytes: Option<u64>,
    pub free_bytes: u64,
    pub cached_bytes: u64,
    pub dirty_bytes: u64,
    pub writeback_bytes: u64,
    pub huge_page_sizes_bytes: Vec<u64>,
    pub default_huge_page_bytes: Option<u64>,
    /// Transparent huge pages mode: always, madvise or never.
    pub thp_enabled: Option<String>,
    pub thp_defrag: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SchedulerKind {
    /// Completely Fair Scheduler, kernels before 6.6.
    Cfs,
    /// Earliest Eligible Virtual Deadline First, kernels from 6.6.
    Eevdf,
    Unknown,
}

impl SchedulerKind {
    pub fn label(self) -> &'static str {
        match self {
            SchedulerKind::Cfs => "CFS",
            SchedulerKind::Eevdf => "EEVDF",
            SchedulerKind::Unknown => "unknown",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Hz {
    pub hz: u32,
    /// Where the value came from, e.g. "CONFIG_HZ in /proc/config.gz".
    pub source: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct KernelInfo {
    pub release: String,
    pub version: String,
    pub scheduler: SchedulerKind,
    /// `/proc/sys/kernel/sched_*` as read.
    pub sched_knobs: BTreeMap<String, String>,
    /// `/sys/kernel/debug/sched/*` (base_slice_ns, ...), often refused.
    pub debug_sched: Probed<BTreeMap<String, String>>,
    pub hz: Probed<Hz>,
    pub clocksource: Option<String>,
    pub available_clocksources: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HypervisorInfo {
    /// The `hypervisor` flag in /proc/cpuinfo.
    pub cpu_flag: bool,
    /// CPUID leaf 0x40000000 signature.
    pub cpuid_vendor: Option<String>,
    /// `/sys/hypervisor/type` (Xen and some others).
    pub sys_hypervisor_type: Option<String>,
    pub dmi_sys_vendor: Option<String>,
    pub dmi_product_name: Option<String>,
    /// Our reading of the above: "KVM", "Hyper-V", ..., or None on bare metal.
    pub name: Option<String>,
    /// Whether a virtio balloon reports freed pages to the host (free page reporting):
    /// memory the guest frees goes back to the host, so touching it again faults
    /// on the host. `None` without a virtio balloon.
    #[serde(default)]
    pub balloon_free_page_reporting: Option<bool>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DirtySettings {
    pub dirty_background_ratio: Option<u64>,
    pub dirty_background_bytes: Option<u64>,
    pub dirty_ratio: Option<u64>,
    pub dirty_bytes: Option<u64>,
    pub dirty_writeback_centisecs: Option<u64>,
    pub dirty_expire_centisecs: Option<u64>,
    /// The kernel's own current limits in pages (/proc/vmstat).
    pub nr_dirty_threshold_pages: Option<u64>,
    pub nr_dirty_background_threshold_pages: Option<u64>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BlockDevice {
    pub name: String,
    /// "MAJOR:MINOR"
    pub dev: String,
    pub size_bytes: Option<u64>,
    pub scheduler: Option<String>,
    pub rotational: Option<bool>,
    /// "write back" or "write through" (queue/write_cache).
    pub write_cache: Option<String>,
    pub holds_scratch: bool,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ScratchInfo {
    pub dir: PathBuf,
    pub fs_type: Option<String>,
    pub mount_point: Option<PathBuf>,
    pub free_bytes: Option<u64>,
    /// The whole block device under the scratch directory, if it is on one.
    pub device: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MachineInfo {
    pub hostname: String,
    /// Tells machines apart beyond their host name: a hash of /etc/machine-id and
    /// the CPU model (never the machine id itself); absent where there is no
    /// machine id, and in results of older oslab versions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub machine_id: Option<String>,
    pub cpu: CpuSummary,
    pub caches: CacheTopology,
    pub memory: MemoryInfo,
    pub kernel: KernelInfo,
    pub hypervisor: HypervisorInfo,
    pub dirty: DirtySettings,
    pub block_devices: Vec<BlockDevice>,
    pub scratch: ScratchInfo,
    pub root: bool,
}
