//! The change journal: every change oslab makes to the system goes through here.
//!
//! Before a change is made, an entry describing how to undo it is appended to a
//! journal file and synced to disk. Undo runs in reverse order when the run ends
//! normally, on SIGINT/SIGTERM/SIGHUP and on panic (the binary wires those to
//! [`finish_global`]); after a `kill -9` the file is still there and
//! `oslab restore` ([`restore_orphans`]) undoes it.
//!
//! One file per process: `journal-PID.jsonl` in [`journal_dir`]. The first line names
//! the process (pid and start time, so a reused pid is not mistaken for the owner);
//! every further line is one [`Entry`]. A file exists only while changes are
//! outstanding: a run that changes nothing leaves nothing behind.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard};

use serde::{Deserialize, Serialize};

use crate::error::{SysError, SysResult};
use crate::fsread::Root;
use crate::process;

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

#[derive(Debug, Clone, Serialize, Deserialize)]
struct Header {
    oslab_journal: u32,
    pid: u32,
    start_time: u64,
    command: String,
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
}

/// Where journals live: `$OSLAB_JOURNAL_DIR`, else `/run/oslab` for root, else
/// `$XDG_RUNTIME_DIR/oslab`, else `$TMPDIR/oslab-UID`. /run is cleared at boot, exactly
/// when every change a journal could undo (sysctls, mounts, loop devices) is gone too.
pub fn journal_dir() -> PathBuf {
    if let Some(d) = std::env::var_os("OSLAB_JOURNAL_DIR") {
        return PathBuf::from(d);
    }
    if process::is_root() {
        return PathBuf::from("/run/oslab");
    }
    if let Some(d) = std::env::var_os("XDG_RUNTIME_DIR") {
        return PathBuf::from(d).join("oslab");
    }
    std::env::temp_dir().join(format!("oslab-{}", process::uid()))
}

impl Journal {
    /// A journal for this process in `dir`; the file is created on the first change.
    pub fn new(dir: &Path) -> Journal {
        Journal {
            path: dir.join(format!("journal-{}.jsonl", std::process::id())),
            file: None,
            lock: None,
            lock_beside: !process::is_root(),
            entries: Vec::new(),
            next_seq: 1,
        }
    }

    /// A journal with a fixed name (`journal-NAME.jsonl`) for changes meant to outlive
    /// this process, such as a testbed left up; `oslab restore` undoes it once its
    /// creator has exited, and [`Journal::load`] lets a later command take it over.
    pub fn named(dir: &Path, name: &str) -> Journal {
        Journal {
            path: dir.join(format!("journal-{name}.jsonl")),
            file: None,
            lock: None,
            lock_beside: !process::is_root(),
            entries: Vec::new(),
            next_seq: 1,
        }
    }

    /// Takes over an existing named journal (its entries are undone by `undo_all`).
    pub fn load(dir: &Path, name: &str) -> SysResult<Option<Journal>> {
        let mut j = Journal::named(dir, name);
        if !j.path.exists() {
            return Ok(None);
        }
        let (_, entries) = read_journal(&j.path).map_err(|e| j.err(e))?;
        j.next_seq = entries.iter().map(|e| e.seq).max().unwrap_or(0) + 1;
        j.entries = entries;
        j.take_lock()?;
        j.file = OpenOptions::new().append(true).open(&j.path).ok();
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
            let dir = self.path.parent().unwrap_or(Path::new("."));
            // the lock lives beside the journal, whose folder may not exist yet
            std::fs::create_dir_all(dir).map_err(|e| self.err(e.to_string()))?;
            dir.join("system.lock")
        };
        let f = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(lock_path)
            .map_err(|e| self.err(e.to_string()))?;
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
            if let Some(dir) = self.path.parent() {
                std::fs::create_dir_all(dir).map_err(|e| self.err(e.to_string()))?;
            }
            let pid = std::process::id();
            let header = Header {
                oslab_journal: 1,
                pid,
                start_time: process::start_time(&Root::live(), pid).unwrap_or(0),
                // args() would panic on an argument that is not UTF-8
                command: std::env::args_os()
                    .map(|a| a.to_string_lossy().into_owned())
                    .collect::<Vec<_>>()
                    .join(" "),
            };
            let mut f = OpenOptions::new()
                .create(true)
                .write(true)
                .truncate(true)
                .open(&self.path)
                .map_err(|e| self.err(e.to_string()))?;
            let line = serde_json::to_string(&header).expect("header serialises");
            writeln!(f, "{line}").map_err(|e| self.err(e.to_string()))?;
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
        let path = self.path.clone();
        let f = self.ensure_file()?;
        writeln!(f, "{line}")
            .and_then(|_| f.sync_data())
            .map_err(|e| SysError::Journal {
                path,
                detail: e.to_string(),
            })?;
        let seq = entry.seq;
        self.next_seq += 1;
        self.entries.push(entry);
        Ok(seq)
    }

    /// Undoes one entry now (e.g. a scratch directory at the end of its experiment)
    /// and drops it from the journal; the file goes when nothing is left in it.
    pub fn undo(&mut self, seq: u64) -> SysResult<()> {
        let Some(pos) = self.entries.iter().position(|e| e.seq == seq) else {
            return Ok(());
        };
        apply_undo(&self.entries[pos].undo)?;
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
            rewrite(&self.path, &self.entries).map_err(|e| self.err(e.to_string()))?;
            // later appends must go to the rewritten file
            self.file = OpenOptions::new().append(true).open(&self.path).ok();
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
        let r = write_text(path, value);
        if r.is_err() {
            let _ = self.forget(seq);
        }
        r
    }

    /// Undoes every entry, newest first, and removes the journal file when all
    /// succeeded (otherwise keeps the failed ones in it for `oslab restore`).
    pub fn undo_all(&mut self) -> Vec<UndoOutcome> {
        let entries = std::mem::take(&mut self.entries);
        self.file = None;
        let outcomes = settle(&self.path, &entries);
        self.lock = None;
        outcomes
    }
}

fn write_text(path: &Path, value: &str) -> SysResult<()> {
    std::fs::write(path, value).map_err(|source| SysError::Write {
        path: path.to_path_buf(),
        source,
    })
}

fn rewrite(path: &Path, entries: &[Entry]) -> std::io::Result<()> {
    let pid = std::process::id();
    let header = Header {
        oslab_journal: 1,
        pid,
        start_time: process::start_time(&Root::live(), pid).unwrap_or(0),
        command: "kept after failed undo".into(),
    };
    let mut text = serde_json::to_string(&header).expect("header serialises") + "\n";
    for e in entries {
        text += &(serde_json::to_string(e).expect("entry serialises") + "\n");
    }
    std::fs::write(path, text)
}

/// Undoes the entries of the journal at `path`, then removes the file, or keeps in it
/// only the entries whose undo failed so that `oslab restore` can try them again.
fn settle(path: &Path, entries: &[Entry]) -> Vec<UndoOutcome> {
    let outcomes = undo_entries(entries);
    // outcomes are newest first; keep the failures in their original order
    let mut failed: Vec<Entry> = entries
        .iter()
        .rev()
        .zip(&outcomes)
        .filter(|(_, o)| o.result.is_err())
        .map(|(e, _)| e.clone())
        .collect();
    if failed.is_empty() {
        let _ = std::fs::remove_file(path);
    } else {
        failed.reverse();
        let _ = rewrite(path, &failed);
    }
    outcomes
}

/// Undoes `entries` newest first; one outcome per entry in that order.
pub fn undo_entries(entries: &[Entry]) -> Vec<UndoOutcome> {
    entries
        .iter()
        .rev()
        .map(|e| UndoOutcome {
            description: e.description.clone(),
            result: apply_undo(&e.undo).map_err(|err| err.to_string()),
        })
        .collect()
}

fn apply_undo(undo: &Undo) -> SysResult<()> {
    match undo {
        Undo::WriteFile { path, contents } => write_text(path, contents),
        Undo::Unmount { target } => unmount(target),
        Undo::DetachLoop { device } => detach_loop(device),
        Undo::RemovePath { path } => match std::fs::symlink_metadata(path) {
            Err(_) => Ok(()),
            Ok(m) if m.is_dir() => {
                std::fs::remove_dir_all(path).map_err(|source| SysError::Write {
                    path: path.clone(),
                    source,
                })
            }
            Ok(_) => std::fs::remove_file(path).map_err(|source| SysError::Write {
                path: path.clone(),
                source,
            }),
        },
        Undo::RemoveDir { path } => match std::fs::remove_dir(path) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
            r => r.map_err(|source| SysError::Write {
                path: path.clone(),
                source,
            }),
        },
        Undo::RemoveCgroup { path, parent } => remove_cgroup(path, parent),
        Undo::Nothing => Ok(()),
    }
}

fn remove_cgroup(path: &Path, parent: &Path) -> SysResult<()> {
    // A process moved out may still be exiting; a cgroup empties within moments.
    for attempt in 0..50 {
        if !path.exists() {
            return Ok(());
        }
        if let Ok(pids) = std::fs::read_to_string(path.join("cgroup.procs")) {
            for pid in pids.split_whitespace() {
                let _ = std::fs::write(parent.join("cgroup.procs"), pid);
            }
        }
        match std::fs::remove_dir(path) {
            Ok(()) => return Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
            Err(source) if attempt == 49 => {
                return Err(SysError::Write {
                    path: path.to_path_buf(),
                    source,
                });
            }
            Err(_) => std::thread::sleep(std::time::Duration::from_millis(20)),
        }
    }
    Ok(())
}

fn cpath(p: &Path) -> SysResult<std::ffi::CString> {
    use std::os::unix::ffi::OsStrExt;
    std::ffi::CString::new(p.as_os_str().as_bytes())
        .map_err(|_| SysError::Other(format!("path {} holds a NUL byte", p.display())))
}

fn unmount(target: &Path) -> SysResult<()> {
    let c = cpath(target)?;
    // SAFETY: c is a valid NUL-terminated path.
    if unsafe { libc::umount2(c.as_ptr(), 0) } == 0 {
        return Ok(());
    }
    let err = std::io::Error::last_os_error();
    match err.raw_os_error() {
        // Not mounted (any more), or gone: nothing to undo.
        Some(libc::EINVAL) | Some(libc::ENOENT) => Ok(()),
        // Busy: detach lazily so it goes as soon as the last user leaves.
        // SAFETY: as above.
        Some(libc::EBUSY) if unsafe { libc::umount2(c.as_ptr(), libc::MNT_DETACH) } == 0 => Ok(()),
        _ => Err(SysError::Syscall {
            call: "umount2",
            source: err,
        }),
    }
}

const LOOP_CLR_FD: libc::c_ulong = 0x4C01;

fn detach_loop(device: &Path) -> SysResult<()> {
    use std::os::fd::AsRawFd;
    let f = match File::open(device) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(source) => {
            return Err(SysError::Read {
                path: device.to_path_buf(),
                source,
            });
        }
    };
    // SAFETY: LOOP_CLR_FD takes no argument; the fd is open for the call's duration.
    if unsafe { libc::ioctl(f.as_raw_fd(), LOOP_CLR_FD, 0) } == 0 {
        return Ok(());
    }
    let err = std::io::Error::last_os_error();
    match err.raw_os_error() {
        Some(libc::ENXIO) => Ok(()), // not attached
        _ => Err(SysError::Syscall {
            call: "ioctl(LOOP_CLR_FD)",
            source: err,
        }),
    }
}

/// What `oslab restore` found and did for one journal file.
#[derive(Debug, Clone)]
pub struct RestoredJournal {
    pub path: PathBuf,
    pub pid: u32,
    pub command: String,
    pub outcomes: Vec<UndoOutcome>,
}

/// The result of [`restore_orphans`].
#[derive(Debug, Clone, Default)]
pub struct RestoreReport {
    pub restored: Vec<RestoredJournal>,
    /// Journals of oslab processes still running, left alone.
    pub live: Vec<(PathBuf, u32)>,
    /// Files that could not be read as journals.
    pub unreadable: Vec<(PathBuf, String)>,
}

fn read_journal(path: &Path) -> Result<(Header, Vec<Entry>), String> {
    // bytes, not text: a cut inside a character must not make the file unreadable
    let bytes = std::fs::read(path).map_err(|e| e.to_string())?;
    let mut lines = bytes
        .split_inclusive(|&b| b == b'\n')
        .filter(|l| !l.trim_ascii().is_empty());
    let header: Header = serde_json::from_slice(lines.next().ok_or("empty file")?)
        .map_err(|e| format!("bad header: {e}"))?;
    let mut entries = Vec::new();
    for l in lines {
        // A line cut short by a crash mid-write is the last one, without its
        // newline (the cut may fall inside a character, or just before the
        // newline); its change was never made, because changes are made only after
        // the whole line is synced.
        if !l.ends_with(b"\n") {
            break;
        }
        match serde_json::from_slice::<Entry>(l) {
            Ok(e) => entries.push(e),
            Err(_) => break,
        }
    }
    Ok((header, entries))
}

/// Changes left by oslab processes that are no longer running: (journal files,
/// entries in them), for the line that tells a user to run `oslab restore`.
/// Unreadable files count as one entry each: they are worth a look too. Named
/// journals (a testbed left up, applied advice) are kept on purpose and not counted.
pub fn pending_orphans(dir: &Path) -> (usize, usize) {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return (0, 0);
    };
    let mut files = 0;
    let mut entries = 0;
    for e in rd.filter_map(|e| e.ok()) {
        let name = e.file_name();
        let Some(name) = name.to_str() else { continue };
        let per_process = name
            .strip_prefix("journal-")
            .and_then(|n| n.strip_suffix(".jsonl"))
            .is_some_and(|n| n.parse::<u32>().is_ok());
        if !per_process {
            continue;
        }
        match read_journal(&e.path()) {
            Ok((h, list)) => {
                if h.pid == std::process::id()
                    || process::process_alive(&Root::live(), h.pid, h.start_time)
                {
                    continue;
                }
                files += 1;
                entries += list.len();
            }
            Err(_) => {
                files += 1;
                entries += 1;
            }
        }
    }
    (files, entries)
}

/// Undoes the journals in `dir` left by processes that are no longer running (all of
/// them, running or not, with `include_live`).
pub fn restore_orphans(dir: &Path, include_live: bool) -> RestoreReport {
    let mut report = RestoreReport::default();
    let Ok(rd) = std::fs::read_dir(dir) else {
        return report;
    };
    let mut paths: Vec<PathBuf> = rd
        .filter_map(|e| e.ok())
        .map(|e| e.path())
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with("journal-") && n.ends_with(".jsonl"))
        })
        .collect();
    paths.sort();
    let me = std::process::id();
    for path in paths {
        match read_journal(&path) {
            Err(e) => report.unreadable.push((path, e)),
            Ok((h, entries)) => {
                let alive =
                    h.pid != me && process::process_alive(&Root::live(), h.pid, h.start_time);
                if alive && !include_live {
                    report.live.push((path, h.pid));
                    continue;
                }
                let outcomes = settle(&path, &entries);
                report.restored.push(RestoredJournal {
                    path,
                    pid: h.pid,
                    command: h.command,
                    outcomes,
                });
            }
        }
    }
    report
}

/// Undoes the journal process `pid` left in `dir`, once that process is gone (a
/// child oslab process killed on purpose, say); None when there is none or it
/// still runs.
pub fn restore_dead(dir: &Path, pid: u32) -> Option<Vec<UndoOutcome>> {
    let path = dir.join(format!("journal-{pid}.jsonl"));
    let (h, entries) = read_journal(&path).ok()?;
    if h.pid != pid || process::process_alive(&Root::live(), h.pid, h.start_time) {
        return None;
    }
    Some(settle(&path, &entries))
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
mod tests {
    use super::*;

    #[test]
    fn a_cgroup_undo_removes_its_directory_and_tolerates_it_gone() {
        let dir = tempfile::tempdir().unwrap();
        let cg = dir.path().join("oslab-wcall-1");
        std::fs::create_dir(&cg).unwrap();
        let undo = Undo::RemoveCgroup {
            path: cg.clone(),
            parent: dir.path().to_path_buf(),
        };
        apply_undo(&undo).unwrap();
        assert!(!cg.exists());
        apply_undo(&undo).unwrap();
        // The entry's JSON is stable for `oslab restore` of older journals.
        let json = serde_json::to_string(&undo).unwrap();
        assert!(json.contains("\"kind\":\"remove_cgroup\""), "{json}");
    }

    #[test]
    fn a_private_record_takes_no_machine_wide_lock() {
        let dir = tempfile::tempdir().unwrap();
        let mut j = Journal::new(dir.path());
        j.record_private("private", Undo::Nothing).unwrap();
        assert!(j.lock.is_none());
        j.record("shared", Undo::Nothing).unwrap();
        assert!(j.lock.is_some());
        j.undo_all();
    }

    #[test]
    fn undo_runs_newest_first_and_removes_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("knob");
        std::fs::write(&target, "10\n").unwrap();
        let mut j = Journal::new(dir.path());
        assert!(!j.path().exists(), "no file before the first change");
        j.write_file(&target, "20").unwrap();
        j.write_file(&target, "30").unwrap();
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "30");
        assert!(j.path().exists());
        let out = j.undo_all();
        assert_eq!(out.len(), 2);
        assert!(out[0].description.contains("'30'"));
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "10");
        assert!(!j.path().exists());
    }

    #[test]
    fn restore_undoes_a_dead_process_journal() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("knob");
        let scratch = dir.path().join("scratch");
        std::fs::create_dir(&scratch).unwrap();
        std::fs::write(scratch.join("f"), "x").unwrap();
        std::fs::write(&target, "new").unwrap();
        // A journal as a killed process (pid 1 with an impossible start time) left it.
        let header = r#"{"oslab_journal":1,"pid":1,"start_time":18446744073709551615,"command":"oslab run x"}"#;
        let e1 = serde_json::to_string(&Entry {
            seq: 1,
            description: "scratch".into(),
            undo: Undo::RemovePath {
                path: scratch.clone(),
            },
        })
        .unwrap();
        let e2 = serde_json::to_string(&Entry {
            seq: 2,
            description: "knob".into(),
            undo: Undo::WriteFile {
                path: target.clone(),
                contents: "old".into(),
            },
        })
        .unwrap();
        let jp = dir.path().join("journal-1.jsonl");
        std::fs::write(&jp, format!("{header}\n{e1}\n{e2}\n{{\"seq\":3,\"desc")).unwrap();
        let report = restore_orphans(dir.path(), false);
        assert_eq!(report.restored.len(), 1);
        assert_eq!(report.restored[0].outcomes.len(), 2);
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "old");
        assert!(!scratch.exists());
        assert!(!jp.exists());
        // Nothing left: a second restore finds nothing.
        assert!(restore_orphans(dir.path(), false).restored.is_empty());
    }

    #[test]
    fn a_live_owner_is_left_alone() {
        let dir = tempfile::tempdir().unwrap();
        // this test's own parent process is alive; use our own pid's parent? Use pid 1.
        let st = process::start_time(&Root::live(), 1).unwrap_or(0);
        let header = format!(r#"{{"oslab_journal":1,"pid":1,"start_time":{st},"command":"init"}}"#);
        let jp = dir.path().join("journal-1.jsonl");
        std::fs::write(&jp, format!("{header}\n")).unwrap();
        let report = restore_orphans(dir.path(), false);
        if process::start_time(&Root::live(), 1).is_some() {
            assert_eq!(report.live.len(), 1);
            assert!(jp.exists());
        }
    }

    #[test]
    fn an_unreaped_owner_is_restored() {
        // a killed oslab whose parent has not reaped it yet is a zombie: its
        // journal is an orphan's
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let pid = child.id();
        let root = Root::live();
        let start = process::start_time(&root, pid).unwrap();
        while crate::parse::pidstat::read(&root, pid).is_some_and(|s| s.state != 'Z') {
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        let dir = tempfile::tempdir().unwrap();
        let scratch = dir.path().join("scratch");
        std::fs::create_dir(&scratch).unwrap();
        let header =
            format!(r#"{{"oslab_journal":1,"pid":{pid},"start_time":{start},"command":"oslab"}}"#);
        let entry = serde_json::json!({
            "seq": 1,
            "description": "scratch",
            "undo": {"kind": "remove_path", "path": scratch},
        });
        let jp = dir.path().join(format!("journal-{pid}.jsonl"));
        std::fs::write(&jp, format!("{header}\n{entry}\n")).unwrap();
        let report = restore_orphans(dir.path(), false);
        child.wait().unwrap();
        assert!(report.live.is_empty());
        assert_eq!(report.restored.len(), 1);
        assert!(!scratch.exists() && !jp.exists());
    }

    #[test]
    fn one_entry_can_be_undone_early() {
        let dir = tempfile::tempdir().unwrap();
        let a = dir.path().join("a");
        let b = dir.path().join("b");
        std::fs::write(&a, "").unwrap();
        std::fs::write(&b, "").unwrap();
        let mut j = Journal::new(dir.path());
        let sa = j.record("a", Undo::RemovePath { path: a.clone() }).unwrap();
        let sb = j.record("b", Undo::RemovePath { path: b.clone() }).unwrap();
        j.undo(sa).unwrap();
        assert!(!a.exists() && b.exists());
        let (_, left) = read_journal(j.path()).unwrap();
        assert_eq!(left.len(), 1);
        j.record("c", Undo::Nothing).unwrap();
        assert_eq!(read_journal(j.path()).unwrap().1.len(), 2);
        j.undo(sb).unwrap();
        j.undo_all();
        assert!(!b.exists() && !j.path().exists());
    }

    #[test]
    fn a_failed_undo_stays_in_the_journal() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("knob");
        std::fs::write(&target, "1").unwrap();
        let mut j = Journal::new(dir.path());
        j.write_file(&target, "2").unwrap();
        j.record(
            "impossible",
            Undo::WriteFile {
                path: dir.path().join("no/such/dir/file"),
                contents: "x".into(),
            },
        )
        .unwrap();
        let out = j.undo_all();
        assert!(out[0].result.is_err());
        assert!(out[1].result.is_ok());
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "1");
        let (_, kept) = read_journal(j.path()).unwrap();
        assert_eq!(kept.len(), 1);
        assert_eq!(kept[0].description, "impossible");
    }

    #[test]
    fn pending_changes_of_dead_processes_are_counted() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(pending_orphans(dir.path()), (0, 0));
        assert_eq!(pending_orphans(&dir.path().join("absent")), (0, 0));
        let dead = r#"{"oslab_journal":1,"pid":1,"start_time":18446744073709551615,"command":"oslab run x"}"#;
        let entry = r#"{"seq":1,"description":"x","undo":{"kind":"nothing"}}"#;
        std::fs::write(
            dir.path().join("journal-1.jsonl"),
            format!("{dead}\n{entry}\n{entry}\n"),
        )
        .unwrap();
        // a testbed left up on purpose is not an interrupted run
        std::fs::write(
            dir.path().join("journal-testbed.jsonl"),
            format!("{dead}\n{entry}\n"),
        )
        .unwrap();
        // our own journal is not an orphan
        let mut j = Journal::new(dir.path());
        j.record_private("mine", Undo::Nothing).unwrap();
        assert_eq!(pending_orphans(dir.path()), (1, 2));
        j.undo_all();
    }

    /// Regression: as an ordinary user the journal folder did not exist when the
    /// machine-wide lock beside it was opened, so the first change failed.
    #[test]
    fn the_first_change_creates_the_journal_folder() {
        let dir = tempfile::tempdir().unwrap();
        let nested = dir.path().join("a").join("b");
        let mut j = Journal::new(&nested);
        j.lock_beside = true; // as an ordinary user
        j.record("first", Undo::Nothing).unwrap();
        assert!(j.path().exists());
        j.undo_all();
        assert!(!j.path().exists());
    }

    #[test]
    fn a_change_that_was_never_made_is_not_undone() {
        let dir = tempfile::tempdir().unwrap();
        let mut j = Journal::new(dir.path());
        let target = dir.path().join("no-such-dir").join("knob");
        let seq = j
            .record(
                "knob",
                Undo::WriteFile {
                    path: target.clone(),
                    contents: "old".into(),
                },
            )
            .unwrap();
        assert!(j.write_or_forget(seq, &target, "new").is_err());
        assert!(j.entries().is_empty());
        assert!(j.undo_all().is_empty(), "nothing reported as undone");
        assert!(!j.path().exists());
    }

    #[test]
    fn garbage_is_reported_not_fatal() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("journal-9.jsonl"), "not json\n").unwrap();
        let report = restore_orphans(dir.path(), false);
        assert_eq!(report.unreadable.len(), 1);
    }

    /// A crash can cut the journal anywhere in the line being written. For every
    /// byte offset of the last line (inside a character, and just before its
    /// newline too), `restore_orphans` undoes exactly the complete entries before
    /// it, newest first, never the cut one (its change was never made: changes are
    /// made only after the whole line is synced), and removes the file.
    #[test]
    fn a_journal_torn_anywhere_in_its_last_line_undoes_the_complete_entries() {
        let dir = tempfile::tempdir().unwrap();
        let knobs: Vec<PathBuf> = (0..4)
            .map(|i| dir.path().join(format!("knob-{i}")))
            .collect();
        let gone = dir.path().join("scratch");
        let header = r#"{"oslab_journal":1,"pid":1,"start_time":18446744073709551615,"command":"oslab run x"}"#;
        let mut entries: Vec<Entry> = knobs
            .iter()
            .enumerate()
            .map(|(i, k)| Entry {
                seq: i as u64 + 1,
                // wide characters, so some cuts fall inside one
                description: format!("write to knob {i}: 50 µs → «x»"),
                undo: Undo::WriteFile {
                    path: k.clone(),
                    contents: format!("old-{i}"),
                },
            })
            .collect();
        entries.insert(
            1,
            Entry {
                seq: 9,
                description: "scratch".into(),
                undo: Undo::RemovePath { path: gone.clone() },
            },
        );
        let lines: Vec<String> = entries
            .iter()
            .map(|e| serde_json::to_string(e).unwrap())
            .collect();
        let (last, complete) = lines.split_last().unwrap();
        let before = format!("{header}\n{}\n", complete.join("\n"));
        let last = format!("{last}\n");
        assert!(
            last.len() != last.chars().count(),
            "the last line has wide characters"
        );
        let jp = dir.path().join("journal-1.jsonl");
        for cut in 0..last.len() {
            for k in &knobs {
                std::fs::write(k, "new").unwrap();
            }
            std::fs::create_dir_all(&gone).unwrap();
            let mut bytes = before.clone().into_bytes();
            bytes.extend_from_slice(&last.as_bytes()[..cut]);
            std::fs::write(&jp, &bytes).unwrap();

            let report = restore_orphans(dir.path(), false);

            assert!(
                report.unreadable.is_empty(),
                "cut at {cut}: {:?}",
                report.unreadable
            );
            assert_eq!(report.restored.len(), 1, "cut at {cut}");
            let undone: Vec<&str> = report.restored[0]
                .outcomes
                .iter()
                .map(|o| {
                    assert!(o.result.is_ok(), "cut at {cut}: {o:?}");
                    o.description.as_str()
                })
                .collect();
            let expected: Vec<&str> = entries[..entries.len() - 1]
                .iter()
                .rev()
                .map(|e| e.description.as_str())
                .collect();
            assert_eq!(undone, expected, "cut at {cut}");
            for (i, k) in knobs.iter().enumerate() {
                let want = if i < 3 {
                    format!("old-{i}")
                } else {
                    "new".into()
                };
                assert_eq!(
                    std::fs::read_to_string(k).unwrap(),
                    want,
                    "cut at {cut}, knob {i}"
                );
            }
            assert!(!gone.exists(), "cut at {cut}");
            assert!(!jp.exists(), "cut at {cut}: the journal is removed");
        }
    }

    /// A path that is not UTF-8 cannot be written into the JSON journal: recording
    /// it is an error (so the change is not made), never a panic.
    #[test]
    fn a_path_that_is_not_utf8_is_refused_not_a_panic() {
        use std::os::unix::ffi::OsStrExt;
        let dir = tempfile::tempdir().unwrap();
        let mut j = Journal::new(dir.path());
        let odd = dir
            .path()
            .join(std::ffi::OsStr::from_bytes(b"scratch-\xff"));
        let r = j.record_private("scratch", Undo::RemovePath { path: odd });
        assert!(r.is_err());
        assert!(j.entries().is_empty());
        assert!(j.undo_all().is_empty());
        assert!(!j.path().exists());
    }
}

/// Property tests of the journal's JSON lines: entries round-trip through their line;
/// `restore_orphans` over any bytes, or over a valid journal followed by any bytes,
/// never panics and undoes no more than the complete entries. Every undo here is
/// harmless (`Nothing`, or paths inside a temporary directory). The `fuzz_*` tests
/// run the same with 20,000 cases (or PROPTEST_CASES), outside the default run:
/// `cargo test -p oslab-sys --release -- --ignored fuzz`
#[cfg(test)]
mod props {
    use super::*;
    use crate::testing::{fuzz_config, proptest_config as config};
    use proptest::prelude::*;

    /// A header as a process that is gone (pid 1 with an impossible start time).
    const DEAD: &str =
        r#"{"oslab_journal":1,"pid":1,"start_time":18446744073709551615,"command":"oslab run x"}"#;

    fn path() -> impl Strategy<Value = PathBuf> {
        "(/[^/\0]{0,12}){0,4}".prop_map(PathBuf::from)
    }

    fn undo() -> impl Strategy<Value = Undo> {
        prop_oneof![
            (path(), "(?s).{0,20}").prop_map(|(path, contents)| Undo::WriteFile { path, contents }),
            path().prop_map(|target| Undo::Unmount { target }),
            path().prop_map(|device| Undo::DetachLoop { device }),
            path().prop_map(|path| Undo::RemovePath { path }),
            path().prop_map(|path| Undo::RemoveDir { path }),
            (path(), path()).prop_map(|(path, parent)| Undo::RemoveCgroup { path, parent }),
            Just(Undo::Nothing),
        ]
    }

    fn entry() -> impl Strategy<Value = Entry> {
        (any::<u64>(), "(?s).{0,30}", undo()).prop_map(|(seq, description, undo)| Entry {
            seq,
            description,
            undo,
        })
    }

    proptest! {
        #![proptest_config(config(256))]

        /// An entry is one line (whatever its description holds) that reads back
        /// as the same entry.
        #[test]
        fn an_entry_round_trips_through_its_line(e in entry()) {
            let line = serde_json::to_string(&e).unwrap();
            prop_assert!(!line.contains('\n'));
            prop_assert_eq!(serde_json::from_str::<Entry>(&line).unwrap(), e);
        }

        /// What a journal writes, read back: header and entries, in order.
        #[test]
        fn a_written_journal_reads_back(entries in proptest::collection::vec(entry(), 0..6)) {
            let dir = tempfile::tempdir().unwrap();
            let jp = dir.path().join("journal-1.jsonl");
            let mut text = format!("{DEAD}\n");
            for e in &entries {
                text += &(serde_json::to_string(e).unwrap() + "\n");
            }
            std::fs::write(&jp, text).unwrap();
            let (h, back) = read_journal(&jp).map_err(TestCaseError::fail)?;
            prop_assert_eq!(h.pid, 1);
            prop_assert_eq!(back, entries);
        }
    }

    fn any_bytes() -> impl Strategy<Value = Vec<u8>> {
        prop_oneof![
            proptest::collection::vec(any::<u8>(), 0..200),
            "(?s).{0,200}".prop_map(String::into_bytes),
            "(?s).{0,120}".prop_map(|t| format!("{DEAD}\n{t}").into_bytes()),
        ]
    }

    fn any_tail() -> impl Strategy<Value = Vec<u8>> {
        prop_oneof![
            proptest::collection::vec(any::<u8>(), 0..120),
            "[^\n]{0,120}".prop_map(String::into_bytes),
        ]
    }

    /// Any bytes in a journal file: reported (unreadable, or restored with the
    /// entries it held), never a panic.
    fn restore_of_any_bytes(bytes: &[u8]) -> Result<(), TestCaseError> {
        let dir = tempfile::tempdir().unwrap();
        let jp = dir.path().join("journal-1.jsonl");
        std::fs::write(&jp, bytes).unwrap();
        let _ = pending_orphans(dir.path());
        let report = restore_orphans(dir.path(), false);
        prop_assert_eq!(report.restored.len() + report.unreadable.len(), 1);
        Ok(())
    }

    /// A valid journal of `n` harmless entries followed by `tail` or, for a tail of
    /// odd length, an entry line cut at `cut`: the entries are undone, newest first,
    /// and nothing of the tail unless it holds whole entry lines (random bytes never
    /// do).
    fn restore_with_a_tail(
        n: usize,
        tail: &[u8],
        cut: proptest::sample::Index,
    ) -> Result<(), TestCaseError> {
        let dir = tempfile::tempdir().unwrap();
        let made: Vec<PathBuf> = (0..n)
            .map(|i| dir.path().join(format!("made-{i}")))
            .collect();
        let mut text = format!("{DEAD}\n").into_bytes();
        for (i, p) in made.iter().enumerate() {
            std::fs::write(p, "x").unwrap();
            let e = Entry {
                seq: i as u64 + 1,
                description: format!("made {i}"),
                undo: Undo::RemovePath { path: p.clone() },
            };
            text.extend_from_slice((serde_json::to_string(&e).unwrap() + "\n").as_bytes());
        }
        let torn = serde_json::to_string(&Entry {
            seq: 99,
            description: "torn".into(),
            undo: Undo::Nothing,
        })
        .unwrap()
            + "\n";
        let torn = &torn.as_bytes()[..cut.index(torn.len())];
        let tail = if tail.len() % 2 == 0 { tail } else { torn };
        text.extend_from_slice(tail);
        let jp = dir.path().join("journal-1.jsonl");
        std::fs::write(&jp, &text).unwrap();

        let report = restore_orphans(dir.path(), false);

        prop_assert_eq!(report.restored.len(), 1, "{:?}", report.unreadable);
        let undone: Vec<String> = report.restored[0]
            .outcomes
            .iter()
            .map(|o| o.description.clone())
            .collect();
        let whole_tail_lines = tail.split(|&b| b == b'\n').count() - 1;
        if whole_tail_lines == 0 {
            let expected: Vec<String> = (0..n).rev().map(|i| format!("made {i}")).collect();
            prop_assert_eq!(undone, expected);
            prop_assert!(!jp.exists());
        } else {
            prop_assert!(undone.len() <= n + whole_tail_lines);
        }
        prop_assert!(made.iter().all(|p| !p.exists()));
        Ok(())
    }

    proptest! {
        // each case writes a file and restores it: fewer cases
        #![proptest_config(config(96))]

        #[test]
        fn restore_of_any_bytes_never_panics(bytes in any_bytes()) {
            restore_of_any_bytes(&bytes)?;
        }

        #[test]
        fn restore_of_a_journal_with_any_tail_undoes_its_entries(
            n in 0usize..5,
            tail in any_tail(),
            cut in any::<proptest::sample::Index>(),
        ) {
            restore_with_a_tail(n, &tail, cut)?;
        }
    }

    // The same with many cases, outside the default run (docs/architecture.md,
    // "Fuzz runs"): `cargo test -p oslab-sys --release -- --ignored fuzz`
    proptest! {
        #![proptest_config(fuzz_config(20_000))]

        #[test]
        #[ignore = "a fuzz run: cargo test -p oslab-sys --release -- --ignored fuzz"]
        fn fuzz_journal_entries_round_trip(e in entry()) {
            let line = serde_json::to_string(&e).unwrap();
            prop_assert!(!line.contains('\n'));
            prop_assert_eq!(serde_json::from_str::<Entry>(&line).unwrap(), e);
        }

        #[test]
        #[ignore = "a fuzz run: cargo test -p oslab-sys --release -- --ignored fuzz"]
        fn fuzz_journal_restore_of_any_bytes(bytes in any_bytes()) {
            restore_of_any_bytes(&bytes)?;
        }

        #[test]
        #[ignore = "a fuzz run: cargo test -p oslab-sys --release -- --ignored fuzz"]
        fn fuzz_journal_restore_with_any_tail(
            n in 0usize..5,
            tail in any_tail(),
            cut in any::<proptest::sample::Index>(),
        ) {
            restore_with_a_tail(n, &tail, cut)?;
        }
    }
}
