//! The calls that ask for data to be on the device: fsync, fdatasync,
//! sync_file_range, msync and syncfs. Each is counted in the process's own table
//! and passed through unchanged; the coordinator turns the sync guard on while a
//! governed rt-high process makes them (what any database does at a commit).

use std::ffi::{c_int, c_uint, c_void};

use libc::{off64_t, size_t};

use crate::gate::note_durable;

/// # Safety
/// As fsync(2).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn fsync(fd: c_int) -> c_int {
    let f = next!(c"fsync", unsafe extern "C" fn(c_int) -> c_int);
    note_durable();
    // SAFETY: the caller's argument, passed on.
    unsafe { f(fd) }
}

/// # Safety
/// As fdatasync(2).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn fdatasync(fd: c_int) -> c_int {
    let f = next!(c"fdatasync", unsafe extern "C" fn(c_int) -> c_int);
    note_durable();
    // SAFETY: as above.
    unsafe { f(fd) }
}

/// # Safety
/// As syncfs(2).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn syncfs(fd: c_int) -> c_int {
    let f = next!(c"syncfs", unsafe extern "C" fn(c_int) -> c_int);
    note_durable();
    // SAFETY: as above.
    unsafe { f(fd) }
}

/// # Safety
/// As sync_file_range(2).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn sync_file_range(
    fd: c_int,
    off: off64_t,
    n: off64_t,
    flags: c_uint,
) -> c_int {
    let f = next!(
        c"sync_file_range",
        unsafe extern "C" fn(c_int, off64_t, off64_t, c_uint) -> c_int
    );
    note_durable();
    // SAFETY: as above.
    unsafe { f(fd, off, n, flags) }
}

/// # Safety
/// As msync(2).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn msync(addr: *mut c_void, n: size_t, flags: c_int) -> c_int {
    let f = next!(
        c"msync",
        unsafe extern "C" fn(*mut c_void, size_t, c_int) -> c_int
    );
    // MS_ASYNC only schedules write back (and is a no-op on Linux)
    if flags & libc::MS_SYNC != 0 {
        note_durable();
    }
    // SAFETY: as above.
    unsafe { f(addr, n, flags) }
}
