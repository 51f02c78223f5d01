//! Joining the governor: one request over its socket, answered with the board
//! (read-only) and a table of this process's own, both kept mapped for the rest
//! of the process. A forked child is a new process and joins anew before its
//! first governed write; until then it writes nothing into its parent's table.
//! A process whose governor is gone (stopped, killed, restarted) or was not there
//! when it started asks again at most once a second, so a restarted governor takes
//! in the services that joined its predecessor without restarting them.

use std::os::fd::AsRawFd;
use std::path::Path;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicU32, AtomicU64, AtomicUsize, Ordering};
use std::time::Duration;

use oslab_wcall_table::wire::{self, Ask, Request};
use oslab_wcall_table::{
    AUTO, Board, BoardView, MAX_MEMBERS, MemberSlot, Own, OwnMap, classify, monotonic_coarse_ns,
};

use crate::say;

static SOCKET: OnceLock<Vec<u8>> = OnceLock::new();
static BOARD: AtomicPtr<Board> = AtomicPtr::new(std::ptr::null_mut());
static OWN: AtomicPtr<Own> = AtomicPtr::new(std::ptr::null_mut());
static INDEX: AtomicUsize = AtomicUsize::new(0);
/// Set in a forked child: it must join on its own before it counts anything.
static MUST_JOIN: AtomicBool = AtomicBool::new(false);

/// How long a program waits for the coordinator to answer before it runs
/// ungoverned.
const JOIN_TIMEOUT: Duration = Duration::from_secs(2);
/// How often a process without a live governor asks its socket again; a missing
/// socket or one nobody listens on answers at once, so a try costs microseconds.
const REJOIN_EVERY_NS: u64 = 1_000_000_000;
/// How long a later try waits for an answer: a write is waiting on it.
const REJOIN_TIMEOUT: Duration = Duration::from_millis(250);
/// When the next try may be made (CLOCK_MONOTONIC_COARSE, ns).
static NEXT_TRY_NS: AtomicU64 = AtomicU64::new(0);

/// What a governed write reads and counts in.
#[derive(Clone, Copy)]
pub struct Joined {
    pub board: &'static Board,
    pub own: &'static Own,
    pub index: usize,
}

impl Joined {
    pub fn member(&self) -> &'static MemberSlot {
        &self.board.members[self.index]
    }
}

/// Joins at exec (from the constructor).
pub fn start(socket: Vec<u8>) {
    let _ = SOCKET.set(socket);
    join_now();
}

fn join_now() {
    let Some(path) = socket_path() else { return };
    match ask(path, JOIN_TIMEOUT, AUTO) {
        Ok(j) => publish(&j),
        Err(e) => {
            BOARD.store(std::ptr::null_mut(), Ordering::Release);
            say(&format!(
                "cannot join the governor at {}: {e}; writes of pid {} are not governed",
                path.display(),
                std::process::id()
            ))
        }
    }
}

fn socket_path() -> Option<&'static Path> {
    let path = SOCKET.get()?;
    Some(Path::new(
        <std::ffi::OsStr as std::os::unix::ffi::OsStrExt>::from_bytes(path),
    ))
}

/// Makes `j` the governor every later write reads: OWN and INDEX before BOARD,
/// which readers load first (Release here, Acquire in [`joined`]).
fn publish(j: &Joined) {
    INDEX.store(j.index, Ordering::Relaxed);
    OWN.store((j.own as *const Own).cast_mut(), Ordering::Relaxed);
    BOARD.store((j.board as *const Board).cast_mut(), Ordering::Release);
}

/// Asks the socket again when a second has passed since the last try, from one
/// thread at a time, for the group it had; the governor it joins is then the one
/// every write reads.
/// Tries that fail say nothing: the process said once that it runs ungoverned.
/// The tables of a governor left behind stay mapped (a thread may still read
/// them), one pair per governor the process outlives.
#[cold]
pub fn rejoin_if_due() -> Option<Joined> {
    let path = socket_path()?;
    let now = monotonic_coarse_ns();
    let due = NEXT_TRY_NS.load(Ordering::Relaxed);
    if now < due
        || NEXT_TRY_NS
            .compare_exchange(
                due,
                now + REJOIN_EVERY_NS,
                Ordering::Relaxed,
                Ordering::Relaxed,
            )
            .is_err()
    {
        return None;
    }
    let j = ask(path, REJOIN_TIMEOUT, group_had()).ok()?;
    publish(&j);
    say(&format!(
        "joined the governor at {}; writes of pid {} are governed again",
        path.display(),
        std::process::id()
    ));
    Some(j)
}

/// The group this process was in under the governor it joined last (AUTO if
/// none): what it asks for when it joins the next one, which weighs the request
/// as one from a launcher of its user.
fn group_had() -> u32 {
    let b = BOARD.load(Ordering::Acquire);
    if b.is_null() {
        return AUTO;
    }
    // SAFETY: set from a leaked mapping that is never unmapped.
    let board = unsafe { &*b };
    board
        .members
        .get(INDEX.load(Ordering::Relaxed))
        .map_or(AUTO, |m| m.group.load(Ordering::Relaxed))
}

fn ask(path: &Path, timeout: Duration, group: u32) -> Result<Joined, String> {
    let req = Request {
        ask: Ask::Member,
        group,
        pid: 0,
    };
    let a = wire::ask(path, &req, timeout).map_err(|e| e.to_string())?;
    if !a.reply.ok {
        return Err(a.reply.reason);
    }
    let index = a.reply.index as usize;
    if index >= MAX_MEMBERS || a.fds.len() != 2 {
        return Err("the governor's answer is malformed".into());
    }
    let board = BoardView::open(a.fds[0].as_raw_fd()).map_err(|e| e.to_string())?;
    let own = OwnMap::open(a.fds[1].as_raw_fd()).map_err(|e| e.to_string())?;
    // the descriptors close here; the mappings stay
    Ok(Joined {
        board: board.leak(),
        own: own.leak(),
        index,
    })
}

/// The governor this process has joined, joining first if it was forked.
#[inline]
pub fn joined() -> Option<Joined> {
    if MUST_JOIN.load(Ordering::Relaxed) && MUST_JOIN.swap(false, Ordering::AcqRel) {
        join_now();
    }
    let b = BOARD.load(Ordering::Acquire);
    if b.is_null() {
        return None;
    }
    // SAFETY: both set from leaked mappings that are never unmapped, OWN before
    // BOARD (Release above, Acquire here).
    unsafe {
        Some(Joined {
            board: &*b,
            own: &*OWN.load(Ordering::Relaxed),
            index: INDEX.load(Ordering::Relaxed),
        })
    }
}

/// A forked child is a new process: it joins by itself before its first governed
/// write (a child that execs at once joins from its constructor instead).
pub fn after_fork_in_child() {
    if SOCKET.get().is_some() {
        MUST_JOIN.store(true, Ordering::Release);
    }
}

static CALLS: AtomicU64 = AtomicU64::new(0);
/// The scheduling class last asked about, so a class the coordinator keeps this
/// process out of (its group was given) is asked about once.
static ASKED: AtomicU32 = AtomicU32::new(u32::MAX);

/// The paper's group of the calling thread's scheduling.
fn thread_class() -> u32 {
    // SAFETY: queries of the calling thread's own scheduling, into a local.
    unsafe {
        let policy = libc::sched_getscheduler(0) & !libc::SCHED_RESET_ON_FORK;
        let mut p = libc::sched_param { sched_priority: 0 };
        libc::sched_getparam(0, &mut p);
        classify(policy, p.sched_priority)
    }
}

/// On the first governed write and every 256th: when the calling thread's
/// scheduling says another group than the board, asks the coordinator to look at
/// this process again (it decides from the kernel's word, so asking changes
/// nothing it would not see itself a pass later; a writer that turned SCHED_FIFO
/// just before its first write is not held in its old group meanwhile).
#[inline]
pub fn follow_scheduling(j: &Joined) {
    // a sample, not a count: threads racing may lose an increment, which costs
    // nothing where a locked add would cost every write
    let calls = CALLS.load(Ordering::Relaxed);
    CALLS.store(calls.wrapping_add(1), Ordering::Relaxed);
    if calls % 256 == 0 {
        ask_if_regrouped(j);
    }
}

#[cold]
fn ask_if_regrouped(j: &Joined) {
    let class = thread_class();
    if class == j.member().group.load(Ordering::Relaxed)
        || ASKED.swap(class, Ordering::Relaxed) == class
    {
        return;
    }
    let Some(path) = socket_path() else { return };
    let req = Request {
        ask: Ask::Regroup,
        group: AUTO,
        pid: 0,
    };
    let _ = wire::ask(path, &req, JOIN_TIMEOUT);
}
