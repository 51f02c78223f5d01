//! Writing an output the user named (`--json FILE`, `--html`, a folder of plots,
//! a raw file), as root on a machine other users share, without letting what
//! stands at the name decide what is written where.
//!
//! - The path is reached once, name by name from a folder held open
//!   ([`crate::chase`]); a symbolic link, at the end or on the way, is followed
//!   only when root or the caller owns it, and everything is then done relative
//!   to the folder reached, so nothing swapped in after the checks is written
//!   through.
//! - A regular file, or a name not taken yet, is replaced whole and atomically: a
//!   temporary file with a random name is created beside it (O_EXCL|O_NOFOLLOW),
//!   written, synced, given the old file's owner, group and mode, and renamed over
//!   it, so a reader never sees half a file.
//! - A character device (/dev/null, a terminal) or a FIFO is written straight
//!   through and never replaced, but only when root or the caller owns it: a FIFO
//!   or device another user put at the name is refused. It is opened with
//!   O_NONBLOCK, so a FIFO that nobody reads is refused at once rather than waited
//!   on. /dev/stdout, /dev/stderr and /dev/fd/N are the descriptors this process
//!   was handed, written to as they are.
//! - A block device or a folder is refused, and so is a socket named by path.

mod at;
mod place;

use std::ffi::CString;
use std::fs::File;
use std::io::Write;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, RawFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use crate::chase::{self, LastLink, Reached, trusted_owners};
use crate::owned::who;
use crate::tempname::{self, euid};
use place::{Place, place};

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

impl From<chase::Unreachable> for OutputError {
    fn from(e: chase::Unreachable) -> Self {
        OutputError(e.0)
    }
}

pub use crate::chase::plain;

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
    Ok(place(path)?.target())
}

/// Writes `bytes` as the whole of the output `path` (see the module for how).
pub fn write_whole(path: &Path, bytes: &[u8]) -> Result<(), OutputError> {
    match place(path)? {
        Place::Descriptor(fd) => Ok(at::duplicate(fd)?.write_all(bytes)?),
        Place::Stream { folder, name, item } => {
            Ok(open_special(folder.fd.as_fd(), &name, &item.st)?.write_all(bytes)?)
        }
        Place::File { folder, name } => replace(folder.fd.as_fd(), &name, bytes, None),
    }
}

/// Where [`install`] would write `path` (the path without links), or why it
/// would not: checked before any work.
pub fn check_install(path: &Path) -> Result<PathBuf, OutputError> {
    let (folder, name) = install_place(path)?;
    Ok(folder
        .path
        .join(std::ffi::OsStr::from_bytes(name.as_bytes())))
}

/// Installs `bytes` as the file `path`, one that other programs load or run as
/// it is (a library; root's programs among them): a regular file or a free name
/// only (a device, FIFO or descriptor is refused), replaced whole and atomically
/// as [`write_whole`] does, but owned by this process's user with exactly
/// `mode` (whoever owned what stood there, whatever the umask), and only in a
/// folder nobody but root or the caller could change afterwards: every folder
/// from `/` down theirs and writable by others only when sticky, the rule the
/// dynamic loader's paths are held to (`chase::chain::stable_folder`).
pub fn install(path: &Path, bytes: &[u8], mode: u32) -> Result<(), OutputError> {
    let (folder, name) = install_place(path)?;
    replace(folder.fd.as_fd(), &name, bytes, Some(mode))
}

/// The folder held open and the name an installed file goes to.
fn install_place(path: &Path) -> Result<(chase::Held, CString), OutputError> {
    let only = "a file to install goes only where a regular file or nothing is";
    let (folder, name) = match place(path)? {
        Place::File { folder, name } => (folder, name),
        Place::Stream { item, .. } => {
            return Err(OutputError(format!(
                "{} is a device or FIFO; {only}",
                item.path.display()
            )));
        }
        Place::Descriptor(fd) => {
            return Err(OutputError(format!("it names descriptor {fd}; {only}")));
        }
    };
    chase::chain::stable_folder(
        &folder.path,
        &trusted_owners(),
        chase::chain::LastFolder::MaySticky,
    )
    .map_err(|e| {
        OutputError(format!(
            "{}; whoever could change that folder could change the installed file",
            e.0
        ))
    })?;
    Ok((folder, name))
}

/// Opens the output `path` to write into as things come (JSON lines): a regular
/// file is emptied in place (its owner and mode stay), a new one created, a
/// device, FIFO or descriptor written through. Checked as [`check`] does.
pub fn open_stream(path: &Path) -> Result<File, OutputError> {
    match place(path)? {
        Place::Descriptor(fd) => Ok(at::duplicate(fd)?),
        Place::Stream { folder, name, item } => open_special(folder.fd.as_fd(), &name, &item.st),
        Place::File { folder, name } => {
            // O_NONBLOCK: a FIFO swapped in since the check is refused, not
            // waited for; emptied only once the open file is known to be a
            // regular file with no other name (a hard link to another file,
            // planted at the name, is never emptied)
            let f = at::open_in(
                folder.fd.as_fd(),
                &name,
                libc::O_CREAT | libc::O_NONBLOCK,
                0o666,
            )?;
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

/// The character device or FIFO checked as `checked`, opened to write through:
/// without waiting (a FIFO nobody reads is refused), and only when it is still
/// the one that was checked.
fn open_special(
    dir: BorrowedFd<'_>,
    name: &CString,
    checked: &libc::stat,
) -> Result<File, OutputError> {
    let f = at::open_in(dir, name, libc::O_NONBLOCK, 0).map_err(|e| {
        if e.raw_os_error() == Some(libc::ENXIO) {
            OutputError("it is a FIFO that nobody reads from yet; start its reader first".into())
        } else {
            e.into()
        }
    })?;
    let st = at::stat_fd(f.as_raw_fd())?;
    if (st.st_dev, st.st_ino) != (checked.st_dev, checked.st_ino) {
        return Err(changed());
    }
    at::blocking(&f)?;
    Ok(f)
}

/// Replaces the regular file (or free name) `name` in `dir` with `bytes`,
/// atomically: with `mode` exactly, this process's own, where given; else a file
/// that was there keeps its owner and mode.
fn replace(
    dir: BorrowedFd<'_>,
    name: &CString,
    bytes: &[u8],
    mode: Option<u32>,
) -> Result<(), OutputError> {
    let old = at::stat_in(dir, name)?;
    match old.as_ref().map(at::kind) {
        None | Some(libc::S_IFREG) => {}
        _ => return Err(changed()),
    }
    // a new file gets the mode any new file would (umask applied); a file that
    // exists is written privately and given its own mode back before the rename
    let made = if old.is_some() || mode.is_some() {
        0o600
    } else {
        0o666
    };
    let (tmp, mut f) = tempname::private_file_at(dir, ".oslab-", made)?;
    let written = (|| -> std::io::Result<()> {
        f.write_all(bytes)?;
        match (mode, &old) {
            (Some(m), _) => f.set_permissions(std::os::unix::fs::PermissionsExt::from_mode(m))?,
            (None, Some(old)) => at::take_owner_and_mode(&f, old)?,
            (None, None) => {}
        }
        f.sync_all()?;
        at::rename_in(dir, &tmp, name)
    })();
    if written.is_err() {
        at::remove_in(dir, &tmp);
    }
    Ok(written?)
}

/// What an output folder (`--plots DIR`) is: an existing folder, or a free name
/// in one (made by [`make_folder`]). Links are followed as for files.
pub fn check_folder(path: &Path) -> Result<PathBuf, OutputError> {
    Ok(place::folder(path)?.path())
}

/// Makes the output folder `path` checked by [`check_folder`] (its last name
/// only), or takes the folder already there; never through a link.
pub fn make_folder(path: &Path) -> Result<PathBuf, OutputError> {
    match place::folder(path)? {
        place::FolderPlace::Existing(held) => Ok(held.path),
        place::FolderPlace::Free { folder, name } => {
            at::make_dir_in(folder.fd.as_fd(), &name, 0o777)?;
            let made = folder.open_name(std::ffi::OsStr::from_bytes(name.as_bytes()))?;
            match made {
                Some(h) if chase::kind(&h.st) == libc::S_IFDIR => Ok(h.path),
                _ => Err(changed()),
            }
        }
    }
}

/// Makes the folder `path` and any missing folders above it (mkdir -p), each
/// with mkdirat(2) in the folder held open above it and opened again without
/// following a link; links on the way are followed only as for files. The last
/// one gets `mode` when it is made, and must be this user's own.
pub fn ensure_folders(path: &Path, mode: u32) -> Result<PathBuf, OutputError> {
    let (mut folder, missing) = match chase::reach(path, &trusted_owners(), LastLink::Follow)? {
        Reached::Found { item, .. } => (item, Vec::new()),
        Reached::Folder(held) => (held, Vec::new()),
        Reached::Missing { folder, missing } => (folder, missing),
        Reached::Descriptor(_) => return Err(OutputError("it is not a folder".into())),
    };
    for (i, name) in missing.iter().enumerate() {
        let m = if i + 1 == missing.len() { mode } else { 0o755 };
        let c = tempname::c_name(name)?;
        match at::make_dir_in(folder.fd.as_fd(), &c, m) {
            Ok(()) => {}
            // made by someone else meanwhile: used only if it is a real folder
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
            Err(e) => return Err(e.into()),
        }
        folder = match folder.open_name(name)? {
            Some(h) if chase::kind(&h.st) == libc::S_IFDIR => h,
            _ => {
                return Err(OutputError(format!(
                    "{} is not a folder",
                    folder.path.join(name).display()
                )));
            }
        };
    }
    if chase::kind(&folder.st) != libc::S_IFDIR {
        return Err(OutputError(format!(
            "{} is not a folder",
            folder.path.display()
        )));
    }
    if folder.uid() != euid() {
        return Err(OutputError(format!(
            "{} is owned by {}, not by {}",
            folder.path.display(),
            who(folder.uid()),
            who(euid())
        )));
    }
    Ok(folder.path)
}

#[cfg(test)]
mod tests;
