//! What the kernel's trace says, summarised as data: where slow writes' time went
//! ([`Cause`]), the rows of an `oslab stalls` interval ([`IntervalSummary`]) and the
//! kernel figures they carry. `oslab_trace` computes them from its records;
//! `oslab_report` renders them.

use serde::{Deserialize, Serialize};

/// Where a write's time went.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Cause {
    /// Asleep in balance_dirty_pages.
    DirtyThrottle,
    /// Asleep until a page's write back finished.
    WritebackWait,
    /// Asleep for another reason (see the kernel stacks).
    Blocked,
    /// Runnable, waiting for a CPU.
    RunQueue,
    /// On the CPU: copying, allocating and faulting pages, the call itself.
    OnCpu,
}

impl Cause {
    pub const ALL: [Cause; 5] = [
        Cause::DirtyThrottle,
        Cause::WritebackWait,
        Cause::Blocked,
        Cause::RunQueue,
        Cause::OnCpu,
    ];

    pub fn label(self) -> &'static str {
        match self {
            Cause::DirtyThrottle => "dirty throttle",
            Cause::WritebackWait => "write-back wait",
            Cause::Blocked => "blocked elsewhere",
            Cause::RunQueue => "run queue",
            Cause::OnCpu => "on CPU",
        }
    }
}

/// One row of a stall table: the writes that spent time in this cause.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CauseRow {
    pub cause: Cause,
    /// Writes with any time in this cause.
    pub writes: usize,
    pub total_ns: u64,
    /// Share of all the writes' time.
    pub share: f64,
    /// The 99th percentile and the maximum of one write's time in this cause.
    pub p99_ns: u64,
    pub max_ns: u64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BlockerRow {
    pub place: String,
    pub count: usize,
    pub total_ns: u64,
    pub max_ns: u64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FlushRow {
    pub bdi: String,
    pub reason: FlushReason,
    pub passes: usize,
    pub pages: u64,
    pub busy_ns: u64,
}

/// The device's estimates (bdi_dirty_ratelimit), pages per second.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Bandwidth {
    pub ts_ns: u64,
    pub bdi_id: u64,
    /// The device as the kernel names its bdi ("7:0").
    pub bdi: String,
    pub write_bw: u64,
    pub avg_write_bw: u64,
    pub dirty_rate: u64,
    pub dirty_ratelimit: u64,
    pub task_ratelimit: u64,
    pub balanced_dirty_ratelimit: u64,
}

/// Why the flusher wrote (enum wb_reason).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FlushReason {
    Background,
    Vmscan,
    Sync,
    Periodic,
    LaptopTimer,
    FsFreeSpace,
    ForkerThread,
    ForeignFlush,
    Other,
}

impl FlushReason {
    pub fn from_kernel(v: u32) -> FlushReason {
        match v {
            0 => FlushReason::Background,
            1 => FlushReason::Vmscan,
            2 => FlushReason::Sync,
            3 => FlushReason::Periodic,
            4 => FlushReason::LaptopTimer,
            5 => FlushReason::FsFreeSpace,
            6 => FlushReason::ForkerThread,
            7 => FlushReason::ForeignFlush,
            _ => FlushReason::Other,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            FlushReason::Background => "background",
            FlushReason::Vmscan => "vmscan",
            FlushReason::Sync => "sync",
            FlushReason::Periodic => "periodic",
            FlushReason::LaptopTimer => "laptop_timer",
            FlushReason::FsFreeSpace => "fs_free_space",
            FlushReason::ForkerThread => "forker_thread",
            FlushReason::ForeignFlush => "foreign_flush",
            FlushReason::Other => "other",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DirtierRow {
    pub tgid: u32,
    pub comm: String,
    /// Scheduling class and priority when it first dirtied ("FIFO 55").
    pub class: String,
    pub cgroup: String,
    /// Bytes dirtied in this interval and since tracing began.
    pub bytes: u64,
    pub total_bytes: u64,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CgroupRow {
    pub cgroup: String,
    pub bytes: u64,
    pub processes: usize,
}

/// The newest balance_dirty_pages figures and how often it paused tasks.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Throttling {
    /// balance_dirty_pages decisions seen (each firing of its tracepoint).
    pub decisions: usize,
    /// Of those, the ones that paused the task.
    pub pauses: usize,
    pub max_pause_ns: i64,
    pub dirty_pages: u64,
    pub thresh_pages: u64,
    pub bg_thresh_pages: u64,
    pub setpoint_pages: u64,
    pub dirty_ratelimit: u64,
    pub min_task_ratelimit: u64,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct IntervalSummary {
    pub end_ns: u64,
    pub seconds: f64,
    /// Watched calls at least the threshold long.
    pub stalls: usize,
    /// Of those, how many of each call ("write", "fsync", "page fault", ...).
    pub by_call: std::collections::BTreeMap<String, usize>,
    pub stall_ns: u64,
    pub p99_ns: u64,
    pub max_ns: u64,
    pub causes: Vec<CauseRow>,
    pub blocked_in: Vec<BlockerRow>,
    pub dirtiers: Vec<DirtierRow>,
    pub cgroups: Vec<CgroupRow>,
    pub flusher: Vec<FlushRow>,
    pub bandwidth: Vec<Bandwidth>,
    pub throttling: Option<Throttling>,
    /// Records lost since tracing began (must stay 0).
    pub lost: u64,
}

/// One slow call, as a JSON line.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct StallLine {
    pub tgid: u32,
    pub pid: u32,
    pub comm: String,
    /// The process's cgroup, or "-" with the reason it has no name.
    pub cgroup: String,
    /// What was slow: a system call's name, or "page fault".
    pub call: String,
    pub fd: i32,
    /// The file: its path where it could be found, else "dev MAJ:MIN inode N".
    pub file: String,
    pub bytes: u64,
    pub start_ns: u64,
    pub dur_ns: u64,
    pub main_cause: Cause,
    pub throttle_ns: u64,
    pub wbwait_ns: u64,
    pub blocked_ns: u64,
    pub runq_ns: u64,
    pub on_cpu_ns: u64,
    pub pauses: u32,
    pub blocked_in: Vec<String>,
    /// For a read that blocked: the most bytes of writes, and of reads, queued
    /// at its file's device while it slept, and the processes that dirtied
    /// files on that device since tracing began (whose write back those
    /// writes are, unless the file system's own), as "comm (pid)".
    pub queued_write_bytes: u64,
    pub queued_read_bytes: u64,
    pub writers_there: Vec<String>,
    /// For a read: what its longest blocked stretch waited for, from the
    /// kernel stack ("page-cache miss", "readahead"), where it tells.
    pub read_wait: Option<String>,
}
