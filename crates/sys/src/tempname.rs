//! Temporary files and folders that another user can neither guess nor plant:
//! mkstemp and mkdtemp semantics. A name carries random bytes from getrandom(2),
//! never the pid; a file is created with O_CREAT|O_EXCL|O_NOFOLLOW (whatever
//! stands at the name, a link included, makes the creation fail rather than be
//! used); a folder is made with mkdir(2) alone (never `create_dir_all`, which
//! accepts a folder already there) and then checked with lstat to be a real
//! folder of this user's.

use std::ffi::CString;
use std::fs::{File, OpenOptions};
use std::io;
use std::os::fd::{AsRawFd, BorrowedFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

/// Random bytes in a name: 96 bits, so a guess never lands.
const RANDOM_BYTES: usize = 12;
/// The hexadecimal digits they make in a name.
pub const RANDOM_HEX: usize = 2 * RANDOM_BYTES;
/// Fresh names tried before giving up, each failing only if its name was taken.
const TRIES: usize = 16;

/// `n` bytes from the kernel's random pool, as lowercase hex.
pub fn random_hex(n: usize) -> io::Result<String> {
    let mut buf = vec![0u8; n];
    let mut filled = 0;
    while filled < n {
        // SAFETY: the pointer and length describe the unfilled tail of `buf`.
        let got = unsafe {
            libc::getrandom(
                buf[filled..].as_mut_ptr().cast::<libc::c_void>(),
                n - filled,
                0,
            )
        };
        if got < 0 {
            let e = io::Error::last_os_error();
            if e.kind() == io::ErrorKind::Interrupted {
                continue;
            }
            return Err(e);
        }
        filled += got as usize;
    }
    Ok(buf.iter().map(|b| format!("{b:02x}")).collect())
}

/// `PREFIX` + random hex + `SUFFIX`: a name nobody can tell in advance.
pub fn fresh_name(prefix: &str, suffix: &str) -> io::Result<String> {
    Ok(format!("{prefix}{}{suffix}", random_hex(RANDOM_BYTES)?))
}

pub(crate) use crate::process::euid;

/// Creates `path` as a new file only this user can read (mode 0600), failing with
/// `AlreadyExists` when anything, a symbolic link included, stands there.
pub fn create_new_file(path: &Path) -> io::Result<File> {
    OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(path)
}

/// Makes the folder `path` (mode 0700; only its last component, which must not
/// exist) and checks, without following a link, that what stands there now is a
/// folder this user owns. `AlreadyExists` when the name was taken.
pub fn create_private_dir(path: &Path) -> io::Result<()> {
    make_own_dir(path, 0o700)
}

/// Makes the folder `path` with `mode` (less the umask), as
/// [`create_private_dir`] does.
pub fn make_own_dir(path: &Path, mode: u32) -> io::Result<()> {
    std::fs::DirBuilder::new().mode(mode).create(path)?;
    let m = std::fs::symlink_metadata(path)?;
    if m.file_type().is_symlink() || !m.is_dir() || m.uid() != euid() {
        return Err(io::Error::other(format!(
            "{} was replaced by something else as soon as it was made",
            path.display()
        )));
    }
    Ok(())
}

/// Makes a fresh private folder `PARENT/PREFIX<random>`; its path.
pub fn private_dir_in(parent: &Path, prefix: &str) -> io::Result<PathBuf> {
    retry(|| {
        let dir = parent.join(fresh_name(prefix, "")?);
        create_private_dir(&dir).map(|()| dir)
    })
}

/// Creates a fresh private file `DIR/PREFIX<random>SUFFIX`; its path and the file.
pub fn private_file_in(dir: &Path, prefix: &str, suffix: &str) -> io::Result<(PathBuf, File)> {
    retry(|| {
        let path = dir.join(fresh_name(prefix, suffix)?);
        create_new_file(&path).map(|f| (path, f))
    })
}

/// Creates a fresh private file named `PREFIX<random>` in the folder open as
/// `dir` (openat(2), so the folder cannot be swapped under it); its name and
/// the file, opened for writing, made with `mode` (less the umask).
pub(crate) fn private_file_at(
    dir: BorrowedFd<'_>,
    prefix: &str,
    mode: u32,
) -> io::Result<(CString, File)> {
    retry(|| {
        let name = CString::new(fresh_name(prefix, ".tmp")?).map_err(io::Error::other)?;
        let flags =
            libc::O_WRONLY | libc::O_CREAT | libc::O_EXCL | libc::O_NOFOLLOW | libc::O_CLOEXEC;
        // SAFETY: `dir` is an open descriptor and `name` a NUL-terminated string.
        let fd =
            unsafe { libc::openat(dir.as_raw_fd(), name.as_ptr(), flags, mode as libc::c_uint) };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: `fd` was just opened and is owned by nothing else.
        let file = File::from(unsafe { OwnedFd::from_raw_fd(fd) });
        Ok((name, file))
    })
}

/// Runs `make` until it does not fail for a name already taken.
fn retry<T>(mut make: impl FnMut() -> io::Result<T>) -> io::Result<T> {
    let mut last = None;
    for _ in 0..TRIES {
        match make() {
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => last = Some(e),
            r => return r,
        }
    }
    Err(last.unwrap_or_else(|| io::Error::other("no fresh name could be made")))
}

/// A path as a C string, for the *at system calls.
pub(crate) fn c_name(name: &std::ffi::OsStr) -> io::Result<CString> {
    CString::new(name.as_bytes())
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "a file name holds a NUL byte"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn names_are_random_and_never_the_pid() {
        let a = fresh_name("x-", ".tmp").unwrap();
        let b = fresh_name("x-", ".tmp").unwrap();
        assert_ne!(a, b);
        let random = &a["x-".len()..a.len() - ".tmp".len()];
        assert_eq!(random.len(), 2 * RANDOM_BYTES);
        assert!(random.bytes().all(|c| c.is_ascii_hexdigit()), "{a}");
    }

    #[test]
    fn a_planted_link_or_folder_makes_creation_fail_and_is_left_alone() {
        let d = tempfile::tempdir().unwrap();
        let victim = d.path().join("victim");
        std::fs::write(&victim, "keep").unwrap();
        let link = d.path().join("link");
        std::os::unix::fs::symlink(&victim, &link).unwrap();
        let e = create_new_file(&link).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::AlreadyExists);
        let dangling = d.path().join("dangling");
        std::os::unix::fs::symlink(d.path().join("made-through"), &dangling).unwrap();
        assert!(create_new_file(&dangling).is_err());
        assert!(!d.path().join("made-through").exists());
        let e = create_private_dir(&link).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::AlreadyExists);
        let folder = d.path().join("folder");
        std::fs::create_dir(&folder).unwrap();
        assert!(create_private_dir(&folder).is_err());
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "keep");
    }

    #[test]
    fn fresh_folders_and_files_are_private() {
        let d = tempfile::tempdir().unwrap();
        let dir = private_dir_in(d.path(), "oslab-t-").unwrap();
        let m = std::fs::symlink_metadata(&dir).unwrap();
        assert!(m.is_dir());
        assert_eq!(m.permissions().mode() & 0o077, 0);
        let (path, _f) = private_file_in(&dir, "f-", ".dat").unwrap();
        let m = std::fs::symlink_metadata(&path).unwrap();
        assert!(m.is_file());
        assert_eq!(m.permissions().mode() & 0o777, 0o600);
    }
}
