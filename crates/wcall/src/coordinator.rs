//! The coordinator: the paper's three modules in user space.
//!
//! - Monitoring: which governed processes are alive and writing (their group comes
//!   from the table), each group's dirty and writeback bytes exactly, from
//!   cachestat() on the files its processes write, and the global Dirty, Writeback
//!   and the kernel's limits as `oslab dirty explain` computes them.
//! - Allocation: `oslab_wbsim::policy::gates`, the same code the simulator runs.
//! - Control: the hold flag of each group, which the interposer checks before every
//!   write, and for `wcall-fair` a push of an over-share group's files with
//!   sync_file_range(SYNC_FILE_RANGE_WRITE), which starts write back without waiting.
//!
//! Everything read from the table may have been written by any governed process:
//! pids and files are acted on only as `crate::trust` confirms them, group numbers
//! out of range count as the lowest group, and no sum of table values can
//! overflow.

use std::fs::File;
use std::os::fd::AsRawFd;
use std::sync::atomic::Ordering;

use oslab_sys::clock::monotonic_ns;
use oslab_sys::fileio::cachestat;
use oslab_sys::fsread::Root;
use oslab_sys::parse::meminfo::parse_meminfo;
use oslab_wbsim::policy::{self, GroupState, Policy};

use crate::shm::{FILE_FREE, FILE_READY, GROUPS, MAX_FILES, Mapped, Table, group_index};
use crate::trust::{Budget, FileClaim, Member, PASS_PROC_BYTES, Refusal, process_exists};

/// A writer counts as an active task of its group for this long after a write.
pub const ACTIVE_NS: u64 = 1_000_000_000;
/// The paper's block: HZ/10 (100 ms at the paper's HZ = 1000).
pub const WCALL_BLOCK_NS: u64 = 100_000_000;
/// The kernel limits are read again at most this often (zoneinfo is long).
const LIMITS_EVERY_NS: u64 = 100_000_000;

pub fn policy_code(p: Policy) -> u32 {
    match p {
        Policy::Vanilla => 0,
        Policy::Wcall => 1,
        Policy::WcallFair => 2,
    }
}

pub fn policy_of(code: u32) -> Policy {
    match code {
        1 => Policy::Wcall,
        2 => Policy::WcallFair,
        _ => Policy::Vanilla,
    }
}

/// The global picture of one pass.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Global {
    pub dirty: u64,
    pub writeback: u64,
    pub bg: u64,
    pub hard: u64,
    pub freerun: u64,
}

/// What the coordinator knows of the process in one slot of the table.
#[derive(Debug)]
enum Known {
    /// Not checked yet.
    Unknown,
    /// Shown to map the table: governed.
    Member(Member),
    /// This pid was refused (or is gone); not checked again while the slot holds it.
    Refused(u32),
}

/// A file slot's file, opened, and the claim it was opened for.
struct Opened {
    file: File,
    claim: FileClaim,
}

pub struct Coordinator {
    map: Mapped,
    policy: Policy,
    block_ns: u64,
    files: Vec<Option<Opened>>,
    page: u64,
    limits: Global,
    limits_at: u64,
    /// Memory cgroups per group, where they could be made.
    cgroups: Option<crate::cgroups::GroupCgroups>,
    /// The pid placed from each process slot, so each is moved once.
    placed: Vec<u32>,
    /// What is known of each process slot's pid.
    known: Vec<Known>,
}

/// The global Dirty and Writeback bytes (/proc/meminfo); 0 when unreadable.
fn meminfo_dirty_writeback() -> (u64, u64) {
    Root::live()
        .read("/proc/meminfo")
        .ok()
        .and_then(|t| parse_meminfo(&t).ok())
        .map_or((0, 0), |m| (m.dirty_bytes, m.writeback_bytes))
}

impl Coordinator {
    pub fn new(map: Mapped, policy: Policy, block_ns: u64) -> Coordinator {
        let t = map.table();
        t.header
            .policy
            .store(policy_code(policy), Ordering::Relaxed);
        t.header
            .heartbeat_ns
            .store(monotonic_ns(), Ordering::Release);
        Coordinator {
            map,
            policy,
            block_ns,
            files: (0..MAX_FILES).map(|_| None).collect(),
            page: oslab_sys::machine::page_size(),
            limits: Global::default(),
            limits_at: 0,
            cgroups: None,
            placed: vec![0; crate::shm::MAX_PROCS],
            known: (0..crate::shm::MAX_PROCS).map(|_| Known::Unknown).collect(),
        }
    }

    /// The governed process in process slot `i`, which holds `pid`: checked once
    /// per pid (as far as this pass's /proc budget goes), then held by its pidfd.
    fn member(&mut self, i: usize, pid: u32, budget: &mut Budget) -> Option<&Member> {
        let fresh = match &self.known[i] {
            Known::Member(m) if m.pid == pid => {
                if !m.alive() {
                    self.known[i] = Known::Refused(pid);
                    return None;
                }
                false
            }
            Known::Refused(p) if *p == pid => return None,
            _ => true,
        };
        if fresh {
            self.known[i] = match crate::trust::verify_member(pid, self.map.file_id(), budget) {
                Ok(m) => Known::Member(m),
                Err(Refusal::Later) => Known::Unknown,
                Err(Refusal::Gone) => Known::Refused(pid),
                Err(Refusal::No(_)) => {
                    self.refused();
                    Known::Refused(pid)
                }
            };
        }
        match &self.known[i] {
            Known::Member(m) => Some(m),
            _ => None,
        }
    }

    /// The governed process `pid`, from any slot: Later while some slot with that
    /// pid waits to be checked.
    fn member_by_pid(&self, pid: u32) -> Result<&Member, Refusal> {
        let mut waiting = false;
        for (i, k) in self.known.iter().enumerate() {
            match k {
                Known::Member(m) if m.pid == pid => return Ok(m),
                Known::Unknown if self.map.table().procs[i].pid.load(Ordering::Relaxed) == pid => {
                    waiting = true
                }
                _ => {}
            }
        }
        Err(if waiting {
            Refusal::Later
        } else {
            Refusal::No("the file's process is not a governed one")
        })
    }

    fn refused(&self) {
        self.map
            .table()
            .header
            .refused
            .fetch_add(1, Ordering::Relaxed);
    }

    /// Places governed processes in memory cgroups of their groups from now on.
    pub fn use_cgroups(&mut self, c: crate::cgroups::GroupCgroups) {
        self.cgroups = Some(c);
    }

    pub fn table(&self) -> &Table {
        self.map.table()
    }

    /// One pass of monitoring, allocation and control; returns the groups' states.
    pub fn tick(&mut self) -> [GroupState; GROUPS] {
        let now = monotonic_ns();
        let global = self.global(now);
        let t = self.map.table();
        // what the writers reported before this measurement; taken off afterwards
        let pending: Vec<u64> = t
            .groups
            .iter()
            .map(|g| g.pending_bytes.load(Ordering::Acquire))
            .collect();
        let mut states = [GroupState::default(); GROUPS];
        for (g, s) in states.iter_mut().enumerate() {
            s.weight = policy::weight(crate::shm::GROUP_NAMES[g]);
        }
        let mut budget = Budget::new(PASS_PROC_BYTES);
        for i in 0..t.procs.len() {
            let t = self.map.table();
            let p = &t.procs[i];
            let pid = p.pid.load(Ordering::Acquire);
            if pid == 0 || p.alive.load(Ordering::Relaxed) == 0 {
                continue;
            }
            if !process_exists(pid) {
                p.alive.store(0, Ordering::Relaxed);
                continue;
            }
            let g = group_index(p.group.load(Ordering::Relaxed));
            let last = p.last_write_ns.load(Ordering::Relaxed);
            // only a process shown to map the table is governed: counted, placed
            if self.member(i, pid, &mut budget).is_none() {
                continue;
            }
            if let Some(cg) = &self.cgroups
                && self.placed[i] != pid
            {
                // A process gone in between is no error; it is simply not placed.
                let _ = cg.place(pid, g);
                self.placed[i] = pid;
            }
            if last > 0 && now.saturating_sub(last) <= ACTIVE_NS {
                states[g].tasks += 1;
            }
        }
        let t = self.map.table();
        for (i, f) in t.files.iter().enumerate() {
            if f.state.load(Ordering::Acquire) != FILE_READY {
                self.files[i] = None;
                continue;
            }
            let claim = FileClaim {
                pid: f.pid.load(Ordering::Relaxed),
                fd: f.fd.load(Ordering::Relaxed),
                dev: f.dev.load(Ordering::Relaxed),
                ino: f.ino.load(Ordering::Relaxed),
            };
            // a slot written over since it was opened is opened (and checked) anew
            if self.files[i].as_ref().is_some_and(|o| o.claim != claim) {
                self.files[i] = None;
            }
            if self.files[i].is_none() {
                let opened = self
                    .member_by_pid(claim.pid)
                    .and_then(|m| crate::trust::open_claimed(&claim, m, &mut budget));
                match opened {
                    Ok(file) => self.files[i] = Some(Opened { file, claim }),
                    Err(Refusal::Later) => continue,
                    Err(why) => {
                        if matches!(why, Refusal::No(_)) {
                            self.refused();
                        }
                        // refused, or the writer closed it or is gone before we
                        // looked: forget it
                        f.state.store(FILE_FREE, Ordering::Release);
                        continue;
                    }
                }
            }
            let g = group_index(f.group.load(Ordering::Relaxed));
            let Some(o) = &self.files[i] else { continue };
            let (d, w) = match cachestat(&o.file) {
                Ok(cs) => (
                    cs.dirty.saturating_mul(self.page),
                    cs.writeback.saturating_mul(self.page),
                ),
                Err(_) => (0, 0),
            };
            states[g].dirty = states[g].dirty.saturating_add(d);
            states[g].writeback = states[g].writeback.saturating_add(w);
            if d == 0 && w == 0 && !process_exists(claim.pid) {
                self.files[i] = None;
                f.state.store(FILE_FREE, Ordering::Release);
            }
        }
        let gates = self.gates(&states, &global);
        for (g, gate) in gates.iter().enumerate() {
            let slot = &t.groups[g];
            slot.tasks.store(states[g].tasks as u32, Ordering::Relaxed);
            slot.dirty_bytes.store(states[g].dirty, Ordering::Relaxed);
            slot.writeback_bytes
                .store(states[g].writeback, Ordering::Relaxed);
            slot.charged_bytes
                .store(policy::charged(self.policy, &states[g]), Ordering::Relaxed);
            slot.share_ppm
                .store((gate.limit.share * 1e6) as u64, Ordering::Relaxed);
            slot.limit_bytes.store(limit_of(gate), Ordering::Relaxed);
            slot.limit_if_active
                .store(self.limit_if_active(&states, g, &global), Ordering::Relaxed);
            slot.retry_ns.store(gate.retry_ns, Ordering::Relaxed);
            slot.hold.store(gate.hold as u32, Ordering::Release);
            // what this pass measured; never below zero, whatever a process wrote
            let _ = slot
                .pending_bytes
                .fetch_update(Ordering::AcqRel, Ordering::Acquire, |v| {
                    Some(v.saturating_sub(pending[g]))
                });
            if gate.push {
                self.push(g as u32);
                slot.pushes.fetch_add(1, Ordering::Relaxed);
            }
        }
        let h = &t.header;
        h.global_dirty.store(global.dirty, Ordering::Relaxed);
        h.global_writeback
            .store(global.writeback, Ordering::Relaxed);
        h.bg_thresh.store(global.bg, Ordering::Relaxed);
        h.thresh.store(global.hard, Ordering::Relaxed);
        h.freerun.store(global.freerun, Ordering::Relaxed);
        h.passes.fetch_add(1, Ordering::Relaxed);
        let end = monotonic_ns();
        let took = end.saturating_sub(now);
        h.pass_ns_total.fetch_add(took, Ordering::Relaxed);
        h.pass_ns_max.fetch_max(took, Ordering::Relaxed);
        h.heartbeat_ns.store(end, Ordering::Release);
        states
    }

    /// The limit group `g` would have with one writer (it has none now).
    fn limit_if_active(&self, states: &[GroupState; GROUPS], g: usize, global: &Global) -> u64 {
        if states[g].tasks > 0 {
            return limit_of(&self.gates(states, global)[g]);
        }
        let mut with = *states;
        with[g].tasks = 1;
        limit_of(&self.gates(&with, global)[g])
    }

    fn gates(&self, states: &[GroupState], global: &Global) -> Vec<policy::Gate> {
        policy::gates(
            self.policy,
            states,
            global.bg,
            global.hard,
            global.freerun,
            self.block_ns,
        )
    }

    fn global(&mut self, now: u64) -> Global {
        if self.limits_at == 0 || now - self.limits_at >= LIMITS_EVERY_NS {
            if let Some(i) = oslab_sys::dirty::live_inputs() {
                let l = oslab_sys::dirty::compute(&i).normal;
                self.limits = Global {
                    bg: l.bg_thresh * self.page,
                    hard: l.thresh * self.page,
                    freerun: l.freerun * self.page,
                    ..Global::default()
                };
            }
            self.limits_at = now;
        }
        let (dirty, writeback) = meminfo_dirty_writeback();
        Global {
            dirty,
            writeback,
            ..self.limits
        }
    }

    /// Starts write back of every file of group `g`, without waiting for it.
    fn push(&self, g: u32) {
        let t = self.map.table();
        for (i, f) in t.files.iter().enumerate() {
            if f.state.load(Ordering::Acquire) == FILE_READY
                && group_index(f.group.load(Ordering::Relaxed)) == g as usize
                && let Some(o) = &self.files[i]
            {
                // SAFETY: a valid fd; offset 0, length 0 means to the end of the file.
                unsafe {
                    libc::sync_file_range(o.file.as_raw_fd(), 0, 0, libc::SYNC_FILE_RANGE_WRITE)
                };
            }
        }
    }

    /// Tells the governed processes that nobody governs any more.
    pub fn stop(&self) {
        self.map.table().release();
    }
}

/// The limit a gate sets, u64::MAX for none (vanilla, a top or an idle group).
fn limit_of(gate: &policy::Gate) -> u64 {
    if gate.limit.unlimited || gate.limit.hard == u64::MAX {
        u64::MAX
    } else {
        gate.limit.hard
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::shm::{NORMAL, RT_HIGH};
    use std::io::Write;
    use std::os::unix::fs::MetadataExt;

    #[test]
    fn a_pass_charges_a_files_dirty_pages_to_its_group() {
        let dir = tempfile::tempdir().unwrap();
        let (map, _memfd) = Mapped::create_memfd("test").unwrap();
        let mut c = Coordinator::new(map, Policy::WcallFair, WCALL_BLOCK_NS);
        let path = dir.path().join("data");
        let mut f = File::create(&path).unwrap();
        f.write_all(&vec![1u8; 1 << 20]).unwrap();
        let m = f.metadata().unwrap();
        let me = std::process::id();
        let t = c.table();
        let slot = t.claim_proc(me, NORMAL).unwrap();
        t.procs[slot]
            .last_write_ns
            .store(monotonic_ns(), Ordering::Relaxed);
        assert!(t.register_file(m.dev(), m.ino(), NORMAL, me, f.as_raw_fd() as u32));
        let s = c.tick();
        assert_eq!(s[NORMAL as usize].tasks, 1);
        assert_eq!(s[RT_HIGH as usize].tasks, 0);
        // the MiB just written is dirty or already under write back, unless the
        // flusher was very quick; it is never charged to another group
        assert!(s[NORMAL as usize].dirty + s[NORMAL as usize].writeback <= 1 << 20);
        assert_eq!(s[RT_HIGH as usize].dirty, 0);
        let h = &c.table().header;
        assert!(h.thresh.load(Ordering::Relaxed) > 0, "kernel limits read");
        assert_eq!(h.passes.load(Ordering::Relaxed), 1);
        // a lone group of the top weight present is never held
        assert_eq!(
            c.table().groups[NORMAL as usize]
                .hold
                .load(Ordering::Relaxed),
            0
        );
        c.stop();
        assert!(!c.table().coordinator_alive(monotonic_ns(), u64::MAX));
    }
}
