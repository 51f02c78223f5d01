//! The write calls the governor stands in front of: write, pwrite, writev, pwritev
//! and their 64-bit and v2 variants (whose RWF_SYNC and RWF_DSYNC flags make a
//! write durable).

use std::ffi::{c_int, c_void};

use libc::{iovec, off_t, size_t, ssize_t};

use crate::gate::{after, before, iov_bytes, note_durable};

/// A v2 write asks for its data on the device.
fn durable_flags(flags: c_int) -> bool {
    flags & (libc::RWF_DSYNC | libc::RWF_SYNC) != 0
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
    if durable_flags(flags) {
        note_durable();
    }
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
    if durable_flags(flags) {
        note_durable();
    }
    let gated = before(fd, iov_bytes(iov, cnt));
    // SAFETY: as above.
    after(gated, unsafe { f(fd, iov, cnt, off, flags) })
}
