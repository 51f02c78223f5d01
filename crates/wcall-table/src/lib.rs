//! The table the WCALL coordinator and the governed processes share: an anonymous
//! memory file the coordinator holds, mapped by both. Every field is an atomic, so no locks cross process boundaries;
//! each process writes its counters into its own slot, so the write path of one
//! process never contends with another's.
//!
//! Every governed process can write every byte of the table, so nothing in it is
//! trusted by the coordinator (see docs/wcall.md, "The trust boundary"). The file
//! itself is sealed against resizing: a process that could shrink it would make
//! every other mapping of it fault (SIGBUS) on its next access.

use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};

pub const MAGIC: u64 = u64::from_le_bytes(*b"oslabwc1");
pub const VERSION: u32 = 2;
pub const GROUPS: usize = 3;
pub const MAX_PROCS: usize = 512;
pub const MAX_FILES: usize = 1024;

/// Environment variables that carry the governor to a program and its children.
pub const ENV_SHM: &str = "OSLAB_WCALL_SHM";
pub const ENV_GROUP: &str = "OSLAB_WCALL_GROUP";

/// Group numbers, highest priority first (the paper's RT-HIGH, RT-LOW, NON-RT).
pub const RT_HIGH: u32 = 0;
pub const RT_LOW: u32 = 1;
pub const NORMAL: u32 = 2;
/// In ENV_GROUP: classify by scheduling class and priority.
pub const AUTO: u32 = 3;

pub const GROUP_NAMES: [&str; GROUPS] = ["rt-high", "rt-low", "normal"];

/// Writers trust the coordinator's hold flags only while it ran this recently.
pub const MAX_SILENCE_NS: u64 = 1_000_000_000;

/// CLOCK_MONOTONIC in ns (the coordinator's heartbeat clock).
#[inline]
pub fn monotonic_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: a valid timespec to fill; CLOCK_MONOTONIC always exists.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// A group number from its name (`auto` included), or from an obvious alias:
/// `high`, `low`, `non-rt`/`nrt`/`other`.
pub fn group_number(name: &str) -> Option<u32> {
    match name.to_ascii_lowercase().as_str() {
        "rt-high" | "high" | "rthigh" => Some(RT_HIGH),
        "rt-low" | "low" | "rtlow" => Some(RT_LOW),
        "normal" | "non-rt" | "nrt" | "other" => Some(NORMAL),
        "auto" => Some(AUTO),
        _ => None,
    }
}

/// The paper's classification: RT priority above 50 is RT-HIGH, 1..=50 RT-LOW,
/// anything not real-time NORMAL.
pub fn classify(policy: i32, rt_priority: i32) -> u32 {
    if policy == libc::SCHED_FIFO || policy == libc::SCHED_RR {
        if rt_priority > 50 { RT_HIGH } else { RT_LOW }
    } else {
        NORMAL
    }
}

/// The group a number read from the table stands for: anything out of range
/// (the table is writable by every governed process) is the lowest, NORMAL.
#[inline]
pub fn group_index(g: u32) -> usize {
    (g as usize).min(GROUPS - 1)
}

/// The seals of the table file: it can neither shrink nor grow, and the seals
/// cannot be changed. Writes stay allowed (the table is written through its
/// mappings).
pub const SEALS: i32 = libc::F_SEAL_SHRINK | libc::F_SEAL_GROW | libc::F_SEAL_SEAL;

#[repr(C)]
pub struct Header {
    pub magic: AtomicU64,
    pub version: AtomicU32,
    /// 0 vanilla (monitor only), 1 wcall, 2 wcall-fair.
    pub policy: AtomicU32,
    pub coordinator_pid: AtomicU32,
    /// Set when the coordinator stops cleanly: writers proceed without asking.
    pub stopped: AtomicU32,
    /// CLOCK_MONOTONIC ns of the coordinator's last pass.
    pub heartbeat_ns: AtomicU64,
    /// Global Dirty, Writeback and the kernel's limits at the last pass, bytes.
    pub global_dirty: AtomicU64,
    pub global_writeback: AtomicU64,
    pub bg_thresh: AtomicU64,
    pub thresh: AtomicU64,
    pub freerun: AtomicU64,
    pub passes: AtomicU64,
    /// Time the coordinator's passes took, all together and the longest, ns.
    pub pass_ns_total: AtomicU64,
    pub pass_ns_max: AtomicU64,
    /// Table entries the coordinator refused to act on (a pid that does not map
    /// this table, a file the process does not hold open for writing, ...).
    pub refused: AtomicU64,
    /// How the coordinator sees the groups' dirty pages: MONITOR_*.
    pub monitor: AtomicU32,
    _pad0: AtomicU32,
    /// Global Dirty + Writeback that no governed process accounts for, and the
    /// headroom kept free for RT-HIGH, at the last pass, bytes.
    pub ungoverned_bytes: AtomicU64,
    pub headroom_bytes: AtomicU64,
    /// CPU time the coordinator's thread has used, and when it started
    /// (CLOCK_MONOTONIC), ns.
    pub cpu_ns: AtomicU64,
    pub started_ns: AtomicU64,
    /// Records the kernel's tracer could not deliver (its ring buffer was full).
    pub kernel_lost: AtomicU64,
}

/// The coordinator sees only the files the interposer registered (cachestat).
pub const MONITOR_CACHESTAT: u32 = 1;
/// It also sees, by the kernel's writeback_dirty_folio records, every file a
/// governed process or one it started dirties: stores through shared mappings,
/// stdio, statically linked programs.
pub const MONITOR_KERNEL: u32 = 2;

/// What the coordinator decided for a group, and its totals.
#[repr(C, align(128))]
pub struct GroupSlot {
    /// 1: writers of the group wait before writing.
    pub hold: AtomicU32,
    pub tasks: AtomicU32,
    /// How long a held writer waits before it looks again, ns.
    pub retry_ns: AtomicU64,
    /// Share in millionths; u64::MAX limit means none.
    pub share_ppm: AtomicU64,
    pub limit_bytes: AtomicU64,
    pub dirty_bytes: AtomicU64,
    pub writeback_bytes: AtomicU64,
    /// Times the coordinator pushed the group's files (sync_file_range).
    pub pushes: AtomicU64,
    /// What the policy held against the limit at the last pass (dirty, or dirty +
    /// writeback), bytes.
    pub charged_bytes: AtomicU64,
    /// Bytes the group's writers wrote since the last pass: the writers add, the
    /// coordinator takes off what its measurement covered.
    pub pending_bytes: AtomicU64,
    /// The limit the group gets once it has a writer, while it has none yet (so a
    /// group that starts writing is limited from its first write).
    pub limit_if_active: AtomicU64,
    /// Bumped by the coordinator after every pass; held writers of wcall-fair
    /// sleep on it (a shared futex) and are woken when it changes.
    pub wake_seq: AtomicU32,
    /// Writers sleeping on `wake_seq` now (the coordinator wakes only when some are).
    pub waiters: AtomicU32,
    /// Governed processes registered in the group and alive, writing or not.
    pub members: AtomicU32,
    /// The counters of the group's processes that have exited and given their
    /// slot back (every process registers at exec, so slots are recycled).
    pub retired: Retired,
}

/// What exited processes of a group did, summed.
#[repr(C)]
#[derive(Default)]
pub struct Retired {
    pub processes: AtomicU64,
    pub writes: AtomicU64,
    pub bytes: AtomicU64,
    pub delayed_writes: AtomicU64,
    pub held_ns: AtomicU64,
    pub passed_through: AtomicU64,
    pub mmap_writable: AtomicU64,
}

impl GroupSlot {
    /// Sleeps until the coordinator's next pass (a change of `wake_seq` from
    /// `seen`) or `timeout_ns`, whichever comes first. The futex is shared (not
    /// FUTEX_PRIVATE): the word lives in a mapping of the table file that every
    /// governed process and the coordinator share.
    pub fn sleep_until_pass(&self, seen: u32, timeout_ns: u64) {
        let ts = libc::timespec {
            tv_sec: (timeout_ns / 1_000_000_000) as libc::time_t,
            tv_nsec: (timeout_ns % 1_000_000_000) as libc::c_long,
        };
        self.waiters.fetch_add(1, Ordering::AcqRel);
        // SAFETY: a FUTEX_WAIT on an aligned u32 of a live mapping with a relative
        // timeout; it returns at once if the word no longer holds `seen`.
        unsafe {
            libc::syscall(
                libc::SYS_futex,
                self.wake_seq.as_ptr(),
                libc::FUTEX_WAIT,
                seen,
                &ts as *const libc::timespec,
            )
        };
        let _ = self
            .waiters
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |w| {
                Some(w.saturating_sub(1))
            });
    }

    /// Marks a pass and wakes the writers sleeping on it (the coordinator's side).
    pub fn pass_done(&self) {
        self.wake_seq.fetch_add(1, Ordering::AcqRel);
        if self.waiters.load(Ordering::Acquire) > 0 {
            // SAFETY: FUTEX_WAKE of every waiter on an aligned u32 of a live mapping.
            unsafe {
                libc::syscall(
                    libc::SYS_futex,
                    self.wake_seq.as_ptr(),
                    libc::FUTEX_WAKE,
                    i32::MAX,
                )
            };
        }
    }

    /// Whether a write of `n` bytes would take the group over its limit, by the
    /// last pass's figures plus what was written since.
    pub fn would_exceed(&self, n: u64) -> bool {
        let limit = if self.tasks.load(Ordering::Relaxed) == 0 {
            self.limit_if_active.load(Ordering::Relaxed)
        } else {
            self.limit_bytes.load(Ordering::Relaxed)
        };
        // saturating: any process of the governor can write these fields
        let used = self
            .charged_bytes
            .load(Ordering::Relaxed)
            .saturating_add(self.pending_bytes.load(Ordering::Relaxed));
        // a group with nothing outstanding may always write once: a single write
        // larger than the limit must not wait forever
        limit != u64::MAX && used > 0 && used.saturating_add(n) > limit
    }

    /// Whether a writer of the group must wait now.
    pub fn must_wait(&self, n: u64) -> bool {
        self.hold.load(Ordering::Acquire) != 0 || self.would_exceed(n)
    }
}

/// One governed process's counters; pid 0 marks a free slot.
#[repr(C, align(128))]
pub struct ProcSlot {
    pub pid: AtomicU32,
    pub group: AtomicU32,
    pub last_write_ns: AtomicU64,
    pub writes: AtomicU64,
    pub bytes: AtomicU64,
    pub delayed_writes: AtomicU64,
    pub held_ns: AtomicU64,
    /// Writes the governor let through untouched: O_DIRECT, not a regular file.
    pub passed_through: AtomicU64,
    /// Shared writable mappings of regular files (stores the governor cannot see).
    pub mmap_writable: AtomicU64,
    /// 1 once the process found the coordinator gone.
    pub ungoverned: AtomicU32,
    pub alive: AtomicU32,
    /// 1 when the interposer runs in the process (its writes can be held); 0 for a
    /// program registered by the `oslab wcall run` that started it (statically
    /// linked: the interposer never loads).
    pub holdable: AtomicU32,
    /// The governed process that registered this one (its parent), 0 when the
    /// process registered itself.
    pub launcher: AtomicU32,
    /// When it registered (CLOCK_MONOTONIC ns): at exec, before its first write.
    pub registered_ns: AtomicU64,
    /// Bytes the kernel counted it dirtying (writeback_dirty_folio), written by the
    /// coordinator where it traces the kernel.
    pub kernel_dirtied: AtomicU64,
    /// Times the coordinator pushed this process's files itself because its writes
    /// cannot all be held (not holdable, or dirtying outside write()).
    pub pushes: AtomicU64,
    /// Files the kernel saw it dirty that no governed write() reached (stores
    /// through a shared mapping, stdio, a static program).
    pub unheld_files: AtomicU32,
    _pad: AtomicU32,
}

pub const FILE_FREE: u32 = 0;
pub const FILE_CLAIMED: u32 = 1;
pub const FILE_READY: u32 = 2;

/// A regular file some governed process writes: the coordinator opens it through
/// /proc/PID/fd/FD to read its page-cache state and to push it.
#[repr(C)]
pub struct FileSlot {
    pub state: AtomicU32,
    pub group: AtomicU32,
    pub pid: AtomicU32,
    pub fd: AtomicU32,
    pub dev: AtomicU64,
    pub ino: AtomicU64,
}

#[repr(C)]
pub struct Table {
    pub header: Header,
    pub groups: [GroupSlot; GROUPS],
    pub procs: [ProcSlot; MAX_PROCS],
    pub files: [FileSlot; MAX_FILES],
}

pub const TABLE_BYTES: usize = std::mem::size_of::<Table>();

impl Table {
    /// Whether a writer may trust the hold flags: the coordinator ran within
    /// `max_age_ns` and has not stopped.
    pub fn coordinator_alive(&self, now_ns: u64, max_age_ns: u64) -> bool {
        self.header.stopped.load(Ordering::Relaxed) == 0
            && now_ns.saturating_sub(self.header.heartbeat_ns.load(Ordering::Relaxed)) <= max_age_ns
    }

    /// Tells every governed process that nobody governs any more: no group is held.
    pub fn release(&self) {
        for g in &self.groups {
            g.hold.store(0, Ordering::Release);
            g.limit_bytes.store(u64::MAX, Ordering::Relaxed);
            g.limit_if_active.store(u64::MAX, Ordering::Relaxed);
        }
        self.header.stopped.store(1, Ordering::Release);
    }

    /// Claims a process slot for `pid`, which runs the interposer (reusing a dead
    /// one when the table is full).
    pub fn claim_proc(&self, pid: u32, group: u32) -> Option<usize> {
        self.claim(pid, group, true, 0)
    }

    /// Gives the slot of an exited process back, its counters added to its group's
    /// retired totals (the coordinator's side).
    pub fn retire(&self, i: usize) {
        let p = &self.procs[i];
        let r = &self.groups[group_index(p.group.load(Ordering::Relaxed))].retired;
        let add = |to: &AtomicU64, from: &AtomicU64| {
            let v = from.swap(0, Ordering::AcqRel);
            let _ = to.fetch_update(Ordering::AcqRel, Ordering::Acquire, |x| {
                Some(x.saturating_add(v))
            });
        };
        r.processes.fetch_add(1, Ordering::Relaxed);
        add(&r.writes, &p.writes);
        add(&r.bytes, &p.bytes);
        add(&r.delayed_writes, &p.delayed_writes);
        add(&r.held_ns, &p.held_ns);
        add(&r.passed_through, &p.passed_through);
        add(&r.mmap_writable, &p.mmap_writable);
        for x in [
            &p.last_write_ns,
            &p.registered_ns,
            &p.kernel_dirtied,
            &p.pushes,
        ] {
            x.store(0, Ordering::Relaxed);
        }
        for x in [
            &p.alive,
            &p.ungoverned,
            &p.holdable,
            &p.launcher,
            &p.unheld_files,
        ] {
            x.store(0, Ordering::Relaxed);
        }
        p.pid.store(0, Ordering::Release);
    }

    /// Registers `pid`, started by the governed process `launcher`, that cannot be
    /// held (a statically linked program).
    pub fn register_launched(&self, pid: u32, group: u32, launcher: u32) -> Option<usize> {
        self.claim(pid, group, false, launcher)
    }

    fn claim(&self, pid: u32, group: u32, holdable: bool, launcher: u32) -> Option<usize> {
        for (i, p) in self.procs.iter().enumerate() {
            if p.pid.load(Ordering::Relaxed) == 0
                && p.pid
                    .compare_exchange(0, pid, Ordering::AcqRel, Ordering::Relaxed)
                    .is_ok()
            {
                p.group.store(group, Ordering::Relaxed);
                p.holdable.store(holdable as u32, Ordering::Relaxed);
                p.launcher.store(launcher, Ordering::Relaxed);
                p.registered_ns.store(monotonic_ns(), Ordering::Relaxed);
                p.alive.store(1, Ordering::Release);
                return Some(i);
            }
        }
        None
    }

    /// Registers a file by (dev, ino) once: a file already in the table keeps its
    /// first group. Returns false when the table is full.
    pub fn register_file(&self, dev: u64, ino: u64, group: u32, pid: u32, fd: u32) -> bool {
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
                f.group.store(group, Ordering::Relaxed);
                f.pid.store(pid, Ordering::Relaxed);
                f.fd.store(fd, Ordering::Relaxed);
                f.state.store(FILE_READY, Ordering::Release);
                return true;
            }
        }
        false
    }
}

/// A mapping of the table.
pub struct Mapped {
    ptr: *mut Table,
    /// The table file's st_dev and st_ino: how /proc/PID/maps names a mapping of it.
    dev: u64,
    ino: u64,
}

// SAFETY: the table is only atomics; sharing it between threads is what it is for.
unsafe impl Send for Mapped {}
// SAFETY: as above.
unsafe impl Sync for Mapped {}

impl Mapped {
    /// Creates a table in an anonymous memory file named `oslab-wcall-NAME` and maps
    /// it. The file is what other processes open, as /proc/PID/fd/FD; it lives as
    /// long as the returned File is open, so nothing is ever left behind. It is
    /// sealed at its size (SEALS), so no process that opens it can resize it, and
    /// close-on-exec, so the programs the coordinator starts do not inherit it
    /// (they open it by path, as every governed program does).
    pub fn create_memfd(name: &str) -> std::io::Result<(Mapped, std::fs::File)> {
        use std::os::fd::FromRawFd;
        let cname = std::ffi::CString::new(format!("oslab-wcall-{name}"))
            .map_err(|_| std::io::Error::other("a governor name cannot hold a NUL byte"))?;
        // SAFETY: a NUL-terminated name; the fd is checked and then owned by File.
        let fd = unsafe {
            libc::memfd_create(cname.as_ptr(), libc::MFD_ALLOW_SEALING | libc::MFD_CLOEXEC)
        };
        if fd < 0 {
            return Err(std::io::Error::last_os_error());
        }
        // SAFETY: fd is a fresh descriptor that nothing else owns.
        let f = unsafe { std::fs::File::from_raw_fd(fd) };
        f.set_len(TABLE_BYTES as u64)?;
        // SAFETY: fcntl on our own descriptor with an integer argument.
        if unsafe { libc::fcntl(fd, libc::F_ADD_SEALS, SEALS) } != 0 {
            return Err(std::io::Error::last_os_error());
        }
        let m = Self::map_fd(fd)?;
        let t = m.table();
        t.header.version.store(VERSION, Ordering::Relaxed);
        t.header
            .coordinator_pid
            .store(std::process::id(), Ordering::Relaxed);
        t.header.magic.store(MAGIC, Ordering::Release);
        Ok((m, f))
    }

    /// Maps an existing table; an error when it is not one of ours, or when its
    /// file could still be shrunk under the mapping (a table made by
    /// `create_memfd` is sealed; anything else could fault this process with
    /// SIGBUS whenever its owner truncates it).
    pub fn open(path: &std::path::Path) -> std::io::Result<Mapped> {
        let f = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open(path)?;
        // SAFETY: fcntl on a descriptor we own; F_GET_SEALS takes no argument.
        let seals = unsafe { libc::fcntl(std::os::fd::AsRawFd::as_raw_fd(&f), libc::F_GET_SEALS) };
        if seals < 0 || seals & libc::F_SEAL_SHRINK == 0 {
            return Err(std::io::Error::other(
                "not an oslab wcall table (not a memory file sealed against shrinking)",
            ));
        }
        // sealed: the size read now cannot drop afterwards
        if f.metadata()?.len() < TABLE_BYTES as u64 {
            return Err(std::io::Error::other(
                "not an oslab wcall table (too small)",
            ));
        }
        let m = Self::map_fd(std::os::fd::AsRawFd::as_raw_fd(&f))?;
        let h = &m.table().header;
        if h.magic.load(Ordering::Acquire) != MAGIC || h.version.load(Ordering::Relaxed) != VERSION
        {
            return Err(std::io::Error::other(
                "not an oslab wcall table (bad magic or version)",
            ));
        }
        Ok(m)
    }

    /// Maps `fd` (a table file) shared, read-write.
    pub fn map_fd(fd: i32) -> std::io::Result<Mapped> {
        // SAFETY: fstat of the fd we were given into a zeroed local.
        let st = unsafe {
            let mut st: libc::stat = std::mem::zeroed();
            if libc::fstat(fd, &mut st) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            st
        };
        // SAFETY: a fresh shared mapping of an fd we were given; checked below.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                TABLE_BYTES,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                fd,
                0,
            )
        };
        if p == libc::MAP_FAILED {
            return Err(std::io::Error::last_os_error());
        }
        Ok(Mapped {
            ptr: p.cast(),
            dev: st.st_dev,
            ino: st.st_ino,
        })
    }

    /// The table file's (st_dev, st_ino).
    pub fn file_id(&self) -> (u64, u64) {
        (self.dev, self.ino)
    }

    pub fn table(&self) -> &Table {
        // SAFETY: ptr maps TABLE_BYTES of a file whose content is only atomics (all
        // bit patterns valid) for as long as self lives.
        unsafe { &*self.ptr }
    }

    /// Leaves the mapping in place for the rest of the process (the interposer's
    /// table lives as long as the program).
    pub fn leak(self) -> &'static Table {
        let p = self.ptr;
        std::mem::forget(self);
        // SAFETY: never unmapped from here on.
        unsafe { &*p }
    }
}

impl Drop for Mapped {
    fn drop(&mut self) {
        // SAFETY: unmapping our own mapping once.
        unsafe { libc::munmap(self.ptr.cast(), TABLE_BYTES) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_paper_classification() {
        assert_eq!(classify(libc::SCHED_FIFO, 55), RT_HIGH);
        assert_eq!(classify(libc::SCHED_FIFO, 50), RT_LOW);
        assert_eq!(classify(libc::SCHED_RR, 1), RT_LOW);
        assert_eq!(classify(libc::SCHED_OTHER, 0), NORMAL);
        assert_eq!(classify(libc::SCHED_BATCH, 0), NORMAL);
        assert_eq!(group_number("auto"), Some(AUTO));
        assert_eq!(group_number("rt-mid"), None);
        assert_eq!(group_number("high"), Some(RT_HIGH));
        assert_eq!(group_number("Low"), Some(RT_LOW));
        assert_eq!(group_number("non-rt"), Some(NORMAL));
    }

    #[test]
    fn create_open_and_register() {
        let (m, f) = Mapped::create_memfd("test").unwrap();
        let path = std::path::PathBuf::from(format!(
            "/proc/self/fd/{}",
            std::os::fd::AsRawFd::as_raw_fd(&f)
        ));
        let other = Mapped::open(&path).unwrap();
        let i = m.table().claim_proc(42, NORMAL).unwrap();
        assert_eq!(
            other.table().procs[i].pid.load(Ordering::Relaxed),
            42,
            "one table, two mappings"
        );
        assert!(m.table().register_file(1, 2, NORMAL, 42, 3));
        assert!(
            other.table().register_file(1, 2, RT_HIGH, 43, 4),
            "already there"
        );
        let ready: Vec<_> = m
            .table()
            .files
            .iter()
            .filter(|f| f.state.load(Ordering::Relaxed) == FILE_READY)
            .collect();
        assert_eq!(ready.len(), 1);
        assert_eq!(
            ready[0].group.load(Ordering::Relaxed),
            NORMAL,
            "the first group keeps it"
        );
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("junk"), vec![0u8; TABLE_BYTES]).unwrap();
        assert!(Mapped::open(&dir.path().join("junk")).is_err());
        assert!(Mapped::open(&dir.path().join("absent")).is_err());
    }

    #[test]
    fn the_table_cannot_be_resized_by_anyone_who_opens_it() {
        use std::os::fd::{AsRawFd, FromRawFd};
        let (m, f) = Mapped::create_memfd("test").unwrap();
        let path = std::path::PathBuf::from(format!("/proc/self/fd/{}", f.as_raw_fd()));
        // as a governed program opens it
        let other = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open(&path)
            .unwrap();
        for file in [&other, &f] {
            for len in [0, TABLE_BYTES as u64 - 1, 2 * TABLE_BYTES as u64] {
                let e = file.set_len(len).unwrap_err();
                assert_eq!(e.raw_os_error(), Some(libc::EPERM), "length {len}");
            }
        }
        // SAFETY: fcntl on our descriptor with an integer argument.
        let r = unsafe { libc::fcntl(other.as_raw_fd(), libc::F_ADD_SEALS, libc::F_SEAL_WRITE) };
        assert_eq!(r, -1, "the seals themselves are sealed");
        // SAFETY: as above, no argument.
        let seals = unsafe { libc::fcntl(other.as_raw_fd(), libc::F_GET_SEALS) };
        assert_eq!(seals, SEALS);
        assert_eq!(other.metadata().unwrap().len(), TABLE_BYTES as u64);
        let o = Mapped::open(&path).unwrap();
        o.table().header.passes.store(7, Ordering::Relaxed);
        assert_eq!(m.table().header.passes.load(Ordering::Relaxed), 7);
        assert_eq!(o.file_id(), m.file_id());

        // a table in a memory file that is not sealed is refused: its owner could
        // shrink it under the mapping
        // SAFETY: a NUL-terminated name; the fd is checked and owned by File.
        let fd = unsafe { libc::memfd_create(c"oslab-wcall-test".as_ptr(), libc::MFD_CLOEXEC) };
        assert!(fd >= 0);
        // SAFETY: a fresh descriptor nothing else owns.
        let plain = unsafe { std::fs::File::from_raw_fd(fd) };
        plain.set_len(TABLE_BYTES as u64).unwrap();
        let pm = Mapped::map_fd(fd).unwrap();
        pm.table().header.version.store(VERSION, Ordering::Relaxed);
        pm.table().header.magic.store(MAGIC, Ordering::Release);
        let e = Mapped::open(std::path::Path::new(&format!("/proc/self/fd/{fd}")))
            .err()
            .unwrap();
        assert!(e.to_string().contains("sealed"), "{e}");
    }

    #[test]
    fn hostile_counters_and_groups_stay_in_range() {
        let (m, _f) = Mapped::create_memfd("test").unwrap();
        let g = &m.table().groups[0];
        g.tasks.store(1, Ordering::Relaxed);
        g.limit_bytes.store(u64::MAX - 1, Ordering::Relaxed);
        g.charged_bytes.store(u64::MAX, Ordering::Relaxed);
        g.pending_bytes.store(u64::MAX, Ordering::Relaxed);
        assert!(g.must_wait(u64::MAX), "saturates instead of overflowing");
        assert_eq!(group_index(RT_LOW), 1);
        assert_eq!(group_index(AUTO), NORMAL as usize);
        assert_eq!(group_index(u32::MAX), NORMAL as usize);
    }

    #[test]
    fn a_write_that_would_exceed_the_limit_waits() {
        let (m, _f) = Mapped::create_memfd("test").unwrap();
        let g = &m.table().groups[0];
        g.tasks.store(1, Ordering::Relaxed);
        g.limit_bytes.store(1000, Ordering::Relaxed);
        g.charged_bytes.store(600, Ordering::Relaxed);
        g.pending_bytes.store(300, Ordering::Relaxed);
        assert!(!g.must_wait(100), "exactly at the limit");
        assert!(g.must_wait(101));
        // no writer seen yet: the limit it would have applies
        g.tasks.store(0, Ordering::Relaxed);
        g.limit_if_active.store(u64::MAX, Ordering::Relaxed);
        assert!(!g.must_wait(1 << 30));
        g.limit_if_active.store(0, Ordering::Relaxed);
        assert!(g.must_wait(1));
        g.charged_bytes.store(0, Ordering::Relaxed);
        g.pending_bytes.store(0, Ordering::Relaxed);
        assert!(
            !g.must_wait(1 << 30),
            "nothing outstanding: one write may go"
        );
        m.table().release();
        assert!(!g.must_wait(1 << 30), "a stopped governor holds nobody");
    }

    #[test]
    fn a_held_writer_wakes_at_the_next_pass_not_at_its_timeout() {
        let (m, f) = Mapped::create_memfd("test").unwrap();
        let path = format!("/proc/self/fd/{}", std::os::fd::AsRawFd::as_raw_fd(&f));
        let other = Mapped::open(std::path::Path::new(&path)).unwrap();
        let writer = std::thread::spawn(move || {
            let g = &other.table().groups[1];
            let seen = g.wake_seq.load(Ordering::Acquire);
            let t0 = monotonic_ns();
            g.sleep_until_pass(seen, 60_000_000_000);
            (monotonic_ns() - t0, g.waiters.load(Ordering::Relaxed))
        });
        let g = &m.table().groups[1];
        while g.waiters.load(Ordering::Acquire) == 0 {
            std::thread::yield_now();
        }
        g.pass_done();
        let (slept, waiters_after) = writer.join().unwrap();
        // woken by the pass, long before the minute it would otherwise sleep
        assert!(slept < 30_000_000_000, "{slept} ns");
        assert_eq!(waiters_after, 0);
        assert_eq!(g.wake_seq.load(Ordering::Relaxed), 1);
    }

    #[test]
    fn an_exited_process_gives_its_slot_back_and_keeps_its_counts() {
        let (m, _f) = Mapped::create_memfd("test").unwrap();
        let t = m.table();
        let i = t.claim_proc(10, RT_LOW).unwrap();
        t.procs[i].writes.store(5, Ordering::Relaxed);
        t.procs[i].held_ns.store(7, Ordering::Relaxed);
        t.retire(i);
        assert_eq!(t.procs[i].pid.load(Ordering::Relaxed), 0);
        let r = &t.groups[RT_LOW as usize].retired;
        assert_eq!(r.writes.load(Ordering::Relaxed), 5);
        assert_eq!(r.held_ns.load(Ordering::Relaxed), 7);
        assert_eq!(r.processes.load(Ordering::Relaxed), 1);
        assert_eq!(t.claim_proc(11, NORMAL), Some(i), "the slot is reused");
        assert_eq!(t.procs[i].writes.load(Ordering::Relaxed), 0);
    }

    #[test]
    fn a_launched_program_is_registered_as_not_holdable() {
        let (m, _f) = Mapped::create_memfd("test").unwrap();
        let t = m.table();
        let own = t.claim_proc(10, RT_HIGH).unwrap();
        let kid = t.register_launched(11, NORMAL, 10).unwrap();
        assert_eq!(t.procs[own].holdable.load(Ordering::Relaxed), 1);
        assert_eq!(t.procs[kid].holdable.load(Ordering::Relaxed), 0);
        assert_eq!(t.procs[kid].launcher.load(Ordering::Relaxed), 10);
        assert!(t.procs[kid].registered_ns.load(Ordering::Relaxed) > 0);
    }

    #[test]
    fn a_stale_heartbeat_means_ungoverned() {
        let (m, _f) = Mapped::create_memfd("test").unwrap();
        let t = m.table();
        t.header.heartbeat_ns.store(1_000, Ordering::Relaxed);
        assert!(t.coordinator_alive(1_500, 1_000));
        assert!(!t.coordinator_alive(5_000, 1_000));
        t.header.stopped.store(1, Ordering::Relaxed);
        assert!(!t.coordinator_alive(1_500, 1_000));
    }
}
