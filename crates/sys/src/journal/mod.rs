//! The change journal: every change oslab makes to the system goes through here.
//!
//! Before a change is made, an entry describing how to undo it is appended to a
//! journal file and synced to disk. Undo runs in reverse order when the run ends
//! normally, on SIGINT/SIGTERM/SIGHUP and on panic (the binary wires those to
//! [`finish_global`]); after a `kill -9` the file is still there and
//! `oslab restore` ([`restore_orphans`]) undoes it.
//!
//! One file per process: `journal-PID.jsonl` in [`journal_dir`] (the folders, and
//! why each is trusted, are in [`place`]). The first line names the process (pid
//! and start time, so a reused pid is not mistaken for the owner); every further
//! line is one [`Entry`] ([`file`] has the format). A file exists only while
//! changes are outstanding: a run that changes nothing leaves nothing behind.
//! Named journals (`journal-NAME.jsonl`, a testbed left up) outlive their
//! process; [`Journal::mark_complete`] says when all their changes are made.

mod file;
mod place;
mod restore;
mod undo;

use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard};

use serde::{Deserialize, Serialize};

use crate::error::{SysError, SysResult};
use crate::{owned, process};
use file::{Header, Line};

pub use file::{BadLine, MAX_JOURNAL_BYTES, shown};
pub use place::{Places, journal_dir, named_dir, places};
pub use restore::{RestoreReport, RestoredJournal, pending_orphans, restore_dead, restore_orphans};
pub use undo::{undo_entries, write_text};

/// How to take one change back.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Undo {
    /// Write `contents` back into `path` (sysctls, sysfs knobs, cgroup files).
    WriteFile { path: PathBuf, contents: String },
    /// Unmount a file system oslab mounted.
    Unmount { target: PathBuf },
    /// Detach a loop device oslab attached.
    DetachLoop { device: PathBuf },
    /// Remove a file or directory tree oslab created.
    RemovePath { path: PathBuf },
    /// Remove an empty directory (a cgroup oslab created).
    RemoveDir { path: PathBuf },
    /// Remove a cgroup oslab created, first moving any process still in it to
    /// `parent` (its parent cgroup), so a straggler cannot keep it alive.
    RemoveCgroup { path: PathBuf, parent: PathBuf },
    /// Turn cgroup v2 `controller` off for the children of `dir` again, unless a
    /// child cgroup that was not there when oslab turned it on (`children`, their
    /// names then) is there now: turning it off would take it from that cgroup
    /// (another program's limits), so it is left on and the undo says so.
    WithdrawController {
        dir: PathBuf,
        controller: String,
        children: Vec<String>,
    },
    /// Nothing can or need be undone (drop_caches); recorded for the record.
    Nothing,
}

/// One recorded change.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Entry {
    pub seq: u64,
    pub description: String,
    pub undo: Undo,
}

/// What happened when one entry was undone.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UndoOutcome {
    pub description: String,
    pub result: Result<(), String>,
}

/// An open journal of this process.
#[derive(Debug)]
pub struct Journal {
    path: PathBuf,
    file: Option<File>,
    /// An exclusive lock on `system.lock` in the journal directory, held while this
    /// journal has changes outstanding, so two oslab processes never change (and
    /// restore) the same settings at once.
    lock: Option<File>,
    /// Whether the lock is `system.lock` beside the journal (an ordinary user's)
    /// rather than the machine-wide one in /run (root's).
    lock_beside: bool,
    entries: Vec<Entry>,
    next_seq: u64,
    /// A named journal (`journal-NAME.jsonl`) rather than this process's own.
    named: bool,
    /// Whether the mark of completion follows the last entry.
    complete: bool,
    /// Whether the folder was made (if missing) and checked.
    folder_ready: bool,
}

impl Journal {
    fn at(path: PathBuf, named: bool) -> Journal {
        Journal {
            path,
            file: None,
            lock: None,
            lock_beside: !process::is_root(),
            entries: Vec::new(),
            next_seq: 1,
            named,
            complete: false,
            folder_ready: false,
        }
    }

    /// A journal for this process in `dir`; the file is created on the first change.
    pub fn new(dir: &Path) -> Journal {
        Journal::at(
            dir.join(format!("journal-{}.jsonl", std::process::id())),
            false,
        )
    }

    /// A journal with a fixed name (`journal-NAME.jsonl`) for changes meant to outlive
    /// this process, such as a testbed left up; `oslab restore` undoes it once its
    /// creator has exited, and [`Journal::load`] lets a later command take it over.
    /// Call [`Journal::mark_complete`] once every change it is meant to hold is made.
    pub fn named(dir: &Path, name: &str) -> Journal {
        Journal::at(dir.join(format!("journal-{name}.jsonl")), true)
    }

    /// Takes over an existing named journal (its entries are undone by `undo_all`).
    /// A journal with a line that cannot be read is not taken over: `oslab restore`
    /// undoes what can be read of it.
    pub fn load(dir: &Path, name: &str) -> SysResult<Option<Journal>> {
        let mut j = Journal::named(dir, name);
        if let Err(e) = std::fs::symlink_metadata(&j.path) {
            if e.kind() == std::io::ErrorKind::NotFound {
                return Ok(None);
            }
        }
        j.ensure_folder()?;
        let c = file::read(&j.path, process::euid()).map_err(|why| j.err(why))?;
        if let Some(b) = c.bad_lines().first() {
            return Err(j.err(format!(
                "line {} cannot be read ({}); `oslab restore` undoes what can be read",
                b.number, b.why
            )));
        }
        j.take_lock()?;
        j.entries = c.entries();
        j.next_seq = j.entries.iter().map(|e| e.seq).max().unwrap_or(0) + 1;
        j.complete = c.complete;
        if c.torn {
            // later lines must not be glued to the cut one
            file::rewrite(&j.path, &c.header, &c.lines, c.complete)
                .map_err(|e| j.err(e.to_string()))?;
        }
        j.file = file::open_append(&j.path).ok();
        Ok(Some(j))
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    pub fn entries(&self) -> &[Entry] {
        &self.entries
    }

    fn err(&self, detail: impl Into<String>) -> SysError {
        SysError::Journal {
            path: self.path.clone(),
            detail: detail.into(),
        }
    }

    /// Makes the journal's folder when it is missing and checks it (and every
    /// folder above it) before anything is written there.
    fn ensure_folder(&mut self) -> SysResult<()> {
        if self.folder_ready {
            return Ok(());
        }
        let dir = self.path.parent().unwrap_or(Path::new("."));
        let dir = place::prepare(dir, process::euid()).map_err(|r| self.err(r.to_string()))?;
        if let Some(name) = self.path.file_name() {
            self.path = dir.join(name);
        }
        self.folder_ready = true;
        Ok(())
    }

    /// Takes the system-wide change lock, waiting (and saying so) if another oslab
    /// process holds it.
    fn take_lock(&mut self) -> SysResult<()> {
        use std::os::fd::AsRawFd;
        if self.lock.is_some() {
            return Ok(());
        }
        // One lock for the whole machine whatever the journal directory (root), so
        // runs with different OSLAB_JOURNAL_DIR still exclude each other.
        let lock_path = if !self.lock_beside {
            PathBuf::from("/run/oslab-system.lock")
        } else {
            self.ensure_folder()?;
            self.path
                .parent()
                .unwrap_or(Path::new("."))
                .join("system.lock")
        };
        let f = owned::open_or_create(&lock_path, process::euid(), 0o600)
            .map_err(|r| self.err(r.to_string()))?;
        // SAFETY: a valid fd; flock has no memory effects.
        if unsafe { libc::flock(f.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } != 0 {
            eprintln!("oslab: another oslab run is changing the system; waiting for it to finish");
            // SAFETY: as above.
            if unsafe { libc::flock(f.as_raw_fd(), libc::LOCK_EX) } != 0 {
                return Err(self.err(std::io::Error::last_os_error().to_string()));
            }
        }
        self.lock = Some(f);
        Ok(())
    }

    fn ensure_file(&mut self) -> SysResult<&mut File> {
        if self.file.is_none() {
            self.ensure_folder()?;
            let header = Header::of_this_process(Header::this_command());
            let created = match file::create(&self.path, &header) {
                // a process that had this pid before died with changes outstanding
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists && !self.named => {
                    file::set_aside(&self.path).map_err(|e| self.err(e.to_string()))?;
                    file::create(&self.path, &header)
                }
                r => r,
            };
            let f = created.map_err(|e| {
                if e.kind() == std::io::ErrorKind::AlreadyExists {
                    self.err("is there already: another oslab command keeps its changes in it")
                } else {
                    self.err(e.to_string())
                }
            })?;
            self.file = Some(f);
        }
        Ok(self.file.as_mut().expect("just opened"))
    }

    /// Records how to undo a change that is about to be made. Returns once the entry
    /// is on disk, so the change can be made safely afterwards.
    pub fn record(&mut self, description: impl Into<String>, undo: Undo) -> SysResult<u64> {
        self.take_lock()?;
        self.append(description.into(), undo)
    }

    /// Records a change no other oslab process can touch (a cgroup named after this
    /// process, say): journaled and undone like any other, but without taking the
    /// machine-wide lock, so it never makes another oslab run wait.
    pub fn record_private(&mut self, description: impl Into<String>, undo: Undo) -> SysResult<u64> {
        self.append(description.into(), undo)
    }

    fn append(&mut self, description: String, undo: Undo) -> SysResult<u64> {
        let entry = Entry {
            seq: self.next_seq,
            description,
            undo,
        };
        // a path that is not UTF-8 cannot go into JSON: an error, so the change is
        // not made, rather than a panic
        let line = serde_json::to_string(&entry).map_err(|e| self.err(e.to_string()))?;
        self.append_line(&line)?;
        self.complete = false;
        let seq = entry.seq;
        self.next_seq += 1;
        self.entries.push(entry);
        Ok(seq)
    }

    fn append_line(&mut self, line: &str) -> SysResult<()> {
        let path = self.path.clone();
        let f = self.ensure_file()?;
        file::append_line(f, line).map_err(|e| SysError::Journal {
            path,
            detail: e.to_string(),
        })
    }

    /// Marks this named journal complete: every change it is meant to hold is
    /// made (`testbed up` finished), so it is left behind on purpose when this
    /// process exits, and the line that asks for `oslab restore` does not count
    /// it. A named journal whose process died before this (a testbed half built)
    /// is counted. A later entry makes it incomplete again.
    pub fn mark_complete(&mut self) -> SysResult<()> {
        if self.entries.is_empty() {
            return Ok(());
        }
        self.append_line(file::COMPLETE_LINE)?;
        self.complete = true;
        Ok(())
    }

    /// Undoes one entry now (e.g. a scratch directory at the end of its experiment)
    /// and drops it from the journal; the file goes when nothing is left in it.
    pub fn undo(&mut self, seq: u64) -> SysResult<()> {
        let Some(pos) = self.entries.iter().position(|e| e.seq == seq) else {
            return Ok(());
        };
        undo::apply_undo(&self.entries[pos].undo)?;
        self.forget(seq)
    }

    /// Drops an entry whose change was never made (the write it announced failed),
    /// without undoing anything, so nothing is reported as undone that was not done.
    pub fn forget(&mut self, seq: u64) -> SysResult<()> {
        let Some(pos) = self.entries.iter().position(|e| e.seq == seq) else {
            return Ok(());
        };
        self.entries.remove(pos);
        if self.entries.is_empty() {
            self.file = None;
            let _ = std::fs::remove_file(&self.path);
            self.lock = None;
        } else {
            let lines: Vec<Line> = self.entries.iter().cloned().map(Line::Entry).collect();
            let header = Header::of_this_process(Header::this_command());
            file::rewrite(&self.path, &header, &lines, self.complete)
                .map_err(|e| self.err(e.to_string()))?;
            // later appends must go to the rewritten file
            self.file = file::open_append(&self.path).ok();
        }
        Ok(())
    }

    /// Writes `value` to a file (a sysctl, a sysfs knob), journaling its old contents.
    pub fn write_file(&mut self, path: &Path, value: &str) -> SysResult<()> {
        let old = std::fs::read_to_string(path).map_err(|source| SysError::Read {
            path: path.to_path_buf(),
            source,
        })?;
        let seq = self.record(
            format!("write '{}' to {}", value.trim(), path.display()),
            Undo::WriteFile {
                path: path.to_path_buf(),
                contents: old.trim().to_string(),
            },
        )?;
        self.write_or_forget(seq, path, value)
    }

    /// Writes `value` to `path` for the entry `seq` just recorded; when the write
    /// fails the change was never made, so the entry goes.
    pub fn write_or_forget(&mut self, seq: u64, path: &Path, value: &str) -> SysResult<()> {
        let r = undo::write_text(path, value);
        if r.is_err() {
            let _ = self.forget(seq);
        }
        r
    }

    /// Undoes every entry, newest first, and removes the journal file when all
    /// succeeded (otherwise keeps the failed ones in it for `oslab restore`).
    pub fn undo_all(&mut self) -> Vec<UndoOutcome> {
        let lines: Vec<Line> = std::mem::take(&mut self.entries)
            .into_iter()
            .map(Line::Entry)
            .collect();
        self.file = None;
        // with nothing recorded, a file at this path is not this journal's (a
        // dead process's under a reused pid, or failures kept earlier)
        let outcomes = if lines.is_empty() {
            Vec::new()
        } else {
            restore::settle(&self.path, &lines).0
        };
        self.lock = None;
        outcomes
    }
}

static GLOBAL: Mutex<Option<Journal>> = Mutex::new(None);

fn lock() -> MutexGuard<'static, Option<Journal>> {
    // A panic while holding the lock must not stop the undo that follows it.
    GLOBAL.lock().unwrap_or_else(|p| p.into_inner())
}

/// Runs `f` with the process-wide journal, opening it on first use.
pub fn with_global<R>(f: impl FnOnce(&mut Journal) -> SysResult<R>) -> SysResult<R> {
    let mut g = lock();
    let j = g.get_or_insert_with(|| Journal::new(&journal_dir()));
    f(j)
}

/// Undoes every change of the process-wide journal (normal exit, signal, panic).
pub fn finish_global() -> Vec<UndoOutcome> {
    let mut g = lock();
    match g.as_mut() {
        Some(j) => j.undo_all(),
        None => Vec::new(),
    }
}

#[cfg(test)]
mod props;
#[cfg(test)]
mod reader_props;
#[cfg(test)]
// a torn journal replayed at every cut is one scenario, told in one test
#[allow(clippy::too_many_lines)]
mod tests;
