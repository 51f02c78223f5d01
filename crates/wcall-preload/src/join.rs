//! Joining the governor: one request over its socket, answered with the board
//! (read-only) and a table of this process's own, both kept mapped for the rest
//! of the process. A forked child is a new process and joins anew before its
//! first governed write; until then it writes nothing into its parent's table.

use std::os::fd::AsRawFd;
use std::path::Path;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicU32, AtomicU64, AtomicUsize, Ordering};
use std::time::Duration;

use oslab_wcall_table::wire::{self, Ask, Request};
use oslab_wcall_table::{AUTO, Board, BoardView, MAX_MEMBERS, MemberSlot, Own, OwnMap, classify};

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
    let Some(path) = SOCKET.get() else { return };
    let path = Path::new(<std::ffi::OsStr as std::os::unix::ffi::OsStrExt>::from_bytes(path));
    match ask(path) {
        Ok(j) => {
            INDEX.store(j.index, Ordering::Relaxed);
            OWN.store((j.own as *const Own).cast_mut(), Ordering::Relaxed);
            BOARD.store((j.board as *const Board).cast_mut(), Ordering::Release);
        }
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

fn ask(path: &Path) -> Result<Joined, String> {
    let req = Request {
        ask: Ask::Member,
        group: AUTO,
        pid: 0,
    };
    let a = wire::ask(path, &req, JOIN_TIMEOUT).map_err(|e| e.to_string())?;
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
pub extern "C" fn after_fork_in_child() {
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
    let Some(path) = SOCKET.get() else { return };
    let path = Path::new(<std::ffi::OsStr as std::os::unix::ffi::OsStrExt>::from_bytes(path));
    let req = Request {
        ask: Ask::Regroup,
        group: AUTO,
        pid: 0,
    };
    let _ = wire::ask(path, &req, JOIN_TIMEOUT);
}
