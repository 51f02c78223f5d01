//! A name reached on the way: held by an O_PATH descriptor (which opens nothing
//! of what it names), with what fstat says of it and its path without links.

use std::ffi::{CStr, OsStr, OsString};
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::ffi::OsStringExt;
use std::path::PathBuf;

use super::{Unreachable, plain};
use crate::tempname::c_name;

/// Something reached: a descriptor (O_PATH), its status and its path.
#[derive(Debug)]
pub struct Held {
    pub fd: OwnedFd,
    pub st: libc::stat,
    /// The path it was reached by, without links (for messages, and for the
    /// programs that take a path).
    pub path: PathBuf,
}

const PATH_FLAGS: i32 = libc::O_PATH | libc::O_NOFOLLOW | libc::O_CLOEXEC;

/// The file type bits of a status.
pub fn kind(st: &libc::stat) -> libc::mode_t {
    st.st_mode & libc::S_IFMT
}

/// The file system type (statfs's f_type) of an open descriptor.
pub fn fs_magic(fd: RawFd) -> io::Result<i64> {
    // SAFETY: an all-zero statfs is a valid buffer for fstatfs to fill.
    let mut s: libc::statfs = unsafe { std::mem::zeroed() };
    // SAFETY: `s` is a valid buffer; a bad `fd` gives EBADF.
    if unsafe { libc::fstatfs(fd, &mut s) } != 0 {
        return Err(io::Error::last_os_error());
    }
    #[allow(clippy::unnecessary_cast)]
    Ok(s.f_type as i64)
}

fn open_at(dir: RawFd, name: &CStr, flags: i32) -> io::Result<OwnedFd> {
    loop {
        // SAFETY: `name` is NUL-terminated; `dir` is AT_FDCWD or open.
        let fd = unsafe { libc::openat(dir, name.as_ptr(), flags, 0) };
        if fd >= 0 {
            // SAFETY: just opened, owned by nothing else.
            return Ok(unsafe { OwnedFd::from_raw_fd(fd) });
        }
        let e = io::Error::last_os_error();
        if e.kind() != io::ErrorKind::Interrupted {
            return Err(e);
        }
    }
}

fn stat_of(fd: RawFd) -> io::Result<libc::stat> {
    // SAFETY: an all-zero stat is a valid buffer for fstat to fill.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: `st` is a valid buffer; a bad `fd` gives EBADF.
    if unsafe { libc::fstat(fd, &mut st) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(st)
}

fn unreachable(path: &std::path::Path, e: &io::Error) -> Unreachable {
    Unreachable(format!(
        "{} cannot be reached: {}",
        path.display(),
        plain(e)
    ))
}

impl Held {
    fn from_fd(fd: OwnedFd, path: PathBuf) -> Result<Held, Unreachable> {
        let st = stat_of(fd.as_raw_fd()).map_err(|e| unreachable(&path, &e))?;
        Ok(Held { fd, st, path })
    }

    /// The root folder.
    pub fn root() -> Result<Held, Unreachable> {
        let flags = libc::O_PATH | libc::O_DIRECTORY | libc::O_CLOEXEC;
        let fd = open_at(libc::AT_FDCWD, c"/", flags).map_err(|e| unreachable("/".as_ref(), &e))?;
        Held::from_fd(fd, PathBuf::from("/"))
    }

    /// The current folder.
    pub fn current() -> Result<Held, Unreachable> {
        let flags = libc::O_PATH | libc::O_DIRECTORY | libc::O_CLOEXEC;
        let path = std::env::current_dir().map_err(|e| {
            Unreachable(format!("the current folder cannot be found: {}", plain(&e)))
        })?;
        let fd = open_at(libc::AT_FDCWD, c".", flags).map_err(|e| unreachable(&path, &e))?;
        Held::from_fd(fd, path)
    }

    /// The folder above this one (the root's is the root).
    pub fn parent(&self) -> Result<Held, Unreachable> {
        let flags = libc::O_PATH | libc::O_DIRECTORY | libc::O_CLOEXEC;
        let mut path = self.path.clone();
        path.pop();
        let fd = open_at(self.fd.as_raw_fd(), c"..", flags).map_err(|e| unreachable(&path, &e))?;
        Held::from_fd(fd, path)
    }

    /// `name` in this folder, not followed if it is a link; None when nothing
    /// stands there.
    pub fn open_name(&self, name: &OsStr) -> Result<Option<Held>, Unreachable> {
        let path = self.path.join(name);
        let c = c_name(name).map_err(|e| unreachable(&path, &e))?;
        match open_at(self.fd.as_raw_fd(), &c, PATH_FLAGS) {
            Ok(fd) => Held::from_fd(fd, path).map(Some),
            Err(e) if e.raw_os_error() == Some(libc::ENOENT) => Ok(None),
            Err(e) => Err(unreachable(&path, &e)),
        }
    }

    /// What this link points at.
    pub fn link_target(&self) -> Result<PathBuf, Unreachable> {
        let mut buf = vec![0u8; libc::PATH_MAX as usize];
        // SAFETY: an empty path reads the link held by the O_PATH descriptor
        // into `buf`, at most its length.
        let n = unsafe {
            libc::readlinkat(
                self.fd.as_raw_fd(),
                c"".as_ptr(),
                buf.as_mut_ptr().cast(),
                buf.len(),
            )
        };
        if n < 0 {
            return Err(unreachable(&self.path, &io::Error::last_os_error()));
        }
        buf.truncate(n as usize);
        Ok(PathBuf::from(OsString::from_vec(buf)))
    }

    /// A path that names exactly what is held (the kernel's /proc/self/fd
    /// link), to hand to a call that takes only a path.
    pub fn proc_path(&self) -> PathBuf {
        PathBuf::from(format!("/proc/self/fd/{}", self.fd.as_raw_fd()))
    }

    /// Its owner.
    pub fn uid(&self) -> u32 {
        self.st.st_uid
    }

    /// The permission bits.
    pub fn mode(&self) -> u32 {
        self.st.st_mode & 0o7777
    }
}
