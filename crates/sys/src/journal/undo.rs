//! Taking one change back: what each kind of [`Undo`] does to the system.

use std::ffi::CString;
use std::fs::File;
use std::io::Write;
use std::os::fd::{AsRawFd, FromRawFd};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use crate::chase::{self, Held, LastLink, Reached};

use super::{Entry, Undo, UndoOutcome};
use crate::error::{SysError, SysResult};

/// Undoes `entries` newest first; one outcome per entry in that order.
pub fn undo_entries(entries: &[Entry]) -> Vec<UndoOutcome> {
    entries
        .iter()
        .rev()
        .map(|e| UndoOutcome {
            description: e.description.clone(),
            result: apply_undo(&e.undo).map_err(|err| err.to_string()),
        })
        .collect()
}

pub(super) fn apply_undo(undo: &Undo) -> SysResult<()> {
    match undo {
        Undo::WriteFile { path, contents } => write_text(path, contents),
        Undo::Unmount { target } => unmount(target),
        Undo::DetachLoop { device } => detach_loop(device),
        Undo::RemovePath { path } => remove_path(path),
        Undo::RemoveDir { path } => remove_dir(path),
        Undo::RemoveCgroup { path, parent } => remove_cgroup(path, parent),
        Undo::WithdrawController {
            dir,
            controller,
            children,
        } => withdraw_controller(dir, controller, children),
        Undo::Nothing => Ok(()),
    }
}

fn withdraw_controller(dir: &Path, controller: &str, before: &[String]) -> SysResult<()> {
    // a delegated cgroup its manager removed (systemd reaps an emptied scope)
    // gave nothing to anyone any more
    if !dir.join("cgroup.subtree_control").exists() {
        return Ok(());
    }
    let newcomers: Vec<String> = crate::cgroup_names::child_names(dir)
        .into_iter()
        .filter(|c| !before.contains(c))
        .collect();
    if !newcomers.is_empty() {
        return Err(SysError::Other(format!(
            "left the {controller} controller on for the children of {}: {} came after oslab turned it on and may use it",
            dir.display(),
            newcomers.join(", ")
        )));
    }
    write_text(
        &dir.join("cgroup.subtree_control"),
        &format!("-{controller}"),
    )
}

fn remove_cgroup(path: &Path, parent: &Path) -> SysResult<()> {
    // The cgroup to move stragglers to may be gone by now (systemd removes a scope
    // that emptied when oslab left it): then the nearest one above it that is left.
    let parent = parent
        .ancestors()
        .find(|p| p.join("cgroup.procs").exists())
        .unwrap_or(parent);
    // A process moved out may still be exiting; a cgroup empties within moments.
    for attempt in 0..50 {
        if !path.exists() {
            return Ok(());
        }
        if let Ok(pids) = std::fs::read_to_string(path.join("cgroup.procs")) {
            for pid in pids.split_whitespace() {
                let _ = std::fs::write(parent.join("cgroup.procs"), pid);
            }
        }
        match std::fs::remove_dir(path) {
            Ok(()) => return Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
            Err(source) if attempt == 49 => {
                return Err(SysError::Write {
                    path: path.to_path_buf(),
                    source,
                });
            }
            Err(_) => std::thread::sleep(std::time::Duration::from_millis(20)),
        }
    }
    Ok(())
}

fn cpath(p: &Path) -> SysResult<std::ffi::CString> {
    use std::os::unix::ffi::OsStrExt;
    std::ffi::CString::new(p.as_os_str().as_bytes())
        .map_err(|_| SysError::Other(format!("path {} holds a NUL byte", p.display())))
}

fn unmount(target: &Path) -> SysResult<()> {
    let c = cpath(target)?;
    // SAFETY: c is a valid NUL-terminated path.
    if unsafe { libc::umount2(c.as_ptr(), libc::UMOUNT_NOFOLLOW) } == 0 {
        return Ok(());
    }
    let err = std::io::Error::last_os_error();
    match err.raw_os_error() {
        // Not mounted (any more), or gone: nothing to undo.
        Some(libc::EINVAL) | Some(libc::ENOENT) => Ok(()),
        // Busy: detach lazily so it goes as soon as the last user leaves.
        // SAFETY: as above.
        Some(libc::EBUSY)
            if unsafe { libc::umount2(c.as_ptr(), libc::MNT_DETACH | libc::UMOUNT_NOFOLLOW) }
                == 0 =>
        {
            Ok(())
        }
        _ => Err(SysError::Syscall {
            call: "umount2",
            source: err,
        }),
    }
}

const LOOP_CLR_FD: libc::c_ulong = 0x4C01;

fn detach_loop(device: &Path) -> SysResult<()> {
    use std::os::fd::AsRawFd;
    let f = match File::open(device) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(source) => {
            return Err(SysError::Read {
                path: device.to_path_buf(),
                source,
            });
        }
    };
    // SAFETY: LOOP_CLR_FD takes no argument; the fd is open for the call's duration.
    if unsafe { libc::ioctl(f.as_raw_fd(), LOOP_CLR_FD, 0) } == 0 {
        return Ok(());
    }
    let err = std::io::Error::last_os_error();
    match err.raw_os_error() {
        Some(libc::ENXIO) => Ok(()), // not attached
        _ => Err(SysError::Syscall {
            call: "ioctl(LOOP_CLR_FD)",
            source: err,
        }),
    }
}

/// What stands at `path` (a link at the end not followed), reached without
/// following a link of anyone but root or the caller; None when nothing does.
fn reach_kept(path: &Path) -> SysResult<Option<(Held, CString, Held)>> {
    match chase::reach(path, &chase::trusted_owners(), LastLink::Keep) {
        Ok(Reached::Found { folder, name, item }) => Ok(Some((folder, name, item))),
        Ok(Reached::Missing { .. }) => Ok(None),
        Ok(_) => Err(SysError::Other(format!(
            "{} is not something oslab made",
            path.display()
        ))),
        Err(e) => Err(SysError::Other(format!("{}: {e}", path.display()))),
    }
}

fn removal_failed(path: &Path, source: std::io::Error) -> SysError {
    SysError::Write {
        path: path.to_path_buf(),
        source,
    }
}

/// Removes the file, link or folder tree at `path`, acting on the folder the
/// walk held (a link swapped in for a folder on the way is never followed, and
/// the tree's own removal opens nothing through a link).
fn remove_path(path: &Path) -> SysResult<()> {
    let Some((folder, name, item)) = reach_kept(path)? else {
        return Ok(());
    };
    if chase::kind(&item.st) == libc::S_IFDIR {
        let inside = folder
            .proc_path()
            .join(std::ffi::OsStr::from_bytes(name.as_bytes()));
        return std::fs::remove_dir_all(inside).map_err(|e| removal_failed(path, e));
    }
    unlink_in(&folder, &name, 0).map_err(|e| removal_failed(path, e))
}

/// Removes the empty folder at `path`, as [`remove_path`] reaches it.
fn remove_dir(path: &Path) -> SysResult<()> {
    match reach_kept(path)? {
        None => Ok(()),
        Some((folder, name, _)) => {
            unlink_in(&folder, &name, libc::AT_REMOVEDIR).map_err(|e| removal_failed(path, e))
        }
    }
}

fn unlink_in(folder: &Held, name: &CString, flags: i32) -> std::io::Result<()> {
    // SAFETY: the folder is open and `name` NUL-terminated.
    if unsafe { libc::unlinkat(folder.fd.as_raw_fd(), name.as_ptr(), flags) } != 0 {
        let e = std::io::Error::last_os_error();
        if e.kind() != std::io::ErrorKind::NotFound {
            return Err(e);
        }
    }
    Ok(())
}

/// Writes `value` into `path` (a sysctl, a sysfs knob, a cgroup file) as
/// std::fs::write would (made if missing, emptied first), but reached without
/// following a link of anyone but root or the caller, and opened relative to
/// the folder the walk held, never through a link at its end.
pub fn write_text(path: &Path, value: &str) -> SysResult<()> {
    let failed = |source| SysError::Write {
        path: path.to_path_buf(),
        source,
    };
    let (folder, name) = match chase::reach(path, &chase::trusted_owners(), LastLink::Follow) {
        Ok(Reached::Found { folder, name, .. }) => (folder, name),
        Ok(Reached::Missing { folder, missing }) if missing.len() == 1 => {
            let name = crate::tempname::c_name(&missing[0]).map_err(failed)?;
            (folder, name)
        }
        Ok(_) => return Err(failed(std::io::ErrorKind::NotFound.into())),
        Err(e) => return Err(SysError::Other(format!("{}: {e}", path.display()))),
    };
    let flags = libc::O_WRONLY
        | libc::O_CREAT
        | libc::O_TRUNC
        | libc::O_NOFOLLOW
        | libc::O_NOCTTY
        | libc::O_CLOEXEC;
    // SAFETY: the folder is open and `name` NUL-terminated.
    let fd = unsafe { libc::openat(folder.fd.as_raw_fd(), name.as_ptr(), flags, 0o666) };
    if fd < 0 {
        return Err(failed(std::io::Error::last_os_error()));
    }
    // SAFETY: just opened, owned by nothing else.
    let mut f = File::from(unsafe { std::os::fd::OwnedFd::from_raw_fd(fd) });
    f.write_all(value.as_bytes()).map_err(failed)
}
