//! Writing an output the user named (`--json FILE`, `--html`, a folder of plots,
//! a raw file), as root on a machine other users share, without letting what
//! stands at the name decide what is written where.
//!
//! - A regular file, or a name not taken yet, is replaced whole and atomically: a
//!   temporary file with a random name is created beside it (O_EXCL|O_NOFOLLOW),
//!   written, synced, given the old file's owner, group and mode, and renamed over
//!   it, so a reader never sees half a file.
//! - A character device (/dev/null, a terminal) or a FIFO is written straight
//!   through and never replaced; opening a FIFO waits for a reader, as
//!   `cat > fifo` does. /dev/stdout, /dev/stderr and /dev/fd/N are the
//!   descriptors this process was handed, written to as they are.
//! - A block device or a folder is refused, and so is a socket named by path.
//! - A symbolic link, at the end or on the way, is followed only when root or
//!   this user owns it; a link another user planted (in /tmp, say) is refused.
//! - The folders are reached again at write time one name at a time without
//!   following links, so nothing swapped in after the checks is written through.

mod at;
mod resolve;

use std::ffi::CString;
use std::fs::File;
use std::io::Write;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd, RawFd};
use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::path::{Path, PathBuf};

use crate::owned::who;
use crate::tempname::{self, euid};
use resolve::{Resolved, last_missing, resolve};

/// Why an output cannot be written: a phrase that completes
/// "cannot write PATH: ...", such as "No space left on device".
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OutputError(pub String);

impl std::fmt::Display for OutputError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for OutputError {}

impl From<std::io::Error> for OutputError {
    fn from(e: std::io::Error) -> Self {
        OutputError(plain(&e))
    }
}

/// An I/O error as a phrase, without Rust's "(os error N)".
pub fn plain(e: &std::io::Error) -> String {
    let s = e.to_string();
    match s.find(" (os error ") {
        Some(i) => s[..i].to_string(),
        None => s,
    }
}

/// Where an output goes, once its links are followed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    /// A descriptor this process was handed (/dev/stdout is 1).
    Descriptor(RawFd),
    /// A character device or FIFO, written through, never replaced.
    Stream(PathBuf),
    /// A regular file or a free name (the path without links), replaced whole.
    File(PathBuf),
}

impl Target {
    /// Whether it is this process's standard output.
    pub fn is_stdout(&self) -> bool {
        *self == Target::Descriptor(1)
    }

    /// Whether bytes written to it stay there whole (not a device or FIFO that
    /// would take a whole document again each time).
    pub fn is_file(&self) -> bool {
        matches!(self, Target::File(_))
    }
}

/// What `path` is as an output; refused when it cannot be one (see the module).
pub fn check(path: &Path) -> Result<Target, OutputError> {
    if path.as_os_str().is_empty() {
        return Err(OutputError("the name is empty".into()));
    }
    let (existing, missing) = match resolve(path)? {
        Resolved::Descriptor(fd) => return descriptor(fd),
        Resolved::Path { existing, missing } => (existing, missing),
    };
    if let Some(free) = last_missing(&existing, &missing)? {
        return Ok(Target::File(free));
    }
    let t = std::fs::symlink_metadata(&existing)?.file_type();
    if t.is_file() {
        Ok(Target::File(existing))
    } else if t.is_char_device() || t.is_fifo() {
        Ok(Target::Stream(existing))
    } else {
        Err(unfit(t.is_dir(), t.is_block_device()))
    }
}

/// A descriptor this process was handed, when an output can go to it (a socket
/// too, as standard output often is).
fn descriptor(fd: RawFd) -> Result<Target, OutputError> {
    let st = at::stat_fd(fd)
        .map_err(|_| OutputError(format!("it names descriptor {fd}, which is not open")))?;
    match at::kind(&st) {
        libc::S_IFDIR => Err(unfit(true, false)),
        libc::S_IFBLK => Err(unfit(false, true)),
        _ => Ok(Target::Descriptor(fd)),
    }
}

fn unfit(dir: bool, block: bool) -> OutputError {
    OutputError(
        if dir {
            "it is a directory; give a file name"
        } else if block {
            "it is a block device; oslab writes only to files, character devices, FIFOs and standard output"
        } else {
            "it is neither a file, a character device nor a FIFO"
        }
        .into(),
    )
}

/// Writes `bytes` as the whole of the output `path` (see the module for how).
pub fn write_whole(path: &Path, bytes: &[u8]) -> Result<(), OutputError> {
    match check(path)? {
        Target::Descriptor(fd) => Ok(at::duplicate(fd)?.write_all(bytes)?),
        Target::Stream(p) => {
            let (dir, name) = folder_and_name(&p)?;
            let mut f = open_stream_in(dir.as_fd(), &name)?;
            Ok(f.write_all(bytes)?)
        }
        Target::File(p) => replace(&p, bytes),
    }
}

/// Opens the output `path` to write into as things come (JSON lines): a regular
/// file is emptied in place (its owner and mode stay), a new one created, a
/// device, FIFO or descriptor written through. Checked as [`check`] does.
pub fn open_stream(path: &Path) -> Result<File, OutputError> {
    match check(path)? {
        Target::Descriptor(fd) => Ok(at::duplicate(fd)?),
        Target::Stream(p) => {
            let (dir, name) = folder_and_name(&p)?;
            open_stream_in(dir.as_fd(), &name)
        }
        Target::File(p) => {
            let (dir, name) = folder_and_name(&p)?;
            // O_NONBLOCK: a FIFO swapped in since the check is refused, not
            // waited for; emptied only once the open file is known to be a
            // regular file with no other name (a hard link to another file,
            // planted at the name, is never emptied)
            let f = at::open_in(dir.as_fd(), &name, libc::O_CREAT | libc::O_NONBLOCK, 0o666)?;
            let st = at::stat_fd(f.as_raw_fd())?;
            if at::kind(&st) != libc::S_IFREG {
                return Err(changed());
            }
            if st.st_nlink > 1 {
                return Err(OutputError(
                    "it has other names (hard links), and oslab does not write over them".into(),
                ));
            }
            f.set_len(0)?;
            at::blocking(&f)?;
            Ok(f)
        }
    }
}

fn changed() -> OutputError {
    OutputError("it was replaced by something else while oslab wrote".into())
}

/// The folder of `path` (without links), held open, and the last name.
fn folder_and_name(path: &Path) -> Result<(OwnedFd, CString), OutputError> {
    let dir = at::open_folder(path.parent().unwrap_or(Path::new("/")))?;
    Ok((dir, at::name_of(path)?))
}

/// A character device or FIFO, opened to write through.
fn open_stream_in(dir: BorrowedFd<'_>, name: &CString) -> Result<File, OutputError> {
    let f = at::open_in(dir, name, 0, 0)?;
    match at::kind(&at::stat_fd(f.as_raw_fd())?) {
        libc::S_IFCHR | libc::S_IFIFO => Ok(f),
        _ => Err(changed()),
    }
}

/// Replaces the regular file (or free name) `path` with `bytes`, atomically.
fn replace(path: &Path, bytes: &[u8]) -> Result<(), OutputError> {
    let (dir, name) = folder_and_name(path)?;
    let old = at::stat_in(dir.as_fd(), &name)?;
    match old.as_ref().map(at::kind) {
        None | Some(libc::S_IFREG) => {}
        Some(libc::S_IFCHR | libc::S_IFIFO) => {
            return Ok(open_stream_in(dir.as_fd(), &name)?.write_all(bytes)?);
        }
        Some(_) => return Err(changed()),
    }
    // a new file gets the mode any new file would (umask applied); a file that
    // exists is written privately and given its own mode back before the rename
    let mode = if old.is_some() { 0o600 } else { 0o666 };
    let (tmp, mut f) = tempname::private_file_at(dir.as_fd(), ".oslab-", mode)?;
    let written = (|| -> std::io::Result<()> {
        f.write_all(bytes)?;
        if let Some(old) = &old {
            at::take_owner_and_mode(&f, old)?;
        }
        f.sync_all()?;
        at::rename_in(dir.as_fd(), &tmp, &name)
    })();
    if written.is_err() {
        at::remove_in(dir.as_fd(), &tmp);
    }
    Ok(written?)
}

/// What an output folder (`--plots DIR`) is: an existing folder, or a free name
/// in one (made by [`make_folder`]). Links are followed as for files.
pub fn check_folder(path: &Path) -> Result<PathBuf, OutputError> {
    if path.as_os_str().is_empty() {
        return Err(OutputError("the name is empty".into()));
    }
    let not_folder = || OutputError("it is a file, not a directory".into());
    let Resolved::Path { existing, missing } = resolve(path)? else {
        return Err(not_folder());
    };
    match last_missing(&existing, &missing)? {
        Some(free) => Ok(free),
        None if std::fs::symlink_metadata(&existing)?.is_dir() => Ok(existing),
        None => Err(not_folder()),
    }
}

/// Makes the output folder `path` checked by [`check_folder`] (its last name
/// only), or takes the folder already there; never through a link.
pub fn make_folder(path: &Path) -> Result<PathBuf, OutputError> {
    let dir = check_folder(path)?;
    match std::fs::create_dir(&dir) {
        Ok(()) => Ok(dir),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
            let m = std::fs::symlink_metadata(&dir)?;
            if m.is_dir() { Ok(dir) } else { Err(changed()) }
        }
        Err(e) => Err(e.into()),
    }
}

/// Makes the folder `path` and any missing folders above it (mkdir -p), each
/// with mkdir(2) alone and checked with lstat afterwards, links on the way
/// followed only as for files; the last one gets `mode` when it is made, and
/// must be this user's own.
pub fn ensure_folders(path: &Path, mode: u32) -> Result<PathBuf, OutputError> {
    let (mut dir, missing) = match resolve(path)? {
        Resolved::Path { existing, missing } => (existing, missing),
        Resolved::Descriptor(_) => return Err(OutputError("it is not a folder".into())),
    };
    for (i, name) in missing.iter().enumerate() {
        dir.push(name);
        let m = if i + 1 == missing.len() { mode } else { 0o755 };
        match tempname::make_own_dir(&dir, m) {
            Ok(()) => {}
            // made by someone else meanwhile: used only if it is a real folder
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                if !std::fs::symlink_metadata(&dir)?.is_dir() {
                    return Err(OutputError(format!("{} is not a folder", dir.display())));
                }
            }
            Err(e) => return Err(e.into()),
        }
    }
    let owner = std::fs::symlink_metadata(&dir)?.uid();
    if owner != euid() {
        return Err(OutputError(format!(
            "{} is owned by {}, not by {}",
            dir.display(),
            who(owner),
            who(euid())
        )));
    }
    Ok(dir)
}

#[cfg(test)]
mod tests;
