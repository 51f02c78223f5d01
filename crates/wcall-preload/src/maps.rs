//! mmap and mmap64: a shared writable mapping of a regular file is a way to dirty
//! pages that no write call shows; it is counted and warned about once.

use std::ffi::{c_int, c_void};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use libc::{off_t, size_t};

use crate::join::joined;
use crate::{real, say};

static REAL_MMAP: AtomicUsize = AtomicUsize::new(0);
static REAL_MMAP64: AtomicUsize = AtomicUsize::new(0);
static WARNED_MMAP: AtomicBool = AtomicBool::new(false);

/// Looks libc's mmap up before anything can call ours (dlsym may allocate).
pub fn resolve() {
    real(&REAL_MMAP, c"mmap");
    real(&REAL_MMAP64, c"mmap64");
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
    if let Some(j) = joined() {
        j.own.header.mmap_writable.fetch_add(1, Ordering::Relaxed);
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
