//! Who the governor governs: the processes admitted through its socket
//! (`crate::admission`), each held by its pidfd, with its own table, the group the
//! coordinator decides for it, and what the kernel confirms it wrote; and the
//! launchers (`oslab wcall run`) whose children join in the group they asked for.
//!
//! Shared by the listener thread, which admits, and the coordinator's pass, which
//! refreshes and retires; both hold the lock only briefly.
//!
//! Both tables are shared between users as `crate::quota` says ([`MEMBERS`],
//! [`LAUNCHERS`]): room kept for root and the coordinator's user, a cap for
//! each other user, and no live entry ever pushed out.

use std::sync::atomic::Ordering;

use crate::facts::{Ids, Io};
use crate::quota::{Quota, privileged};
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

    /// What a process joining by itself gets when it asks for `group` (AUTO: it
    /// asks for none) and no launcher among its ancestors decided (`found` is
    /// `Own`): the weight its own user's launcher's request would have. A
    /// process that outlived its governor asks, when it joins the next one, for
    /// the group it had; asking gives it no more than `oslab wcall run --group`
    /// in its own hands would.
    pub fn of_joiner(found: Lineage, uid: u32, coordinator_uid: u32, group: u32) -> Lineage {
        match found {
            Lineage::Own if group != AUTO => Lineage::of_launcher(uid, coordinator_uid, group),
            decided => decided,
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
    /// The systemd service it runs in, whose cgroup it stays in.
    pub service: Option<String>,
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
    /// are, and a process of a systemd service stays in its unit's cgroup
    /// (`crate::services`).
    pub fn placeable(&self, coordinator_uid: u32) -> bool {
        self.service.is_none()
            && (self.uid == coordinator_uid || matches!(self.lineage, Lineage::Given(_)))
    }
}

pub struct Registry {
    slots: Vec<Option<Governed>>,
    launchers: Vec<Launcher>,
    pub coordinator_uid: u32,
    /// The groups root gave system services (`--service`).
    pub services: Vec<crate::services::ServiceRule>,
    /// The governor's group cgroups, as a path of the v2 hierarchy, where it
    /// made them there (`crate::services::service_outside`).
    pub groups_at: Option<String>,
}

/// The board's slots: a user's server may run many processes, and root keeps a
/// quarter of the board.
pub const MEMBERS: Quota = Quota {
    total: MAX_MEMBERS,
    reserved: MAX_MEMBERS / 4,
    per_uid: MAX_MEMBERS / 4,
};

/// Launchers remembered at once (each `oslab wcall run` in flight is one).
pub const LAUNCHERS: Quota = Quota {
    total: 1024,
    reserved: 256,
    per_uid: 64,
};

impl Registry {
    pub fn new(coordinator_uid: u32) -> Registry {
        Registry {
            slots: (0..MAX_MEMBERS).map(|_| None).collect(),
            launchers: Vec::new(),
            coordinator_uid,
            services: Vec::new(),
            groups_at: None,
        }
    }

    pub fn slots(&self) -> impl Iterator<Item = (usize, &Governed)> {
        self.slots
            .iter()
            .enumerate()
            .filter_map(|(i, s)| s.as_ref().map(|g| (i, g)))
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

    /// The lineage a process of user `uid` with these ancestors (nearest first)
    /// inherits: from the nearest live launcher or governed process that is of
    /// its own user, of root or of the coordinator's user. Another user's
    /// launcher or process above it is passed over: no user sets the group of
    /// another user's processes (a root shell started under a user's launcher,
    /// say), only root does.
    pub fn lineage_from(&self, ancestors: &[u32], uid: u32) -> Lineage {
        let may_give = |of: u32| of == uid || privileged(of, self.coordinator_uid);
        for a in ancestors {
            if let Some(l) = self.launcher(*a) {
                if may_give(l.ids.uid()) {
                    return l.lineage;
                }
                continue;
            }
            if let Some((_, g)) = self.by_pid(*a)
                && may_give(g.uid)
            {
                return g.lineage;
            }
        }
        Lineage::Own
    }

    /// Remembers a launcher (in place of an earlier one of the same pid), when
    /// its user has room ([`LAUNCHERS`]); launchers that exited make room first,
    /// live ones are never dropped.
    pub fn add_launcher(&mut self, l: Launcher) -> Result<(), String> {
        self.launchers
            .retain(|x| x.member.pid != l.member.pid && x.member.alive());
        let uids = self.launchers.iter().map(|x| x.ids.uid());
        LAUNCHERS
            .fits(uids, l.ids.uid(), self.coordinator_uid)
            .map_err(|why| format!("the governor takes no more launchers ({why})"))?;
        self.launchers.push(l);
        Ok(())
    }

    /// A free slot for a process of user `uid`, when the user has room
    /// ([`MEMBERS`]).
    pub fn free_slot_for(&self, uid: u32) -> Result<usize, String> {
        let uids = self.slots().map(|(_, g)| g.uid);
        MEMBERS
            .fits(uids, uid, self.coordinator_uid)
            .map_err(|why| {
                format!("the governor holds as many processes as it can ({why}); this one is not governed")
            })?;
        self.slots
            .iter()
            .position(Option::is_none)
            .ok_or_else(|| "the governor holds as many processes as it can".to_string())
    }

    /// The slots of governed processes, root's and the coordinator's user's
    /// first: what a pass can do for only some of them (read their write counts,
    /// open their files) goes to those first.
    pub fn slots_privileged_first(&self) -> Vec<usize> {
        let mut order: Vec<(bool, usize)> = self
            .slots()
            .map(|(i, g)| (!privileged(g.uid, self.coordinator_uid), i))
            .collect();
        order.sort_unstable();
        order.into_iter().map(|(_, i)| i).collect()
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
    use crate::testing::{governed, launcher};

    #[test]
    fn a_process_joining_by_itself_asks_with_no_more_weight_than_its_users_launcher() {
        // a process of another user asking rt-high (rejoining) is capped by its scheduling
        let user = Lineage::of_joiner(Lineage::Own, 1001, 0, RT_HIGH);
        assert_eq!(user.group(|| NORMAL), NORMAL);
        // root's process keeps the group it had
        let root = Lineage::of_joiner(Lineage::Own, 0, 0, RT_HIGH);
        assert_eq!(root.group(|| NORMAL), RT_HIGH);
        // asking for nothing is joining by scheduling, as before
        assert_eq!(Lineage::of_joiner(Lineage::Own, 0, 0, AUTO), Lineage::Own);
        // a launcher's decision among its ancestors stands over what it asks
        let given = Lineage::Given(RT_LOW);
        assert_eq!(Lineage::of_joiner(given, 1001, 0, RT_HIGH), given);
    }

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

    /// Issue 51, attack 2: 1,030 live launchers of uid 65534 once pushed root's
    /// launcher out, and its program came back from exec in normal.
    #[test]
    fn another_users_launchers_never_push_roots_out() {
        let mut reg = Registry::new(0);
        reg.add_launcher(launcher(10, 0, RT_HIGH)).unwrap();
        let granted = (0..1030)
            .filter(|i| reg.add_launcher(launcher(100 + i, 65534, NORMAL)).is_ok())
            .count();
        assert_eq!(granted, LAUNCHERS.per_uid);
        assert_eq!(reg.lineage_from(&[10], 0), Lineage::Given(RT_HIGH));
        // users of a subordinate range together stop short of root's room
        for uid in 100_000..100_100 {
            let _ = reg.add_launcher(launcher(uid, uid, NORMAL));
        }
        assert!(reg.launchers.len() <= LAUNCHERS.total - LAUNCHERS.reserved + 1);
        assert_eq!(reg.add_launcher(launcher(11, 0, RT_LOW)), Ok(()));
        // a launcher that exited makes room for its user again
        let dead = reg
            .launchers
            .iter()
            .position(|l| l.ids.uid() == 65534)
            .unwrap();
        // a pid past the kernel's PID_MAX_LIMIT (4,194,304): no process has it,
        // whatever runs on the machine (a low pid such as 99 may well be alive)
        reg.launchers[dead].member = Member::confirmed(4_194_305, None);
        assert!(!reg.launchers[dead].member.alive());
        assert_eq!(reg.add_launcher(launcher(5000, 65534, NORMAL)), Ok(()));
    }

    /// Issue 51, attack 3: 520 processes of uid 65534 once took all 512 slots.
    #[test]
    fn one_user_cannot_fill_the_board() {
        let board = crate::shm::BoardMap::create("test", 2).unwrap();
        let mut reg = Registry::new(0);
        let mut joined = 0;
        for i in 0..520 {
            let Ok(slot) = reg.free_slot_for(65534) else {
                continue;
            };
            reg.insert(
                slot,
                governed(100 + i, 65534, Lineage::Own),
                NORMAL,
                board.board(),
            );
            joined += 1;
        }
        assert_eq!(joined, MEMBERS.per_uid);
        for uid in 1000..1010 {
            while let Ok(slot) = reg.free_slot_for(uid) {
                reg.insert(
                    slot,
                    governed(10_000 + uid, uid, Lineage::Own),
                    NORMAL,
                    board.board(),
                );
            }
        }
        assert_eq!(reg.slots().count(), MEMBERS.total - MEMBERS.reserved);
        for pid in 1..=MEMBERS.reserved as u32 {
            let slot = reg.free_slot_for(0).expect("root's room");
            reg.insert(slot, governed(pid, 0, Lineage::Own), RT_HIGH, board.board());
        }
        assert!(reg.free_slot_for(0).is_err(), "the board is full");
        assert_eq!(
            reg.slots_privileged_first()[..MEMBERS.reserved],
            reg.slots()
                .filter(|(_, g)| g.uid == 0)
                .map(|(i, _)| i)
                .collect::<Vec<_>>()[..]
        );
    }

    /// A process's group comes from a launcher or governed ancestor of its own
    /// user or of root; another user's above it is passed over.
    #[test]
    fn no_user_sets_the_group_of_another_users_process() {
        let mut reg = Registry::new(0);
        // root's launcher (pid 10) started a user's launcher (20) asking normal
        reg.add_launcher(launcher(10, 0, RT_HIGH)).unwrap();
        reg.add_launcher(launcher(20, 1001, NORMAL)).unwrap();
        // the user's own process below both: the user's launcher decides
        assert_eq!(reg.lineage_from(&[20, 10], 1001), Lineage::Asked(NORMAL));
        // a root process below the user's launcher (su, sudo): root's launcher
        assert_eq!(reg.lineage_from(&[20, 10], 0), Lineage::Given(RT_HIGH));
        // ... and with no root launcher above, its own scheduling
        assert_eq!(reg.lineage_from(&[20], 0), Lineage::Own);
        // a third user's process below the first user's: not the first's to group
        assert_eq!(reg.lineage_from(&[20], 1002), Lineage::Own);
        // a governed process of another user passes nothing down either
        let board = crate::shm::BoardMap::create("test", 2).unwrap();
        let slot = reg.free_slot_for(1001).unwrap();
        let given = Lineage::Given(RT_HIGH);
        reg.insert(slot, governed(30, 1001, given), RT_HIGH, board.board());
        assert_eq!(reg.lineage_from(&[30], 1002), Lineage::Own);
        assert_eq!(reg.lineage_from(&[30], 1001), given);
        // root's governed process passes its group to a process that dropped root
        let slot = reg.free_slot_for(0).unwrap();
        reg.insert(slot, governed(40, 0, given), RT_HIGH, board.board());
        assert_eq!(reg.lineage_from(&[40], 1002), given);
    }
}
