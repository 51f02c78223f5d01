//! What the scheduler experiments read of the live system while they measure:
//! /proc/PID/sched, /proc/PID/schedstat, /proc/interrupts and /proc/stat, all
//! through a [`Root`] and parsed by `oslab_sys::parse`; and the spinning workers.

use oslab_probe::spinners::{self, Spec};
use oslab_sys::fsread::Root;
use oslab_sys::parse::interrupts::local_timer_count;
use oslab_sys::parse::pidsched::{PidSched, parse_pid_sched};
use oslab_sys::parse::procstat::{CpuTimes, cpu_times};
use oslab_sys::parse::schedstat::{SchedStat, parse_schedstat};

use super::analysis::Worker;
use oslab_harness::LabError;

/// The gap that counts as "off the CPU": far above a clock read (~20 ns), far
/// below a tick.
pub const GAP_NS: u64 = 50_000;

/// /proc/PID/sched of `pid`; every field `None` when it cannot be read.
pub fn pid_sched(root: &Root, pid: u32) -> PidSched {
    root.read(&format!("/proc/{pid}/sched"))
        .map(|t| parse_pid_sched(&t))
        .unwrap_or_default()
}

/// /proc/PID/schedstat of `pid`.
pub fn schedstat(root: &Root, pid: u32) -> Option<SchedStat> {
    parse_schedstat(&root.read(&format!("/proc/{pid}/schedstat")).ok()?)
}

/// Local timer interrupts of `cpu` so far (/proc/interrupts).
pub fn local_timer(root: &Root, cpu: u32) -> Option<u64> {
    local_timer_count(&root.read("/proc/interrupts").ok()?, cpu)
}

/// The aggregate CPU times of /proc/stat (steal included).
pub fn stat(root: &Root) -> Option<CpuTimes> {
    cpu_times(&root.read("/proc/stat").ok()?)
}

/// The first CPU this process may run on.
pub fn first_cpu() -> u32 {
    oslab_sys::process::affinity()
        .ok()
        .and_then(|v| v.first().copied())
        .unwrap_or(0)
}

/// Runs one spinning worker per spec for `duration_ns` (see
/// `oslab_probe::spinners::run`); `during` runs meanwhile with their pids.
pub fn spin(
    specs: &[Spec],
    duration_ns: u64,
    max_gaps: usize,
    during: impl FnOnce(&[u32]),
) -> Result<Vec<Worker>, LabError> {
    spinners::run(specs, duration_ns, GAP_NS, max_gaps, during)
        .map_err(|e| LabError::Failed(e.to_string()))
}

/// `n` workers pinned to `cpu` (or free), each at `nice`, with `work_ns` of run
/// time to do (0: the whole duration).
pub fn specs(n: usize, cpu: Option<u32>, nice: i32, work_ns: u64) -> Vec<Spec> {
    vec![Spec { cpu, nice, work_ns }; n]
}
