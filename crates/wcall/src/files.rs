//! The files whose page-cache state the coordinator charges to the groups: those
//! a governed process registered in its own table (a governed write() reached
//! them) and those the kernel saw a governed process dirty some other way
//! (`crate::monitor`). Each is opened once, read-only, after the checks of
//! `crate::trust`, and asked for its dirty and writeback pages (cachestat) every
//! pass. A file stays charged to its process's group after the process exits,
//! until its pages are written back.

use std::collections::{HashMap, HashSet};
use std::fs::File;
use std::os::unix::fs::MetadataExt;
use std::sync::Arc;
use std::sync::atomic::Ordering;

use oslab_sys::fileio::cachestat;
use oslab_trace::records::DirtiedFile;
use oslab_wbsim::policy::GroupState;

use crate::quota::{Quota, Tally};
use crate::registry::{Governed, Registry};
use crate::shm::own::{FILE_FREE, FILE_READY};
use crate::shm::{Board, GROUPS, group_index};
use crate::trickle::Guarded;
use crate::trust::{Budget, FileClaim, Refusal};

fn guarded(id: (u64, u64), file: &Arc<File>, dirty: bool) -> Guarded {
    Guarded {
        id,
        file: file.clone(),
        dirty,
    }
}

/// Files by group into the sync guard's lanes, (rt-high's, the others'): one
/// entry per file however many processes write it, dirty if any saw it dirty;
/// a file rt-high writes too is rt-high's, so no file is in both.
pub fn split_lanes(files: impl Iterator<Item = (usize, Guarded)>) -> (Vec<Guarded>, Vec<Guarded>) {
    let mut high: HashMap<(u64, u64), Guarded> = HashMap::new();
    let mut low: HashMap<(u64, u64), Guarded> = HashMap::new();
    for (g, f) in files {
        let lane = if g == RT_HIGH { &mut high } else { &mut low };
        lane.entry(f.id)
            .and_modify(|e| e.dirty |= f.dirty)
            .or_insert(f);
    }
    let shared: Vec<(u64, u64)> = low
        .keys()
        .filter(|id| high.contains_key(id))
        .copied()
        .collect();
    for id in shared {
        if let (Some(f), Some(h)) = (low.remove(&id), high.get_mut(&id)) {
            h.dirty |= f.dirty;
        }
    }
    (high.into_values().collect(), low.into_values().collect())
}

/// Where a file's process is no longer on the board.
const NORMAL: usize = crate::shm::NORMAL as usize;
const RT_HIGH: usize = crate::shm::RT_HIGH as usize;

/// Files found through the kernel's records, shared between users as
/// `crate::quota` says.
pub const DISCOVERED: Quota = Quota {
    total: 1024,
    reserved: 256,
    per_uid: 256,
};

/// Files governed processes registered that the coordinator holds open at once
/// (each process's own table has room for `OWN_FILES`): root's room is kept, so
/// no user's claims can spend the descriptors root's files need.
pub const CLAIMED: Quota = Quota {
    total: 4096,
    reserved: 1024,
    per_uid: 1024,
};

/// A governed file, opened, and where it came from.
struct Opened {
    file: Arc<File>,
    /// The user of the process that registered it, when it was opened.
    uid: u32,
    claim: FileClaim,
    /// The board slot of its process, and the group it is charged to.
    slot: usize,
    group: usize,
    /// It had dirty pages at the last pass.
    dirty: bool,
}

/// A file a governed process dirtied without the interposer seeing it.
struct Discovered {
    file: Arc<File>,
    id: (u64, u64),
    pid: u32,
    uid: u32,
    slot: usize,
    group: usize,
    dirty: bool,
}

#[derive(Default)]
pub struct Files {
    /// Keyed by (board slot, file slot of that process's table).
    registered: HashMap<(usize, usize), Opened>,
    discovered: Vec<Discovered>,
}

fn footprint(f: &File, page: u64) -> (u64, u64) {
    match cachestat(f) {
        Ok(cs) => (
            cs.dirty.saturating_mul(page),
            cs.writeback.saturating_mul(page),
        ),
        Err(_) => (0, 0),
    }
}

fn id_of(f: &File) -> Option<(u64, u64)> {
    f.metadata().ok().map(|m| (m.dev(), m.ino()))
}

/// The group of board slot `slot` while process `pid` holds it.
fn group_of(board: &Board, slot: usize, pid: u32) -> Option<usize> {
    let s = &board.members[slot];
    (s.pid.load(Ordering::Relaxed) == pid).then(|| group_index(s.group.load(Ordering::Relaxed)))
}

impl Files {
    /// Opens the files governed processes newly registered, forgets those they
    /// let go of, and charges every governed file's dirty and writeback bytes to
    /// its group (a file two processes write counts once).
    pub fn measure(
        &mut self,
        reg: &Registry,
        board: &Board,
        budget: &mut Budget,
        states: &mut [GroupState; GROUPS],
        refused: &dyn Fn(),
    ) {
        self.open_registered(reg, board, budget, refused);
        let page = oslab_sys::machine::page_size();
        let mut counted = HashSet::new();
        // (dirty, busy: dirty or under write back)
        let mut charge = |id: (u64, u64), g: usize, f: &File| {
            let (d, w) = footprint(f, page);
            if counted.insert(id) {
                states[g].dirty = states[g].dirty.saturating_add(d);
                states[g].writeback = states[g].writeback.saturating_add(w);
            }
            (d > 0, d > 0 || w > 0)
        };
        self.registered.retain(|_, o| {
            let owner = group_of(board, o.slot, o.claim.pid);
            if let Some(g) = owner {
                o.group = g;
            }
            let busy;
            (o.dirty, busy) = charge((o.claim.dev, o.claim.ino), o.group, &o.file);
            // kept while its process lives or it still has pages to write
            busy || owner.is_some()
        });
        self.discovered.retain_mut(|x| {
            let owner = group_of(board, x.slot, x.pid);
            if let Some(g) = owner {
                x.group = g;
            }
            let busy;
            (x.dirty, busy) = charge(x.id, x.group, &x.file);
            busy || owner.is_some()
        });
    }

    /// Opens the files governed processes newly registered, root's first and each
    /// user's within its room ([`CLAIMED`]); a claim past it stays in the
    /// process's table and is opened once its user has room.
    fn open_registered(
        &mut self,
        reg: &Registry,
        board: &Board,
        budget: &mut Budget,
        refused: &dyn Fn(),
    ) {
        let uids = self.registered.values().map(|o| o.uid);
        let mut tally = Tally::of(uids, reg.coordinator_uid);
        for i in reg.slots_privileged_first() {
            let Some(g) = reg.get(i) else { continue };
            let Some(own) = g.own() else { continue };
            for (k, f) in own.files.iter().enumerate() {
                if f.state.load(Ordering::Acquire) != FILE_READY {
                    self.forget((i, k), &mut tally);
                    continue;
                }
                let claim = FileClaim {
                    pid: g.pid(),
                    fd: f.fd.load(Ordering::Relaxed),
                    dev: f.dev.load(Ordering::Relaxed),
                    ino: f.ino.load(Ordering::Relaxed),
                };
                // a slot written over since it was opened is opened (and checked) anew
                if self
                    .registered
                    .get(&(i, k))
                    .is_some_and(|o| o.claim == claim)
                {
                    continue;
                }
                self.forget((i, k), &mut tally);
                if CLAIMED.fits_in(&tally, g.uid).is_err() {
                    continue;
                }
                match crate::trust::open_claimed(&claim, &g.member, budget) {
                    Ok(file) => {
                        self.keep_claimed((i, k), g, claim, file, board);
                        tally.add(g.uid);
                    }
                    Err(Refusal::Later) => return,
                    Err(why) => {
                        if matches!(why, Refusal::No(_)) {
                            refused();
                        }
                        // refused, or closed before we looked: the process's own
                        // slot is freed for its next file
                        f.state.store(FILE_FREE, Ordering::Release);
                    }
                }
            }
        }
    }

    fn forget(&mut self, key: (usize, usize), tally: &mut Tally) {
        if let Some(o) = self.registered.remove(&key) {
            tally.remove(o.uid);
        }
    }

    fn keep_claimed(
        &mut self,
        (i, k): (usize, usize),
        g: &Governed,
        claim: FileClaim,
        file: File,
        board: &Board,
    ) {
        let group = group_of(board, i, g.pid()).unwrap_or(NORMAL);
        let opened = Opened {
            file: Arc::new(file),
            uid: g.uid,
            claim,
            slot: i,
            group,
            dirty: false,
        };
        self.registered.insert((i, k), opened);
    }

    /// Opens the files the kernel saw governed processes dirty that no process
    /// registered.
    pub fn discover(
        &mut self,
        found: &[DirtiedFile],
        reg: &Registry,
        board: &Board,
        budget: &mut Budget,
    ) {
        let mut known: HashSet<(u64, u64)> = self.discovered.iter().map(|x| x.id).collect();
        known.extend(self.registered.values().map(|o| (o.claim.dev, o.claim.ino)));
        let uids = self.discovered.iter().map(|x| x.uid);
        let mut tally = Tally::of(uids, reg.coordinator_uid);
        for d in found {
            if known.contains(&(d.dev, d.ino)) {
                continue;
            }
            let Some((slot, g)) = reg.by_pid(d.tgid) else {
                continue;
            };
            // each user within its room, root's kept
            if DISCOVERED.fits_in(&tally, g.uid).is_err() {
                continue;
            }
            if let Ok(file) = crate::family::open_dirtied(&g.member, d.dev, d.ino, budget)
                && id_of(&file) == Some((d.dev, d.ino))
            {
                known.insert((d.dev, d.ino));
                tally.add(g.uid);
                board.members[slot]
                    .unheld_files
                    .fetch_add(1, Ordering::Relaxed);
                self.discovered.push(Discovered {
                    file: Arc::new(file),
                    id: (d.dev, d.ino),
                    pid: d.tgid,
                    uid: g.uid,
                    slot,
                    group: group_of(board, slot, d.tgid).unwrap_or(NORMAL),
                    dirty: false,
                });
            }
        }
    }

    /// Every governed file of group `g`.
    pub fn of_group(&self, g: usize) -> Vec<Arc<File>> {
        let registered = self
            .registered
            .values()
            .filter(|o| o.group == g)
            .map(|o| o.file.clone());
        let found = self
            .discovered
            .iter()
            .filter(|x| x.group == g)
            .map(|x| x.file.clone());
        registered.chain(found).collect()
    }

    /// The sync guard's two lanes: rt-high's files and the other groups', one
    /// entry per file, each marked with whether it was dirty at the last pass.
    pub fn for_trickle(&self) -> (Vec<Guarded>, Vec<Guarded>) {
        let registered = self.registered.values().map(|o| {
            let id = (o.claim.dev, o.claim.ino);
            (o.group, guarded(id, &o.file, o.dirty))
        });
        let found = self
            .discovered
            .iter()
            .map(|x| (x.group, guarded(x.id, &x.file, x.dirty)));
        split_lanes(registered.chain(found))
    }

    /// The board slots of group `g` whose files the kernel found them dirtying
    /// without a governed write(): their writers cannot be held, only pushed.
    pub fn unheld_slots(&self, board: &Board, g: usize) -> Vec<usize> {
        let mut slots: Vec<usize> = self
            .discovered
            .iter()
            .filter(|x| x.group == g && group_of(board, x.slot, x.pid).is_some())
            .map(|x| x.slot)
            .collect();
        slots.sort_unstable();
        slots.dedup();
        slots
    }

    /// Every governed file.
    pub fn all(&self) -> Vec<Arc<File>> {
        self.registered
            .values()
            .map(|o| o.file.clone())
            .chain(self.discovered.iter().map(|x| x.file.clone()))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_file_goes_to_one_lane_once_and_rt_high_keeps_what_it_shares() {
        let dir = tempfile::tempdir().unwrap();
        let file = |name: &str, dirty: bool| {
            let path = dir.path().join(name);
            let f = Arc::new(File::create(&path).unwrap());
            let m = f.metadata().unwrap();
            guarded((m.dev(), m.ino()), &f, dirty)
        };
        let (wal, table, copy) = (file("wal", false), file("table", false), file("copy", true));
        let shared = file("shared", false);
        let table_dirty = Guarded {
            dirty: true,
            ..table.clone()
        };
        let (high, low) = split_lanes(
            [
                (RT_HIGH, wal.clone()),
                (RT_HIGH, table.clone()),
                // a second backend's handle on the same table, which it dirtied
                (RT_HIGH, table_dirty),
                (NORMAL, copy.clone()),
                // the copy's group dirtied it, rt-high writes it too
                (
                    NORMAL,
                    Guarded {
                        dirty: true,
                        ..shared.clone()
                    },
                ),
                (RT_HIGH, shared.clone()),
            ]
            .into_iter(),
        );
        let ids = |v: &[Guarded]| {
            let mut ids: Vec<(u64, u64)> = v.iter().map(|g| g.id).collect();
            ids.sort_unstable();
            ids
        };
        let mut want_high = vec![wal.id, table.id, shared.id];
        want_high.sort_unstable();
        assert_eq!(ids(&high), want_high);
        assert_eq!(
            ids(&low),
            vec![copy.id],
            "the shared file is rt-high's alone"
        );
        let t = high.iter().find(|g| g.id == table.id).unwrap();
        assert!(t.dirty, "dirty when any handle saw it dirty");
        assert!(!high.iter().find(|g| g.id == wal.id).unwrap().dirty);
        let s = high.iter().find(|g| g.id == shared.id).unwrap();
        assert!(s.dirty, "what the other lane saw dirty stays dirty");
    }

    /// Five processes of another user claim 1,280 files between them: the
    /// coordinator opens that user's room's worth, and root's process's claim,
    /// made last, is opened in the same pass.
    #[test]
    fn another_users_claims_leave_roots_files_their_room() {
        use crate::registry::Lineage;
        use crate::shm::own::OWN_FILES;
        use crate::shm::{BoardMap, OwnMap};
        use std::os::fd::AsRawFd;
        oslab_sys::process::raise_open_files_limit(8192);
        let dir = tempfile::tempdir().unwrap();
        let board = BoardMap::create("test", 2).unwrap();
        let mut reg = Registry::new(0);
        // this process stands for every member: the kernel confirms its descriptors
        let me = std::process::id();
        let mut held = Vec::new();
        let mut join = |uid: u32, claims: usize| {
            let (own, _fd) = OwnMap::create().unwrap();
            for k in 0..claims {
                let f = File::create(dir.path().join(format!("{uid}-{}", held.len()))).unwrap();
                let m = f.metadata().unwrap();
                assert!(
                    own.own()
                        .register_file(m.dev(), m.ino(), f.as_raw_fd() as u32)
                );
                held.push((k, f));
            }
            let mut g = crate::testing::governed(me, uid, Lineage::Own);
            g.own = Some(own);
            let slot = reg.free_slot_for(uid).unwrap();
            reg.insert(slot, g, crate::shm::NORMAL, board.board());
        };
        for _ in 0..5 {
            join(65534, OWN_FILES);
        }
        join(0, 1);
        let mut files = Files::default();
        let mut states = [GroupState::default(); GROUPS];
        let mut budget = Budget::new(crate::trust::PASS_PROC_BYTES);
        files.measure(&reg, board.board(), &mut budget, &mut states, &|| {});
        let of = |f: &Files, uid: u32| f.registered.values().filter(|o| o.uid == uid).count();
        assert_eq!(of(&files, 0), 1, "root's claim is opened first");
        for _ in 0..5 {
            let mut budget = Budget::new(crate::trust::PASS_PROC_BYTES);
            files.measure(&reg, board.board(), &mut budget, &mut states, &|| {});
        }
        assert_eq!(
            of(&files, 65534),
            CLAIMED.per_uid,
            "the user's room, no more"
        );
    }
}
