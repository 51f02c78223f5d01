//! Loop devices and mounts, the pieces of the write-back testbed. Every function
//! here changes the system: callers journal the undo before calling.

use std::fs::File;
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::error::{SysError, SysResult};

const LOOP_CTL_GET_FREE: libc::c_ulong = 0x4C82;

/// The next free loop device (`/dev/loopN`), creating it if needed.
pub fn free_loop_device() -> SysResult<PathBuf> {
    let ctl = File::open("/dev/loop-control").map_err(|source| SysError::Read {
        path: "/dev/loop-control".into(),
        source,
    })?;
    // SAFETY: LOOP_CTL_GET_FREE takes no argument and returns a device number.
    let n = unsafe { libc::ioctl(ctl.as_raw_fd(), LOOP_CTL_GET_FREE) };
    if n < 0 {
        return Err(SysError::last_os("ioctl(LOOP_CTL_GET_FREE)"));
    }
    Ok(PathBuf::from(format!("/dev/loop{n}")))
}

/// The program `name` as [`crate::program`] finds it.
fn program(name: &str) -> SysResult<Command> {
    crate::program::command(name).map_err(SysError::Other)
}

fn run(cmd: &mut Command, what: &str) -> SysResult<()> {
    let out = crate::signals::child_of_oslab(cmd, crate::signals::OnParentDeath::Kill)
        .output()
        .map_err(|e| SysError::Other(format!("cannot run {what}: {e}")))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(SysError::Other(format!(
            "{what} failed: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        )))
    }
}

/// Attaches `image` to `device`, with direct I/O (no second copy in the page
/// cache) or buffered (for a file system whose kernel refuses direct I/O on it).
pub fn attach_loop(device: &Path, image: &Path, direct_io: bool) -> SysResult<()> {
    run(
        program("losetup")?
            .arg(if direct_io {
                "--direct-io=on"
            } else {
                "--direct-io=off"
            })
            .arg(device)
            .arg(image),
        "losetup",
    )
}

/// Makes an ext4 file system on `device`, quietly.
pub fn mkfs_ext4(device: &Path) -> SysResult<()> {
    run(
        program("mkfs.ext4")?
            .args(["-q", "-F", "-E", "lazy_itable_init=0,lazy_journal_init=0"])
            .arg(device),
        "mkfs.ext4",
    )
}

fn cstr(p: &Path) -> SysResult<std::ffi::CString> {
    use std::os::unix::ffi::OsStrExt;
    std::ffi::CString::new(p.as_os_str().as_bytes())
        .map_err(|_| SysError::Other(format!("path {} holds a NUL byte", p.display())))
}

/// Mounts an ext4 file system.
pub fn mount_ext4(device: &Path, target: &Path) -> SysResult<()> {
    let (d, t) = (cstr(device)?, cstr(target)?);
    let fstype = std::ffi::CString::new("ext4").expect("no NUL");
    // SAFETY: valid NUL-terminated strings; no data argument.
    let rc = unsafe { libc::mount(d.as_ptr(), t.as_ptr(), fstype.as_ptr(), 0, std::ptr::null()) };
    if rc != 0 {
        return Err(SysError::last_os("mount"));
    }
    Ok(())
}

/// "MAJOR:MINOR" of a block device node.
pub fn dev_numbers(device: &Path) -> SysResult<String> {
    use std::os::unix::fs::MetadataExt;
    let m = std::fs::metadata(device).map_err(|source| SysError::Read {
        path: device.to_path_buf(),
        source,
    })?;
    let r = m.rdev();
    Ok(format!("{}:{}", libc::major(r), libc::minor(r)))
}
