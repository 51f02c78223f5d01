//! Two tasks handing control to each other, for context-switch measurements.
//!
//! Everything that runs between fork and exit in the child is a raw system call or
//! an atomic on shared memory: no allocation, no locks, nothing that a fork of a
//! threaded process could leave locked.
//!
//! Neither side can be left waiting for a dead peer, and nothing is added to the
//! measured path to ensure it: the forked peer dies with its parent
//! (PR_SET_PDEATHSIG, checked against the parent's pid to close the race), and the
//! parent has a watchdog thread that waits for the peer's exit (waitid WNOWAIT) and
//! then keeps flipping the shared word to [`PEER_GONE`] and waking it until the
//! measuring side has noticed. With pipes, each side holds only its own ends, so a
//! dead peer reads as end of file.

use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};

use oslab_sys::{SysError, SysResult};

/// How the two sides wake each other.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mechanism {
    /// FUTEX_WAIT / FUTEX_WAKE on a shared word.
    Futex,
    /// One byte each way through two pipes.
    Pipe,
}

/// Whether the peer is a forked process or a thread of this one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tasks {
    Processes,
    Threads,
}

/// What one run measured.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PingPong {
    /// Wall time of each batch, ns.
    pub batch_ns: Vec<u64>,
    pub batches: usize,
    pub round_trips_per_batch: u64,
    /// Voluntary / involuntary switches of the measuring side over all batches.
    pub own_voluntary: u64,
    pub own_involuntary: u64,
    /// The same for the peer.
    pub peer_voluntary: u64,
    pub peer_involuntary: u64,
    /// Where each side was seen running (sched_getcpu, sampled per batch).
    pub own_cpus: u64,
    pub peer_cpus: u64,
    /// Each side's thread id and the CLOCK_MONOTONIC stretch its switch counts
    /// cover, so a record of the scheduler's switches can be counted alike.
    pub own_tid: u32,
    pub own_window_ns: (u64, u64),
    pub peer_tid: u32,
    pub peer_window_ns: (u64, u64),
}

pub const MAX_BATCHES: usize = 64;

/// The page both sides share.
#[repr(C)]
struct Shared {
    turn: AtomicU32,
    stop: AtomicU32,
    /// Set by the parent when it no longer waits on the peer (the watchdog's cue).
    finished: AtomicU32,
    peer_vol: AtomicU64,
    peer_invol: AtomicU64,
    peer_cpus: AtomicU64,
    /// Bytes of working set each side writes between switches.
    ws_len: AtomicU64,
    ws_ptr: AtomicU64,
    peer_tid: AtomicU64,
    peer_t0: AtomicU64,
    peer_t1: AtomicU64,
}

/// The value the watchdog puts in `turn` once the forked peer has died.
const PEER_GONE: u32 = 2;

fn futex_wait(word: &AtomicU32, val: u32) {
    // SAFETY: word is a valid, aligned u32 in memory both sides map.
    unsafe {
        libc::syscall(
            libc::SYS_futex,
            word.as_ptr(),
            libc::FUTEX_WAIT,
            val,
            std::ptr::null::<libc::timespec>(),
        )
    };
}

fn futex_wake(word: &AtomicU32) {
    // SAFETY: as above.
    unsafe { libc::syscall(libc::SYS_futex, word.as_ptr(), libc::FUTEX_WAKE, 1) };
}

/// Cost probes: a FUTEX_WAKE with no waiter, a FUTEX_WAIT that returns at once
/// (value mismatch).
pub fn futex_wake_nobody(word: &AtomicU32) {
    futex_wake(word)
}

pub fn futex_wait_mismatch(word: &AtomicU32) {
    futex_wait(word, word.load(Ordering::Relaxed).wrapping_add(1))
}

fn rusage_thread() -> (u64, u64) {
    // SAFETY: zeroed rusage is valid output storage.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: valid pointer, RUSAGE_THREAD.
    unsafe { libc::getrusage(libc::RUSAGE_THREAD, &mut ru) };
    (ru.ru_nvcsw as u64, ru.ru_nivcsw as u64)
}

fn cpu_bit() -> u64 {
    // SAFETY: no arguments.
    let c = unsafe { libc::sched_getcpu() };
    if (0..64).contains(&c) { 1u64 << c } else { 0 }
}

fn pin(cpu: Option<u32>) {
    if let Some(c) = cpu {
        crate::forked::pin_raw(c);
    }
}

fn touch(sh: &Shared) {
    let len = sh.ws_len.load(Ordering::Relaxed) as usize;
    if len > 0 {
        let p = sh.ws_ptr.load(Ordering::Relaxed) as *mut u8;
        // SAFETY: the working set is a shared mapping of len bytes set up before start.
        unsafe { std::ptr::write_bytes(p, 0x5a, len) };
    }
}

/// The peer's side: wait for its turn, touch the working set, hand back.
fn peer_loop(sh: &Shared, mech: Mechanism, fds: (i32, i32)) {
    sh.peer_tid
        .store(oslab_sys::process::raw_gettid() as u64, Ordering::Relaxed);
    let (v0, i0) = rusage_thread();
    sh.peer_t0
        .store(oslab_sys::clock::monotonic_ns(), Ordering::Relaxed);
    let mut cpus = 0u64;
    let mut byte = [0u8; 1];
    let mut n = 0u64;
    loop {
        match mech {
            Mechanism::Futex => {
                while sh.turn.load(Ordering::Acquire) == 0 {
                    if sh.stop.load(Ordering::Relaxed) != 0 {
                        break;
                    }
                    futex_wait(&sh.turn, 0);
                }
            }
            Mechanism::Pipe => {
                // SAFETY: a valid pipe fd and a one-byte buffer.
                let r = unsafe { libc::read(fds.0, byte.as_mut_ptr().cast(), 1) };
                if r != 1 {
                    break;
                }
            }
        }
        if sh.stop.load(Ordering::Relaxed) != 0 {
            break;
        }
        touch(sh);
        if n % 1024 == 0 {
            cpus |= cpu_bit();
        }
        n += 1;
        match mech {
            Mechanism::Futex => {
                sh.turn.store(0, Ordering::Release);
                futex_wake(&sh.turn);
            }
            Mechanism::Pipe => {
                // SAFETY: as above.
                unsafe { libc::write(fds.1, byte.as_ptr().cast(), 1) };
            }
        }
    }
    sh.peer_t1
        .store(oslab_sys::clock::monotonic_ns(), Ordering::Relaxed);
    let (v1, i1) = rusage_thread();
    sh.peer_vol.store(v1 - v0, Ordering::Relaxed);
    sh.peer_invol.store(i1 - i0, Ordering::Relaxed);
    sh.peer_cpus.store(cpus, Ordering::Relaxed);
}

fn mmap_shared(len: usize) -> SysResult<*mut u8> {
    crate::forked::map_shared_anon(len)
}

/// Runs `batches` batches of `round_trips` round trips between this thread and a
/// peer (process or thread), each side pinned to its CPU if given, each side
/// writing `ws_bytes` of a shared working set before handing over.
#[allow(clippy::too_many_arguments)]
pub fn run(
    tasks: Tasks,
    mech: Mechanism,
    own_cpu: Option<u32>,
    peer_cpu: Option<u32>,
    round_trips: u64,
    batches: usize,
    warmup: u64,
    ws_bytes: usize,
) -> SysResult<PingPong> {
    let batches = batches.clamp(1, MAX_BATCHES);
    let page = 4096usize;
    let sh_ptr = mmap_shared(page)?;
    // SAFETY: the page is zeroed, aligned and large enough; atomics are valid at 0.
    let sh: &Shared = unsafe { &*(sh_ptr as *const Shared) };
    let ws = if ws_bytes > 0 {
        mmap_shared(ws_bytes)?
    } else {
        std::ptr::null_mut()
    };
    sh.ws_len.store(ws_bytes as u64, Ordering::Relaxed);
    sh.ws_ptr.store(ws as u64, Ordering::Relaxed);
    let mut p1 = [-1i32; 2];
    let mut p2 = [-1i32; 2];
    if mech == Mechanism::Pipe {
        // SAFETY: arrays of two fds.
        if unsafe { libc::pipe(p1.as_mut_ptr()) } != 0
            || unsafe { libc::pipe(p2.as_mut_ptr()) } != 0
        {
            let e = SysError::last_os("pipe");
            release(sh_ptr, ws, ws_bytes, &[p1[0], p1[1]]);
            return Err(e);
        }
    }
    let previous = oslab_sys::process::affinity().ok();
    let ends = Ends {
        own: [p1[1], p2[0]],
        peer: [p1[0], p2[1]],
    };
    let peer = match start_peer(tasks, mech, sh_ptr, peer_cpu, ends) {
        Ok(peer) => peer,
        Err(e) => {
            release(sh_ptr, ws, ws_bytes, &[p1[0], p1[1], p2[0], p2[1]]);
            return Err(e);
        }
    };
    pin(own_cpu);
    let mut out = PingPong {
        batch_ns: vec![0; batches],
        batches,
        round_trips_per_batch: round_trips,
        ..Default::default()
    };
    let peer_alive = measure(&mut out, sh, mech, ends.own, warmup);
    stop_peer(sh, mech, ends.own, peer);
    out.peer_voluntary = sh.peer_vol.load(Ordering::Relaxed);
    out.peer_involuntary = sh.peer_invol.load(Ordering::Relaxed);
    out.peer_cpus = sh.peer_cpus.load(Ordering::Relaxed);
    out.peer_tid = sh.peer_tid.load(Ordering::Relaxed) as u32;
    out.peer_window_ns = (
        sh.peer_t0.load(Ordering::Relaxed),
        sh.peer_t1.load(Ordering::Relaxed),
    );
    if let Some(p) = previous {
        let _ = oslab_sys::process::set_affinity(&p);
    }
    match tasks {
        Tasks::Processes => release(sh_ptr, ws, ws_bytes, &ends.own),
        Tasks::Threads => release(sh_ptr, ws, ws_bytes, &[p1[0], p1[1], p2[0], p2[1]]),
    }
    if !peer_alive {
        return Err(SysError::Other(
            "the ping-pong peer process died during the measurement".into(),
        ));
    }
    Ok(out)
}

/// The pipe ends of each side, `[write, read]` (all -1 for a futex).
#[derive(Clone, Copy)]
struct Ends {
    own: [i32; 2],
    peer: [i32; 2],
}

/// The running peer: a forked process with its watchdog, or a thread.
enum Peer {
    Process {
        pid: i32,
        watchdog: std::thread::JoinHandle<()>,
    },
    Thread(std::thread::JoinHandle<()>),
}

/// Starts the peer on `peer_cpu`; a forked peer gets a watchdog, and the parent
/// closes the peer's pipe ends once it has them.
fn start_peer(
    tasks: Tasks,
    mech: Mechanism,
    sh_ptr: *mut u8,
    peer_cpu: Option<u32>,
    ends: Ends,
) -> SysResult<Peer> {
    let addr = sh_ptr as usize;
    let fds = (ends.peer[0], ends.peer[1]);
    if tasks == Tasks::Threads {
        return Ok(Peer::Thread(std::thread::spawn(move || {
            pin(peer_cpu);
            // SAFETY: the page outlives the thread (joined before unmapping).
            let sh: &Shared = unsafe { &*(addr as *const Shared) };
            peer_loop(sh, mech, fds);
        })));
    }
    let parent = std::process::id() as i32;
    // SAFETY: the child only makes raw system calls and exits with _exit.
    let pid = unsafe { libc::fork() };
    if pid < 0 {
        return Err(SysError::last_os("fork"));
    }
    if pid == 0 {
        oslab_sys::signals::forked_worker(parent);
        if mech == Mechanism::Pipe {
            // SAFETY: the child's copies of the ends only the parent uses.
            unsafe {
                libc::close(ends.own[0]);
                libc::close(ends.own[1]);
            }
        }
        pin(peer_cpu);
        // SAFETY: the page stays mapped in the child until it exits.
        peer_loop(unsafe { &*(addr as *const Shared) }, mech, fds);
        // SAFETY: leave without running destructors or atexit handlers.
        unsafe { libc::_exit(0) };
    }
    close_fds(&ends.peer);
    let watchdog = std::thread::spawn(move || {
        // SAFETY: the page outlives the thread (joined before unmapping).
        let sh: &Shared = unsafe { &*(addr as *const Shared) };
        watch_peer(sh, pid);
    });
    Ok(Peer::Process { pid, watchdog })
}

/// One round trip from the measuring side; false once the peer is gone.
#[inline(always)]
fn round_trip(sh: &Shared, mech: Mechanism, own: [i32; 2], byte: &mut [u8; 1]) -> bool {
    touch(sh);
    match mech {
        Mechanism::Futex => {
            sh.turn.store(1, Ordering::Release);
            futex_wake(&sh.turn);
            loop {
                match sh.turn.load(Ordering::Acquire) {
                    1 => futex_wait(&sh.turn, 1),
                    PEER_GONE => return false,
                    _ => return true,
                }
            }
        }
        // SAFETY: valid fds and buffer.
        Mechanism::Pipe => unsafe {
            libc::write(own[0], byte.as_ptr().cast(), 1) == 1
                && libc::read(own[1], byte.as_mut_ptr().cast(), 1) == 1
        },
    }
}

/// The warm-up and the timed batches, with this side's figures into `out`; false
/// when the peer died on the way.
fn measure(out: &mut PingPong, sh: &Shared, mech: Mechanism, own: [i32; 2], warmup: u64) -> bool {
    let mut byte = [0u8; 1];
    let mut peer_alive = true;
    for _ in 0..warmup {
        peer_alive &= round_trip(sh, mech, own, &mut byte);
        if !peer_alive {
            break;
        }
    }
    let (v0, i0) = rusage_thread();
    let window_start = oslab_sys::clock::monotonic_ns();
    let mut cpus = 0u64;
    for b in 0..out.batches {
        if !peer_alive {
            break;
        }
        let t0 = oslab_sys::clock::monotonic_ns();
        for _ in 0..out.round_trips_per_batch {
            if !round_trip(sh, mech, own, &mut byte) {
                peer_alive = false;
                break;
            }
        }
        out.batch_ns[b] = oslab_sys::clock::monotonic_ns() - t0;
        cpus |= cpu_bit();
    }
    let window_end = oslab_sys::clock::monotonic_ns();
    let (v1, i1) = rusage_thread();
    out.own_tid = oslab_sys::process::raw_gettid() as u32;
    out.own_window_ns = (window_start, window_end);
    out.own_voluntary = v1 - v0;
    out.own_involuntary = i1 - i0;
    out.own_cpus = cpus;
    peer_alive
}

/// Tells the peer to stop, wakes it, and waits for it (and its watchdog).
fn stop_peer(sh: &Shared, mech: Mechanism, own: [i32; 2], peer: Peer) {
    sh.finished.store(1, Ordering::Release);
    sh.stop.store(1, Ordering::Release);
    match mech {
        Mechanism::Futex => {
            sh.turn.store(1, Ordering::Release);
            futex_wake(&sh.turn);
        }
        Mechanism::Pipe => {
            let byte = [0u8; 1];
            // SAFETY: one more byte; the peer reads it, sees stop and leaves.
            unsafe { libc::write(own[0], byte.as_ptr().cast(), 1) };
        }
    }
    match peer {
        Peer::Process { pid, watchdog } => {
            let _ = watchdog.join();
            let mut status = 0;
            // SAFETY: waiting for our own child.
            unsafe { libc::waitpid(pid, &mut status, 0) };
        }
        Peer::Thread(t) => {
            let _ = t.join();
        }
    }
}

/// The parent's watchdog: once the forked peer has exited, tell the measuring side
/// through the shared word (again and again, since the measuring side may overwrite
/// it before it looks) until it says it is finished.
fn watch_peer(sh: &Shared, pid: i32) {
    // SAFETY: an all-zero siginfo_t is valid output storage.
    let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
    // SAFETY: waits for our own child without reaping it (WNOWAIT), so the
    // measuring side's waitpid still collects it.
    unsafe {
        libc::waitid(
            libc::P_PID,
            pid as libc::id_t,
            &mut info,
            libc::WEXITED | libc::WNOWAIT,
        )
    };
    while sh.finished.load(Ordering::Acquire) == 0 {
        sh.turn.store(PEER_GONE, Ordering::Release);
        futex_wake(&sh.turn);
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
}

fn close_fds(fds: &[i32]) {
    for &fd in fds {
        if fd >= 0 {
            // SAFETY: closing our own descriptor.
            unsafe { libc::close(fd) };
        }
    }
}

/// Unmaps the shared page and working set and closes `fds`.
fn release(sh_ptr: *mut u8, ws: *mut u8, ws_bytes: usize, fds: &[i32]) {
    // SAFETY: unmapping what `run` mapped, once.
    unsafe {
        libc::munmap(sh_ptr.cast(), 4096);
        if !ws.is_null() {
            libc::munmap(ws.cast(), ws_bytes);
        }
    }
    close_fds(fds);
}

/// A non-blocking pipe for the syscall-cost probe.
pub fn nonblocking_pipe(fds: &mut [i32; 2]) -> bool {
    // SAFETY: fds has room for two descriptors.
    unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_NONBLOCK) == 0 }
}

/// One byte written into and read back out of a non-blocking pipe.
pub fn pipe_write_read(fds: &[i32; 2]) {
    let mut b = [0u8; 1];
    // SAFETY: valid fds and buffer.
    unsafe {
        libc::write(fds[1], b.as_ptr().cast(), 1);
        libc::read(fds[0], b.as_mut_ptr().cast(), 1);
    }
}

pub fn close_pipe(fds: &[i32; 2]) {
    for fd in fds {
        if *fd > 0 {
            // SAFETY: closing our own descriptor.
            unsafe { libc::close(*fd) };
        }
    }
}

/// Times writing a shared anonymous mapping of `ws_bytes` once, as the ping-pong
/// sides do, with no switching: `samples` figures of ns per write, each the mean
/// over `per_sample` writes after one warm-up write.
pub fn time_writes(ws_bytes: usize, per_sample: u64, samples: usize) -> SysResult<Vec<f64>> {
    if ws_bytes == 0 {
        return Ok(vec![0.0; samples]);
    }
    let p = mmap_shared(ws_bytes)?;
    // SAFETY: p maps ws_bytes writable bytes until the munmap below.
    let write = || unsafe { std::ptr::write_bytes(p, 0x5a, ws_bytes) };
    write();
    let per_sample = per_sample.max(1);
    let out = (0..samples)
        .map(|_| {
            let t0 = oslab_sys::clock::monotonic_ns();
            for _ in 0..per_sample {
                write();
                std::hint::black_box(p);
            }
            (oslab_sys::clock::monotonic_ns() - t0) as f64 / per_sample as f64
        })
        .collect();
    // SAFETY: unmapping what was mapped above.
    unsafe { libc::munmap(p.cast(), ws_bytes) };
    Ok(out)
}
