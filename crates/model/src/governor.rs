//! What `oslab wcall status` shows of a write-cache governor, and what the
//! wb.wcall experiments keep of it: plain data, filled by `oslab_wcall::view`.

use serde::Serialize;

/// A group of governed processes (RT-HIGH, ...), as the coordinator sees it.
#[derive(Debug, Clone, Default, Serialize, PartialEq)]
pub struct GroupView {
    pub group: String,
    pub tasks: u32,
    pub processes: u32,
    pub dirty_bytes: u64,
    pub writeback_bytes: u64,
    /// Share of the divided limit, 0..1.
    pub share: f64,
    /// None: no limit applies.
    pub limit_bytes: Option<u64>,
    pub held: bool,
    pub held_ms: f64,
    pub delayed_writes: u64,
    pub writes: u64,
    pub bytes: u64,
    pub pushes: u64,
    pub passed_through: u64,
    pub mmap_writable: u64,
    /// The kernel's own count for the group's memory cgroup (memory.stat), when the
    /// governor placed its processes in one; includes files cachestat() is not asked
    /// about (anything else the processes write).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub memcg_dirty_bytes: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub memcg_writeback_bytes: Option<u64>,
    /// cgroup v2: the group cgroup's memory.high (when not max) and io weight.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub memory_high_bytes: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub io_weight: Option<u32>,
}

/// A governed process as the coordinator sees it.
#[derive(Debug, Clone, Default, Serialize, PartialEq)]
pub struct ProcView {
    pub pid: u32,
    /// Its user, as the kernel said when it joined.
    pub uid: u32,
    pub group: String,
    /// Its program (/proc/PID/exe), where the reader may see it.
    pub exe: Option<String>,
    /// The interposer runs in it, so its write() calls can be held; a statically
    /// linked program registered by its launcher cannot be.
    pub holdable: bool,
    pub writes: u64,
    pub bytes: u64,
    pub delayed_writes: u64,
    pub held_ms: f64,
    /// Bytes the kernel counted it dirtying (kernel monitor only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kernel_dirtied_bytes: Option<u64>,
    /// Files the kernel saw it dirty that no governed write() reached: stores
    /// through shared mappings, stdio, a static program's writes.
    pub unheld_files: u32,
    /// Times the coordinator pushed its files itself, as it could not hold it.
    pub pushes: u64,
    /// The systemd service it runs in, where it is governed in place.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub service: Option<String>,
}

/// The sync guard: how it is set and what it does now.
#[derive(Debug, Clone, Default, Serialize, PartialEq)]
pub struct GuardView {
    /// "auto", a size ("fixed"), or "off".
    pub setting: String,
    /// Its size while it acts; None while it does not.
    pub acting_bytes: Option<u64>,
    /// Seconds it has acted, and since the last durable write that keeps it on.
    pub acting_s: Option<f64>,
    pub last_durable_s: Option<f64>,
    /// The process whose durable write that was.
    pub durable_pid: Option<u32>,
    /// How long it stays on after the last durable write (auto), seconds.
    pub quiet_s: f64,
    /// The bandwidth it was sized from, measured by the governor (bytes/s).
    pub bandwidth_bytes_s: Option<u64>,
}

/// The write-cache governor's state: its limits, its groups and its processes.
#[derive(Debug, Clone, Default, Serialize, PartialEq)]
pub struct Snapshot {
    pub policy: String,
    pub coordinator_pid: u32,
    pub coordinator_alive: bool,
    pub passes: u64,
    /// Mean and longest time of one coordinator pass, µs.
    pub pass_mean_us: f64,
    pub pass_max_us: f64,
    pub global_dirty_bytes: u64,
    pub global_writeback_bytes: u64,
    pub bg_thresh_bytes: u64,
    pub thresh_bytes: u64,
    pub freerun_bytes: u64,
    /// Table entries the coordinator refused to act on (see docs/wcall.md, "The
    /// trust boundary").
    pub refused_entries: u64,
    /// "kernel" (writeback_dirty_folio records and cachestat) or "cachestat".
    pub monitor: String,
    /// Dirty + writeback memory no governed process accounts for, and the headroom
    /// kept free for RT-HIGH, at the last pass.
    pub ungoverned_bytes: u64,
    pub headroom_bytes: u64,
    /// The coordinator thread's CPU time over its wall time, percent.
    pub cpu_percent: f64,
    /// Records of the kernel's the monitor lost (must be 0).
    pub kernel_lost: u64,
    /// The sync guard.
    pub guard: GuardView,
    pub groups: Vec<GroupView>,
    pub processes: Vec<ProcView>,
}
