//! The gate in front of every governed write: is this descriptor a governed file,
//! must the writer's group wait, and counting what went through.
//!
//! Each descriptor's class (governed or passed through) is looked up once, on its
//! first write, and kept in FD_CLASS; `crate::fds` forgets a number whenever it may
//! have come to name another file. The write path itself stays one load of the
//! cache, a look at the board and a few counters in the process's own table.

use std::ffi::c_int;
use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};

use libc::{iovec, ssize_t};
use oslab_wcall_table::{GroupSlot, MAX_SILENCE_NS, Own, monotonic_coarse_ns, monotonic_ns};

use crate::join::{Joined, joined};
use crate::say;

pub const UNKNOWN: u8 = 0;
const GOVERNED: u8 = 1;
const PASS: u8 = 2;
/// Added to a class: the descriptor was opened O_SYNC or O_DSYNC, so every write
/// through it asks for its data to be on the device.
const DURABLE: u8 = 4;
pub const FD_CACHE: usize = 4096;
pub static FD_CLASS: [AtomicU8; FD_CACHE] = [const { AtomicU8::new(UNKNOWN) }; FD_CACHE];

static WARNED_GONE: AtomicBool = AtomicBool::new(false);
static WARNED_FULL: AtomicBool = AtomicBool::new(false);

/// Forgets every descriptor's class, so each file is registered again, in the
/// table of the governor the process joins next (after fork, or a rejoin).
pub fn forget_all_classes() {
    for c in &FD_CLASS {
        c.store(UNKNOWN, Ordering::Relaxed);
    }
}

/// The governor's tables, joining one first where there is none live and a
/// try is due (see `join::rejoin_if_due`).
#[inline]
fn governor() -> Option<Joined> {
    match joined() {
        Some(j) if !WARNED_GONE.load(Ordering::Relaxed) => Some(j),
        gone => rejoin().or(gone),
    }
}

#[cold]
fn rejoin() -> Option<Joined> {
    let j = crate::join::rejoin_if_due()?;
    forget_all_classes();
    WARNED_GONE.store(false, Ordering::Relaxed);
    Some(j)
}

/// Whether writes to `fd` are governed; the first look registers the file.
fn classify_fd(j: &Joined, fd: c_int) -> u8 {
    if fd < 0 {
        return PASS;
    }
    if let Some(c) = FD_CLASS.get(fd as usize) {
        let v = c.load(Ordering::Relaxed);
        if v != UNKNOWN {
            return v;
        }
    }
    // SAFETY: fstat into a zeroed local; fcntl on the caller's fd.
    let (st, flags) = unsafe {
        let mut st: libc::stat = std::mem::zeroed();
        let r = libc::fstat(fd, &mut st);
        (
            if r == 0 { Some(st) } else { None },
            libc::fcntl(fd, libc::F_GETFL),
        )
    };
    let durable = if flags >= 0 && flags & libc::O_DSYNC != 0 {
        DURABLE
    } else {
        0
    };
    let class = durable
        | match st {
            Some(st)
                if st.st_mode & libc::S_IFMT == libc::S_IFREG
                    && flags >= 0
                    && flags & libc::O_DIRECT == 0 =>
            {
                if !j.own.register_file(st.st_dev, st.st_ino, fd as u32)
                    && !WARNED_FULL.swap(true, Ordering::Relaxed)
                {
                    say(&format!(
                        "pid {} writes more files than its table holds; the rest are seen only through the kernel's records",
                        std::process::id()
                    ));
                }
                GOVERNED
            }
            _ => PASS,
        };
    if let Some(c) = FD_CLASS.get(fd as usize) {
        c.store(class, Ordering::Relaxed);
    }
    class
}

fn warn_ungoverned(j: &Joined) {
    if !WARNED_GONE.swap(true, Ordering::Relaxed) {
        j.own.header.ungoverned.store(1, Ordering::Relaxed);
        let why = if j.board.header.stopped.load(Ordering::Relaxed) != 0 {
            "the coordinator has stopped"
        } else {
            "the coordinator is not responding (killed?)"
        };
        say(&format!(
            "{why}; writes of pid {} proceed ungoverned",
            std::process::id()
        ));
    }
}

/// What this process wrote beyond what the coordinator's last pass measured.
#[inline]
fn own_pending(j: &Joined) -> u64 {
    j.own
        .header
        .bytes
        .load(Ordering::Relaxed)
        .saturating_sub(j.member().accounted_bytes.load(Ordering::Relaxed))
}

/// Counts a call that asks for data to be on the device: the coordinator
/// keeps the sync guard on while an rt-high process makes them.
#[inline]
pub fn note_durable() {
    if let Some(j) = governor() {
        j.own.header.durable_calls.fetch_add(1, Ordering::Relaxed);
    }
}

/// The gate in front of a governed write of `n` bytes: returns this process's
/// table to count it in.
#[inline]
pub fn before(fd: c_int, n: u64) -> Option<&'static Own> {
    let j = governor()?;
    let class = classify_fd(&j, fd);
    if class & DURABLE != 0 {
        j.own.header.durable_calls.fetch_add(1, Ordering::Relaxed);
    }
    if class & !DURABLE != GOVERNED {
        j.own.header.passed_through.fetch_add(1, Ordering::Relaxed);
        return None;
    }
    crate::join::follow_scheduling(&j);
    let group = j.board.group_of(j.index);
    let stamp = monotonic_coarse_ns();
    j.own.header.last_write_ns.store(stamp, Ordering::Relaxed);
    if WARNED_GONE.load(Ordering::Relaxed) {
        return Some(j.own);
    }
    if !group.must_wait(n, own_pending(&j)) {
        if j.own.header.writes.load(Ordering::Relaxed) % 64 == 0
            && !j.board.coordinator_alive(stamp, MAX_SILENCE_NS)
        {
            warn_ungoverned(&j);
        }
        return Some(j.own);
    }
    // a held write's time is measured with the precise clock
    let now = monotonic_ns();
    j.own.header.delayed_writes.fetch_add(1, Ordering::Relaxed);
    let end = wait_while_held(&j, group, n, now);
    j.own
        .header
        .held_ns
        .fetch_add(end.saturating_sub(now), Ordering::Relaxed);
    j.own.header.last_write_ns.store(end, Ordering::Relaxed);
    Some(j.own)
}

/// Waits while the group must; returns when it stopped waiting.
fn wait_while_held(j: &Joined, group: &GroupSlot, n: u64, start: u64) -> u64 {
    // wcall-fair wakes its held writers at the coordinator's next pass; wcall,
    // the paper's Algorithm 1, blocks its fixed time (HZ/10) and looks again
    let woken = j.board.header.policy.load(Ordering::Relaxed) == 2;
    let mut now = start;
    loop {
        let seen = group.wake_seq.load(Ordering::Acquire);
        if !group.must_wait(n, own_pending(j)) {
            return now;
        }
        if !j.board.coordinator_alive(now, MAX_SILENCE_NS) {
            warn_ungoverned(j);
            return now;
        }
        let wait = group
            .retry_ns
            .load(Ordering::Relaxed)
            .clamp(1_000_000, 1_000_000_000);
        if woken {
            group.sleep_until_pass(seen, wait);
        } else {
            let ts = libc::timespec {
                tv_sec: (wait / 1_000_000_000) as libc::time_t,
                tv_nsec: (wait % 1_000_000_000) as libc::c_long,
            };
            // SAFETY: sleeping on a local timespec.
            unsafe { libc::nanosleep(&ts, std::ptr::null_mut()) };
        }
        now = monotonic_ns();
    }
}

#[inline]
pub fn after(gated: Option<&Own>, written: ssize_t) -> ssize_t {
    if let Some(own) = gated
        && written > 0
    {
        own.header.writes.fetch_add(1, Ordering::Relaxed);
        own.header
            .bytes
            .fetch_add(written as u64, Ordering::Relaxed);
    }
    written
}

/// Bytes an iovec array asks to write.
pub fn iov_bytes(iov: *const iovec, cnt: c_int) -> u64 {
    if iov.is_null() || cnt <= 0 {
        return 0;
    }
    // SAFETY: the caller passes cnt valid iovecs, as writev(2) requires.
    let v = unsafe { std::slice::from_raw_parts(iov, cnt as usize) };
    v.iter().map(|x| x.iov_len as u64).sum()
}
