//! liboslab_wcall.so: the WCALL governor's control module inside a program.
//!
//! Loaded with LD_PRELOAD, it stands in front of write, pwrite, writev, pwritev
//! and their 64-bit and v2 variants, and counts the calls that ask for data to be
//! on the device (fsync, fdatasync, sync_file_range, msync, syncfs, O_SYNC and
//! O_DSYNC writes: [`durable`]). For a regular file opened without O_DIRECT,
//! a write first looks at its group's hold flag on the coordinator's board; while
//! the flag is set it waits and looks again (under wcall, the paper's HZ/10 block;
//! under wcall-fair, until the coordinator's next pass wakes it through a shared
//! futex on the board), then the real write runs. Everything else passes straight
//! through.
//!
//! The process joins the governor when it starts, before it writes: it asks the
//! coordinator over its Unix socket (`OSLAB_WCALL_SOCK`) and is handed the board
//! (read-only) and a table of its own for its counters and files ([`join`]). Which
//! group it is in is the coordinator's decision, read from the board. A child made
//! by fork() joins on its own before its first governed write. A process whose
//! governor stopped, died or was not there yet asks again at most once a second,
//! so a restarted governor takes it back.
//!
//! What it cannot cover, and says so: statically linked programs never load it
//! (`oslab wcall run` checks the ELF and warns); stores into shared writable file
//! mappings are not write calls (it counts such mmap calls and warns once); glibc's
//! stdio writes through internal calls that bypass the symbol table; O_DIRECT
//! writes do not dirty the page cache and need no governing. If the coordinator
//! stops or dies, writes proceed ungoverned and it says so once on stderr, until a
//! governor answers on the same socket again.
//!
//! Nothing here may call `write` through the symbol table (that is us): messages go
//! out by raw system call.

use std::ffi::CStr;
use std::sync::atomic::{AtomicUsize, Ordering};

/// Writes a line to stderr by raw system call.
fn say(msg: &str) {
    let text = format!("oslab wcall: {msg}\n");
    // SAFETY: a raw write(2) of our own buffer to stderr, not through the symbol we replace.
    unsafe { libc::syscall(libc::SYS_write, 2, text.as_ptr(), text.len()) };
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
        static CACHE: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let f = $crate::real(&CACHE, $name);
        if f == 0 {
            // SAFETY: errno is thread-local and always writable.
            unsafe { *libc::__errno_location() = libc::ENOSYS };
            return -1;
        }
        // SAFETY: the symbol libc exports under this name has this signature.
        unsafe { std::mem::transmute::<usize, $ty>(f) }
    }};
}

mod durable;
mod fds;
mod gate;
mod join;
mod maps;
mod writes;

#[used]
#[unsafe(link_section = ".init_array")]
static INIT: extern "C" fn() = init;

extern "C" fn init() {
    // SAFETY: getenv in a constructor, before any thread of the program runs.
    let socket = unsafe {
        let p = libc::getenv(c"OSLAB_WCALL_SOCK".as_ptr());
        (!p.is_null()).then(|| CStr::from_ptr(p).to_bytes().to_vec())
    };
    let Some(socket) = socket else {
        return;
    };
    // resolve libc's mmap before anything can call ours (dlsym may allocate)
    maps::resolve();
    join::start(socket);
    // SAFETY: registering a plain function to run in the child after fork.
    unsafe { libc::pthread_atfork(None, None, Some(after_fork_in_child)) };
}

/// A forked child is a new process: it joins by itself before its first governed
/// write and registers the files it inherited in its own table, not its parent's.
extern "C" fn after_fork_in_child() {
    join::after_fork_in_child();
    gate::forget_all_classes();
}
