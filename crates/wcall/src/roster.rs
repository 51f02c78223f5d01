//! One pass over the governed processes: the exited ones retired, each one's group
//! decided again where it follows its scheduling, its writing confirmed by the
//! kernel, its counters put on the board as far as the kernel bears them out, and
//! its placement in its group's cgroup.
//!
//! A process's own table is its word about itself. The coordinator counts a
//! process as writing (a task of its group, which sets the groups' shares) only
//! when the kernel's count of its write calls (/proc/PID/io) grew within the last
//! second, or it says it is waiting at the gate and the kernel saw it write within
//! the last ten; and it shows no more writes or bytes than the kernel counted
//! since it joined. So a process that lies moves nothing but its own figures.
//!
//! The kernel's counts are read at most once a pass, so a process that exits
//! within a pass of its last writes may be shown short of them; `oslab wcall run`
//! has the governor count the command it started before it reaps it
//! (`Ask::Count`), so the command's own figures are whole.

use std::sync::atomic::{AtomicU64, Ordering};

use crate::cgroups::GroupCgroups;
use crate::facts::{self, Io};
use crate::registry::{Governed, Registry};
use crate::shm::{Board, MemberSlot, group_index};
use crate::trust::{Budget, Refusal};

/// A process counts as a task of its group this long after the kernel saw it write.
pub const ACTIVE_NS: u64 = 1_000_000_000;
/// A process that says it is held at the gate still counts this long after the
/// kernel last saw it write.
const HELD_GRACE_NS: u64 = 10_000_000_000;
/// How often a process's scheduling is looked at again.
const SCHED_EVERY_NS: u64 = 100_000_000;
/// At most this many /proc/PID/io reads in one pass.
const IO_READS_PER_PASS: usize = 64;

/// A governed process as one pass found it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Row {
    pub slot: usize,
    pub pid: u32,
    pub group: usize,
    /// It runs the interposer (its write() calls can be held).
    pub holdable: bool,
    /// Whether it counts as a task of its group now.
    pub active: bool,
    /// Its own byte count when the pass began (what the pass's measurement covers).
    pub claimed_bytes: u64,
}

/// Per group: governed processes alive, and tasks (those writing).
pub fn counts(rows: &[Row]) -> ([u32; crate::shm::GROUPS], [u64; crate::shm::GROUPS]) {
    let mut members = [0u32; crate::shm::GROUPS];
    let mut tasks = [0u64; crate::shm::GROUPS];
    for r in rows {
        members[r.group] += 1;
        tasks[r.group] += r.active as u64;
    }
    (members, tasks)
}

pub fn pass(
    reg: &mut Registry,
    board: &Board,
    now: u64,
    budget: &mut Budget,
    cgroups: Option<&GroupCgroups>,
) -> Vec<Row> {
    let coordinator_uid = reg.coordinator_uid;
    let mut gone = Vec::new();
    let mut rows = Vec::new();
    let mut io_reads = 0;
    // root's first: the reads a pass has room for go to them before others'
    for i in reg.slots_privileged_first() {
        let Some(g) = reg.slot_mut(i) else { continue };
        let slot = &board.members[i];
        if !g.member.alive() {
            // its last figures, for its group's totals
            publish(g, slot, now, coordinator_uid);
            gone.push(i);
            continue;
        }
        let group = decide_group(g, slot, now, budget);
        if io_reads < IO_READS_PER_PASS && wants_io(g, slot, now) {
            io_reads += 1;
            read_io(g, now, budget, coordinator_uid);
        }
        let claimed = g
            .own()
            .map_or(0, |o| o.header.last_write_ns.load(Ordering::Relaxed));
        let seen = g.active_ns > 0;
        let wrote_lately = seen && now.saturating_sub(g.active_ns) <= ACTIVE_NS;
        let held_now = seen
            && now.saturating_sub(claimed) <= ACTIVE_NS
            && now.saturating_sub(g.active_ns) <= HELD_GRACE_NS;
        publish(g, slot, now, coordinator_uid);
        if let Some(cg) = cgroups
            && g.placeable(coordinator_uid)
            && g.placed != Some(group)
        {
            cg.place(g.pid(), group);
            g.placed = Some(group);
        }
        rows.push(Row {
            slot: i,
            pid: g.pid(),
            group,
            holdable: g.own.is_some(),
            active: wrote_lately || held_now,
            claimed_bytes: g
                .own()
                .map_or(0, |o| o.header.bytes.load(Ordering::Relaxed)),
        });
    }
    for i in gone {
        reg.retire(i, board);
    }
    rows
}

/// The process's group now, put on the board when it changed; and its user (a
/// server may drop root after it joined).
fn decide_group(g: &mut Governed, slot: &MemberSlot, now: u64, budget: &mut Budget) -> usize {
    let on_board = group_index(slot.group.load(Ordering::Relaxed));
    if now.saturating_sub(g.sched_read_ns) < SCHED_EVERY_NS {
        return on_board;
    }
    g.sched_read_ns = now;
    let pid = g.pid();
    if let Ok(ids) = facts::ids(pid, budget) {
        g.uid = ids.uid();
        slot.uid.store(g.uid, Ordering::Relaxed);
    }
    if !g.lineage.follows_scheduling() {
        return on_board;
    }
    let group = group_index(g.lineage.group(|| facts::sched_group(pid)));
    if group != on_board {
        slot.group.store(group as u32, Ordering::Relaxed);
    }
    group
}

/// Whether the kernel's write counts are worth reading now: the process says it
/// wrote since the last read, or its figures run ahead of what the kernel
/// confirmed, or it is a static program (which says nothing), at most every pass.
fn wants_io(g: &mut Governed, slot: &MemberSlot, now: u64) -> bool {
    let Some(own) = g.own() else {
        return now.saturating_sub(g.io_read_ns) >= 100_000_000;
    };
    let claimed = own.header.last_write_ns.load(Ordering::Relaxed);
    let ahead = own.header.bytes.load(Ordering::Relaxed) > slot.bytes.load(Ordering::Relaxed);
    if claimed != g.claimed_write_ns || ahead {
        g.claimed_write_ns = claimed;
        return true;
    }
    false
}

/// Reads governed process `pid`'s kernel counts now and puts its figures on the
/// board: for a child that has exited and is not yet reaped (its counts are
/// final), so its last writes are not cut by a stale reading. False when it is
/// not governed.
pub(crate) fn count_now(reg: &mut Registry, pid: u32, board: &Board, budget: &mut Budget) -> bool {
    let coordinator_uid = reg.coordinator_uid;
    let Some(i) = reg.by_pid(pid).map(|(i, _)| i) else {
        return false;
    };
    let now = oslab_sys::clock::monotonic_ns();
    if let Some(g) = reg.slot_mut(i) {
        read_io(g, now, budget, coordinator_uid);
        publish(g, &board.members[i], now, coordinator_uid);
    }
    true
}

pub(crate) fn read_io(g: &mut Governed, now: u64, budget: &mut Budget, coordinator_uid: u32) {
    match facts::io(g.pid(), budget) {
        Ok(io) => {
            if g.io_last
                .is_some_and(|last| io.wchar > last.wchar || io.syscw > last.syscw)
            {
                g.active_ns = now;
            }
            g.io_last = Some(io);
            g.io_read_ns = now;
        }
        Err(Refusal::Later) => {}
        // unreadable: see `unbounded`
        Err(_) => {
            if unbounded(g, coordinator_uid) {
                g.active_ns = g.claimed_write_ns.min(now);
            }
        }
    }
}

/// Whether a process is taken at its word: only under a coordinator that is not
/// root, which governs that user's own programs alone (`crate::admission`), so a
/// lie can mislead no one but that user about their own program. (A user cannot
/// read the kernel's counts of a process that has exited and not been reaped:
/// /proc gives a dead process's files to root.) Under root, everyone is bounded
/// by the kernel's counts.
fn unbounded(g: &Governed, coordinator_uid: u32) -> bool {
    coordinator_uid != 0 && g.uid == coordinator_uid
}

/// The process's counters on the board: its own figures, bounded by what the
/// kernel counted since it joined (see `unbounded`), and by themselves (no more
/// delayed writes than writes, no longer held than alive).
pub(crate) fn publish(g: &Governed, slot: &MemberSlot, now: u64, coordinator_uid: u32) {
    let Some(own) = g.own() else {
        return;
    };
    let h = &own.header;
    let kernel = match (g.io_at_join, g.io_last) {
        _ if unbounded(g, coordinator_uid) => Io {
            wchar: u64::MAX,
            syscw: u64::MAX,
        },
        (Some(a), Some(b)) => Io {
            wchar: b.wchar.saturating_sub(a.wchar),
            syscw: b.syscw.saturating_sub(a.syscw),
        },
        _ => Io::default(),
    };
    let get = |x: &AtomicU64| x.load(Ordering::Relaxed);
    let writes = get(&h.writes).min(kernel.syscw);
    slot.writes.store(writes, Ordering::Relaxed);
    slot.bytes
        .store(get(&h.bytes).min(kernel.wchar), Ordering::Relaxed);
    slot.passed_through
        .store(get(&h.passed_through).min(kernel.syscw), Ordering::Relaxed);
    slot.delayed_writes
        .store(get(&h.delayed_writes).min(writes), Ordering::Relaxed);
    slot.held_ns.store(
        get(&h.held_ns).min(now.saturating_sub(g.registered_ns)),
        Ordering::Relaxed,
    );
    slot.mmap_writable.store(
        get(&h.mmap_writable).min(u32::MAX as u64),
        Ordering::Relaxed,
    );
    slot.ungoverned.store(
        (h.ungoverned.load(Ordering::Relaxed) != 0) as u32,
        Ordering::Relaxed,
    );
    if g.active_ns > 0 {
        slot.last_write_ns.store(g.active_ns, Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(group: usize, active: bool) -> Row {
        Row {
            slot: 0,
            pid: 1,
            group,
            holdable: true,
            active,
            claimed_bytes: 0,
        }
    }

    #[test]
    fn members_count_when_registered_and_tasks_when_writing() {
        let rows = [row(0, false), row(1, true), row(1, false), row(2, true)];
        let (m, t) = counts(&rows);
        assert_eq!(m, [1, 2, 1]);
        assert_eq!(t, [0, 1, 1]);
    }
}
