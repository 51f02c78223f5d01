//! What the kernel says of a process, which is all the coordinator believes about
//! it: its user and group ids (/proc/PID/status), its parent (/proc/PID/stat), its
//! threads' scheduling (sched_getscheduler), and what it wrote (/proc/PID/io).
//! Every read is bounded by the pass's budget (`crate::trust::Budget`).

use crate::shm::{NORMAL, classify};
use crate::trust::{Budget, Refusal, valid_pid};

/// The four user ids (real, effective, saved, file system) and the four group ids.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ids {
    pub uids: [u32; 4],
    pub gids: [u32; 4],
}

impl Ids {
    /// Parses the Uid: and Gid: lines of a /proc/PID/status text.
    pub fn parse(status: &str) -> Option<Ids> {
        let four = |key: &str| -> Option<[u32; 4]> {
            let line = status.lines().find_map(|l| l.strip_prefix(key))?;
            let v: Vec<u32> = line
                .split_ascii_whitespace()
                .map(|x| x.parse().ok())
                .collect::<Option<_>>()?;
            v.try_into().ok()
        };
        Some(Ids {
            uids: four("Uid:")?,
            gids: four("Gid:")?,
        })
    }

    /// The real uid.
    pub fn uid(&self) -> u32 {
        self.uids[0]
    }

    /// A process between two identities (a set-user-ID or set-group-ID program, or
    /// one part way through changing user) has ids that differ.
    pub fn consistent(&self) -> bool {
        self.uids.iter().all(|u| *u == self.uids[0]) && self.gids.iter().all(|g| *g == self.gids[0])
    }
}

pub fn ids(pid: u32, budget: &mut Budget) -> Result<Ids, Refusal> {
    let pid = valid_pid(pid).ok_or(Refusal::No("not a pid"))?;
    let text = budget.read(&format!("/proc/{pid}/status"), 16 << 10)?;
    Ids::parse(&String::from_utf8_lossy(&text)).ok_or(Refusal::Gone)
}

/// The parent pid in a /proc/PID/stat text (the fourth field, after the
/// parenthesised command name, which may itself hold spaces and parentheses).
pub fn ppid_of_stat(stat: &str) -> Option<u32> {
    let after = &stat[stat.rfind(')')? + 1..];
    after.split_ascii_whitespace().nth(1)?.parse().ok()
}

pub fn ppid(pid: u32, budget: &mut Budget) -> Result<u32, Refusal> {
    let pid = valid_pid(pid).ok_or(Refusal::No("not a pid"))?;
    let text = budget.read(&format!("/proc/{pid}/stat"), 4096)?;
    ppid_of_stat(&String::from_utf8_lossy(&text)).ok_or(Refusal::Gone)
}

/// The ancestors of `pid`, nearest first, up to `depth` of them (stopping at pid 1).
pub fn ancestors(pid: u32, depth: usize, budget: &mut Budget) -> Vec<u32> {
    let mut out = Vec::new();
    let mut at = pid;
    while out.len() < depth {
        match ppid(at, budget) {
            Ok(p) if p > 1 => {
                out.push(p);
                at = p;
            }
            _ => break,
        }
    }
    out
}

/// What a process wrote, as the kernel counts it (/proc/PID/io): bytes handed to
/// write calls and the number of write calls, of all its threads, living and dead.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Io {
    pub wchar: u64,
    pub syscw: u64,
}

impl Io {
    pub fn parse(text: &str) -> Option<Io> {
        let field = |k: &str| {
            text.lines()
                .find_map(|l| l.strip_prefix(k)?.strip_prefix(':')?.trim().parse().ok())
        };
        Some(Io {
            wchar: field("wchar")?,
            syscw: field("syscw")?,
        })
    }
}

pub fn io(pid: u32, budget: &mut Budget) -> Result<Io, Refusal> {
    let pid = valid_pid(pid).ok_or(Refusal::No("not a pid"))?;
    let text = budget.read(&format!("/proc/{pid}/io"), 4096)?;
    Io::parse(&String::from_utf8_lossy(&text)).ok_or(Refusal::Gone)
}

/// The most threads of one process looked at for its scheduling class.
const THREADS_LOOKED_AT: usize = 256;

/// The paper's group of a process from its threads' scheduling: the highest any
/// of them has (a writer thread may run SCHED_FIFO while the main thread does
/// not). An unprivileged process cannot raise its real-time priority past its
/// RLIMIT_RTPRIO, so this is the kernel's word, not the process's.
pub fn sched_group(pid: u32) -> u32 {
    let Some(pid) = valid_pid(pid) else {
        return NORMAL;
    };
    let tids: Vec<i32> = match std::fs::read_dir(format!("/proc/{pid}/task")) {
        Ok(d) => d
            .flatten()
            .take(THREADS_LOOKED_AT)
            .filter_map(|e| e.file_name().to_str()?.parse().ok())
            .collect(),
        Err(_) => vec![pid as i32],
    };
    tids.into_iter()
        .map(|tid| thread_sched(tid).map_or(NORMAL, |(policy, prio)| classify(policy, prio)))
        .min()
        .unwrap_or(NORMAL)
}

/// A thread's scheduling policy (without SCHED_RESET_ON_FORK) and priority; None
/// when the kernel does not say (the thread is gone).
pub fn thread_sched(tid: i32) -> Option<(i32, i32)> {
    // SAFETY: queries of a thread's scheduling; no pointer but a local.
    let policy = unsafe { libc::sched_getscheduler(tid) };
    let mut p = libc::sched_param { sched_priority: 0 };
    // SAFETY: as above, into a local.
    let r = unsafe { libc::sched_getparam(tid, &mut p) };
    (policy >= 0 && r == 0).then_some((policy & !libc::SCHED_RESET_ON_FORK, p.sched_priority))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_tell_a_set_user_id_process_from_a_plain_one() {
        let plain = "Name:\tsh\nUid:\t1001\t1001\t1001\t1001\nGid:\t100\t100\t100\t100\n";
        let ids = Ids::parse(plain).unwrap();
        assert!(ids.consistent());
        assert_eq!(ids.uid(), 1001);
        let setuid = "Uid:\t1001\t0\t0\t0\nGid:\t100\t100\t100\t100\n";
        assert!(!Ids::parse(setuid).unwrap().consistent());
        let setgid = "Uid:\t5\t5\t5\t5\nGid:\t100\t42\t42\t42\n";
        assert!(!Ids::parse(setgid).unwrap().consistent());
        assert_eq!(Ids::parse("Uid:\t1 2 3\nGid:\t1 1 1 1\n"), None);
        assert_eq!(Ids::parse("nothing"), None);
    }

    #[test]
    fn the_parent_pid_survives_odd_command_names() {
        assert_eq!(ppid_of_stat("42 (sh) S 7 42 42 0"), Some(7));
        assert_eq!(ppid_of_stat("42 (a) b (c)) R 9 1 1"), Some(9));
        assert_eq!(ppid_of_stat("garbage"), None);
    }

    #[test]
    fn io_counts_parse_and_this_process_has_ancestors() {
        let text = "rchar: 10\nwchar: 2048\nsyscr: 1\nsyscw: 3\nread_bytes: 0\n";
        assert_eq!(
            Io::parse(text),
            Some(Io {
                wchar: 2048,
                syscw: 3
            })
        );
        assert_eq!(Io::parse("wchar: x\n"), None);
        let mut b = Budget::new(1 << 20);
        let me = std::process::id();
        assert!(io(me, &mut b).is_ok());
        let up = ancestors(me, 32, &mut b);
        assert_eq!(
            up.first().copied(),
            Some(std::os::unix::process::parent_id())
        );
        assert!(!up.contains(&1));
        assert_eq!(sched_group(me), NORMAL);
        assert_eq!(sched_group(0), NORMAL);
    }
}
