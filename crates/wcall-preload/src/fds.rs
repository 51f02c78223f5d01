//! Every call that frees a descriptor number or hands one out, so the class kept
//! for a number (`crate::gate::FD_CLASS`) is forgotten when the number may have
//! come to name another file: close, close_range, dup, dup2, dup3, fcntl(F_DUPFD,
//! F_DUPFD_CLOEXEC), fclose and freopen (whose closes inside libc do not go
//! through the symbol table), and every call that returns a new descriptor (open,
//! openat, creat and their 64-bit and fortified variants, pipe, pipe2, socket,
//! socketpair, accept, accept4), because libc may have closed that number
//! internally (closedir, pclose, ...) without telling us.

use std::ffi::{CStr, c_char, c_int, c_uint};
use std::sync::atomic::{AtomicUsize, Ordering};

use crate::gate::{FD_CACHE, FD_CLASS, UNKNOWN};
use crate::real;

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
