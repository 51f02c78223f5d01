//! Who may join the governor, and in which group: decided from what the kernel
//! says of the process that connected to the socket (SO_PEERCRED, its pidfd, its
//! /proc files), never from what it asks.
//!
//! - The peer is refused when it is pid 1 or the coordinator itself, when its user
//!   and group ids are not all alike (a set-user-ID or set-group-ID program, or one
//!   part way through changing user), when it changed user since it connected, or,
//!   for a coordinator that is not root, when it is another user.
//! - A process joins in the group of its nearest ancestor that is a launcher or a
//!   governed process of this governor and of its own user, of root or of the
//!   coordinator's user (`crate::registry::Registry::lineage_from`): a group a
//!   launcher of root or of the coordinator's own user gave stands; one asked by a
//!   launcher of another user is honoured only as far as the process's own
//!   scheduling reaches; with no such ancestor its scheduling alone decides.
//! - Each user has room for so many processes and launchers, and root's room is
//!   kept (`crate::registry::MEMBERS`, `LAUNCHERS`); a request past them is
//!   refused, and no entry is pushed out for it.
//! - A launcher may register a child that cannot join itself (a static program)
//!   only as `crate::family::verify_launched` allows.
//! - A process in a system service that root named (`--service UNIT=GROUP`) is in
//!   that group whoever its launcher was (`crate::services`).

use std::os::fd::OwnedFd;
use std::sync::Mutex;

use crate::facts::{self, Ids};
use crate::registry::{Governed, Launcher, Lineage, Registry};
use crate::services::InService;
use crate::shm::wire::{Ask, Request};
use crate::shm::{AUTO, BoardMap, GROUPS, OwnMap, monotonic_ns};
use crate::trust::{Budget, Member, Refusal, pidfd_open, valid_pid};

/// The kernel's word on who connected.
pub struct Peer {
    pub pid: u32,
    /// The effective uid when it connected.
    pub uid: u32,
    /// SO_PEERPIDFD where the kernel has it.
    pub pidfd: Option<OwnedFd>,
}

/// What a request was granted.
pub enum Granted {
    /// A slot on the board and the process's own table.
    Member {
        index: u32,
        group: u32,
        own: OwnedFd,
    },
    Launcher,
    /// A slot on the board and the group decided (a launched program; a regroup).
    Slot {
        index: u32,
        group: u32,
    },
    Look,
    Counted,
}

/// How far up a joining process's ancestors are looked at for its lineage.
const ANCESTORS: usize = 32;
/// /proc a single request may read.
const REQUEST_PROC_BYTES: usize = 1 << 20;

fn no(why: &str) -> String {
    why.to_string()
}

fn refusal(r: Refusal) -> String {
    match r {
        Refusal::No(why) => why.to_string(),
        Refusal::Gone => "the process is gone".into(),
        Refusal::Later => "the governor is busy; try again".into(),
    }
}

/// Checks the peer and holds it by a pidfd. The coordinator's own process may
/// launch (a governor of `oslab wcall run --private` starts the command itself)
/// but is never governed.
fn check_peer(
    peer: Peer,
    ask: Ask,
    coordinator_uid: u32,
    budget: &mut Budget,
) -> Result<(Member, Ids), String> {
    let pid = valid_pid(peer.pid).ok_or_else(|| no("a process of another pid namespace"))?;
    if pid == 1 || (pid == std::process::id() && ask == Ask::Member) {
        return Err(no("pid 1 and the coordinator are never governed"));
    }
    let pidfd = match peer.pidfd {
        Some(fd) => Some(fd),
        None => pidfd_open(pid).map_err(refusal)?,
    };
    let member = Member::confirmed(pid, pidfd);
    let ids = facts::ids(pid, budget).map_err(refusal)?;
    if !ids.consistent() {
        return Err(no(
            "a set-user-ID or set-group-ID process is never governed",
        ));
    }
    if ids.uids[1] != peer.uid {
        return Err(no("the process changed user since it connected"));
    }
    if coordinator_uid != 0 && ids.uid() != coordinator_uid {
        return Err(no(
            "this governor is another user's; only root's governs other users",
        ));
    }
    // what was read was this process's: the pidfd still names a live one
    if !member.alive() {
        return Err(no("the process is gone"));
    }
    Ok((member, ids))
}

/// Decides a request from `peer`.
pub fn admit(
    peer: Peer,
    req: &Request,
    board: &BoardMap,
    registry: &Mutex<Registry>,
) -> Result<Granted, String> {
    let mut budget = Budget::new(REQUEST_PROC_BYTES);
    if req.ask == Ask::Look {
        return Ok(Granted::Look);
    }
    let coordinator_uid = registry.lock().map_err(|_| no("poisoned"))?.coordinator_uid;
    let (member, ids) = check_peer(peer, req.ask, coordinator_uid, &mut budget)?;
    match req.ask {
        Ask::Member => {
            check_group(req.group)?;
            join(member, &ids, req.group, board, registry, &mut budget)
        }
        Ask::Launcher => {
            check_group(req.group)?;
            let lineage = Lineage::of_launcher(ids.uid(), coordinator_uid, req.group);
            let mut reg = registry.lock().map_err(|_| no("poisoned"))?;
            reg.add_launcher(Launcher {
                member,
                ids,
                lineage,
            })?;
            Ok(Granted::Launcher)
        }
        Ask::Launched => launched(&member, req.pid, board, registry, &mut budget),
        Ask::Count => count(&member, req.pid, board, registry, &mut budget),
        Ask::Regroup => regroup(&member, board, registry),
        Ask::Look => Ok(Granted::Look),
    }
}

fn check_group(group: u32) -> Result<(), String> {
    if group as usize >= GROUPS && group != AUTO {
        return Err(no("no such group"));
    }
    Ok(())
}

/// A governed process whose scheduling changed: its group decided again now, from
/// the kernel's word, rather than at the coordinator's next look (up to 100 ms
/// later, when its first writes would have gone through its old group's gate).
fn regroup(
    member: &Member,
    board: &BoardMap,
    registry: &Mutex<Registry>,
) -> Result<Granted, String> {
    let reg = registry.lock().map_err(|_| no("poisoned"))?;
    let Some((i, g)) = reg.by_pid(member.pid) else {
        return Err(no("the process is not governed"));
    };
    let group = g.lineage.group(|| facts::sched_group(member.pid));
    board.board().members[i]
        .group
        .store(group, std::sync::atomic::Ordering::Relaxed);
    Ok(Granted::Slot {
        index: i as u32,
        group,
    })
}

/// A launcher's child that has exited (a zombie until the launcher reaps it): its
/// figures are put on the board now, from the kernel's final counts.
fn count(
    launcher: &Member,
    child: u32,
    board: &BoardMap,
    registry: &Mutex<Registry>,
    budget: &mut Budget,
) -> Result<Granted, String> {
    let mut reg = registry.lock().map_err(|_| no("poisoned"))?;
    if reg.launcher(launcher.pid).is_none() {
        return Err(no("only a launcher may ask for its child to be counted"));
    }
    if facts::ppid(child, budget).map_err(refusal)? != launcher.pid {
        return Err(no("the process is not a child of the launcher"));
    }
    if !crate::roster::count_now(&mut reg, child, board.board(), budget) {
        return Err(no("the process is not governed"));
    }
    Ok(Granted::Counted)
}

fn join(
    member: Member,
    ids: &Ids,
    asked: u32,
    board: &BoardMap,
    registry: &Mutex<Registry>,
    budget: &mut Budget,
) -> Result<Granted, String> {
    let pid = member.pid;
    let ancestors = facts::ancestors(pid, ANCESTORS, budget);
    let io = facts::io(pid, budget).ok();
    let (own, own_fd) = OwnMap::create().map_err(|e| e.to_string())?;
    let mut reg = registry.lock().map_err(|_| no("poisoned"))?;
    // the same process again (it ran exec): its earlier table is done with
    if let Some((i, _)) = reg.by_pid(pid) {
        reg.retire(i, board.board());
    }
    let in_service = service_of(pid, &reg, budget);
    let found = reg.lineage_from(&ancestors, ids.uid());
    let joiner = Lineage::of_joiner(found, ids.uid(), reg.coordinator_uid, asked);
    let lineage = given_by_service(joiner, &in_service);
    let index = reg.free_slot_for(ids.uid())?;
    let group = lineage.group(|| facts::sched_group(pid));
    let now = monotonic_ns();
    let g = Governed {
        member,
        uid: ids.uid(),
        own: Some(own),
        lineage,
        launcher: 0,
        registered_ns: now,
        io_at_join: io,
        io_last: io,
        io_read_ns: now,
        active_ns: 0,
        claimed_write_ns: 0,
        sched_read_ns: now,
        placed: None,
        service: in_service.unit,
    };
    reg.insert(index, g, group, board.board());
    Ok(Granted::Member {
        index: index as u32,
        group,
        own: own_fd,
    })
}

fn launched(
    launcher: &Member,
    child: u32,
    board: &BoardMap,
    registry: &Mutex<Registry>,
    budget: &mut Budget,
) -> Result<Granted, String> {
    let mut reg = registry.lock().map_err(|_| no("poisoned"))?;
    let Some(l) = reg.launcher(launcher.pid) else {
        return Err(no(
            "only a launcher (`oslab wcall run`) may register a program it started",
        ));
    };
    let m = crate::family::verify_launched(child, &l.member, &l.ids, budget).map_err(refusal)?;
    let in_service = service_of(child, &reg, budget);
    let (lineage, uid) = (given_by_service(l.lineage, &in_service), l.ids.uid());
    if reg.by_pid(child).is_some() {
        return Err(no("the process is governed already"));
    }
    let index = reg.free_slot_for(uid)?;
    let group = lineage.group(|| facts::sched_group(child));
    let now = monotonic_ns();
    let io = facts::io(child, budget).ok();
    let g = Governed {
        member: m,
        uid,
        own: None,
        lineage,
        launcher: launcher.pid,
        registered_ns: now,
        io_at_join: io,
        io_last: io,
        io_read_ns: now,
        active_ns: 0,
        claimed_write_ns: 0,
        sched_read_ns: now,
        placed: None,
        service: in_service.unit,
    };
    reg.insert(index, g, group, board.board());
    Ok(Granted::Slot {
        index: index as u32,
        group,
    })
}

/// Where `pid` runs as far as systemd services go (`crate::services`); nothing
/// where its cgroup file cannot be read.
fn service_of(pid: u32, reg: &Registry, budget: &mut Budget) -> InService {
    budget
        .read(&format!("/proc/{pid}/cgroup"), 4096)
        .ok()
        .and_then(|b| String::from_utf8(b).ok())
        .map(|text| InService::of(&text, &reg.services, reg.groups_at.as_deref()))
        .unwrap_or_default()
}

/// A group root gave the process's system service stands over what its
/// launcher asked or its scheduling says; one root or the coordinator's user
/// gave by launcher stands over the service's.
fn given_by_service(lineage: Lineage, s: &InService) -> Lineage {
    match (lineage, s.given) {
        (Lineage::Given(g), _) if g != AUTO => lineage,
        (_, Some(g)) => Lineage::Given(g),
        _ => lineage,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::shm::{NORMAL, RT_HIGH};
    use std::sync::atomic::Ordering;

    fn me() -> Peer {
        Peer {
            pid: std::process::id(),
            // SAFETY: geteuid cannot fail.
            uid: unsafe { libc::geteuid() },
            pidfd: None,
        }
    }

    fn ask(ask: Ask, group: u32, pid: u32) -> Request {
        Request { ask, group, pid }
    }

    #[test]
    fn the_coordinator_itself_and_pid_1_are_refused() {
        let board = BoardMap::create("test", 2).unwrap();
        let reg = Mutex::new(Registry::new(0));
        // this test process is the coordinator here
        let e = admit(me(), &ask(Ask::Member, AUTO, 0), &board, &reg)
            .err()
            .unwrap();
        assert!(e.contains("never governed"), "{e}");
        let one = Peer {
            pid: 1,
            uid: 0,
            pidfd: None,
        };
        let e = admit(one, &ask(Ask::Member, AUTO, 0), &board, &reg)
            .err()
            .unwrap();
        assert!(e.contains("never governed"), "{e}");
        let nobody = Peer {
            pid: 0,
            uid: 0,
            pidfd: None,
        };
        assert!(admit(nobody, &ask(Ask::Member, AUTO, 0), &board, &reg).is_err());
        assert!(matches!(
            admit(me(), &ask(Ask::Look, 0, 0), &board, &reg),
            Ok(Granted::Look)
        ));
    }

    #[test]
    fn a_child_joins_in_its_launchers_group_and_a_stranger_by_its_scheduling() {
        let board = BoardMap::create("test", 2).unwrap();
        // SAFETY: geteuid cannot fail.
        let reg = Mutex::new(Registry::new(unsafe { libc::geteuid() }));
        let mut child = std::process::Command::new("sleep")
            .arg("30")
            .spawn()
            .unwrap();
        // an orphan, not a descendant of this process: its parent exits at once
        let out = std::process::Command::new("sh")
            .args(["-c", "sleep 30 >/dev/null 2>&1 & echo $!"])
            .output()
            .unwrap();
        let stranger: u32 = String::from_utf8_lossy(&out.stdout).trim().parse().unwrap();
        // this process launches `child` for rt-high (as the in-process governor does)
        let mut b = Budget::new(1 << 20);
        let ids = facts::ids(std::process::id(), &mut b).unwrap();
        reg.lock()
            .unwrap()
            .add_launcher(Launcher {
                member: Member::confirmed(
                    std::process::id(),
                    pidfd_open(std::process::id()).unwrap(),
                ),
                ids,
                lineage: Lineage::Given(RT_HIGH),
            })
            .unwrap();
        let peer = |pid| Peer {
            pid,
            uid: ids.uids[1],
            pidfd: None,
        };
        let got = admit(peer(child.id()), &ask(Ask::Member, AUTO, 0), &board, &reg).unwrap();
        let Granted::Member { index, group, .. } = got else {
            panic!("not a member")
        };
        assert_eq!(group, RT_HIGH);
        let slot = &board.board().members[index as usize];
        assert_eq!(slot.pid.load(Ordering::Relaxed), child.id());
        assert_eq!(slot.holdable.load(Ordering::Relaxed), 1);
        // the stranger is not our descendant: `sleep` runs SCHED_OTHER, so normal
        let Granted::Member { group, .. } =
            admit(peer(stranger), &ask(Ask::Member, AUTO, 0), &board, &reg).unwrap()
        else {
            panic!("not a member")
        };
        assert_eq!(group, NORMAL);
        // a launched registration from a process that is no launcher is refused
        let e = admit(
            peer(stranger),
            &ask(Ask::Launched, 0, child.id()),
            &board,
            &reg,
        )
        .err()
        .unwrap();
        assert!(e.contains("only a launcher"), "{e}");
        // the stranger turns SCHED_FIFO 55 (as root may make it): asked to look
        // again, the coordinator moves it to rt-high at once, not a pass later
        if oslab_sys::process::is_root() {
            let p = libc::sched_param { sched_priority: 55 };
            // SAFETY: sched_setscheduler of our own child with a local param.
            assert_eq!(
                unsafe { libc::sched_setscheduler(stranger as i32, libc::SCHED_FIFO, &p) },
                0
            );
            let got = admit(peer(stranger), &ask(Ask::Regroup, AUTO, 0), &board, &reg).unwrap();
            let Granted::Slot { index, group } = got else {
                panic!("not regrouped")
            };
            assert_eq!(group, RT_HIGH);
            assert_eq!(
                board.board().members[index as usize]
                    .group
                    .load(Ordering::Relaxed),
                RT_HIGH
            );
        }
        child.kill().unwrap();
        child.wait().unwrap();
        // SAFETY: SIGKILL to the orphan this test started.
        unsafe { libc::kill(stranger as i32, libc::SIGKILL) };
    }
}
