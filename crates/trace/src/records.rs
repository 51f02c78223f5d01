//! What the kernel told the programs, as plain serialisable records: the raw data
//! experiments keep (`Raw`) and `oslab stalls` reports. Units are the kernel's:
//! pages, pages per second, jiffies; times are CLOCK_MONOTONIC nanoseconds.

use oslab_model::trace::{Bandwidth, Cause, FlushReason};
use serde::{Deserialize, Serialize};

/// A watched system call (or page fault) and where its time went off the CPU.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct WriteCall {
    pub pid: u32,
    pub tgid: u32,
    pub call: String,
    pub fd: i32,
    pub count: u64,
    pub ret: i64,
    pub start_ns: u64,
    pub dur_ns: u64,
    /// Asleep in balance_dirty_pages (dirty throttling).
    pub throttle_ns: u64,
    /// Asleep waiting for a page's write back to finish.
    pub wbwait_ns: u64,
    /// Asleep for any other reason (kernel stacks in [`OffCpu`]).
    pub blocked_ns: u64,
    /// Runnable but not running: preempted, or woken and waiting for a CPU.
    pub runq_ns: u64,
    /// balance_dirty_pages decisions with a pause during the call.
    pub pauses: u32,
    pub prio: i32,
    /// The caller's cgroup v2 id and its memory cgroup's id (kernfs ids: the
    /// inode numbers of their directories); 0 where not recorded.
    #[serde(default)]
    pub cgroup_id: u64,
    #[serde(default)]
    pub memcg_id: u64,
    /// The file's device (the kernel's encoding) and inode; 0 where unknown.
    #[serde(default)]
    pub dev: u64,
    #[serde(default)]
    pub ino: u64,
    /// The thread's name when the call ended.
    #[serde(default)]
    pub comm: String,
    /// The file's last path component, where the call named a descriptor.
    #[serde(default)]
    pub file_name: String,
    /// For a read that blocked: the most bytes of writes, and of reads, queued
    /// at its file's device when it went to sleep.
    #[serde(default)]
    pub queued_write_bytes: u64,
    #[serde(default)]
    pub queued_read_bytes: u64,
}

impl WriteCall {
    /// The rest: on the CPU (copying, allocating and faulting pages, the system
    /// call itself; a hypervisor's stolen time shows here too).
    pub fn on_cpu_ns(&self) -> u64 {
        self.dur_ns
            .saturating_sub(self.throttle_ns + self.wbwait_ns + self.blocked_ns + self.runq_ns)
    }

    pub fn end_ns(&self) -> u64 {
        self.start_ns + self.dur_ns
    }

    /// Its time in `cause`, ns.
    pub fn time_in(&self, cause: Cause) -> u64 {
        match cause {
            Cause::DirtyThrottle => self.throttle_ns,
            Cause::WritebackWait => self.wbwait_ns,
            Cause::Blocked => self.blocked_ns,
            Cause::RunQueue => self.runq_ns,
            Cause::OnCpu => self.on_cpu_ns(),
        }
    }
}

/// One decision of balance_dirty_pages (mm/page-writeback.c), with the figures
/// the kernel used. `pause_jiffies > 0`: the task then slept that long.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Pause {
    pub ts_ns: u64,
    pub pid: u32,
    pub tgid: u32,
    pub prio: i32,
    pub policy: u32,
    pub bdi_id: u64,
    /// Dirtyable memory of the domain (pages); 0 where the kernel does not pass it.
    pub avail: u64,
    /// Dirty + writeback pages of the domain.
    pub dirty: u64,
    pub thresh: u64,
    pub bg_thresh: u64,
    /// The hard limit the setpoint is computed against; 0 where not passed.
    pub limit: u64,
    pub wb_dirty: u64,
    pub wb_thresh: u64,
    pub wb_bg_thresh: u64,
    /// pos_ratio scaled by 1 << 10 (RATELIMIT_CALC_SHIFT); None before 6.x.
    pub pos_ratio: Option<u64>,
    /// Pages per second.
    pub dirty_ratelimit: u64,
    pub task_ratelimit: u64,
    pub dirtied: u64,
    pub period_jiffies: u64,
    pub pause_jiffies: i64,
    /// Jiffies since the task's previous pause ended (the kernel's "think").
    pub think_jiffies: i64,
    pub nr_dirtied_pause: u32,
    /// The kernel's jiffies when it decided (to tell its tick rate).
    #[serde(default)]
    pub jiffies: u64,
}

impl Pause {
    /// The setpoint as the tracepoint computes it: halfway between the free-run
    /// ceiling ((thresh + bg_thresh) / 2) and the limit.
    pub fn setpoint(&self) -> u64 {
        let freerun = (self.thresh + self.bg_thresh) / 2;
        let limit = if self.limit > 0 {
            self.limit
        } else {
            self.thresh
        };
        (freerun + limit) / 2
    }
}

/// One pass of the flusher's loop (writeback_start to writeback_written).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FlushPass {
    pub start_ns: u64,
    pub end_ns: u64,
    pub bdi_id: u64,
    pub bdi: String,
    pub reason: FlushReason,
    pub pages: u64,
    /// The device's estimates when the pass began, pages per second: the
    /// background flusher's chunk is round_down(min(avg_write_bw / 2,
    /// dirty_limit / 8) + 4 MiB, 4 MiB) (fs/fs-writeback.c writeback_chunk_size).
    #[serde(default)]
    pub avg_write_bw: u64,
    #[serde(default)]
    pub write_bw: u64,
    /// The device's dirty_ratelimit when the pass began, pages per second:
    /// only a throttled writer moves it (bdi_dirty_ratelimit fires then only),
    /// so on an idle device this is where it shows what the next throttled
    /// writer starts from. 0 in records from before it was kept.
    #[serde(default)]
    pub dirty_ratelimit: u64,
}

/// A blocked stretch of a watched call not explained by throttling or write
/// back, with the kernel stack it blocked in (innermost first).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OffCpu {
    pub pid: u32,
    pub tgid: u32,
    pub call: String,
    pub start_ns: u64,
    pub dur_ns: u64,
    pub stack: Vec<String>,
}

/// The global limits (global_dirty_state), pages.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Limits {
    pub ts_ns: u64,
    pub bg_thresh: u64,
    pub thresh: u64,
}

/// A context switch with a watched task on one side.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Switch {
    pub ts_ns: u64,
    pub cpu: u32,
    pub prev_pid: u32,
    pub prev_tgid: u32,
    pub next_pid: u32,
    pub next_tgid: u32,
    pub prev_prio: i32,
    pub next_prio: i32,
    /// The previous task stayed runnable (preempted or yielded): an involuntary switch.
    pub prev_runnable: bool,
}

/// A watched task woken (put on a run queue).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Wakeup {
    pub ts_ns: u64,
    pub cpu: u32,
    pub pid: u32,
    pub tgid: u32,
    pub prio: i32,
}

/// Pages a process dirtied (writeback_dirty_folio, counted in the kernel).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Dirtier {
    pub tgid: u32,
    pub comm: String,
    pub pages: u64,
    pub first_ns: u64,
    pub last_ns: u64,
    /// The cgroup v2 id of the task that first dirtied (0 where unknown).
    pub cgroup_id: u64,
    pub policy: u32,
    pub prio: i32,
    pub rt_priority: u32,
    /// Its memory cgroup's id (v1 or v2; 0 where unknown).
    #[serde(default)]
    pub memcg_id: u64,
    /// Bios it submitted with REQ_PREFLUSH or REQ_FUA: its durable writes as
    /// the block layer saw them (counted only by the governor's monitor).
    #[serde(default)]
    pub flushes: u64,
}

/// Per thread, switches as getrusage() counts them and time on the CPU.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct SwitchCounts {
    pub pid: u32,
    pub voluntary: u64,
    pub involuntary: u64,
    pub run_ns: u64,
}

/// A process dirtied a page of a file for the first time (device in stat()'s
/// encoding).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DirtiedFile {
    pub ts_ns: u64,
    pub pid: u32,
    pub tgid: u32,
    pub dev: u64,
    pub ino: u64,
    pub policy: u32,
    pub prio: i32,
}

impl From<DirtiedFile> for Event {
    fn from(d: DirtiedFile) -> Event {
        Event::File(d)
    }
}

/// One record from a ring buffer.
#[derive(Debug, Clone, PartialEq)]
pub enum Event {
    Write(WriteCall),
    Pause(Pause),
    Bandwidth(Bandwidth),
    Flush(FlushPass),
    OffCpu(OffCpuRaw),
    Limits(Limits),
    Switch(Switch),
    Wakeup(Wakeup),
    File(DirtiedFile),
}

/// An off-CPU record before its addresses are named.
#[derive(Debug, Clone, PartialEq)]
pub struct OffCpuRaw {
    pub pid: u32,
    pub tgid: u32,
    pub sysno: u32,
    pub start_ns: u64,
    pub dur_ns: u64,
    pub frames: Vec<u64>,
}

/// A scheduling policy by its number (include/uapi/linux/sched.h).
pub fn policy_name(policy: u32) -> &'static str {
    match policy {
        0 => "normal",
        1 => "fifo",
        2 => "rr",
        3 => "batch",
        5 => "idle",
        6 => "deadline",
        7 => "ext",
        _ => "other",
    }
}

/// A task's class and priority as `chrt`/`ps` users read them: "FIFO 55",
/// "normal nice 0". `prio` is the kernel's (0-99 real time, 100-139 normal).
pub fn class_label(policy: u32, prio: i32) -> String {
    match policy {
        1 | 2 => format!("{} {}", policy_name(policy).to_uppercase(), 99 - prio),
        6 => "deadline".to_string(),
        _ => format!("{} nice {}", policy_name(policy), prio - 120),
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A pause with every figure zero, for tests to fill in.
    pub(crate) fn pause() -> Pause {
        Pause {
            ts_ns: 0,
            pid: 1,
            tgid: 1,
            prio: 120,
            policy: 0,
            bdi_id: 1,
            avail: 0,
            dirty: 0,
            thresh: 0,
            bg_thresh: 0,
            limit: 0,
            wb_dirty: 0,
            wb_thresh: 0,
            wb_bg_thresh: 0,
            pos_ratio: None,
            dirty_ratelimit: 0,
            task_ratelimit: 0,
            dirtied: 0,
            period_jiffies: 0,
            pause_jiffies: 0,
            think_jiffies: 0,
            nr_dirtied_pause: 0,
            jiffies: 0,
        }
    }

    #[test]
    fn classes_read_as_chrt_and_nice_show_them() {
        assert_eq!(class_label(1, 44), "FIFO 55");
        assert_eq!(class_label(2, 54), "RR 45");
        assert_eq!(class_label(0, 120), "normal nice 0");
        assert_eq!(class_label(0, 124), "normal nice 4");
        assert_eq!(class_label(3, 139), "batch nice 19");
    }

    #[test]
    fn the_setpoint_sits_between_free_run_and_the_limit() {
        let p = Pause {
            thresh: 16384,
            bg_thresh: 8192,
            limit: 16384,
            ..pause()
        };
        // freerun = (16384 + 8192) / 2 = 12288; (12288 + 16384) / 2 = 14336
        assert_eq!(p.setpoint(), 14336);
        let no_limit = Pause { limit: 0, ..p };
        assert_eq!(no_limit.setpoint(), 14336);
    }

    #[test]
    fn on_cpu_time_is_what_the_causes_leave() {
        let w = WriteCall {
            pid: 1,
            tgid: 1,
            call: "write".into(),
            fd: 3,
            count: 4096,
            ret: 4096,
            start_ns: 100,
            dur_ns: 1000,
            throttle_ns: 600,
            wbwait_ns: 100,
            blocked_ns: 50,
            runq_ns: 50,
            pauses: 1,
            prio: 120,
            ..WriteCall::default()
        };
        assert_eq!(w.on_cpu_ns(), 200);
        assert_eq!(w.end_ns(), 1100);
    }
}
