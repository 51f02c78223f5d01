//! Who the governor governs: the processes admitted through its socket
//! (`crate::admission`), each held by its pidfd, with its own table, the group the
//! coordinator decides for it, and what the kernel confirms it wrote; and the
//! launchers (`oslab wcall run`) whose children join in the group they asked for.
//!
//! Shared by the listener thread, which admits, and the coordinator's pass, which
//! refreshes and retires; both hold the lock only briefly.

use std::sync::atomic::Ordering;

use crate::facts::{Ids, Io};
use crate::shm::{
    AUTO, Board, GROUPS, MAX_MEMBERS, MemberSlot, Own, OwnMap, group_index, lower_of,
};
use crate::trust::Member;

/// How a process's group is decided.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lineage {
    /// Given by a launcher of the coordinator's own user or of root (or inherited
    /// from a process that was): that group, or by its scheduling for AUTO.
    Given(u32),
    /// Asked for by a launcher of another user: honoured only as far as the
    /// process's own scheduling reaches (a user cannot lift their writers above
    /// what the kernel lets them run at, and so cannot hold back others').
    Asked(u32),
    /// Joined on its own: by its scheduling.
    Own,
}

impl Lineage {
    /// The group now, given the group its threads' scheduling says (`sched`).
    pub fn group(&self, sched: impl FnOnce() -> u32) -> u32 {
        match *self {
            Lineage::Given(g) if g != AUTO => group_index(g) as u32,
            Lineage::Asked(g) if g != AUTO => lower_of(g, sched()),
            _ => sched(),
        }
    }

    /// Whether the group follows the process's scheduling (and so is looked at again).
    pub fn follows_scheduling(&self) -> bool {
        !matches!(*self, Lineage::Given(g) if g != AUTO)
    }

    /// What a launcher of user `uid` asking for `group` gets from a coordinator of
    /// user `coordinator_uid`.
    pub fn of_launcher(uid: u32, coordinator_uid: u32, group: u32) -> Lineage {
        if uid == coordinator_uid || uid == 0 {
            Lineage::Given(group)
        } else {
            Lineage::Asked(group)
        }
    }
}

/// A launcher: an `oslab wcall run` whose children join in its group.
#[derive(Debug)]
pub struct Launcher {
    pub member: Member,
    pub ids: Ids,
    pub lineage: Lineage,
}

/// A governed process.
pub struct Governed {
    pub member: Member,
    pub uid: u32,
    /// Its own table; None for a static program its launcher registered.
    pub own: Option<OwnMap>,
    pub lineage: Lineage,
    /// The launcher that registered it (a static program), else 0.
    pub launcher: u32,
    pub registered_ns: u64,
    /// The kernel's write counts when it joined, and when last read.
    pub io_at_join: Option<Io>,
    pub io_last: Option<Io>,
    pub io_read_ns: u64,
    /// When the kernel last confirmed it wrote.
    pub active_ns: u64,
    /// Its own claim of its last write, as last seen.
    pub claimed_write_ns: u64,
    /// When its scheduling was last looked at.
    pub sched_read_ns: u64,
    /// The pid placed in a cgroup, and in which group.
    pub placed: Option<usize>,
}

impl Governed {
    pub fn own(&self) -> Option<&Own> {
        self.own.as_ref().map(|o| o.own())
    }

    pub fn pid(&self) -> u32 {
        self.member.pid
    }

    /// Whether the coordinator may move it into its group's cgroup: its own
    /// user's processes, and those whose group root (or that user) gave. A process
    /// of another user that joined by itself stays where its own user's limits
    /// are.
    pub fn placeable(&self, coordinator_uid: u32) -> bool {
        self.uid == coordinator_uid || matches!(self.lineage, Lineage::Given(_))
    }
}

pub struct Registry {
    slots: Vec<Option<Governed>>,
    launchers: Vec<Launcher>,
    pub coordinator_uid: u32,
}

/// At most this many launchers are remembered; the oldest dead ones go first.
const MAX_LAUNCHERS: usize = 1024;

impl Registry {
    pub fn new(coordinator_uid: u32) -> Registry {
        Registry {
            slots: (0..MAX_MEMBERS).map(|_| None).collect(),
            launchers: Vec::new(),
            coordinator_uid,
        }
    }

    pub fn slots(&self) -> impl Iterator<Item = (usize, &Governed)> {
        self.slots
            .iter()
            .enumerate()
            .filter_map(|(i, s)| s.as_ref().map(|g| (i, g)))
    }

    pub fn slots_mut(&mut self) -> impl Iterator<Item = (usize, &mut Governed)> {
        self.slots
            .iter_mut()
            .enumerate()
            .filter_map(|(i, s)| s.as_mut().map(|g| (i, g)))
    }

    pub fn get(&self, slot: usize) -> Option<&Governed> {
        self.slots.get(slot)?.as_ref()
    }

    pub fn slot_mut(&mut self, slot: usize) -> Option<&mut Governed> {
        self.slots.get_mut(slot)?.as_mut()
    }

    /// The live governed process `pid`, and its slot.
    pub fn by_pid(&self, pid: u32) -> Option<(usize, &Governed)> {
        self.slots()
            .find(|(_, g)| g.pid() == pid && g.member.alive())
    }

    /// The live launcher `pid`.
    pub fn launcher(&self, pid: u32) -> Option<&Launcher> {
        self.launchers
            .iter()
            .find(|l| l.member.pid == pid && l.member.alive())
    }

    /// The lineage a process with these ancestors (nearest first) inherits: from
    /// the nearest that is a live launcher or governed process.
    pub fn lineage_from(&self, ancestors: &[u32]) -> Lineage {
        for a in ancestors {
            if let Some(l) = self.launcher(*a) {
                return l.lineage;
            }
            if let Some((_, g)) = self.by_pid(*a) {
                return g.lineage;
            }
        }
        Lineage::Own
    }

    pub fn add_launcher(&mut self, l: Launcher) {
        self.launchers
            .retain(|x| x.member.pid != l.member.pid && x.member.alive());
        if self.launchers.len() >= MAX_LAUNCHERS {
            self.launchers.remove(0);
        }
        self.launchers.push(l);
    }

    /// A free slot, if any.
    pub fn free_slot(&self) -> Option<usize> {
        self.slots.iter().position(Option::is_none)
    }

    /// Puts `g` in slot `i` and on the board (its pid last, so a reader never sees
    /// a pid with an old process's figures).
    pub fn insert(&mut self, i: usize, g: Governed, group: u32, board: &Board) {
        let s = &board.members[i];
        clear(s);
        s.group.store(group, Ordering::Relaxed);
        s.uid.store(g.uid, Ordering::Relaxed);
        s.holdable.store(g.own.is_some() as u32, Ordering::Relaxed);
        s.launcher.store(g.launcher, Ordering::Relaxed);
        s.registered_ns.store(g.registered_ns, Ordering::Relaxed);
        s.pid.store(g.pid(), Ordering::Release);
        self.slots[i] = Some(g);
    }

    /// Takes slot `i` off the board, its last figures added to its group's totals.
    pub fn retire(&mut self, i: usize, board: &Board) -> Option<Governed> {
        let g = self.slots.get_mut(i)?.take()?;
        let s = &board.members[i];
        let r = &board.groups[group_index(s.group.load(Ordering::Relaxed))].retired;
        let add = |to: &std::sync::atomic::AtomicU64, from: &std::sync::atomic::AtomicU64| {
            let v = from.load(Ordering::Relaxed);
            let _ = to.fetch_update(Ordering::AcqRel, Ordering::Acquire, |x| {
                Some(x.saturating_add(v))
            });
        };
        r.processes.fetch_add(1, Ordering::Relaxed);
        add(&r.writes, &s.writes);
        add(&r.bytes, &s.bytes);
        add(&r.delayed_writes, &s.delayed_writes);
        add(&r.held_ns, &s.held_ns);
        add(&r.passed_through, &s.passed_through);
        add(&r.mmap_writable, &s.mmap_writable);
        s.pid.store(0, Ordering::Release);
        clear(s);
        Some(g)
    }

    /// Processes per group on the board now.
    pub fn members_per_group(&self, board: &Board) -> [u32; GROUPS] {
        let mut n = [0u32; GROUPS];
        for (i, _) in self.slots() {
            n[group_index(board.members[i].group.load(Ordering::Relaxed))] += 1;
        }
        n
    }
}

fn clear(s: &MemberSlot) {
    for x in [
        &s.registered_ns,
        &s.last_write_ns,
        &s.accounted_bytes,
        &s.writes,
        &s.bytes,
        &s.delayed_writes,
        &s.held_ns,
        &s.passed_through,
        &s.mmap_writable,
        &s.kernel_dirtied,
        &s.pushes,
    ] {
        x.store(0, Ordering::Relaxed);
    }
    for x in [&s.holdable, &s.launcher, &s.ungoverned, &s.unheld_files] {
        x.store(0, Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::shm::{NORMAL, RT_HIGH, RT_LOW};

    #[test]
    fn a_group_asked_by_another_user_goes_no_higher_than_the_scheduling() {
        let root_given = Lineage::of_launcher(0, 0, RT_HIGH);
        assert_eq!(root_given.group(|| NORMAL), RT_HIGH);
        assert!(!root_given.follows_scheduling());
        let asked = Lineage::of_launcher(1001, 0, RT_HIGH);
        assert_eq!(asked, Lineage::Asked(RT_HIGH));
        assert_eq!(asked.group(|| NORMAL), NORMAL, "no rt-high by asking");
        assert_eq!(
            asked.group(|| RT_HIGH),
            RT_HIGH,
            "SCHED_FIFO 51+ is rt-high"
        );
        assert_eq!(
            Lineage::Asked(NORMAL).group(|| RT_HIGH),
            NORMAL,
            "lower is always allowed"
        );
        assert_eq!(
            Lineage::of_launcher(1001, 1001, RT_LOW),
            Lineage::Given(RT_LOW)
        );
        assert_eq!(Lineage::Given(AUTO).group(|| RT_LOW), RT_LOW);
        assert_eq!(Lineage::Own.group(|| NORMAL), NORMAL);
        assert_eq!(Lineage::Given(77).group(|| RT_HIGH), NORMAL, "out of range");
    }
}
