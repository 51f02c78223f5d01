//! The files whose page-cache state the coordinator charges to the groups: those
//! the interposer registered (a governed write() reached them) and those the
//! kernel saw a governed process dirty some other way (`crate::monitor`). Each is
//! opened once, read-only, after the checks of `crate::trust`, and asked for its
//! dirty and writeback pages (cachestat) every pass.

use std::collections::HashSet;
use std::fs::File;
use std::os::unix::fs::MetadataExt;
use std::sync::Arc;
use std::sync::atomic::Ordering;

use oslab_sys::fileio::cachestat;
use oslab_trace::records::DirtiedFile;
use oslab_wbsim::policy::GroupState;

use crate::members::Members;
use crate::shm::{FILE_FREE, FILE_READY, GROUPS, MAX_FILES, Table, group_index};
use crate::trust::{Budget, FileClaim, Refusal, process_exists};

/// At most this many files found through the kernel's records.
pub const MAX_DISCOVERED: usize = 1024;

/// A file slot's file, opened, and the claim it was opened for.
struct Opened {
    file: Arc<File>,
    claim: FileClaim,
}

/// A file a governed process dirtied without the interposer seeing it.
struct Discovered {
    file: Arc<File>,
    id: (u64, u64),
    pid: u32,
    /// The process slot of that process (its group, its push count).
    slot: usize,
}

pub struct Files {
    registered: Vec<Option<Opened>>,
    discovered: Vec<Discovered>,
    page: u64,
}

impl Default for Files {
    fn default() -> Self {
        Files {
            registered: (0..MAX_FILES).map(|_| None).collect(),
            discovered: Vec::new(),
            page: oslab_sys::machine::page_size(),
        }
    }
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

impl Files {
    /// Charges every governed file's dirty and writeback bytes to its group.
    pub fn measure(
        &mut self,
        t: &Table,
        members: &Members,
        budget: &mut Budget,
        states: &mut [GroupState; GROUPS],
        refused: &dyn Fn(),
    ) {
        let page = self.page;
        for (i, f) in t.files.iter().enumerate() {
            if f.state.load(Ordering::Acquire) != FILE_READY {
                self.registered[i] = None;
                continue;
            }
            let claim = FileClaim {
                pid: f.pid.load(Ordering::Relaxed),
                fd: f.fd.load(Ordering::Relaxed),
                dev: f.dev.load(Ordering::Relaxed),
                ino: f.ino.load(Ordering::Relaxed),
            };
            // a slot written over since it was opened is opened (and checked) anew
            if self.registered[i]
                .as_ref()
                .is_some_and(|o| o.claim != claim)
            {
                self.registered[i] = None;
            }
            if self.registered[i].is_none() {
                let opened = members
                    .by_pid(t, claim.pid)
                    .and_then(|m| crate::trust::open_claimed(&claim, m, budget));
                match opened {
                    Ok(file) => {
                        self.registered[i] = Some(Opened {
                            file: Arc::new(file),
                            claim,
                        })
                    }
                    Err(Refusal::Later) => continue,
                    Err(why) => {
                        if matches!(why, Refusal::No(_)) {
                            refused();
                        }
                        // refused, or the writer closed it or is gone before we
                        // looked: forget it
                        f.state.store(FILE_FREE, Ordering::Release);
                        continue;
                    }
                }
            }
            let g = group_index(f.group.load(Ordering::Relaxed));
            let Some(o) = &self.registered[i] else {
                continue;
            };
            let (d, w) = footprint(&o.file, page);
            states[g].dirty = states[g].dirty.saturating_add(d);
            states[g].writeback = states[g].writeback.saturating_add(w);
            if d == 0 && w == 0 && !process_exists(claim.pid) {
                self.registered[i] = None;
                f.state.store(FILE_FREE, Ordering::Release);
            }
        }
        self.discovered.retain(|x| {
            let (d, w) = footprint(&x.file, page);
            let g = group_index(t.procs[x.slot].group.load(Ordering::Relaxed));
            states[g].dirty = states[g].dirty.saturating_add(d);
            states[g].writeback = states[g].writeback.saturating_add(w);
            // kept while its process lives or it still has pages to write
            d > 0 || w > 0 || t.procs[x.slot].pid.load(Ordering::Relaxed) == x.pid
        });
    }

    /// Opens the files the kernel saw governed processes dirty that no slot
    /// registers yet.
    pub fn discover(
        &mut self,
        found: &[DirtiedFile],
        t: &Table,
        members: &Members,
        budget: &mut Budget,
    ) {
        let mut known: HashSet<(u64, u64)> = self.discovered.iter().map(|x| x.id).collect();
        known.extend(
            self.registered
                .iter()
                .flatten()
                .map(|o| (o.claim.dev, o.claim.ino)),
        );
        for d in found {
            if self.discovered.len() >= MAX_DISCOVERED || known.contains(&(d.dev, d.ino)) {
                continue;
            }
            let Ok(m) = members.by_pid(t, d.tgid) else {
                continue;
            };
            let Some(slot) = t
                .procs
                .iter()
                .position(|p| p.pid.load(Ordering::Relaxed) == d.tgid)
            else {
                continue;
            };
            if let Ok(file) = crate::family::open_dirtied(m, d.dev, d.ino, budget)
                && id_of(&file) == Some((d.dev, d.ino))
            {
                known.insert((d.dev, d.ino));
                t.procs[slot].unheld_files.fetch_add(1, Ordering::Relaxed);
                self.discovered.push(Discovered {
                    file: Arc::new(file),
                    id: (d.dev, d.ino),
                    pid: d.tgid,
                    slot,
                });
            }
        }
    }

    /// Every governed file of group `g`.
    pub fn of_group(&self, t: &Table, g: usize) -> Vec<Arc<File>> {
        let registered = t
            .files
            .iter()
            .zip(&self.registered)
            .filter_map(|(slot, o)| {
                let o = o.as_ref()?;
                (group_index(slot.group.load(Ordering::Relaxed)) == g).then(|| o.file.clone())
            });
        let found = self
            .discovered
            .iter()
            .filter(|x| group_index(t.procs[x.slot].group.load(Ordering::Relaxed)) == g)
            .map(|x| x.file.clone());
        registered.chain(found).collect()
    }

    /// The process slots of group `g` whose files the kernel found them dirtying
    /// without a governed write(): their writers cannot be held, only pushed.
    pub fn unheld_slots(&self, t: &Table, g: usize) -> Vec<usize> {
        let mut slots: Vec<usize> = self
            .discovered
            .iter()
            .filter(|x| group_index(t.procs[x.slot].group.load(Ordering::Relaxed)) == g)
            .map(|x| x.slot)
            .collect();
        slots.sort_unstable();
        slots.dedup();
        slots
    }

    /// Every governed file.
    pub fn all(&self) -> Vec<Arc<File>> {
        self.registered
            .iter()
            .flatten()
            .map(|o| o.file.clone())
            .chain(self.discovered.iter().map(|x| x.file.clone()))
            .collect()
    }
}
