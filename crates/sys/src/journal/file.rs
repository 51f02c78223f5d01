//! The journal file on disk: a header line naming the process, one line per
//! entry, and, in a named journal whose changes are all made, a mark after the
//! last entry. Read with a bound and without following a link; written without
//! following a link, never over another journal, and rewritten through a
//! temporary file and a rename, so a crash never leaves half a file.

use std::fs::{File, OpenOptions};
use std::io::{Read, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use serde::{Deserialize, Serialize};

use oslab_units::human_bytes;

use super::Entry;
use crate::fsread::Root;
use crate::{owned, process};

/// The most a journal file may hold. oslab writes a few hundred bytes for each
/// change outstanding, so its own journals stay far below; a larger file is
/// refused unread rather than read into memory.
pub const MAX_JOURNAL_BYTES: u64 = 64 << 20;

/// The most of a command line a header keeps.
const MAX_COMMAND_BYTES: usize = 4096;

/// How much of a line's error, a command or a description is printed.
pub(super) const SHOWN_CHARS: usize = 200;

/// The line that marks a named journal complete.
pub(super) const COMPLETE_LINE: &str = r#"{"mark":"complete"}"#;

/// The first line: the process whose changes the journal records.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(super) struct Header {
    pub oslab_journal: u32,
    pub pid: u32,
    pub start_time: u64,
    pub command: String,
}

impl Header {
    /// A header naming this process (pid and start time, so a reused pid is not
    /// taken for it) with `command`.
    pub fn of_this_process(command: String) -> Header {
        let pid = std::process::id();
        Header {
            oslab_journal: 1,
            pid,
            start_time: process::start_time(&Root::live(), pid).unwrap_or(0),
            command,
        }
    }

    /// This process's command line, cut after MAX_COMMAND_BYTES.
    pub fn this_command() -> String {
        // args() would panic on an argument that is not UTF-8
        let mut c = std::env::args_os()
            .map(|a| a.to_string_lossy().into_owned())
            .collect::<Vec<_>>()
            .join(" ");
        if c.len() > MAX_COMMAND_BYTES {
            let mut cut = MAX_COMMAND_BYTES;
            while !c.is_char_boundary(cut) {
                cut -= 1;
            }
            c.truncate(cut);
            c.push_str("...");
        }
        c
    }
}

#[derive(Deserialize)]
#[serde(rename_all = "snake_case")]
enum MarkKind {
    Complete,
}

#[derive(Deserialize)]
struct Mark {
    #[allow(dead_code)] // only its presence counts
    mark: MarkKind,
}

/// Whether `line` is the mark of completion (in any JSON spelling).
pub(super) fn is_mark(line: &[u8]) -> bool {
    serde_json::from_slice::<Mark>(line).is_ok()
}

/// A line that is neither an entry nor a mark: reported and kept, never guessed at.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BadLine {
    /// Its number in the file, from 1 (the header is line 1).
    pub number: usize,
    /// Why it cannot be read, bounded for printing.
    pub why: String,
    pub(super) raw: Vec<u8>,
}

/// One line after the header.
#[derive(Debug, Clone)]
pub(super) enum Line {
    Entry(Entry),
    Bad(BadLine),
}

/// What a journal file holds.
#[derive(Debug, Clone)]
pub(super) struct Contents {
    pub header: Header,
    pub lines: Vec<Line>,
    /// Whether a mark follows the last entry.
    pub complete: bool,
    /// Whether the last line was cut short by a crash; it is dropped, because a
    /// change is made only after its whole line is synced.
    pub torn: bool,
}

impl Contents {
    pub fn entries(&self) -> Vec<Entry> {
        self.lines
            .iter()
            .filter_map(|l| match l {
                Line::Entry(e) => Some(e.clone()),
                Line::Bad(_) => None,
            })
            .collect()
    }

    pub fn bad_lines(&self) -> Vec<BadLine> {
        self.lines
            .iter()
            .filter_map(|l| match l {
                Line::Bad(b) => Some(b.clone()),
                Line::Entry(_) => None,
            })
            .collect()
    }

    fn take_line(&mut self, number: usize, line: &[u8]) {
        match serde_json::from_slice::<Entry>(line) {
            Ok(e) => {
                self.complete = false;
                self.lines.push(Line::Entry(e));
            }
            Err(_) if is_mark(line) => self.complete = true,
            Err(e) => self.lines.push(Line::Bad(BadLine {
                number,
                why: shown(&e.to_string(), SHOWN_CHARS),
                raw: line.strip_suffix(b"\n").unwrap_or(line).to_vec(),
            })),
        }
    }
}

/// Reads the journal bytes `bytes`. An error (an empty file, a first line that is
/// no header) completes the sentence "the file ...".
pub(super) fn parse(bytes: &[u8]) -> Result<Contents, String> {
    // bytes, not text: a cut inside a character must not make the file unreadable
    let mut numbered = bytes
        .split_inclusive(|&b| b == b'\n')
        .enumerate()
        .filter(|(_, l)| !l.trim_ascii().is_empty());
    let Some((_, first)) = numbered.next() else {
        return Err("is empty".into());
    };
    let header: Header = serde_json::from_slice(first).map_err(|e| {
        format!(
            "has no journal header on its first line ({})",
            shown(&e.to_string(), SHOWN_CHARS)
        )
    })?;
    let mut c = Contents {
        header,
        lines: Vec::new(),
        complete: false,
        torn: false,
    };
    for (i, line) in numbered {
        // only the last piece can lack its newline
        if !line.ends_with(b"\n") {
            c.torn = true;
            break;
        }
        c.take_line(i + 1, line);
    }
    Ok(c)
}

/// Reads the journal at `path`, which must be a regular file of `owner`'s that
/// nobody else can write (no link is followed), and at most MAX_JOURNAL_BYTES.
/// An error completes the sentence "PATH ...".
pub(super) fn read(path: &Path, owner: u32) -> Result<Contents, String> {
    read_bounded(path, owner, MAX_JOURNAL_BYTES)
}

pub(super) fn read_bounded(path: &Path, owner: u32, limit: u64) -> Result<Contents, String> {
    let f = owned::open_owned(path, owner).map_err(|r| r.why)?;
    let too_big = |n: u64| {
        format!(
            "holds {n} bytes, more than the {} a journal may hold, so it is not read",
            human_bytes(limit)
        )
    };
    let len = f
        .metadata()
        .map_err(|e| format!("cannot be read: {e}"))?
        .len();
    if len > limit {
        return Err(too_big(len));
    }
    let mut bytes = Vec::with_capacity(len as usize);
    // the file may grow after the size was taken
    f.take(limit + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| format!("cannot be read: {e}"))?;
    if bytes.len() as u64 > limit {
        return Err(too_big(bytes.len() as u64));
    }
    parse(&bytes)
}

/// `text` made safe to print on one line: control characters escaped, and cut
/// once `max_chars` characters are printed, with "..." and the text's length.
pub fn shown(text: &str, max_chars: usize) -> String {
    let mut out = String::new();
    let mut printed = 0;
    for (taken, c) in text.chars().enumerate() {
        // control and invisible characters as every terminal writer shows them
        let piece: String = if oslab_term_text::needs_escape(c) {
            oslab_term_text::one_line(c.encode_utf8(&mut [0; 4]))
        } else {
            c.into()
        };
        let width = piece.chars().count();
        if printed + width > max_chars {
            let n = taken + text.chars().skip(taken).count();
            out.push_str(&format!("... ({n} characters)"));
            break;
        }
        out.push_str(&piece);
        printed += width;
    }
    out
}

fn private_options() -> OpenOptions {
    let mut o = OpenOptions::new();
    o.write(true)
        .create_new(true)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW);
    o
}

/// Creates the journal file `path` holding `header`; fails with AlreadyExists
/// when anything (a file, a link) is at `path` already.
pub(super) fn create(path: &Path, header: &Header) -> std::io::Result<File> {
    let mut f = private_options().open(path)?;
    let line = serde_json::to_string(header).expect("a header serialises") + "\n";
    f.write_all(line.as_bytes())?;
    Ok(f)
}

/// Opens the journal `path` to add lines at its end, without following a link.
pub(super) fn open_append(path: &Path) -> std::io::Result<File> {
    OpenOptions::new()
        .append(true)
        .custom_flags(libc::O_NOFOLLOW)
        .open(path)
}

/// Appends `line` and its newline in one write, and syncs it to disk.
pub(super) fn append_line(f: &mut File, line: &str) -> std::io::Result<()> {
    f.write_all(format!("{line}\n").as_bytes())?;
    f.sync_data()
}

/// Moves the journal at `path` (`journal-PID.jsonl` of a dead process whose pid
/// came back) to `journal-PID-N.jsonl`, never over another file, so that none of
/// its entries is lost.
pub(super) fn set_aside(path: &Path) -> std::io::Result<PathBuf> {
    let stem = path
        .file_name()
        .and_then(|n| n.to_str())
        .and_then(|n| n.strip_suffix(".jsonl"))
        .unwrap_or("journal");
    for n in 1..1000 {
        let to = path.with_file_name(format!("{stem}-{n}.jsonl"));
        match std::fs::hard_link(path, &to) {
            Ok(()) => {
                std::fs::remove_file(path)?;
                return Ok(to);
            }
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(e),
        }
    }
    Err(std::io::Error::other("no free name to set it aside"))
}

/// Replaces the journal at `path` with `header`, `lines` and (when `complete`)
/// the mark: written to a new private file beside it, synced, then renamed over
/// it, so a crash leaves the old file or the new one, never a mix.
pub(super) fn rewrite(
    path: &Path,
    header: &Header,
    lines: &[Line],
    complete: bool,
) -> std::io::Result<()> {
    let mut text = serde_json::to_string(header)
        .expect("a header serialises")
        .into_bytes();
    text.push(b'\n');
    for l in lines {
        match l {
            Line::Entry(e) => {
                text.extend_from_slice(serde_json::to_string(e).expect("read back").as_bytes())
            }
            Line::Bad(b) => text.extend_from_slice(&b.raw),
        }
        text.push(b'\n');
    }
    if complete {
        text.extend_from_slice(COMPLETE_LINE.as_bytes());
        text.push(b'\n');
    }
    let (tmp, mut f) = temporary_beside(path)?;
    let written = f
        .write_all(&text)
        .and_then(|_| f.sync_data())
        .and_then(|_| std::fs::rename(&tmp, path));
    if written.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    written
}

/// A new file beside `path`, named `.journal-tmp-PID-N` (never taken for a
/// journal), made exclusively.
fn temporary_beside(path: &Path) -> std::io::Result<(PathBuf, File)> {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    for _ in 0..1000 {
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let tmp = path.with_file_name(format!(".journal-tmp-{}-{n}", std::process::id()));
        match private_options().open(&tmp) {
            Ok(f) => return Ok((tmp, f)),
            // left by a crashed process with this pid
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(e),
        }
    }
    Err(std::io::Error::other(
        "no free name for a temporary file beside it",
    ))
}
