//! CPU-bound worker processes that record when they were off the CPU.
//!
//! Each worker spins reading CLOCK_MONOTONIC; a gap between two readings longer
//! than a threshold means it was not running then (descheduled, or the host took the
//! vCPU). The gaps go into a shared anonymous mapping. Between fork and exit a worker
//! makes only raw system calls and stores to that mapping. Workers die with oslab
//! (PR_SET_PDEATHSIG); each runs for a bounded time, so the parent's wait for them
//! ends by itself.

use std::sync::atomic::{AtomicU64, Ordering};

use serde::{Deserialize, Serialize};

use oslab_sys::{SysError, SysResult};

/// What one worker does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Spec {
    pub cpu: Option<u32>,
    pub nice: i32,
    /// Stop once this much run time (not wall time) is done; 0: run for the
    /// whole duration.
    pub work_ns: u64,
}

/// What one spinning worker recorded: the raw data the scheduling experiments keep
/// and judge.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Worker {
    pub pid: u32,
    /// Its first and last clock reading, CLOCK_MONOTONIC ns.
    pub start_ns: u64,
    pub end_ns: u64,
    /// (from, to) of every stretch off the CPU longer than the gap threshold, in
    /// order (a raw file whose gaps end before they start or overlap is refused).
    #[serde(deserialize_with = "ordered_gaps")]
    pub gaps: Vec<(u64, u64)>,
    /// More gaps than there was room for: the tail is missing.
    pub overflow: bool,
    /// Its context switches (getrusage).
    pub voluntary: u64,
    pub involuntary: u64,
    /// CPU time in user and kernel mode (getrusage), ns.
    pub user_ns: u64,
    pub sys_ns: u64,
    /// Clock readings made: run time / readings is what one reading costs, the
    /// recording's overhead and its time resolution.
    pub readings: u64,
}

/// Gaps as the recorder makes them: each ends no earlier than it starts and no
/// earlier than the one before it ends.
fn ordered_gaps<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Vec<(u64, u64)>, D::Error> {
    let gaps = Vec::<(u64, u64)>::deserialize(d)?;
    let mut last_end = 0;
    for (i, &(from, to)) in gaps.iter().enumerate() {
        if to < from || from < last_end {
            return Err(serde::de::Error::custom(format!(
                "gap {i} ({from}, {to}) ends before it starts or before the gap before it ends"
            )));
        }
        last_end = to;
    }
    Ok(gaps)
}

impl Worker {
    /// Wall time from its first to its last reading, ns.
    pub fn wall_ns(&self) -> u64 {
        self.end_ns.saturating_sub(self.start_ns)
    }

    /// Its stretches on the CPU: between its start, its gaps and its end.
    pub fn runs(&self) -> Vec<(u64, u64)> {
        let mut out = Vec::new();
        let mut from = self.start_ns;
        for &(a, b) in &self.gaps {
            if a > from {
                out.push((from, a));
            }
            from = b;
        }
        if self.end_ns > from {
            out.push((from, self.end_ns));
        }
        out
    }

    /// Its run time inside [from, to), ns.
    pub fn ran_between(&self, from: u64, to: u64) -> u64 {
        self.runs()
            .iter()
            .map(|&(a, b)| b.min(to).saturating_sub(a.max(from)))
            .sum()
    }
}

const HEADER: usize = 9;

use oslab_sys::clock::monotonic_ns as monotonic;

/// The worker's body: spin from `go` to `go + duration`, recording gaps.
fn work(slot: &[AtomicU64], go: u64, duration: u64, gap_ns: u64, work_ns: u64) {
    let max = (slot.len() - HEADER) / 2;
    // sleep (not spin) to the common start, so user time is the work alone
    let ts = libc::timespec {
        tv_sec: (go / 1_000_000_000) as libc::time_t,
        tv_nsec: (go % 1_000_000_000) as libc::c_long,
    };
    // SAFETY: a valid absolute time on CLOCK_MONOTONIC.
    unsafe {
        libc::clock_nanosleep(
            libc::CLOCK_MONOTONIC,
            libc::TIMER_ABSTIME,
            &ts,
            std::ptr::null_mut(),
        )
    };
    while monotonic() < go {}
    let end = go + duration;
    let mut last = monotonic();
    slot[1].store(last, Ordering::Relaxed);
    let mut n = 0usize;
    let mut ran = 0u64;
    let mut readings = 0u64;
    loop {
        let now = monotonic();
        readings += 1;
        if now - last <= gap_ns {
            ran += now - last;
        } else {
            if n < max {
                slot[HEADER + 2 * n].store(last, Ordering::Relaxed);
                slot[HEADER + 2 * n + 1].store(now, Ordering::Relaxed);
                n += 1;
            } else {
                slot[3].store(1, Ordering::Relaxed);
            }
        }
        last = now;
        if now >= end || (work_ns > 0 && ran >= work_ns) {
            break;
        }
    }
    slot[2].store(last, Ordering::Relaxed);
    slot[0].store(n as u64, Ordering::Relaxed);
    slot[8].store(readings, Ordering::Relaxed);
    // SAFETY: zeroed rusage is valid output storage.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: valid pointer.
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) };
    slot[4].store(ru.ru_nvcsw as u64, Ordering::Relaxed);
    slot[5].store(ru.ru_nivcsw as u64, Ordering::Relaxed);
    let tv = |t: libc::timeval| t.tv_sec as u64 * 1_000_000_000 + t.tv_usec as u64 * 1000;
    slot[6].store(tv(ru.ru_utime), Ordering::Relaxed);
    slot[7].store(tv(ru.ru_stime), Ordering::Relaxed);
}

/// Runs one forked worker per spec for `duration_ns`, all starting together, each
/// recording gaps longer than `gap_ns` (at most `max_gaps`). `during` runs in the
/// parent while they work, with their pids (e.g. to read /proc/PID/sched).
pub fn run(
    specs: &[Spec],
    duration_ns: u64,
    gap_ns: u64,
    max_gaps: usize,
    during: impl FnOnce(&[u32]),
) -> SysResult<Vec<Worker>> {
    let words = HEADER + 2 * max_gaps.max(1);
    let bytes = specs.len().max(1) * words * 8;
    let p = crate::forked::map_shared_anon(bytes)?;
    // SAFETY: the mapping holds bytes / 8 zeroed u64s, valid as atomics, until munmap.
    let all: &[AtomicU64] = unsafe { std::slice::from_raw_parts(p as *const AtomicU64, bytes / 8) };
    let go = monotonic() + 100_000_000;
    let mut pids = Vec::new();
    let parent = std::process::id() as i32;
    for (i, s) in specs.iter().enumerate() {
        let slot = &all[i * words..(i + 1) * words];
        // SAFETY: the child makes raw system calls and stores to the mapping only.
        let pid = unsafe { libc::fork() };
        if pid < 0 {
            for p in &pids {
                // SAFETY: our own children.
                unsafe { libc::kill(*p as i32, libc::SIGKILL) };
            }
            return Err(SysError::last_os("fork"));
        }
        if pid == 0 {
            oslab_sys::signals::forked_worker(parent);
            if let Some(c) = s.cpu {
                crate::forked::pin_raw(c);
            }
            // SAFETY: no pointers.
            unsafe { libc::setpriority(libc::PRIO_PROCESS, 0, s.nice) };
            work(slot, go, duration_ns, gap_ns, s.work_ns);
            // SAFETY: leave without destructors.
            unsafe { libc::_exit(0) };
        }
        pids.push(pid as u32);
    }
    during(&pids);
    for p in &pids {
        let mut st = 0;
        // SAFETY: waiting for our own child.
        unsafe { libc::waitpid(*p as i32, &mut st, 0) };
    }
    let out = pids
        .iter()
        .enumerate()
        .map(|(i, pid)| {
            let slot = &all[i * words..(i + 1) * words];
            let n = (slot[0].load(Ordering::Acquire) as usize).min(max_gaps);
            Worker {
                pid: *pid,
                start_ns: slot[1].load(Ordering::Relaxed),
                end_ns: slot[2].load(Ordering::Relaxed),
                gaps: (0..n)
                    .map(|k| {
                        (
                            slot[HEADER + 2 * k].load(Ordering::Relaxed),
                            slot[HEADER + 2 * k + 1].load(Ordering::Relaxed),
                        )
                    })
                    .collect(),
                overflow: slot[3].load(Ordering::Relaxed) != 0,
                voluntary: slot[4].load(Ordering::Relaxed),
                involuntary: slot[5].load(Ordering::Relaxed),
                user_ns: slot[6].load(Ordering::Relaxed),
                sys_ns: slot[7].load(Ordering::Relaxed),
                readings: slot[8].load(Ordering::Relaxed),
            }
        })
        .collect();
    // SAFETY: unmapping what was mapped above; no reference to it outlives this.
    unsafe { libc::munmap(p.cast(), bytes) };
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_record_whose_gaps_run_backwards_or_overlap_is_refused() {
        let read = |gaps: &str| {
            serde_json::from_str::<Worker>(&format!(
                r#"{{"pid":1,"start_ns":0,"end_ns":100,"gaps":{gaps},"overflow":false,
                "voluntary":0,"involuntary":0,"user_ns":0,"sys_ns":0,"readings":0}}"#
            ))
        };
        assert!(read("[[10,20],[20,30]]").is_ok());
        // found by the raw file fuzz run: stats() subtracted 20 - 30
        assert!(read("[[30,20]]").unwrap_err().to_string().contains("gap 0"));
        assert!(
            read("[[10,40],[30,50]]")
                .unwrap_err()
                .to_string()
                .contains("gap 1")
        );
    }

    #[test]
    fn a_worker_runs_between_its_gaps_and_keeps_its_json_shape() {
        let w = Worker {
            pid: 7,
            start_ns: 1,
            end_ns: 9,
            gaps: vec![(2, 3), (5, 6)],
            readings: 5,
            ..Default::default()
        };
        assert_eq!(w.runs(), vec![(1, 2), (3, 5), (6, 9)]);
        assert_eq!((w.wall_ns(), w.ran_between(2, 8)), (8, 4));
        let json = serde_json::to_string(&w).unwrap();
        assert!(json.starts_with(r#"{"pid":7,"start_ns":1,"end_ns":9,"gaps":[[2,3],[5,6]],"overflow":false,"voluntary":0,"#), "{json}");
        assert_eq!(serde_json::from_str::<Worker>(&json).unwrap(), w);
    }

    #[test]
    fn two_workers_on_one_cpu_take_turns() {
        let cpu = oslab_sys::process::affinity().unwrap()[0];
        let specs = [Spec {
            cpu: Some(cpu),
            nice: 0,
            work_ns: 0,
        }; 2];
        let mut seen = Vec::new();
        let t = run(&specs, 200_000_000, 50_000, 10_000, |p| {
            seen.extend_from_slice(p)
        })
        .unwrap();
        assert_eq!(t.len(), 2);
        assert_eq!(seen.len(), 2);
        for w in &t {
            assert!(w.end_ns > w.start_ns);
            // sharing one CPU for 200 ms, each must have been off it at least once
            assert!(!w.gaps.is_empty(), "{w:?}");
            assert!(
                w.gaps
                    .iter()
                    .all(|(a, b)| b > a && *a >= w.start_ns && *b <= w.end_ns)
            );
        }
    }

    #[test]
    fn a_fixed_amount_of_work_ends_early_when_alone() {
        let cpu = oslab_sys::process::affinity().unwrap()[0];
        let t = run(
            &[Spec {
                cpu: Some(cpu),
                nice: 0,
                work_ns: 20_000_000,
            }],
            5_000_000_000,
            50_000,
            1000,
            |_| {},
        )
        .unwrap();
        let wall = t[0].end_ns - t[0].start_ns;
        let off: u64 = t[0].gaps.iter().map(|(a, b)| b - a).sum();
        assert!(wall - off >= 20_000_000, "ran its 20 ms");
        assert!(wall < 5_000_000_000, "did not run the whole duration");
        assert!(t[0].user_ns + t[0].sys_ns > 0);
    }
}
