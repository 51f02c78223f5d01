//! The coordinator: the paper's three modules in user space.
//!
//! - Monitoring: which governed processes are alive and writing (their group comes
//!   from the table), each group's dirty and writeback bytes exactly, from
//!   cachestat() on the files its processes write, and the global Dirty, Writeback
//!   and the kernel's limits as `oslab dirty explain` computes them.
//! - Allocation: `oslab_wbsim::policy::gates`, the same code the simulator runs.
//! - Control: the hold flag of each group, which the interposer checks before every
//!   write, and for `wcall-fair` a push of a group's files once it nears its limit
//!   with sync_file_range(SYNC_FILE_RANGE_WRITE), which starts write back without
//!   waiting (on the pusher's thread, so a full device queue never holds up a
//!   pass); held writers of wcall-fair sleep on a futex in the table that each
//!   pass wakes.
//!
//! Everything read from the table may have been written by any governed process:
//! pids and files are acted on only as `crate::trust` confirms them, group numbers
//! out of range count as the lowest group, and no sum of table values can
//! overflow.

use std::sync::atomic::Ordering;

use oslab_sys::clock::{monotonic_ns, thread_cpu_ns};
use oslab_sys::fsread::Root;
use oslab_sys::parse::meminfo::parse_meminfo;
use oslab_wbsim::policy::{self, GroupState, Policy, Room};

use crate::files::Files;
use crate::members::{Members, counts};
use crate::monitor::KernelMonitor;
use crate::pusher::Pusher;
use crate::shm::{GROUPS, MONITOR_CACHESTAT, MONITOR_KERNEL, Mapped, Table};
use crate::trust::{Budget, PASS_PROC_BYTES};

/// A writer counts as an active task of its group for this long after a write.
pub const ACTIVE_NS: u64 = 1_000_000_000;
/// The paper's block: HZ/10 (100 ms at the paper's HZ = 1000).
pub const WCALL_BLOCK_NS: u64 = 100_000_000;
/// The kernel limits are read again at most this often (zoneinfo is long).
const LIMITS_EVERY_NS: u64 = 100_000_000;
/// Written-back pages of governed files are dropped this often (`recycle`).
const RECYCLE_EVERY_NS: u64 = 100_000_000;
/// The kernel's per-process dirtied counts are read this often (status only).
const DIRTIERS_EVERY_NS: u64 = 1_000_000_000;

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

/// How a coordinator works beside its policy.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Tuning {
    /// Kept free under wcall-fair for RT-HIGH; None: an eighth of the free-run
    /// ceiling.
    pub headroom: Option<u64>,
    /// Drop governed files' written-back pages from the page cache every 100 ms,
    /// so new writes reuse memory the machine already backs (see docs/wcall.md).
    pub recycle: bool,
}

pub struct Coordinator {
    map: Mapped,
    policy: Policy,
    block_ns: u64,
    tuning: Tuning,
    page: u64,
    limits: Global,
    limits_at: u64,
    /// Memory cgroups per group, where they could be made.
    cgroups: Option<crate::cgroups::GroupCgroups>,
    members: Members,
    files: Files,
    pusher: Option<Pusher>,
    monitor: Option<KernelMonitor>,
    recycled_at: u64,
    dirtiers_at: u64,
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
        Coordinator::tuned(map, policy, block_ns, Tuning::default())
    }

    pub fn tuned(map: Mapped, policy: Policy, block_ns: u64, tuning: Tuning) -> Coordinator {
        let t = map.table();
        let now = monotonic_ns();
        t.header
            .policy
            .store(policy_code(policy), Ordering::Relaxed);
        t.header.started_ns.store(now, Ordering::Relaxed);
        t.header.monitor.store(MONITOR_CACHESTAT, Ordering::Relaxed);
        t.header.heartbeat_ns.store(now, Ordering::Release);
        Coordinator {
            map,
            policy,
            block_ns,
            tuning,
            page: oslab_sys::machine::page_size(),
            limits: Global::default(),
            limits_at: 0,
            cgroups: None,
            members: Members::default(),
            files: Files::default(),
            pusher: Pusher::start().ok(),
            monitor: None,
            recycled_at: 0,
            dirtiers_at: 0,
        }
    }

    /// Places governed processes in memory cgroups of their groups from now on.
    pub fn use_cgroups(&mut self, c: crate::cgroups::GroupCgroups) {
        self.cgroups = Some(c);
    }

    /// Sees through the kernel's records from now on which files governed
    /// processes dirty.
    pub fn use_kernel_monitor(&mut self, m: KernelMonitor) {
        self.monitor = Some(m);
        self.map
            .table()
            .header
            .monitor
            .store(MONITOR_KERNEL, Ordering::Relaxed);
    }

    pub fn table(&self) -> &Table {
        self.map.table()
    }

    /// One pass of monitoring, allocation and control; returns the groups' states.
    pub fn tick(&mut self) -> [GroupState; GROUPS] {
        let now = monotonic_ns();
        let global = self.global(now);
        let table_id = self.map.file_id();
        // what the writers reported before this measurement; taken off afterwards
        let pending: Vec<u64> = self
            .table()
            .groups
            .iter()
            .map(|g| g.pending_bytes.load(Ordering::Acquire))
            .collect();
        let mut budget = Budget::new(PASS_PROC_BYTES);
        let map = &self.map;
        let refused = || {
            map.table().header.refused.fetch_add(1, Ordering::Relaxed);
        };
        let rows = {
            let t = self.map.table();
            self.members
                .pass(t, table_id, &mut budget, self.cgroups.as_ref(), &refused)
        };
        let (members, tasks) = counts(&rows, now, ACTIVE_NS);
        let mut states = [GroupState::default(); GROUPS];
        for (g, s) in states.iter_mut().enumerate() {
            s.weight = policy::weight(crate::shm::GROUP_NAMES[g]);
            s.tasks = tasks[g];
        }
        if let Some(m) = &self.monitor {
            let found = m.new_files();
            self.files
                .discover(&found, self.map.table(), &self.members, &mut budget);
        }
        self.files.measure(
            self.map.table(),
            &self.members,
            &mut budget,
            &mut states,
            &refused,
        );
        let governed: u64 = states.iter().map(|s| s.dirty + s.writeback).sum();
        let room = Room {
            bg: global.bg,
            hard: global.hard,
            freerun: global.freerun,
            ungoverned: (global.dirty + global.writeback).saturating_sub(governed),
            headroom: self.tuning.headroom.unwrap_or(global.freerun / 8),
        };
        let gates = self.gates(&states, &room);
        let t = self.map.table();
        let mut to_push = Vec::new();
        for (g, gate) in gates.iter().enumerate() {
            let slot = &t.groups[g];
            slot.tasks.store(states[g].tasks as u32, Ordering::Relaxed);
            slot.members.store(members[g], Ordering::Relaxed);
            slot.dirty_bytes.store(states[g].dirty, Ordering::Relaxed);
            slot.writeback_bytes
                .store(states[g].writeback, Ordering::Relaxed);
            slot.charged_bytes
                .store(policy::charged(self.policy, &states[g]), Ordering::Relaxed);
            slot.share_ppm
                .store((gate.limit.share * 1e6) as u64, Ordering::Relaxed);
            slot.limit_bytes.store(limit_of(gate), Ordering::Relaxed);
            slot.limit_if_active
                .store(self.limit_if_active(&states, g, &room), Ordering::Relaxed);
            slot.retry_ns.store(gate.retry_ns, Ordering::Relaxed);
            slot.hold.store(gate.hold as u32, Ordering::Release);
            // what this pass measured; never below zero, whatever a process wrote
            let _ = slot
                .pending_bytes
                .fetch_update(Ordering::AcqRel, Ordering::Acquire, |v| {
                    Some(v.saturating_sub(pending[g]))
                });
            if gate.push {
                to_push.extend(self.files.of_group(t, g));
                slot.pushes.fetch_add(1, Ordering::Relaxed);
                // writers that dirty outside write() are not held: pushing their
                // files is all the governor can do about them
                for s in self.files.unheld_slots(t, g) {
                    t.procs[s].pushes.fetch_add(1, Ordering::Relaxed);
                }
            }
            slot.pass_done();
        }
        if let Some(p) = &self.pusher {
            if !to_push.is_empty() {
                p.push(to_push);
            }
            if self.tuning.recycle && now.saturating_sub(self.recycled_at) >= RECYCLE_EVERY_NS {
                p.recycle(self.files.all());
                self.recycled_at = now;
            }
        }
        let h = &t.header;
        h.global_dirty.store(global.dirty, Ordering::Relaxed);
        h.global_writeback
            .store(global.writeback, Ordering::Relaxed);
        h.bg_thresh.store(global.bg, Ordering::Relaxed);
        h.thresh.store(global.hard, Ordering::Relaxed);
        h.freerun.store(global.freerun, Ordering::Relaxed);
        h.ungoverned_bytes.store(room.ungoverned, Ordering::Relaxed);
        h.headroom_bytes.store(room.headroom, Ordering::Relaxed);
        h.passes.fetch_add(1, Ordering::Relaxed);
        let end = monotonic_ns();
        let took = end.saturating_sub(now);
        h.pass_ns_total.fetch_add(took, Ordering::Relaxed);
        h.pass_ns_max.fetch_max(took, Ordering::Relaxed);
        h.cpu_ns.store(thread_cpu_ns(), Ordering::Relaxed);
        h.heartbeat_ns.store(end, Ordering::Release);
        self.read_dirtiers(now, &rows);
        states
    }

    /// The kernel's count of the bytes each governed process dirtied, once a second.
    fn read_dirtiers(&mut self, now: u64, rows: &[crate::members::Row]) {
        let Some(m) = &mut self.monitor else { return };
        if now.saturating_sub(self.dirtiers_at) < DIRTIERS_EVERY_NS {
            return;
        }
        let Some((dirtiers, lost)) = m.dirtiers() else {
            return;
        };
        self.dirtiers_at = now;
        let t = self.map.table();
        for r in rows {
            if let Some(d) = dirtiers.iter().find(|d| d.tgid == r.pid) {
                t.procs[r.slot]
                    .kernel_dirtied
                    .store(d.pages.saturating_mul(self.page), Ordering::Relaxed);
            }
        }
        t.header.kernel_lost.store(lost, Ordering::Relaxed);
    }

    /// The limit group `g` would have with one writer (it has none now).
    fn limit_if_active(&self, states: &[GroupState; GROUPS], g: usize, room: &Room) -> u64 {
        if states[g].tasks > 0 {
            return limit_of(&self.gates(states, room)[g]);
        }
        let mut with = *states;
        with[g].tasks = 1;
        limit_of(&self.gates(&with, room)[g])
    }

    fn gates(&self, states: &[GroupState], room: &Room) -> Vec<policy::Gate> {
        policy::gates_in(self.policy, states, room, self.block_ns)
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

    /// Tells the governed processes that nobody governs any more.
    pub fn stop(&self) {
        let t = self.map.table();
        t.release();
        for g in &t.groups {
            g.pass_done();
        }
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
    use std::fs::File;
    use std::io::Write;
    use std::os::fd::AsRawFd;
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
