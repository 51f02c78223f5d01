//! The coordinator: the paper's three modules in user space.
//!
//! - Monitoring: which governed processes are alive and writing (`crate::roster`:
//!   their group is the coordinator's decision, their writing the kernel's count),
//!   each group's dirty and writeback bytes exactly, from cachestat() on the files
//!   (on kernels before 6.5, which have no cachestat, from each group's cgroup's
//!   memory.stat where the groups have cgroups; else they read 0 and nothing is held)
//!   its processes write, and the global Dirty, Writeback and the kernel's limits
//!   as `oslab dirty explain` computes them.
//! - Allocation: `oslab_wbsim::policy::gates`, the same code the simulator runs.
//! - Control: the hold flag of each group on the board, which the interposer checks
//!   before every write, and for `wcall-fair` a push of a group's files once it nears its limit
//!   with sync_file_range(SYNC_FILE_RANGE_WRITE), which starts write back without
//!   waiting (on the pusher's thread, so a full device queue never holds up a
//!   pass); held writers of wcall-fair sleep on a futex on the board that each
//!   pass wakes.
//!
//! The board is written by the coordinator alone. What a process writes in its own
//! table is acted on only as `crate::trust` and `crate::roster` confirm it with the
//! kernel, and no sum of such values can overflow.

use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use oslab_sys::clock::{monotonic_ns, thread_cpu_ns};
use oslab_sys::fsread::Root;
use oslab_sys::parse::meminfo::parse_meminfo;
use oslab_wbsim::policy::{self, GroupState, Policy, Room};

use crate::files::Files;
use crate::guard::{self, Durable, GuardSetting};
use crate::monitor::KernelMonitor;
use crate::pusher::Pusher;
use crate::registry::Registry;
use crate::roster::{self, counts};
use crate::shm::board::{MONITOR_CACHESTAT, MONITOR_KERNEL};
use crate::shm::{Board, BoardMap, GROUPS, RT_HIGH};
use crate::trickle::{Guarded, Lane, SharedBandwidths, Trickle};
use crate::trust::{Budget, PASS_PROC_BYTES};

/// A writer counts as an active task of its group for this long after a write.
pub const ACTIVE_NS: u64 = roster::ACTIVE_NS;
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
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Tuning {
    /// Kept free under wcall-fair for RT-HIGH; None: an eighth of the free-run
    /// ceiling.
    pub headroom: Option<u64>,
    /// Drop governed files' written-back pages from the page cache every 100 ms,
    /// so new writes reuse memory the machine already backs (see docs/wcall.md).
    pub recycle: bool,
    /// While it acts (`crate::guard`: by default while a governed rt-high
    /// process makes durable writes), every other group's dirty and write-back
    /// bytes are held within its size and written back by the governor in small
    /// paced chunks, and rt-high's own files in small chunks as they are dirtied
    /// (`crate::trickle`), so that an rt-high fsync never queues behind a long
    /// run of write back.
    pub sync_guard: GuardSetting,
    /// How long the automatic guard stays on after the last durable write.
    pub guard_quiet: Duration,
}

impl Default for Tuning {
    fn default() -> Tuning {
        Tuning {
            headroom: None,
            recycle: false,
            sync_guard: GuardSetting::Auto,
            guard_quiet: crate::guard::QUIET,
        }
    }
}

pub struct Coordinator {
    board: Arc<BoardMap>,
    registry: Arc<Mutex<Registry>>,
    policy: Policy,
    block_ns: u64,
    tuning: Tuning,
    page: u64,
    limits: Global,
    limits_at: u64,
    /// Memory cgroups per group, where they could be made.
    cgroups: Option<crate::cgroups::GroupCgroups>,
    files: Files,
    pusher: Option<Pusher>,
    trickle: Option<Trickle>,
    /// rt-high's own files, written back unpaced under the sync guard.
    trickle_high: Option<Trickle>,
    /// What the lanes measured of each device, for the guard's size.
    bandwidths: SharedBandwidths,
    /// The rt-high processes' durable writes, for the automatic guard.
    durable: Durable,
    /// Whether the automatic guard would act now.
    durable_acting: bool,
    /// Per process, the bios with a cache flush or FUA it submitted, as the
    /// kernel's monitor last counted them (its durable writes however made).
    kernel_flushes: std::collections::HashMap<u32, u64>,
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
    pub fn new(
        board: Arc<BoardMap>,
        registry: Arc<Mutex<Registry>>,
        policy: Policy,
        block_ns: u64,
    ) -> Coordinator {
        Coordinator::tuned(board, registry, policy, block_ns, Tuning::default())
    }

    pub fn tuned(
        board: Arc<BoardMap>,
        registry: Arc<Mutex<Registry>>,
        policy: Policy,
        block_ns: u64,
        tuning: Tuning,
    ) -> Coordinator {
        let t = board.board();
        let now = monotonic_ns();
        t.header
            .policy
            .store(policy_code(policy), Ordering::Relaxed);
        t.header.started_ns.store(now, Ordering::Relaxed);
        t.header.monitor.store(MONITOR_CACHESTAT, Ordering::Relaxed);
        t.header.heartbeat_ns.store(now, Ordering::Release);
        publish_guard_setting(t, &tuning);
        let bandwidths = SharedBandwidths::default();
        let lane = |l| {
            (tuning.sync_guard != GuardSetting::Off)
                .then(|| Trickle::start(l, bandwidths.clone()).ok())
                .flatten()
        };
        let (trickle, trickle_high) = (lane(Lane::Paced), lane(Lane::Unpaced));
        Coordinator {
            board,
            registry,
            policy,
            block_ns,
            tuning,
            page: oslab_sys::machine::page_size(),
            limits: Global::default(),
            limits_at: 0,
            cgroups: None,
            files: Files::default(),
            pusher: Pusher::start().ok(),
            trickle,
            trickle_high,
            bandwidths,
            durable: Durable::default(),
            durable_acting: false,
            kernel_flushes: Default::default(),
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
        self.board
            .board()
            .header
            .monitor
            .store(MONITOR_KERNEL, Ordering::Relaxed);
    }

    pub fn board(&self) -> &Board {
        self.board.board()
    }

    /// One pass of monitoring, allocation and control; returns the groups' states.
    pub fn tick(&mut self) -> [GroupState; GROUPS] {
        let now = monotonic_ns();
        let global = self.global(now);
        let board = self.board.clone();
        let b = board.board();
        let registry = self.registry.clone();
        let Ok(mut reg) = registry.lock() else {
            return [GroupState::default(); GROUPS];
        };
        let mut budget = Budget::new(PASS_PROC_BYTES);
        let refused = || {
            b.header.refused.fetch_add(1, Ordering::Relaxed);
        };
        let rows = roster::pass(&mut reg, b, now, &mut budget, self.cgroups.as_ref());
        let durable = crate::guard::durable_counts(&reg, &rows, &self.kernel_flushes);
        self.durable_acting = self.durable.observe(now, &durable, self.tuning.guard_quiet);
        let (members, tasks) = counts(&rows);
        let mut states = [GroupState::default(); GROUPS];
        for (g, s) in states.iter_mut().enumerate() {
            s.weight = policy::weight(crate::shm::GROUP_NAMES[g]);
            s.tasks = tasks[g];
        }
        if let Some(m) = &self.monitor {
            let found = m.new_files();
            self.files.discover(&found, &reg, b, &mut budget);
        }
        self.files
            .measure(&reg, b, &mut budget, &mut states, &refused);
        if !oslab_sys::fileio::has_cachestat() {
            if let Some(u) = self.cgroups.as_ref().and_then(|c| c.dirty_writeback()) {
                for (s, (dirty, writeback)) in states.iter_mut().zip(u) {
                    s.dirty = dirty;
                    s.writeback = writeback;
                }
            }
        }
        drop(reg);
        let governed: u64 = states.iter().map(|s| s.dirty + s.writeback).sum();
        let room = Room {
            bg: global.bg,
            hard: global.hard,
            freerun: global.freerun,
            ungoverned: (global.dirty + global.writeback).saturating_sub(governed),
            headroom: self.tuning.headroom.unwrap_or(global.freerun / 8),
        };
        let to_push = self.control(b, &states, &members, &room);
        if let Some(p) = &self.pusher {
            if !to_push.is_empty() {
                p.push(to_push);
            }
            if self.tuning.recycle && now.saturating_sub(self.recycled_at) >= RECYCLE_EVERY_NS {
                p.recycle(self.files.all());
                self.recycled_at = now;
            }
        }
        // what each process wrote up to the start of this pass is in the
        // measurement now; beyond that is its own pending
        for r in &rows {
            b.members[r.slot]
                .accounted_bytes
                .store(r.claimed_bytes, Ordering::Relaxed);
        }
        self.publish_global(b, &global, &room, now);
        self.read_dirtiers(now, &rows);
        states
    }

    /// Sets each group's gate on the board and wakes its held writers; returns
    /// the files to push.
    fn control(
        &self,
        b: &Board,
        states: &[GroupState; GROUPS],
        members: &[u32; GROUPS],
        room: &Room,
    ) -> Vec<std::sync::Arc<std::fs::File>> {
        // under the guard rt-high's own files go out unpaced, the rest paced
        let (high, low) = match self.trickle {
            Some(_) => self.files.for_trickle(),
            None => Default::default(),
        };
        let guard = self.guard_on(members, &high);
        self.publish_guard(b, guard, &high);
        let gates = self.guarded_gates(states, room, guard);
        let mut to_push = Vec::new();
        for (g, gate) in gates.iter().enumerate() {
            let slot = &b.groups[g];
            slot.tasks.store(states[g].tasks as u32, Ordering::Relaxed);
            slot.members.store(members[g], Ordering::Relaxed);
            slot.dirty_bytes.store(states[g].dirty, Ordering::Relaxed);
            slot.writeback_bytes
                .store(states[g].writeback, Ordering::Relaxed);
            slot.charged_bytes
                .store(self.charged(guard, g, &states[g]), Ordering::Relaxed);
            slot.share_ppm
                .store((gate.limit.share * 1e6) as u64, Ordering::Relaxed);
            slot.limit_bytes.store(limit_of(gate), Ordering::Relaxed);
            slot.limit_if_active.store(
                self.limit_if_active(states, g, room, guard),
                Ordering::Relaxed,
            );
            slot.retry_ns.store(gate.retry_ns, Ordering::Relaxed);
            slot.hold.store(gate.hold as u32, Ordering::Release);
            if gate.push {
                to_push.extend(self.files.of_group(g));
                slot.pushes.fetch_add(1, Ordering::Relaxed);
                // writers that dirty outside write() are not held: pushing their
                // files is all the governor can do about them
                for s in self.files.unheld_slots(b, g) {
                    b.members[s].pushes.fetch_add(1, Ordering::Relaxed);
                }
            }
            slot.pass_done();
        }
        let (high, low) = match guard {
            Some(_) => (high, low),
            None => Default::default(),
        };
        if let Some(t) = &self.trickle {
            t.set(low);
        }
        if let Some(t) = &self.trickle_high {
            t.set(high);
        }
        to_push
    }

    /// The guard's size while it acts: its write-back threads running, a policy
    /// that gates, and, at a fixed size, an rt-high process governed; by
    /// default, rt-high durable writes within the quiet interval, at the size
    /// the device of rt-high's files (`high`) takes in the target delay.
    fn guard_on(&self, members: &[u32; GROUPS], high: &[Guarded]) -> Option<u64> {
        if self.trickle.is_none() || self.policy == Policy::Vanilla {
            return None;
        }
        match self.tuning.sync_guard {
            GuardSetting::Off => None,
            GuardSetting::Fixed(b) => (members[RT_HIGH as usize] > 0).then_some(b),
            GuardSetting::Auto => self.durable_acting.then(|| {
                let b = self.bandwidths.lock().ok();
                let devs = high.iter().map(|g| g.id.0);
                guard::size_for(b.and_then(|b| b.slowest_of(devs)))
            }),
        }
    }

    /// The guard's state on the board, for `status`.
    fn publish_guard(&self, b: &Board, guard: Option<u64>, high: &[Guarded]) {
        let h = &b.header;
        h.guard_bytes.store(guard.unwrap_or(0), Ordering::Relaxed);
        h.guard_since_ns
            .store(self.durable.since_ns.unwrap_or(0), Ordering::Relaxed);
        h.guard_durable_ns
            .store(self.durable.last_ns.unwrap_or(0), Ordering::Relaxed);
        h.guard_pid.store(self.durable.last_pid, Ordering::Relaxed);
        let bw = self
            .bandwidths
            .lock()
            .ok()
            .and_then(|bw| bw.slowest_of(high.iter().map(|g| g.id.0)));
        h.guard_bandwidth
            .store(bw.map_or(0, |x| x as u64), Ordering::Relaxed);
    }

    /// The bytes group `g` is held against: under the guard its whole footprint.
    fn charged(&self, guard: Option<u64>, g: usize, s: &GroupState) -> u64 {
        match guard {
            Some(_) if g != RT_HIGH as usize => s.dirty + s.writeback,
            _ => policy::charged(self.policy, s),
        }
    }

    /// The policy's gates, with the sync guard's where it acts.
    fn guarded_gates(
        &self,
        states: &[GroupState; GROUPS],
        room: &Room,
        guard: Option<u64>,
    ) -> Vec<policy::Gate> {
        let mut gates = self.gates(states, room);
        if let Some(budget) = guard {
            apply_sync_guard(&mut gates, states, budget);
        }
        gates
    }

    fn publish_global(&self, b: &Board, global: &Global, room: &Room, start: u64) {
        let h = &b.header;
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
        let took = end.saturating_sub(start);
        h.pass_ns_total.fetch_add(took, Ordering::Relaxed);
        h.pass_ns_max.fetch_max(took, Ordering::Relaxed);
        h.cpu_ns.store(thread_cpu_ns(), Ordering::Relaxed);
        h.heartbeat_ns.store(end, Ordering::Release);
    }

    /// The kernel's count of the bytes each governed process dirtied, once a second.
    fn read_dirtiers(&mut self, now: u64, rows: &[roster::Row]) {
        let Some(m) = &mut self.monitor else { return };
        if now.saturating_sub(self.dirtiers_at) < DIRTIERS_EVERY_NS {
            return;
        }
        let Some((dirtiers, lost)) = m.dirtiers() else {
            return;
        };
        self.dirtiers_at = now;
        self.kernel_flushes = dirtiers
            .iter()
            .filter(|d| d.flushes > 0)
            .map(|d| (d.tgid, d.flushes))
            .collect();
        let t = self.board.board();
        for r in rows {
            if let Some(d) = dirtiers.iter().find(|d| d.tgid == r.pid) {
                t.members[r.slot]
                    .kernel_dirtied
                    .store(d.pages.saturating_mul(self.page), Ordering::Relaxed);
            }
        }
        t.header.kernel_lost.store(lost, Ordering::Relaxed);
    }

    /// The limit group `g` would have with one writer (it has none now).
    fn limit_if_active(
        &self,
        states: &[GroupState; GROUPS],
        g: usize,
        room: &Room,
        guard: Option<u64>,
    ) -> u64 {
        if states[g].tasks > 0 {
            return limit_of(&self.guarded_gates(states, room, guard)[g]);
        }
        let mut with = *states;
        with[g].tasks = 1;
        limit_of(&self.guarded_gates(&with, room, guard)[g])
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

    /// Takes a last look (so the figures of the end are complete) and tells the
    /// governed processes that nobody governs any more.
    pub fn stop(&mut self) {
        self.tick();
        self.board.board().release();
    }
}

/// The guard's setting on the board, once.
fn publish_guard_setting(b: &Board, t: &Tuning) {
    let (setting, fixed) = match t.sync_guard {
        GuardSetting::Off => (crate::shm::GUARD_OFF, 0),
        GuardSetting::Auto => (crate::shm::GUARD_AUTO, 0),
        GuardSetting::Fixed(x) => (crate::shm::GUARD_FIXED, x),
    };
    b.header.guard_setting.store(setting, Ordering::Relaxed);
    b.header
        .guard_quiet_ns
        .store(t.guard_quiet.as_nanos() as u64, Ordering::Relaxed);
    b.header.guard_bytes.store(fixed, Ordering::Relaxed);
}

/// The sync guard on the policy's gates: every group below rt-high is limited to
/// `budget` bytes of dirty and write-back memory (or its own tighter limit),
/// held above it, and written back by the trickle rather than pushed whole (a
/// whole-file push makes the large requests the guard keeps off the device).
pub fn apply_sync_guard(gates: &mut [policy::Gate], states: &[GroupState], budget: u64) {
    for (g, (gate, s)) in gates.iter_mut().zip(states).enumerate() {
        if g == RT_HIGH as usize {
            continue;
        }
        if gate.limit.unlimited || gate.limit.hard > budget {
            gate.limit.unlimited = false;
            gate.limit.hard = budget;
            gate.limit.bg = gate.limit.bg.min(budget);
        }
        gate.hold = gate.hold || s.dirty + s.writeback > gate.limit.hard;
        gate.push = false;
        gate.retry_ns = policy::FAIR_RETRY_NS;
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
    use crate::admission::{Granted, Peer, admit};
    use crate::shm::wire::{Ask, Request};
    use crate::shm::{AUTO, NORMAL, OwnMap, RT_HIGH};
    use std::fs::File;
    use std::io::Write;
    use std::os::fd::AsRawFd;
    use std::os::unix::fs::MetadataExt;

    #[test]
    fn the_sync_guard_holds_the_lower_groups_within_its_budget() {
        let st = |dirty, writeback| GroupState {
            tasks: 1,
            weight: 1,
            dirty,
            writeback,
        };
        // rt-high idle, rt-low at 3 MiB, normal at 6 + 3 MiB: the policy alone
        // would let both run (a free-run ceiling of 48 MiB)
        let states = [st(0, 0), st(2 << 20, 1 << 20), st(6 << 20, 3 << 20)];
        let room = Room {
            bg: 32 << 20,
            hard: 64 << 20,
            freerun: 48 << 20,
            ungoverned: 0,
            headroom: 6 << 20,
        };
        let mut gates = policy::gates_in(Policy::WcallFair, &states, &room, WCALL_BLOCK_NS);
        assert!(!gates[NORMAL as usize].hold);
        let top = gates[RT_HIGH as usize];
        apply_sync_guard(&mut gates, &states, 8 << 20);
        assert_eq!(gates[RT_HIGH as usize], top, "rt-high is never guarded");
        let (low, normal) = (gates[1], gates[NORMAL as usize]);
        assert_eq!((low.limit.hard, low.hold), (8 << 20, false));
        assert_eq!((normal.limit.hard, normal.hold), (8 << 20, true));
        assert!(!normal.limit.unlimited && !normal.push && !low.push);
        assert_eq!(normal.retry_ns, policy::FAIR_RETRY_NS);
        // a tighter limit of the policy's own stays
        let mut tight = policy::gates_in(Policy::WcallFair, &states, &room, WCALL_BLOCK_NS);
        tight[1].limit.hard = 1 << 20;
        tight[1].limit.unlimited = false;
        apply_sync_guard(&mut tight, &states, 8 << 20);
        assert_eq!((tight[1].limit.hard, tight[1].hold), (1 << 20, true));
    }

    #[test]
    fn a_pass_charges_a_files_dirty_pages_to_its_group() {
        let dir = tempfile::tempdir().unwrap();
        let board = Arc::new(BoardMap::create("test", 2).unwrap());
        let registry = Arc::new(Mutex::new(Registry::new(oslab_sys::process::uid())));
        let mut c = Coordinator::new(
            board.clone(),
            registry.clone(),
            Policy::WcallFair,
            WCALL_BLOCK_NS,
        );
        // a child process that holds a file open for writing joins, as the
        // interposer would at its exec
        let path = dir.path().join("data");
        let mut f = File::create(&path).unwrap();
        f.write_all(&vec![1u8; 1 << 20]).unwrap();
        let m = f.metadata().unwrap();
        let mut child = std::process::Command::new("sleep")
            .arg("30")
            .stdout(f.try_clone().unwrap())
            .spawn()
            .unwrap();
        let peer = Peer {
            pid: child.id(),
            uid: oslab_sys::process::uid(),
            pidfd: None,
        };
        let req = Request {
            ask: Ask::Member,
            group: AUTO,
            pid: 0,
        };
        let Granted::Member { index, own, .. } = admit(peer, &req, &board, &registry).unwrap()
        else {
            panic!("not admitted")
        };
        let own = OwnMap::open(own.as_raw_fd()).unwrap();
        assert!(own.own().register_file(m.dev(), m.ino(), 1));
        let s = c.tick();
        assert_eq!(s[RT_HIGH as usize].tasks, 0);
        // the MiB just written is dirty or already under write back, unless the
        // flusher was very quick; it is never charged to another group
        assert!(s[NORMAL as usize].dirty + s[NORMAL as usize].writeback <= 1 << 20);
        assert_eq!(s[RT_HIGH as usize].dirty, 0);
        let b = c.board();
        assert_eq!(b.groups[NORMAL as usize].members.load(Ordering::Relaxed), 1);
        assert!(
            b.header.thresh.load(Ordering::Relaxed) > 0,
            "kernel limits read"
        );
        assert_eq!(b.header.passes.load(Ordering::Relaxed), 1);
        // a lone group of the top weight present is never held
        assert_eq!(b.groups[NORMAL as usize].hold.load(Ordering::Relaxed), 0);
        assert_eq!(
            b.members[index as usize].pid.load(Ordering::Relaxed),
            child.id()
        );
        child.kill().unwrap();
        child.wait().unwrap();
        c.tick();
        assert_eq!(
            c.board().members[index as usize]
                .pid
                .load(Ordering::Relaxed),
            0,
            "an exited process leaves the board"
        );
        c.stop();
        assert!(!c.board().coordinator_alive(monotonic_ns(), u64::MAX));
    }
}
