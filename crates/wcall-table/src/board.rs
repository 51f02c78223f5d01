//! The board: what the coordinator decided and measured, written by the coordinator
//! alone and mapped read-only by every governed process and by `oslab wcall status`.
//!
//! Its memory file carries F_SEAL_FUTURE_WRITE from the moment the coordinator has
//! mapped it: after that no process can map it writable, write(2) it or punch a
//! hole in it, so everything on it is the coordinator's own (validated) word.

use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};

use crate::memfd::{self, Mapping, SIZE_SEALS};
use crate::{GROUPS, MAX_MEMBERS, group_index};

pub const BOARD_MAGIC: u64 = u64::from_le_bytes(*b"oslabwb1");
pub const BOARD_VERSION: u32 = 4;

/// Seals a board carries once the coordinator has mapped it: no resizing, no
/// writes by anyone else, no further changes to the seals.
pub const BOARD_SEALS: i32 = SIZE_SEALS | libc::F_SEAL_FUTURE_WRITE | libc::F_SEAL_SEAL;

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
    /// Requests and table entries the coordinator refused (a file the process does
    /// not hold open for writing, a launched pid that is not the asker's child, ...).
    pub refused: AtomicU64,
    /// How the coordinator sees the groups' dirty pages: MONITOR_*.
    pub monitor: AtomicU32,
    /// The coordinator's user: processes of other users join it only when it is root.
    pub uid: AtomicU32,
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
    /// The sync guard: GUARD_* how it is set, its size now (0: not acting),
    /// since when it acts and when a durable write last switched it on
    /// (CLOCK_MONOTONIC ns), the pid that made it, the quiet interval after which
    /// it goes off, and the device bandwidth it was sized from (bytes/s, 0 where
    /// none was measured yet).
    pub guard_setting: AtomicU32,
    pub guard_pid: AtomicU32,
    pub guard_bytes: AtomicU64,
    pub guard_since_ns: AtomicU64,
    pub guard_durable_ns: AtomicU64,
    pub guard_quiet_ns: AtomicU64,
    pub guard_bandwidth: AtomicU64,
}

/// The sync guard is off.
pub const GUARD_OFF: u32 = 0;
/// It acts while a governed rt-high process makes durable writes, sized for the
/// device from the bandwidth the governor measures.
pub const GUARD_AUTO: u32 = 1;
/// It acts at a size the user gave while an rt-high process is governed.
pub const GUARD_FIXED: u32 = 2;

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
    /// The limit the group gets once it has a writer, while it has none yet (so a
    /// group that starts writing is limited from its first write).
    pub limit_if_active: AtomicU64,
    /// Bumped by the coordinator after every pass; held writers of wcall-fair
    /// sleep on it (a shared futex) and are woken when it changes.
    pub wake_seq: AtomicU32,
    /// Governed processes in the group and alive, writing or not.
    pub members: AtomicU32,
    /// The counters of the group's processes that have exited.
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
    /// FUTEX_PRIVATE): the word lives in the board's file, which the coordinator
    /// maps writable and the writer read-only; the kernel keys both on the file.
    pub fn sleep_until_pass(&self, seen: u32, timeout_ns: u64) {
        let ts = libc::timespec {
            tv_sec: (timeout_ns / 1_000_000_000) as libc::time_t,
            tv_nsec: (timeout_ns % 1_000_000_000) as libc::c_long,
        };
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
    }

    /// Marks a pass and wakes the writers sleeping on it (the coordinator's side).
    pub fn pass_done(&self) {
        self.wake_seq.fetch_add(1, Ordering::AcqRel);
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

    /// Whether a write of `n` bytes would take the group over its limit, by the
    /// last pass's figures plus what this writer wrote since (`own_pending`).
    pub fn would_exceed(&self, n: u64, own_pending: u64) -> bool {
        let limit = if self.tasks.load(Ordering::Relaxed) == 0 {
            self.limit_if_active.load(Ordering::Relaxed)
        } else {
            self.limit_bytes.load(Ordering::Relaxed)
        };
        let used = self
            .charged_bytes
            .load(Ordering::Relaxed)
            .saturating_add(own_pending);
        // a group with nothing outstanding may always write once: a single write
        // larger than the limit must not wait forever
        limit != u64::MAX && used > 0 && used.saturating_add(n) > limit
    }

    /// Whether a writer of the group must wait now.
    pub fn must_wait(&self, n: u64, own_pending: u64) -> bool {
        self.hold.load(Ordering::Acquire) != 0 || self.would_exceed(n, own_pending)
    }
}

/// A governed process as the coordinator admitted it: the kernel's pid and uid,
/// the group the coordinator decided, and its counters as validated against the
/// kernel's (`/proc/PID/io`). pid 0 marks a free slot.
#[repr(C, align(128))]
pub struct MemberSlot {
    pub pid: AtomicU32,
    pub group: AtomicU32,
    pub uid: AtomicU32,
    /// 1 when the interposer runs in it (its writes can be held).
    pub holdable: AtomicU32,
    /// The `oslab wcall run` that registered it (a static program), else 0.
    pub launcher: AtomicU32,
    /// 1 once the process said it found the coordinator gone.
    pub ungoverned: AtomicU32,
    /// Files the kernel saw it dirty that no governed write() reached.
    pub unheld_files: AtomicU32,
    _pad: AtomicU32,
    /// When it joined (CLOCK_MONOTONIC ns): at exec, before its first write.
    pub registered_ns: AtomicU64,
    /// When the kernel last confirmed it wrote, ns.
    pub last_write_ns: AtomicU64,
    /// How much of its own byte count the last pass's measurement covers: what it
    /// wrote beyond this is its own pending, added to its group's charge when it
    /// checks its next write.
    pub accounted_bytes: AtomicU64,
    pub writes: AtomicU64,
    pub bytes: AtomicU64,
    pub delayed_writes: AtomicU64,
    pub held_ns: AtomicU64,
    /// Writes the governor let through untouched: O_DIRECT, not a regular file.
    pub passed_through: AtomicU64,
    /// Shared writable mappings of regular files (stores the governor cannot see).
    pub mmap_writable: AtomicU64,
    /// Bytes the kernel counted it dirtying (writeback_dirty_folio).
    pub kernel_dirtied: AtomicU64,
    /// Times the coordinator pushed its files itself, as it could not hold it.
    pub pushes: AtomicU64,
}

#[repr(C)]
pub struct Board {
    pub header: Header,
    pub groups: [GroupSlot; GROUPS],
    pub members: [MemberSlot; MAX_MEMBERS],
}

pub const BOARD_BYTES: usize = std::mem::size_of::<Board>();

impl Board {
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
        for g in &self.groups {
            g.pass_done();
        }
    }

    /// The group slot of member slot `i` (its group, whatever the number).
    pub fn group_of(&self, i: usize) -> &GroupSlot {
        &self.groups[group_index(self.members[i].group.load(Ordering::Relaxed))]
    }
}

/// The coordinator's writable mapping of a board it made.
pub struct BoardMap {
    map: Mapping,
    fd: OwnedFd,
}

impl BoardMap {
    /// Makes a board in a memory file named `oslab-wcall-NAME`, maps it writable,
    /// and seals it so that nobody can write it after this mapping.
    pub fn create(name: &str, policy: u32) -> std::io::Result<BoardMap> {
        let cname = std::ffi::CString::new(format!("oslab-wcall-{name}"))
            .map_err(|_| std::io::Error::other("a governor name cannot hold a NUL byte"))?;
        let fd = memfd::create(&cname, BOARD_BYTES)?;
        let map = Mapping::new(fd.as_raw_fd(), BOARD_BYTES, true)?;
        memfd::add_seals(fd.as_raw_fd(), BOARD_SEALS & !SIZE_SEALS)?;
        let b = BoardMap { map, fd };
        let h = &b.board().header;
        h.version.store(BOARD_VERSION, Ordering::Relaxed);
        h.policy.store(policy, Ordering::Relaxed);
        h.coordinator_pid
            .store(std::process::id(), Ordering::Relaxed);
        // SAFETY: getuid cannot fail.
        h.uid.store(unsafe { libc::getuid() }, Ordering::Relaxed);
        h.magic.store(BOARD_MAGIC, Ordering::Release);
        Ok(b)
    }

    pub fn board(&self) -> &Board {
        // SAFETY: the mapping holds BOARD_BYTES of only atomics (every bit pattern
        // is valid) for as long as self lives.
        unsafe { &*(self.map.as_ptr() as *const Board) }
    }

    /// The memory file, to hand to governed processes (they can only read it).
    pub fn fd(&self) -> RawFd {
        self.fd.as_raw_fd()
    }
}

/// A read-only mapping of a board another process made.
pub struct BoardView {
    map: Mapping,
}

impl BoardView {
    /// Maps `fd` read-only once it shows itself a board that nobody but its maker
    /// can write and nobody can shrink.
    pub fn open(fd: RawFd) -> std::io::Result<BoardView> {
        memfd::check(fd, BOARD_BYTES, BOARD_SEALS, "board")?;
        let map = Mapping::new(fd, BOARD_BYTES, false)?;
        let v = BoardView { map };
        let h = &v.board().header;
        if h.magic.load(Ordering::Acquire) != BOARD_MAGIC
            || h.version.load(Ordering::Relaxed) != BOARD_VERSION
        {
            return Err(std::io::Error::other(
                "not an oslab wcall board (bad magic or version)",
            ));
        }
        Ok(v)
    }

    pub fn board(&self) -> &Board {
        // SAFETY: as BoardMap::board; the mapping is read-only and nothing here
        // stores through it.
        unsafe { &*(self.map.as_ptr() as *const Board) }
    }

    /// Leaves the mapping in place for the rest of the process.
    pub fn leak(self) -> &'static Board {
        // SAFETY: never unmapped from here on.
        unsafe { &*(self.map.leak() as *const Board) }
    }
}
