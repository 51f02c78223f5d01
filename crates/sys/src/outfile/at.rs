//! The system calls an output is written with, relative to its folder held open
//! (openat(2) and friends), so that no link swapped in after the checks is
//! followed: the folder was reached by [`crate::chase`].

use std::ffi::CStr;
use std::fs::File;
use std::io;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, FromRawFd, OwnedFd, RawFd};

/// openat(2); a descriptor this process owns.
pub(super) fn raw_open(dir: RawFd, name: &CStr, flags: i32, mode: u32) -> io::Result<OwnedFd> {
    loop {
        // SAFETY: `name` is NUL-terminated; `dir` is AT_FDCWD or an open descriptor.
        let fd = unsafe { libc::openat(dir, name.as_ptr(), flags, mode as libc::c_uint) };
        if fd >= 0 {
            // SAFETY: `fd` was just opened and nothing else owns it.
            return Ok(unsafe { OwnedFd::from_raw_fd(fd) });
        }
        let e = io::Error::last_os_error();
        if e.kind() != io::ErrorKind::Interrupted {
            return Err(e);
        }
    }
}

/// Opens `name` in `dir` for writing with `flags` added (never through a link).
pub(super) fn open_in(dir: BorrowedFd<'_>, name: &CStr, flags: i32, mode: u32) -> io::Result<File> {
    let flags = flags | libc::O_WRONLY | libc::O_NOFOLLOW | libc::O_NOCTTY | libc::O_CLOEXEC;
    raw_open(dir.as_raw_fd(), name, flags, mode).map(File::from)
}

/// lstat(2) of `name` in `dir`; None when nothing is there.
pub(super) fn stat_in(dir: BorrowedFd<'_>, name: &CStr) -> io::Result<Option<libc::stat>> {
    // SAFETY: an all-zero stat is a valid buffer for fstatat to fill.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: `dir` is open, `name` NUL-terminated, `st` a valid buffer.
    let rc = unsafe {
        libc::fstatat(
            dir.as_raw_fd(),
            name.as_ptr(),
            &mut st,
            libc::AT_SYMLINK_NOFOLLOW,
        )
    };
    if rc == 0 {
        return Ok(Some(st));
    }
    let e = io::Error::last_os_error();
    match e.raw_os_error() {
        Some(libc::ENOENT) => Ok(None),
        _ => Err(e),
    }
}

/// fstat(2) of an open descriptor.
pub(super) fn stat_fd(fd: RawFd) -> io::Result<libc::stat> {
    // SAFETY: an all-zero stat is a valid buffer for fstat to fill.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: `st` is a valid buffer; a closed `fd` gives EBADF.
    if unsafe { libc::fstat(fd, &mut st) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(st)
}

pub(super) use crate::chase::kind;

/// mkdirat(2): the folder `name` in `dir`, made with `mode` (less the umask).
pub(super) fn make_dir_in(dir: BorrowedFd<'_>, name: &CStr, mode: u32) -> io::Result<()> {
    // SAFETY: `dir` is open and `name` NUL-terminated.
    if unsafe { libc::mkdirat(dir.as_raw_fd(), name.as_ptr(), mode as libc::mode_t) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// renameat(2) within one folder: `from` takes the place of `to`.
pub(super) fn rename_in(dir: BorrowedFd<'_>, from: &CStr, to: &CStr) -> io::Result<()> {
    let d = dir.as_raw_fd();
    // SAFETY: `d` is open and both names are NUL-terminated.
    if unsafe { libc::renameat(d, from.as_ptr(), d, to.as_ptr()) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// unlinkat(2) of a file, for a temporary file that was not used.
pub(super) fn remove_in(dir: BorrowedFd<'_>, name: &CStr) {
    // SAFETY: `dir` is open and `name` NUL-terminated; a failure leaves a file.
    unsafe { libc::unlinkat(dir.as_raw_fd(), name.as_ptr(), 0) };
}

/// Gives `f` the owner, group and permission bits of `old` (the file it replaces).
pub(super) fn take_owner_and_mode(f: &File, old: &libc::stat) -> io::Result<()> {
    let fd = f.as_fd().as_raw_fd();
    let now = stat_fd(fd)?;
    if (now.st_uid, now.st_gid) != (old.st_uid, old.st_gid) {
        // SAFETY: `fd` is open; fchown has no memory effects.
        if unsafe { libc::fchown(fd, old.st_uid, old.st_gid) } != 0 {
            let e = io::Error::last_os_error();
            return Err(io::Error::other(format!(
                "it belongs to {} and cannot be given back to its owner ({}), so it is left as it was",
                crate::owned::who(old.st_uid),
                super::plain(&e)
            )));
        }
    }
    // after fchown, which clears set-id bits
    // SAFETY: `fd` is open; fchmod has no memory effects.
    if unsafe { libc::fchmod(fd, old.st_mode & 0o7777) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// A new descriptor for `fd` (which stays open), as a file to write to.
pub(super) fn duplicate(fd: RawFd) -> io::Result<File> {
    // SAFETY: F_DUPFD_CLOEXEC makes a new descriptor or fails; no memory effects.
    let new = unsafe { libc::fcntl(fd, libc::F_DUPFD_CLOEXEC, 3) };
    if new < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: `new` was just made and nothing else owns it.
    Ok(File::from(unsafe { OwnedFd::from_raw_fd(new) }))
}

/// Clears O_NONBLOCK, set only so that opening a FIFO would not wait.
pub(super) fn blocking(f: &File) -> io::Result<()> {
    let fd = f.as_raw_fd();
    // SAFETY: `fd` is open; F_GETFL/F_SETFL have no memory effects.
    let flags = unsafe { libc::fcntl(fd, libc::F_GETFL) };
    // SAFETY: as above.
    if flags < 0 || unsafe { libc::fcntl(fd, libc::F_SETFL, flags & !libc::O_NONBLOCK) } < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}
