//! Entries for the unit tests of the tables: processes and launchers of any user,
//! each a made-up pid held by a pidfd of this (live) test process.

use crate::facts::Ids;
use crate::registry::{Governed, Launcher, Lineage};
use crate::trust::Member;

pub fn member(pid: u32) -> Member {
    let me = std::process::id();
    Member::confirmed(pid, crate::trust::pidfd_open(me).unwrap())
}

pub fn ids(uid: u32) -> Ids {
    Ids {
        uids: [uid; 4],
        gids: [uid; 4],
    }
}

/// A launcher of `uid` asking for `group` of root's governor.
pub fn launcher(pid: u32, uid: u32, group: u32) -> Launcher {
    Launcher {
        member: member(pid),
        ids: ids(uid),
        lineage: Lineage::of_launcher(uid, 0, group),
    }
}

pub fn governed(pid: u32, uid: u32, lineage: Lineage) -> Governed {
    Governed {
        member: member(pid),
        uid,
        own: None,
        lineage,
        launcher: 0,
        registered_ns: 0,
        io_at_join: None,
        io_last: None,
        io_read_ns: 0,
        active_ns: 0,
        claimed_write_ns: 0,
        sched_read_ns: 0,
        placed: None,
        service: None,
    }
}
