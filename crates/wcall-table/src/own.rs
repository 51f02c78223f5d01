//! A governed process's own table: its counters and the files its governed writes
//! reach, written by that process and read by the coordinator. Each process gets a
//! table of its own when it joins, so whatever it writes there can mislead the
//! coordinator about that process alone, and the coordinator checks even that
//! against the kernel before it acts on it or shows it.

use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};

use crate::memfd::{self, Mapping, SIZE_SEALS};

pub const OWN_MAGIC: u64 = u64::from_le_bytes(*b"oslabwo2");
/// Files one process can register; more are seen through the kernel's records.
pub const OWN_FILES: usize = 256;

pub const FILE_FREE: u32 = 0;
pub const FILE_CLAIMED: u32 = 1;
pub const FILE_READY: u32 = 2;

#[repr(C)]
pub struct OwnHeader {
    pub magic: AtomicU64,
    /// 1 once the process found the coordinator gone.
    pub ungoverned: AtomicU32,
    _pad: AtomicU32,
    pub writes: AtomicU64,
    pub bytes: AtomicU64,
    pub delayed_writes: AtomicU64,
    pub held_ns: AtomicU64,
    pub passed_through: AtomicU64,
    pub mmap_writable: AtomicU64,
    pub last_write_ns: AtomicU64,
    /// Calls that ask for data to be on the device (fsync, fdatasync,
    /// sync_file_range, msync, syncfs, and writes through O_SYNC / O_DSYNC
    /// descriptors or with RWF_SYNC / RWF_DSYNC).
    pub durable_calls: AtomicU64,
}

/// A regular file the process writes through descriptor `fd`.
#[repr(C)]
pub struct OwnFile {
    pub state: AtomicU32,
    pub fd: AtomicU32,
    pub dev: AtomicU64,
    pub ino: AtomicU64,
}

#[repr(C)]
pub struct Own {
    pub header: OwnHeader,
    pub files: [OwnFile; OWN_FILES],
}

pub const OWN_BYTES: usize = std::mem::size_of::<Own>();

impl Own {
    /// Registers a file by (dev, ino) once. Returns false when the table is full.
    pub fn register_file(&self, dev: u64, ino: u64, fd: u32) -> bool {
        for f in &self.files {
            if f.state.load(Ordering::Acquire) == FILE_READY
                && f.dev.load(Ordering::Relaxed) == dev
                && f.ino.load(Ordering::Relaxed) == ino
            {
                return true;
            }
        }
        for f in &self.files {
            if f.state.load(Ordering::Relaxed) == FILE_FREE
                && f.state
                    .compare_exchange(FILE_FREE, FILE_CLAIMED, Ordering::AcqRel, Ordering::Relaxed)
                    .is_ok()
            {
                f.dev.store(dev, Ordering::Relaxed);
                f.ino.store(ino, Ordering::Relaxed);
                f.fd.store(fd, Ordering::Relaxed);
                f.state.store(FILE_READY, Ordering::Release);
                return true;
            }
        }
        false
    }
}

/// A writable mapping of a process's own table, for that process and for the
/// coordinator.
pub struct OwnMap {
    map: Mapping,
}

impl OwnMap {
    /// Makes a table for a joining process (the coordinator's side).
    pub fn create() -> std::io::Result<(OwnMap, OwnedFd)> {
        let fd = memfd::create(c"oslab-wcall-own", OWN_BYTES)?;
        memfd::add_seals(fd.as_raw_fd(), libc::F_SEAL_SEAL)?;
        let m = OwnMap {
            map: Mapping::new(fd.as_raw_fd(), OWN_BYTES, true)?,
        };
        m.own().header.magic.store(OWN_MAGIC, Ordering::Release);
        Ok((m, fd))
    }

    /// Maps a table handed over by the coordinator (the process's side).
    pub fn open(fd: RawFd) -> std::io::Result<OwnMap> {
        memfd::check(fd, OWN_BYTES, SIZE_SEALS, "process table")?;
        let m = OwnMap {
            map: Mapping::new(fd, OWN_BYTES, true)?,
        };
        if m.own().header.magic.load(Ordering::Acquire) != OWN_MAGIC {
            return Err(std::io::Error::other(
                "not an oslab wcall process table (bad magic)",
            ));
        }
        Ok(m)
    }

    pub fn own(&self) -> &Own {
        // SAFETY: the mapping holds OWN_BYTES of only atomics (every bit pattern is
        // valid, a hole punched in it reads as zeros) for as long as self lives.
        unsafe { &*(self.map.as_ptr() as *const Own) }
    }

    /// Leaves the mapping in place for the rest of the process.
    pub fn leak(self) -> &'static Own {
        // SAFETY: never unmapped from here on.
        unsafe { &*(self.map.leak() as *const Own) }
    }
}
