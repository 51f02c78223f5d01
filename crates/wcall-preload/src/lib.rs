//! liboslab_wcall.so: the WCALL governor's control module inside a program.
//!
//! Loaded with LD_PRELOAD, it stands in front of write, pwrite, writev, pwritev
//! and their 64-bit and v2 variants. For a regular file opened without O_DIRECT,
//! a write first looks at its group's hold flag in the coordinator's table; while
//! the flag is set it waits and looks again (under wcall, the paper's HZ/10 block;
//! under wcall-fair, until the coordinator's next pass wakes it through a shared
//! futex in the table), then the real write runs. Everything else passes straight
//! through. The process registers in the table when it starts, before it writes.
//!
//! What it cannot cover, and says so: statically linked programs never load it
//! (`oslab wcall run` checks the ELF and warns); stores into shared writable file
//! mappings are not write calls (it counts such mmap calls and warns once); glibc's
//! stdio writes through internal calls that bypass the symbol table; O_DIRECT
//! writes do not dirty the page cache and need no governing. If the coordinator
//! stops or dies, writes proceed ungoverned and it says so once on stderr.
//!
//! Nothing here may call `write` through the symbol table (that is us): messages go
//! out by raw system call.
//!
//! Each descriptor's class (governed or passed through) is looked up once, on its
//! first write, and kept in FD_CLASS. A descriptor number can come to name another
//! file in many ways besides close(), so every call that frees a number or hands
//! one out forgets what the number was: close, close_range, dup, dup2, dup3,
//! fcntl(F_DUPFD, F_DUPFD_CLOEXEC), fclose and freopen (whose closes inside libc do
//! not go through the symbol table), and every call that returns a new descriptor
//! (open, openat, creat and their 64-bit and fortified variants, pipe, pipe2,
//! socket, socketpair, accept, accept4), because libc may have closed that number
//! internally (closedir, pclose, ...) without telling us. The write path itself
//! stays one load of the cache.

use std::ffi::{CStr, c_char, c_int, c_uint, c_void};
use std::sync::atomic::{
    AtomicBool, AtomicPtr, AtomicU8, AtomicU32, AtomicU64, AtomicUsize, Ordering,
};

use libc::{iovec, off_t, size_t, ssize_t};
use oslab_wcall_table::{self as shm, AUTO, MAX_SILENCE_NS, Mapped, ProcSlot, Table, monotonic_ns};

static TABLE: AtomicPtr<Table> = AtomicPtr::new(std::ptr::null_mut());
static GROUP_MODE: AtomicU32 = AtomicU32::new(AUTO);
static SLOT: AtomicUsize = AtomicUsize::new(usize::MAX);
static CALLS: AtomicU64 = AtomicU64::new(0);
static WARNED_GONE: AtomicBool = AtomicBool::new(false);
static WARNED_MMAP: AtomicBool = AtomicBool::new(false);
static WARNED_FULL: AtomicBool = AtomicBool::new(false);
static REAL_MMAP: AtomicUsize = AtomicUsize::new(0);
static REAL_MMAP64: AtomicUsize = AtomicUsize::new(0);

const UNKNOWN: u8 = 0;
const GOVERNED: u8 = 1;
const PASS: u8 = 2;
const FD_CACHE: usize = 4096;
static FD_CLASS: [AtomicU8; FD_CACHE] = [const { AtomicU8::new(UNKNOWN) }; FD_CACHE];

fn say(msg: &str) {
    let text = format!("oslab wcall: {msg}\n");
    // SAFETY: a raw write(2) of our own buffer to stderr, not through the symbol we replace.
    unsafe { libc::syscall(libc::SYS_write, 2, text.as_ptr(), text.len()) };
}

#[used]
#[unsafe(link_section = ".init_array")]
static INIT: extern "C" fn() = init;

extern "C" fn init() {
    // SAFETY: getenv in a constructor, before any thread of the program runs.
    let var = |name: &CStr| unsafe {
        let p = libc::getenv(name.as_ptr());
        (!p.is_null()).then(|| CStr::from_ptr(p).to_string_lossy().into_owned())
    };
    let Some(path) = var(c"OSLAB_WCALL_SHM") else {
        return;
    };
    // resolve libc's mmap before anything can call ours (dlsym may allocate)
    real(&REAL_MMAP, c"mmap");
    real(&REAL_MMAP64, c"mmap64");
    let group = var(c"OSLAB_WCALL_GROUP").unwrap_or_else(|| "auto".into());
    GROUP_MODE.store(shm::group_number(&group).unwrap_or(AUTO), Ordering::Relaxed);
    match Mapped::open(std::path::Path::new(&path)) {
        Ok(m) => {
            let t = m.leak();
            TABLE.store((t as *const Table).cast_mut(), Ordering::Release);
            // Registered at exec, before the first write: the coordinator keeps
            // room for the group from now on and `status` lists the process.
            let _ = my_slot(t);
        }
        Err(e) => say(&format!(
            "cannot use the governor's table {path}: {e}; writes are not governed"
        )),
    }
    // SAFETY: registering a plain function to run in the child after fork.
    unsafe { libc::pthread_atfork(None, None, Some(after_fork_in_child)) };
}

/// A forked child is a new process: it claims its own slot at once.
extern "C" fn after_fork_in_child() {
    SLOT.store(usize::MAX, Ordering::Relaxed);
    if let Some(t) = table() {
        let _ = my_slot(t);
    }
}

fn table() -> Option<&'static Table> {
    let p = TABLE.load(Ordering::Acquire);
    // SAFETY: set once from a leaked mapping that is never unmapped.
    (!p.is_null()).then(|| unsafe { &*p })
}

fn current_group() -> u32 {
    match GROUP_MODE.load(Ordering::Relaxed) {
        AUTO => {
            // SAFETY: queries of the calling thread's own scheduling.
            let policy = unsafe { libc::sched_getscheduler(0) } & !libc::SCHED_RESET_ON_FORK;
            let mut param = libc::sched_param { sched_priority: 0 };
            // SAFETY: as above, into a local.
            unsafe { libc::sched_getparam(0, &mut param) };
            shm::classify(policy, param.sched_priority)
        }
        g => g,
    }
}

fn my_slot(t: &'static Table) -> Option<&'static ProcSlot> {
    let i = SLOT.load(Ordering::Relaxed);
    if i != usize::MAX {
        let slot = &t.procs[i];
        // auto groups follow the writer's priority as it changes
        if GROUP_MODE.load(Ordering::Relaxed) == AUTO
            && CALLS.fetch_add(1, Ordering::Relaxed) % 256 == 0
        {
            slot.group.store(current_group(), Ordering::Relaxed);
        }
        return Some(slot);
    }
    let pid = std::process::id();
    match t.claim_proc(pid, current_group()) {
        Some(i) => {
            SLOT.store(i, Ordering::Relaxed);
            Some(&t.procs[i])
        }
        None => {
            if !WARNED_FULL.swap(true, Ordering::Relaxed) {
                say("the governor's process table is full; this process is not governed");
            }
            None
        }
    }
}

/// Whether writes to `fd` are governed; the first look registers the file.
fn classify_fd(t: &'static Table, fd: c_int, slot: &ProcSlot) -> u8 {
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
    let class = match st {
        Some(st)
            if st.st_mode & libc::S_IFMT == libc::S_IFREG
                && flags >= 0
                && flags & libc::O_DIRECT == 0 =>
        {
            let group = slot.group.load(Ordering::Relaxed);
            t.register_file(st.st_dev, st.st_ino, group, std::process::id(), fd as u32);
            GOVERNED
        }
        _ => PASS,
    };
    if let Some(c) = FD_CLASS.get(fd as usize) {
        c.store(class, Ordering::Relaxed);
    }
    class
}

fn warn_ungoverned(t: &Table, slot: &ProcSlot) {
    if !WARNED_GONE.swap(true, Ordering::Relaxed) {
        slot.ungoverned.store(1, Ordering::Relaxed);
        let why = if t.header.stopped.load(Ordering::Relaxed) != 0 {
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

/// The gate in front of a governed write of `n` bytes: returns the slot to count
/// it in.
#[inline]
fn before(fd: c_int, n: u64) -> Option<(&'static ProcSlot, &'static shm::GroupSlot)> {
    let t = table()?;
    let slot = my_slot(t)?;
    if classify_fd(t, fd, slot) != GOVERNED {
        slot.passed_through.fetch_add(1, Ordering::Relaxed);
        return None;
    }
    let g = (slot.group.load(Ordering::Relaxed) as usize).min(shm::GROUPS - 1);
    let group = &t.groups[g];
    let now = monotonic_ns();
    // seen writing: the coordinator counts the group's active tasks from this
    slot.last_write_ns.store(now, Ordering::Relaxed);
    if WARNED_GONE.load(Ordering::Relaxed) {
        return Some((slot, group));
    }
    if !group.must_wait(n) {
        if slot.writes.load(Ordering::Relaxed) % 64 == 0
            && !t.coordinator_alive(now, MAX_SILENCE_NS)
        {
            warn_ungoverned(t, slot);
        }
        return Some((slot, group));
    }
    slot.delayed_writes.fetch_add(1, Ordering::Relaxed);
    let start = now;
    let mut now = now;
    // wcall-fair wakes its held writers at the coordinator's next pass; wcall,
    // the paper's Algorithm 1, blocks its fixed time (HZ/10) and looks again
    let woken = t.header.policy.load(Ordering::Relaxed) == 2;
    loop {
        let seen = group.wake_seq.load(Ordering::Acquire);
        if !group.must_wait(n) {
            break;
        }
        if !t.coordinator_alive(now, MAX_SILENCE_NS) {
            warn_ungoverned(t, slot);
            break;
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
    slot.held_ns.fetch_add(now - start, Ordering::Relaxed);
    slot.last_write_ns.store(now, Ordering::Relaxed);
    Some((slot, group))
}

#[inline]
fn after(gated: Option<(&ProcSlot, &shm::GroupSlot)>, written: ssize_t) -> ssize_t {
    if let Some((s, g)) = gated
        && written > 0
    {
        s.writes.fetch_add(1, Ordering::Relaxed);
        s.bytes.fetch_add(written as u64, Ordering::Relaxed);
        g.pending_bytes.fetch_add(written as u64, Ordering::Release);
    }
    written
}

/// Bytes an iovec array asks to write.
fn iov_bytes(iov: *const iovec, cnt: c_int) -> u64 {
    if iov.is_null() || cnt <= 0 {
        return 0;
    }
    // SAFETY: the caller passes cnt valid iovecs, as writev(2) requires.
    let v = unsafe { std::slice::from_raw_parts(iov, cnt as usize) };
    v.iter().map(|x| x.iov_len as u64).sum()
}

/// The next definition of `name` after ours (libc's), looked up once.
fn real(cache: &AtomicUsize, name: &CStr) -> usize {
    let f = cache.load(Ordering::Relaxed);
    if f != 0 {
        return f;
    }
    // SAFETY: dlsym with a NUL-terminated name.
    let f = unsafe { libc::dlsym(libc::RTLD_NEXT, name.as_ptr()) } as usize;
    cache.store(f, Ordering::Relaxed);
    f
}

macro_rules! next {
    ($name:literal, $ty:ty) => {{
        static CACHE: AtomicUsize = AtomicUsize::new(0);
        let f = real(&CACHE, $name);
        if f == 0 {
            // SAFETY: errno is thread-local and always writable.
            unsafe { *libc::__errno_location() = libc::ENOSYS };
            return -1;
        }
        // SAFETY: the symbol libc exports under this name has this signature.
        unsafe { std::mem::transmute::<usize, $ty>(f) }
    }};
}

/// # Safety
/// As write(2).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn write(fd: c_int, buf: *const c_void, n: size_t) -> ssize_t {
    let f = next!(
        c"write",
        unsafe extern "C" fn(c_int, *const c_void, size_t) -> ssize_t
    );
    let gated = before(fd, n as u64);
    // SAFETY: the caller's arguments, passed on.
    after(gated, unsafe { f(fd, buf, n) })
}

/// # Safety
/// As pwrite(2).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn pwrite(fd: c_int, buf: *const c_void, n: size_t, off: off_t) -> ssize_t {
    let f = next!(
        c"pwrite",
        unsafe extern "C" fn(c_int, *const c_void, size_t, off_t) -> ssize_t
    );
    let gated = before(fd, n as u64);
    // SAFETY: as above.
    after(gated, unsafe { f(fd, buf, n, off) })
}

/// # Safety
/// As pwrite64(2).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn pwrite64(
    fd: c_int,
    buf: *const c_void,
    n: size_t,
    off: libc::off64_t,
) -> ssize_t {
    let f = next!(
        c"pwrite64",
        unsafe extern "C" fn(c_int, *const c_void, size_t, libc::off64_t) -> ssize_t
    );
    let gated = before(fd, n as u64);
    // SAFETY: as above.
    after(gated, unsafe { f(fd, buf, n, off) })
}

/// # Safety
/// As writev(2).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn writev(fd: c_int, iov: *const iovec, cnt: c_int) -> ssize_t {
    let f = next!(
        c"writev",
        unsafe extern "C" fn(c_int, *const iovec, c_int) -> ssize_t
    );
    let gated = before(fd, iov_bytes(iov, cnt));
    // SAFETY: as above.
    after(gated, unsafe { f(fd, iov, cnt) })
}

/// # Safety
/// As pwritev(2).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn pwritev(fd: c_int, iov: *const iovec, cnt: c_int, off: off_t) -> ssize_t {
    let f = next!(
        c"pwritev",
        unsafe extern "C" fn(c_int, *const iovec, c_int, off_t) -> ssize_t
    );
    let gated = before(fd, iov_bytes(iov, cnt));
    // SAFETY: as above.
    after(gated, unsafe { f(fd, iov, cnt, off) })
}

/// # Safety
/// As pwritev64(2).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn pwritev64(
    fd: c_int,
    iov: *const iovec,
    cnt: c_int,
    off: libc::off64_t,
) -> ssize_t {
    let f = next!(
        c"pwritev64",
        unsafe extern "C" fn(c_int, *const iovec, c_int, libc::off64_t) -> ssize_t
    );
    let gated = before(fd, iov_bytes(iov, cnt));
    // SAFETY: as above.
    after(gated, unsafe { f(fd, iov, cnt, off) })
}

/// # Safety
/// As pwritev2(2).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn pwritev2(
    fd: c_int,
    iov: *const iovec,
    cnt: c_int,
    off: off_t,
    flags: c_int,
) -> ssize_t {
    let f = next!(
        c"pwritev2",
        unsafe extern "C" fn(c_int, *const iovec, c_int, off_t, c_int) -> ssize_t
    );
    let gated = before(fd, iov_bytes(iov, cnt));
    // SAFETY: as above.
    after(gated, unsafe { f(fd, iov, cnt, off, flags) })
}

/// # Safety
/// As pwritev64v2(2).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn pwritev64v2(
    fd: c_int,
    iov: *const iovec,
    cnt: c_int,
    off: libc::off64_t,
    flags: c_int,
) -> ssize_t {
    let f = next!(
        c"pwritev64v2",
        unsafe extern "C" fn(c_int, *const iovec, c_int, libc::off64_t, c_int) -> ssize_t
    );
    let gated = before(fd, iov_bytes(iov, cnt));
    // SAFETY: as above.
    after(gated, unsafe { f(fd, iov, cnt, off, flags) })
}

/// Forgets what descriptor number `fd` was: it now names another file, or none.
/// Clearing a class that was still right costs one more lookup on the next
/// write, so this may be called whenever in doubt.
#[inline]
fn forget(fd: c_int) {
    if fd >= 0
        && let Some(c) = FD_CLASS.get(fd as usize)
    {
        c.store(UNKNOWN, Ordering::Relaxed);
    }
}

/// A descriptor a call just returned: its number may have been closed inside libc
/// without passing through us, so its class is looked up afresh.
#[inline]
fn fresh(fd: c_int) -> c_int {
    forget(fd);
    fd
}

/// The two descriptors pipe(), pipe2() and socketpair() return, after success.
fn fresh_pair(r: c_int, fds: *const c_int) -> c_int {
    if r == 0 && !fds.is_null() {
        // SAFETY: the call succeeded, so it wrote two descriptors to the caller's array.
        let (a, b) = unsafe { (*fds, *fds.add(1)) };
        forget(a);
        forget(b);
    }
    r
}

/// A closed descriptor number may come back as another file: forget what it was
/// (after the close, so a write racing with it cannot leave the old class behind).
///
/// # Safety
/// As close(2).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn close(fd: c_int) -> c_int {
    let f = next!(c"close", unsafe extern "C" fn(c_int) -> c_int);
    // SAFETY: as above.
    let r = unsafe { f(fd) };
    forget(fd);
    r
}

/// # Safety
/// As close_range(2).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn close_range(first: c_uint, last: c_uint, flags: c_int) -> c_int {
    let f = next!(
        c"close_range",
        unsafe extern "C" fn(c_uint, c_uint, c_int) -> c_int
    );
    // SAFETY: as above.
    let r = unsafe { f(first, last, flags) };
    // CLOSE_RANGE_CLOEXEC only marks them; everything else closes them
    if r == 0 && flags as c_uint & libc::CLOSE_RANGE_CLOEXEC == 0 {
        let end = (last as usize).min(FD_CACHE - 1);
        for c in FD_CLASS.iter().take(end + 1).skip(first as usize) {
            c.store(UNKNOWN, Ordering::Relaxed);
        }
    }
    r
}

/// # Safety
/// As dup(2).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dup(old: c_int) -> c_int {
    let f = next!(c"dup", unsafe extern "C" fn(c_int) -> c_int);
    // SAFETY: as above.
    fresh(unsafe { f(old) })
}

/// dup2 closes whatever `new` was and makes it another name of `old`.
///
/// # Safety
/// As dup2(2).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dup2(old: c_int, new: c_int) -> c_int {
    let f = next!(c"dup2", unsafe extern "C" fn(c_int, c_int) -> c_int);
    // SAFETY: as above.
    fresh(unsafe { f(old, new) })
}

/// # Safety
/// As dup3(2).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dup3(old: c_int, new: c_int, flags: c_int) -> c_int {
    let f = next!(c"dup3", unsafe extern "C" fn(c_int, c_int, c_int) -> c_int);
    // SAFETY: as above.
    fresh(unsafe { f(old, new, flags) })
}

/// fcntl and fcntl64 are variadic in C: `int fcntl(int fd, int cmd, ...)`.
///
/// SAFETY (of taking the third argument as a plain parameter): on x86-64 Linux
/// (the System V ABI) a caller passes the first six integer or pointer arguments
/// in rdi, rsi, rdx, rcx, r8, r9 whether the callee is variadic or not (it only
/// also sets al, which a non-variadic callee ignores), and the variadic callee
/// reads an integer or pointer va_arg from those same registers. So the third
/// argument, an int or a pointer or absent, is whatever rdx holds, read here as a
/// c_ulong, which every bit pattern is; it is passed on unchanged in rdx to libc's
/// fcntl, which reads it as the command says (an absent one is never read). Only
/// F_DUPFD and F_DUPFD_CLOEXEC are looked at, and only their result. On other
/// architectures fcntl is not interposed (this reasoning has not been checked there).
#[cfg(target_arch = "x86_64")]
fn fcntl_via(cache: &AtomicUsize, name: &CStr, fd: c_int, cmd: c_int, arg: libc::c_ulong) -> c_int {
    let f = real(cache, name);
    if f == 0 {
        // SAFETY: errno is thread-local and always writable.
        unsafe { *libc::__errno_location() = libc::ENOSYS };
        return -1;
    }
    // SAFETY: libc's fcntl has this (variadic) signature; the caller's arguments,
    // passed on as described above.
    let r = unsafe {
        std::mem::transmute::<usize, unsafe extern "C" fn(c_int, c_int, ...) -> c_int>(f)(
            fd, cmd, arg,
        )
    };
    if cmd == libc::F_DUPFD || cmd == libc::F_DUPFD_CLOEXEC {
        forget(r);
    }
    r
}

/// # Safety
/// As fcntl(2); see `fcntl_via` for the third argument.
#[cfg(target_arch = "x86_64")]
#[unsafe(no_mangle)]
pub unsafe extern "C" fn fcntl(fd: c_int, cmd: c_int, arg: libc::c_ulong) -> c_int {
    static CACHE: AtomicUsize = AtomicUsize::new(0);
    fcntl_via(&CACHE, c"fcntl", fd, cmd, arg)
}

/// # Safety
/// As fcntl(2); see `fcntl_via` for the third argument.
#[cfg(target_arch = "x86_64")]
#[unsafe(no_mangle)]
pub unsafe extern "C" fn fcntl64(fd: c_int, cmd: c_int, arg: libc::c_ulong) -> c_int {
    static CACHE: AtomicUsize = AtomicUsize::new(0);
    fcntl_via(&CACHE, c"fcntl64", fd, cmd, arg)
}

/// fclose closes the stream's descriptor inside libc, not through close().
///
/// # Safety
/// As fclose(3).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn fclose(fp: *mut libc::FILE) -> c_int {
    let f = next!(c"fclose", unsafe extern "C" fn(*mut libc::FILE) -> c_int);
    // SAFETY: the caller's open stream (fclose(NULL) is the caller's error either way).
    let fd = if fp.is_null() {
        -1
    } else {
        unsafe { libc::fileno(fp) }
    };
    forget(fd);
    // SAFETY: as above.
    let r = unsafe { f(fp) };
    // once more: a write racing with the close may have looked the number up again
    forget(fd);
    r
}

/// freopen closes the stream's descriptor and opens another inside libc (often
/// under the same number).
fn freopen_via(
    cache: &AtomicUsize,
    name: &CStr,
    path: *const c_char,
    mode: *const c_char,
    fp: *mut libc::FILE,
) -> *mut libc::FILE {
    let f = real(cache, name);
    if f == 0 {
        // SAFETY: errno is thread-local and always writable.
        unsafe { *libc::__errno_location() = libc::ENOSYS };
        return std::ptr::null_mut();
    }
    // SAFETY: the caller's open stream.
    let old = if fp.is_null() {
        -1
    } else {
        unsafe { libc::fileno(fp) }
    };
    forget(old);
    // SAFETY: libc's freopen has this signature; the caller's arguments.
    let r = unsafe {
        std::mem::transmute::<
            usize,
            unsafe extern "C" fn(*const c_char, *const c_char, *mut libc::FILE) -> *mut libc::FILE,
        >(f)(path, mode, fp)
    };
    forget(old);
    if !r.is_null() {
        // SAFETY: the stream freopen returned.
        forget(unsafe { libc::fileno(r) });
    }
    r
}

/// # Safety
/// As freopen(3).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn freopen(
    path: *const c_char,
    mode: *const c_char,
    fp: *mut libc::FILE,
) -> *mut libc::FILE {
    static CACHE: AtomicUsize = AtomicUsize::new(0);
    freopen_via(&CACHE, c"freopen", path, mode, fp)
}

/// # Safety
/// As freopen64(3).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn freopen64(
    path: *const c_char,
    mode: *const c_char,
    fp: *mut libc::FILE,
) -> *mut libc::FILE {
    static CACHE: AtomicUsize = AtomicUsize::new(0);
    freopen_via(&CACHE, c"freopen64", path, mode, fp)
}

/// open, open64, openat and openat64 are variadic in C (the mode comes only with
/// O_CREAT or O_TMPFILE). SAFETY (of taking the mode as a plain parameter): as for
/// fcntl above, on x86-64 Linux the variadic mode travels in the register a named
/// argument in its place would use (rdx for open's third, rcx for openat's
/// fourth), so it is read here as whatever that register holds, any bit pattern
/// being a valid c_uint, and passed on unchanged to libc, which reads it only when
/// the flags say there is one. Not interposed on other architectures.
macro_rules! interpose_open {
    ($name:ident, $sym:literal) => {
        /// # Safety
        /// As open(2); see `interpose_open` for the mode.
        #[cfg(target_arch = "x86_64")]
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn $name(path: *const c_char, flags: c_int, mode: c_uint) -> c_int {
            let f = next!(
                $sym,
                unsafe extern "C" fn(*const c_char, c_int, ...) -> c_int
            );
            // SAFETY: libc's variadic open; the caller's arguments, passed on.
            fresh(unsafe { f(path, flags, mode) })
        }
    };
}

macro_rules! interpose_openat {
    ($name:ident, $sym:literal) => {
        /// # Safety
        /// As openat(2); see `interpose_open` for the mode.
        #[cfg(target_arch = "x86_64")]
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn $name(
            dir: c_int,
            path: *const c_char,
            flags: c_int,
            mode: c_uint,
        ) -> c_int {
            let f = next!(
                $sym,
                unsafe extern "C" fn(c_int, *const c_char, c_int, ...) -> c_int
            );
            // SAFETY: libc's variadic openat; the caller's arguments, passed on.
            fresh(unsafe { f(dir, path, flags, mode) })
        }
    };
}

interpose_open!(open, c"open");
interpose_open!(open64, c"open64");
interpose_openat!(openat, c"openat");
interpose_openat!(openat64, c"openat64");

/// A call that returns a new descriptor and has a fixed signature.
macro_rules! interpose_new_fd {
    ($name:ident, $sym:literal, ($($arg:ident: $ty:ty),*)) => {
        /// # Safety
        /// As the libc function of the same name.
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn $name($($arg: $ty),*) -> c_int {
            let f = next!($sym, unsafe extern "C" fn($($ty),*) -> c_int);
            // SAFETY: the caller's arguments, passed on.
            fresh(unsafe { f($($arg),*) })
        }
    };
}

// what _FORTIFY_SOURCE makes of open and openat without a mode
interpose_new_fd!(__open_2, c"__open_2", (path: *const c_char, flags: c_int));
interpose_new_fd!(__open64_2, c"__open64_2", (path: *const c_char, flags: c_int));
interpose_new_fd!(__openat_2, c"__openat_2", (dir: c_int, path: *const c_char, flags: c_int));
interpose_new_fd!(__openat64_2, c"__openat64_2", (dir: c_int, path: *const c_char, flags: c_int));
interpose_new_fd!(creat, c"creat", (path: *const c_char, mode: libc::mode_t));
interpose_new_fd!(creat64, c"creat64", (path: *const c_char, mode: libc::mode_t));
interpose_new_fd!(socket, c"socket", (domain: c_int, kind: c_int, protocol: c_int));
interpose_new_fd!(
    accept,
    c"accept",
    (fd: c_int, addr: *mut libc::sockaddr, len: *mut libc::socklen_t)
);
interpose_new_fd!(
    accept4,
    c"accept4",
    (fd: c_int, addr: *mut libc::sockaddr, len: *mut libc::socklen_t, flags: c_int)
);

/// # Safety
/// As pipe(2).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn pipe(fds: *mut c_int) -> c_int {
    let f = next!(c"pipe", unsafe extern "C" fn(*mut c_int) -> c_int);
    // SAFETY: the caller's array of two, passed on.
    fresh_pair(unsafe { f(fds) }, fds)
}

/// # Safety
/// As pipe2(2).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn pipe2(fds: *mut c_int, flags: c_int) -> c_int {
    let f = next!(c"pipe2", unsafe extern "C" fn(*mut c_int, c_int) -> c_int);
    // SAFETY: as above.
    fresh_pair(unsafe { f(fds, flags) }, fds)
}

/// # Safety
/// As socketpair(2).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn socketpair(
    domain: c_int,
    kind: c_int,
    protocol: c_int,
    fds: *mut c_int,
) -> c_int {
    let f = next!(
        c"socketpair",
        unsafe extern "C" fn(c_int, c_int, c_int, *mut c_int) -> c_int
    );
    // SAFETY: as above.
    fresh_pair(unsafe { f(domain, kind, protocol, fds) }, fds)
}

fn note_mapping(prot: c_int, flags: c_int, fd: c_int) {
    if fd < 0 || prot & libc::PROT_WRITE == 0 || flags & libc::MAP_SHARED == 0 {
        return;
    }
    // SAFETY: fstat into a zeroed local.
    let regular = unsafe {
        let mut st: libc::stat = std::mem::zeroed();
        libc::fstat(fd, &mut st) == 0 && st.st_mode & libc::S_IFMT == libc::S_IFREG
    };
    if !regular {
        return;
    }
    if let Some(t) = table()
        && let Some(slot) = my_slot(t)
    {
        slot.mmap_writable.fetch_add(1, Ordering::Relaxed);
        if !WARNED_MMAP.swap(true, Ordering::Relaxed) {
            say(&format!(
                "pid {} maps a file shared and writable: stores into it are not governed",
                std::process::id()
            ));
        }
    }
}

/// # Safety
/// As mmap(2).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn mmap(
    addr: *mut c_void,
    len: size_t,
    prot: c_int,
    flags: c_int,
    fd: c_int,
    off: off_t,
) -> *mut c_void {
    let f = real(&REAL_MMAP, c"mmap");
    if f == 0 {
        return libc::MAP_FAILED;
    }
    note_mapping(prot, flags, fd);
    // SAFETY: libc's mmap has this signature; the caller's arguments, passed on.
    unsafe {
        std::mem::transmute::<
            usize,
            unsafe extern "C" fn(*mut c_void, size_t, c_int, c_int, c_int, off_t) -> *mut c_void,
        >(f)(addr, len, prot, flags, fd, off)
    }
}

/// # Safety
/// As mmap64(2).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn mmap64(
    addr: *mut c_void,
    len: size_t,
    prot: c_int,
    flags: c_int,
    fd: c_int,
    off: libc::off64_t,
) -> *mut c_void {
    let f = real(&REAL_MMAP64, c"mmap64");
    if f == 0 {
        return libc::MAP_FAILED;
    }
    note_mapping(prot, flags, fd);
    // SAFETY: as above.
    unsafe {
        std::mem::transmute::<
            usize,
            unsafe extern "C" fn(
                *mut c_void,
                size_t,
                c_int,
                c_int,
                c_int,
                libc::off64_t,
            ) -> *mut c_void,
        >(f)(addr, len, prot, flags, fd, off)
    }
}
