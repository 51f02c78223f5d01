//! Memory files and their mappings: the board and the per-process tables are
//! anonymous memory files (memfd) sealed against resizing, so no process that
//! holds one can make another's mapping fault (SIGBUS) by shrinking it.

use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};

/// Seals every table file gets once it is sized: it can neither shrink nor grow.
pub const SIZE_SEALS: i32 = libc::F_SEAL_SHRINK | libc::F_SEAL_GROW;

/// Makes a memory file of `len` bytes sealed at that size (more seals may be added
/// later, until F_SEAL_SEAL). Close-on-exec: programs started later do not inherit it.
pub fn create(name: &std::ffi::CStr, len: usize) -> std::io::Result<OwnedFd> {
    // SAFETY: a NUL-terminated name; the result is checked and then owned.
    let fd =
        unsafe { libc::memfd_create(name.as_ptr(), libc::MFD_ALLOW_SEALING | libc::MFD_CLOEXEC) };
    if fd < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: a fresh descriptor that nothing else owns.
    let fd = unsafe { OwnedFd::from_raw_fd(fd) };
    // SAFETY: ftruncate on our own descriptor.
    if unsafe { libc::ftruncate(fd.as_raw_fd(), len as libc::off_t) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    add_seals(fd.as_raw_fd(), SIZE_SEALS)?;
    Ok(fd)
}

pub fn add_seals(fd: RawFd, seals: i32) -> std::io::Result<()> {
    // SAFETY: fcntl with an integer argument on a descriptor the caller holds.
    if unsafe { libc::fcntl(fd, libc::F_ADD_SEALS, seals) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

pub fn seals(fd: RawFd) -> i32 {
    // SAFETY: F_GET_SEALS takes no argument.
    unsafe { libc::fcntl(fd, libc::F_GET_SEALS) }
}

/// Checks that `fd` is a memory file of at least `len` bytes carrying `needed`
/// seals (so it cannot be shrunk under a mapping of it).
pub fn check(fd: RawFd, len: usize, needed: i32, what: &str) -> std::io::Result<()> {
    let s = seals(fd);
    if s < 0 || s & needed != needed {
        return Err(std::io::Error::other(format!(
            "not an oslab wcall {what} (a memory file without the expected seals)"
        )));
    }
    // SAFETY: fstat into a zeroed local.
    let size = unsafe {
        let mut st: libc::stat = std::mem::zeroed();
        if libc::fstat(fd, &mut st) != 0 {
            return Err(std::io::Error::last_os_error());
        }
        st.st_size
    };
    if (size as u64) < len as u64 {
        return Err(std::io::Error::other(format!(
            "not an oslab wcall {what} (too small)"
        )));
    }
    Ok(())
}

/// A shared mapping of the first `len` bytes of a memory file, unmapped on drop.
#[derive(Debug)]
pub struct Mapping {
    ptr: *mut libc::c_void,
    len: usize,
}

// SAFETY: the tables are only atomics; sharing them between threads is their use.
unsafe impl Send for Mapping {}
// SAFETY: as above.
unsafe impl Sync for Mapping {}

impl Mapping {
    /// Maps `fd` shared; read-only unless `writable`.
    pub fn new(fd: RawFd, len: usize, writable: bool) -> std::io::Result<Mapping> {
        let prot = if writable {
            libc::PROT_READ | libc::PROT_WRITE
        } else {
            libc::PROT_READ
        };
        // The system call itself, not libc's mmap: in a governed process that
        // symbol is the interposer's, which would count the table as a file the
        // program maps for writing.
        // SAFETY: a fresh shared mapping of a descriptor the caller holds; checked.
        let ptr = unsafe {
            libc::syscall(
                libc::SYS_mmap,
                0usize,
                len,
                prot,
                libc::MAP_SHARED,
                fd,
                0usize,
            )
        } as *mut libc::c_void;
        if ptr == libc::MAP_FAILED {
            return Err(std::io::Error::last_os_error());
        }
        Ok(Mapping { ptr, len })
    }

    pub fn as_ptr(&self) -> *mut libc::c_void {
        self.ptr
    }

    /// Keeps the mapping for the rest of the process (the interposer's tables).
    pub fn leak(self) -> *mut libc::c_void {
        let p = self.ptr;
        std::mem::forget(self);
        p
    }
}

impl Drop for Mapping {
    fn drop(&mut self) {
        // SAFETY: unmapping our own mapping once.
        unsafe { libc::munmap(self.ptr, self.len) };
    }
}
