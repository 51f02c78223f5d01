//! What the WCALL coordinator and the governed processes share, with libc as the
//! only dependency (the interposer builds in seconds):
//!
//! - [`board`]: what the coordinator decided and measured, written by it alone and
//!   mapped read-only by every governed process;
//! - [`own`]: each governed process's own table (its counters, its files), written
//!   by that process, read by the coordinator, which trusts nothing in it it has
//!   not checked with the kernel;
//! - [`wire`]: how a process joins (a request and a reply over the governor's Unix
//!   socket; the coordinator learns who asks from SO_PEERCRED, never from the
//!   request), [`conn`]: the governor's side of that socket (reads that never
//!   block, descriptors refused, closes that cannot wait), and [`memfd`]: the
//!   sealed memory files behind both tables.
//!
//! Every field of the tables is an atomic, so no lock crosses a process boundary,
//! and each process writes only its own table, so the write path of one process
//! never contends with another's (docs/wcall.md, "The trust boundary").

pub mod board;
pub mod conn;
pub mod memfd;
pub mod own;
pub mod wire;

pub use board::{
    Board, BoardMap, BoardView, GUARD_AUTO, GUARD_FIXED, GUARD_OFF, GroupSlot, MemberSlot,
};
pub use own::{Own, OwnMap};

pub const GROUPS: usize = 3;
/// Governed processes one governor holds at a time.
pub const MAX_MEMBERS: usize = 512;

/// The environment variable that carries the governor's socket to a program and
/// its children.
pub const ENV_SOCKET: &str = "OSLAB_WCALL_SOCK";

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
    clock_ns(libc::CLOCK_MONOTONIC)
}

/// CLOCK_MONOTONIC as of the last timer tick (a few ms behind at most, never
/// ahead): what every governed write stamps, because it reads one word of the
/// vDSO page where the precise clock reads the TSC and scales it (about 30 ns a
/// write in a KVM guest).
pub fn monotonic_coarse_ns() -> u64 {
    clock_ns(libc::CLOCK_MONOTONIC_COARSE)
}

fn clock_ns(clock: libc::clockid_t) -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: a valid timespec to fill; both monotonic clocks always exist.
    unsafe { libc::clock_gettime(clock, &mut ts) };
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

/// The group a number stands for: anything out of range is the lowest, NORMAL.
#[inline]
pub fn group_index(g: u32) -> usize {
    (g as usize).min(GROUPS - 1)
}

/// The lower-priority of two groups (the higher number).
pub fn lower_of(a: u32, b: u32) -> u32 {
    group_index(a).max(group_index(b)) as u32
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::fd::AsRawFd;
    use std::sync::atomic::Ordering;

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
        assert_eq!(lower_of(RT_HIGH, NORMAL), NORMAL);
        assert_eq!(lower_of(RT_LOW, RT_HIGH), RT_LOW);
        assert_eq!(group_index(u32::MAX), NORMAL as usize);
    }

    /// The board is the coordinator's alone: whoever is handed its descriptor can
    /// map it only read-only, and can neither write, resize nor punch it.
    #[test]
    fn nobody_but_the_coordinator_can_change_the_board() {
        let b = BoardMap::create("test", 2).unwrap();
        let view = BoardView::open(b.fd()).unwrap();
        b.board().header.passes.store(7, Ordering::Relaxed);
        assert_eq!(view.board().header.passes.load(Ordering::Relaxed), 7);
        // reopened read-write through /proc, as a process holding it could
        let again = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open(format!("/proc/self/fd/{}", b.fd()))
            .unwrap();
        let fd = again.as_raw_fd();
        assert!(
            memfd::Mapping::new(fd, board::BOARD_BYTES, true).is_err(),
            "mapped writable"
        );
        // SAFETY: plain system calls on our own descriptor.
        unsafe {
            assert_eq!(libc::write(fd, b"x".as_ptr().cast(), 1), -1, "written");
            assert_eq!(libc::ftruncate(fd, 0), -1, "shrunk");
            assert_eq!(
                libc::fallocate(
                    fd,
                    libc::FALLOC_FL_PUNCH_HOLE | libc::FALLOC_FL_KEEP_SIZE,
                    0,
                    4096
                ),
                -1,
                "punched"
            );
            assert_eq!(libc::fcntl(fd, libc::F_ADD_SEALS, libc::F_SEAL_WRITE), -1);
        }
        // a read-only mapping cannot be made writable afterwards
        let ro = memfd::Mapping::new(fd, board::BOARD_BYTES, false).unwrap();
        // SAFETY: mprotect of our own mapping; it must fail.
        let r = unsafe { libc::mprotect(ro.as_ptr(), 4096, libc::PROT_READ | libc::PROT_WRITE) };
        assert_eq!(r, -1, "made writable");
        assert_eq!(b.board().header.passes.load(Ordering::Relaxed), 7);
        // a memory file without the seals is no board
        let (own, own_fd) = OwnMap::create().unwrap();
        assert!(BoardView::open(own_fd.as_raw_fd()).is_err());
        drop(own);
    }

    #[test]
    fn a_process_table_is_writable_but_cannot_be_resized() {
        let (m, fd) = OwnMap::create().unwrap();
        let other = OwnMap::open(fd.as_raw_fd()).unwrap();
        assert!(m.own().register_file(1, 2, 3));
        assert!(other.own().register_file(1, 2, 4), "already there");
        let ready = m
            .own()
            .files
            .iter()
            .filter(|f| f.state.load(Ordering::Relaxed) == own::FILE_READY)
            .count();
        assert_eq!(ready, 1);
        // SAFETY: ftruncate on our own descriptor; it must fail.
        assert_eq!(unsafe { libc::ftruncate(fd.as_raw_fd(), 0) }, -1);
        let dir = tempfile::tempdir().unwrap();
        let junk = std::fs::File::create(dir.path().join("junk")).unwrap();
        junk.set_len(own::OWN_BYTES as u64).unwrap();
        assert!(OwnMap::open(junk.as_raw_fd()).is_err(), "a plain file");
    }

    #[test]
    fn a_write_that_would_exceed_the_limit_waits() {
        let b = BoardMap::create("test", 2).unwrap();
        let g = &b.board().groups[0];
        g.tasks.store(1, Ordering::Relaxed);
        g.limit_bytes.store(1000, Ordering::Relaxed);
        g.charged_bytes.store(600, Ordering::Relaxed);
        assert!(!g.must_wait(100, 300), "exactly at the limit");
        assert!(g.must_wait(101, 300));
        g.tasks.store(0, Ordering::Relaxed);
        g.limit_if_active.store(u64::MAX, Ordering::Relaxed);
        assert!(!g.must_wait(1 << 30, 0));
        g.limit_if_active.store(0, Ordering::Relaxed);
        assert!(g.must_wait(1, 300));
        g.charged_bytes.store(0, Ordering::Relaxed);
        assert!(
            !g.must_wait(1 << 30, 0),
            "nothing outstanding: one write may go"
        );
        g.tasks.store(1, Ordering::Relaxed);
        g.limit_bytes.store(u64::MAX - 1, Ordering::Relaxed);
        g.charged_bytes.store(u64::MAX, Ordering::Relaxed);
        assert!(
            g.must_wait(u64::MAX, u64::MAX),
            "saturates instead of overflowing"
        );
        b.board().release();
        g.charged_bytes.store(0, Ordering::Relaxed);
        assert!(!g.must_wait(1 << 30, 5), "a stopped governor holds nobody");
    }

    #[test]
    fn a_held_writer_wakes_at_the_next_pass_not_at_its_timeout() {
        let b = BoardMap::create("test", 2).unwrap();
        let view = BoardView::open(b.fd()).unwrap();
        let g = &b.board().groups[1];
        let seen = g.wake_seq.load(Ordering::Acquire);
        let writer = std::thread::spawn(move || {
            let g = &view.board().groups[1];
            let t0 = monotonic_ns();
            g.sleep_until_pass(seen, 60_000_000_000);
            monotonic_ns() - t0
        });
        // wake until the writer has gone: a wake before it sleeps finds nobody,
        // and its wait then returns at once because the word changed
        while !writer.is_finished() {
            g.pass_done();
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        let slept = writer.join().unwrap();
        assert!(slept < 30_000_000_000, "{slept} ns");
    }

    #[test]
    fn a_stale_heartbeat_means_ungoverned() {
        let b = BoardMap::create("test", 2).unwrap();
        let t = b.board();
        t.header.heartbeat_ns.store(1_000, Ordering::Relaxed);
        assert!(t.coordinator_alive(1_500, 1_000));
        assert!(!t.coordinator_alive(5_000, 1_000));
        t.header.stopped.store(1, Ordering::Relaxed);
        assert!(!t.coordinator_alive(1_500, 1_000));
    }
}
