//! liboslab_wcall.so: the WCALL governor's control module inside a program.
//!
//! Loaded with LD_PRELOAD, it stands in front of write, pwrite, writev, pwritev
//! and their 64-bit and v2 variants. For a regular file opened without O_DIRECT,
//! a write first looks at its group's hold flag in the coordinator's table; while
//! the flag is set it sleeps the group's retry time and looks again (the paper's
//! HZ/10 block), then the real write runs. Everything else passes straight through.
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

use std::ffi::{CStr, c_int, c_void};
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
        Ok(m) => TABLE.store((m.leak() as *const Table).cast_mut(), Ordering::Release),
        Err(e) => say(&format!(
            "cannot use the governor's table {path}: {e}; writes are not governed"
        )),
    }
    // SAFETY: registering a plain function to run in the child after fork.
    unsafe { libc::pthread_atfork(None, None, Some(after_fork_in_child)) };
}

/// A forked child is a new process: it claims its own slot on its first write.
extern "C" fn after_fork_in_child() {
    SLOT.store(usize::MAX, Ordering::Relaxed);
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
    while group.must_wait(n) {
        if !t.coordinator_alive(now, MAX_SILENCE_NS) {
            warn_ungoverned(t, slot);
            break;
        }
        let wait = group
            .retry_ns
            .load(Ordering::Relaxed)
            .clamp(1_000_000, 1_000_000_000);
        let ts = libc::timespec {
            tv_sec: (wait / 1_000_000_000) as libc::time_t,
            tv_nsec: (wait % 1_000_000_000) as libc::c_long,
        };
        // SAFETY: sleeping on a local timespec.
        unsafe { libc::nanosleep(&ts, std::ptr::null_mut()) };
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

/// A closed descriptor number may come back as another file: forget what it was.
///
/// # Safety
/// As close(2).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn close(fd: c_int) -> c_int {
    let f = next!(c"close", unsafe extern "C" fn(c_int) -> c_int);
    if let Some(c) = (fd >= 0).then(|| FD_CLASS.get(fd as usize)).flatten() {
        c.store(UNKNOWN, Ordering::Relaxed);
    }
    // SAFETY: as above.
    unsafe { f(fd) }
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
