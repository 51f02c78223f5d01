//! Journals left by processes that are gone: counted for the line that asks the
//! user to run `oslab restore`, and undone by it.
//!
//! Every entry that can be read is undone, newest first, whatever lines around it
//! cannot be read. A file is removed only when all of it was read and undone;
//! otherwise it keeps the lines that could not be read or undone, in their order,
//! under a header naming the restoring process, so it is counted again once that
//! process has exited.

use std::path::{Path, PathBuf};

use super::UndoOutcome;
use super::file::{self, BadLine, Header, Line};
use super::undo::undo_entries;
use crate::fsread::Root;
use crate::process;

/// What `oslab restore` found and did for one journal file.
#[derive(Debug, Clone)]
pub struct RestoredJournal {
    pub path: PathBuf,
    pub pid: u32,
    pub command: String,
    /// One per readable entry, newest first.
    pub outcomes: Vec<UndoOutcome>,
    /// The lines that could not be read, in file order.
    pub bad_lines: Vec<BadLine>,
    /// Whether the file was kept (with its failed entries and unreadable lines).
    pub kept: bool,
}

/// The result of [`restore_orphans`].
#[derive(Debug, Clone, Default)]
pub struct RestoreReport {
    pub restored: Vec<RestoredJournal>,
    /// Journals of oslab processes still running, left alone.
    pub live: Vec<(PathBuf, u32)>,
    /// Files not read as journals, each with the end of the sentence "PATH ...".
    pub unreadable: Vec<(PathBuf, String)>,
}

impl RestoreReport {
    pub fn merge(&mut self, other: RestoreReport) {
        self.restored.extend(other.restored);
        self.live.extend(other.live);
        self.unreadable.extend(other.unreadable);
    }

    /// Whether something is left for the user to look at: an undo that failed, a
    /// line or a file that could not be read.
    pub fn needs_attention(&self) -> bool {
        !self.unreadable.is_empty() || self.restored.iter().any(|j| j.kept)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Kind {
    /// `journal-PID.jsonl`, or `journal-PID-N.jsonl` set aside when its pid came back.
    PerProcess,
    /// `journal-NAME.jsonl`: changes meant to outlive their process (a testbed).
    Named,
}

fn kind_of(file_name: &str) -> Option<Kind> {
    let stem = file_name.strip_prefix("journal-")?.strip_suffix(".jsonl")?;
    let first = stem.chars().next()?;
    Some(if first.is_ascii_digit() {
        Kind::PerProcess
    } else {
        Kind::Named
    })
}

/// The journal files in `dir`, by name.
fn journal_files(dir: &Path) -> Vec<(PathBuf, Kind)> {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut files: Vec<(PathBuf, Kind)> = rd
        .filter_map(|e| e.ok())
        .filter_map(|e| {
            let kind = kind_of(e.file_name().to_str()?)?;
            Some((e.path(), kind))
        })
        .collect();
    files.sort();
    files
}

fn owner_alive(h: &Header) -> bool {
    h.pid != std::process::id() && process::process_alive(&Root::live(), h.pid, h.start_time)
}

/// Undoes the entries among `lines` (newest first), then removes the journal at
/// `path`, or rewrites it with only the lines that could not be read or undone.
/// Returns the outcomes and whether the file was kept.
pub(super) fn settle(path: &Path, lines: &[Line]) -> (Vec<UndoOutcome>, bool) {
    let entries: Vec<_> = lines
        .iter()
        .filter_map(|l| match l {
            Line::Entry(e) => Some(e.clone()),
            Line::Bad(_) => None,
        })
        .collect();
    let outcomes = undo_entries(&entries);
    // outcomes are newest first: entry i of n has outcome n - 1 - i
    let mut failed = outcomes.iter().rev().map(|o| o.result.is_err());
    let kept: Vec<Line> = lines
        .iter()
        .filter(|l| match l {
            Line::Entry(_) => failed.next().unwrap_or(false),
            Line::Bad(_) => true,
        })
        .cloned()
        .collect();
    if kept.is_empty() {
        let _ = std::fs::remove_file(path);
        return (outcomes, false);
    }
    let header = Header::of_this_process("kept: lines that could not be read or undone".into());
    // if even the rewrite fails, the old file stays whole: nothing is lost
    let _ = file::rewrite(path, &header, &kept, false);
    (outcomes, true)
}

/// Changes left by oslab processes that are no longer running: (journal files,
/// lines in them), for the line that tells a user to run `oslab restore`.
/// Unreadable files count as one line each: they are worth a look too. A named
/// journal marked complete (a testbed left up on purpose) is not counted; one
/// whose process died before marking it (a testbed half built) is.
pub fn pending_orphans(dir: &Path) -> (usize, usize) {
    let mut files = 0;
    let mut lines = 0;
    for (path, kind) in journal_files(dir) {
        match file::read(&path, process::euid()) {
            Ok(c) => {
                if owner_alive(&c.header) || c.header.pid == std::process::id() {
                    continue;
                }
                let left_up = kind == Kind::Named && c.complete;
                if left_up && c.bad_lines().is_empty() {
                    continue;
                }
                files += 1;
                lines += c.lines.len();
            }
            Err(_) => {
                files += 1;
                lines += 1;
            }
        }
    }
    (files, lines)
}

/// Undoes the journals in `dir` left by processes that are no longer running (all
/// of them, running or not, with `include_live`).
pub fn restore_orphans(dir: &Path, include_live: bool) -> RestoreReport {
    let mut report = RestoreReport::default();
    for (path, _) in journal_files(dir) {
        let c = match file::read(&path, process::euid()) {
            Ok(c) => c,
            Err(why) => {
                report.unreadable.push((path, why));
                continue;
            }
        };
        if owner_alive(&c.header) && !include_live {
            report.live.push((path, c.header.pid));
            continue;
        }
        let (outcomes, kept) = settle(&path, &c.lines);
        report.restored.push(RestoredJournal {
            bad_lines: c.bad_lines(),
            path,
            pid: c.header.pid,
            command: c.header.command,
            outcomes,
            kept,
        });
    }
    retry_kept(&mut report);
    report
}

/// How many more times journals kept for a failed undo are tried.
const RETRIES: usize = 3;

/// Tries the journals kept for a failed undo again, while that undoes more: one
/// journal's undo can need another's first (after kill -9, the testbed's cgroup
/// cannot go while it still holds the governor's groups, whose journal sorts after
/// it). Each retried entry's outcome takes the place of its failure, so the
/// outcomes stay newest first.
fn retry_kept(report: &mut RestoreReport) {
    for _ in 0..RETRIES {
        let mut progress = false;
        for j in report.restored.iter_mut().filter(|j| j.kept) {
            let failed = j.outcomes.iter().filter(|o| o.result.is_err()).count();
            let Ok(c) = file::read(&j.path, process::euid()) else {
                continue;
            };
            // the kept file holds exactly the failed entries, unless its rewrite
            // failed and the whole journal is still there: then leave it be
            if c.entries().len() != failed {
                continue;
            }
            let (outcomes, kept) = settle(&j.path, &c.lines);
            progress |= outcomes.iter().any(|o| o.result.is_ok());
            let mut retried = outcomes.into_iter();
            for slot in j.outcomes.iter_mut().filter(|o| o.result.is_err()) {
                if let Some(o) = retried.next() {
                    *slot = o;
                }
            }
            j.kept = kept;
        }
        if !progress {
            break;
        }
    }
}

/// Undoes the journal process `pid` left in `dir`, once that process is gone (a
/// child oslab process killed on purpose, say); None when there is none or it
/// still runs.
pub fn restore_dead(dir: &Path, pid: u32) -> Option<Vec<UndoOutcome>> {
    let path = dir.join(format!("journal-{pid}.jsonl"));
    let c = file::read(&path, process::euid()).ok()?;
    if c.header.pid != pid || owner_alive(&c.header) {
        return None;
    }
    Some(settle(&path, &c.lines).0)
}
