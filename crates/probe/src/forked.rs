//! What a probe and the children it forks share: a shared anonymous mapping, and
//! pinning that a child of a threaded process may do between fork and exit.

use oslab_sys::{SysError, SysResult};

/// A shared anonymous mapping of `len` bytes, prefaulted: state shared with forked
/// children (the ping-pong and spinner probes).
pub(crate) fn map_shared_anon(len: usize) -> SysResult<*mut u8> {
    // SAFETY: a fresh shared anonymous mapping; checked for failure.
    let p = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            len,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_SHARED | libc::MAP_ANONYMOUS | libc::MAP_POPULATE,
            -1,
            0,
        )
    };
    if p == libc::MAP_FAILED {
        return Err(SysError::last_os("mmap"));
    }
    Ok(p as *mut u8)
}

/// Pins the calling thread to `cpu` with one raw system call and no allocation, so
/// a forked child of a threaded process may call it.
pub(crate) fn pin_raw(cpu: u32) {
    // SAFETY: a zeroed cpu_set_t with one CPU set; 0 is the calling thread.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu as usize, &mut set);
        libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set);
    }
}
