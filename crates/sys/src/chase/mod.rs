//! Reaching a path that another user may have had a hand in, the way systemd's
//! chase does it: one name at a time from a folder held open, each name opened
//! with O_PATH|O_NOFOLLOW (nothing it names is opened for real: no device
//! started, no FIFO waited on) and looked at through the descriptor, so what is
//! checked is what is used. A symbolic link is followed only when its owner is
//! one of the users the caller trusts (root and the user oslab acts for): a link
//! another user planted in a shared folder is refused by name, whatever it
//! points at, and cannot lead root from that user's folders into root's own.
//!
//! The rules built on it (docs/architecture.md, "Paths another user can touch"):
//! outputs and inputs the user names ([`crate::outfile`], [`crate::infile`]),
//! folders things are made in by name ([`chain`]), programs and libraries root
//! runs or loads ([`crate::program`]), and the journal's undos.

pub mod chain;
mod handle;

use std::collections::VecDeque;
use std::ffi::{CString, OsStr, OsString};
use std::os::fd::RawFd;
use std::path::{Component, Path, PathBuf};

pub use handle::{Held, fs_magic, kind};

use crate::owned::who;

/// Links followed before a path is taken for a loop, as the kernel's ELOOP.
const MAX_LINKS: usize = 40;

/// Why a path was not reached: a phrase that completes "cannot use PATH: ...".
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unreachable(pub String);

impl std::fmt::Display for Unreachable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Unreachable {}

/// An I/O error as a phrase, without Rust's "(os error N)".
pub fn plain(e: &std::io::Error) -> String {
    let s = e.to_string();
    match s.find(" (os error ") {
        Some(i) => s[..i].to_string(),
        None => s,
    }
}

/// The user oslab acts for: the effective user, or, for root started by sudo,
/// the user who ran sudo ($SUDO_UID; root's environment is root's to set, so no
/// other user can put it there). Their links and folders are trusted as root's
/// are, so `sudo oslab ... --json ~/out.json` works through the user's own links.
pub fn caller() -> u32 {
    let euid = crate::process::euid();
    if euid != 0 {
        return euid;
    }
    std::env::var("SUDO_UID")
        .ok()
        .and_then(|v| v.trim().parse::<u32>().ok())
        .unwrap_or(0)
}

/// The owners whose links a path may be followed through: root and the caller.
pub fn trusted_owners() -> [u32; 2] {
    [0, caller()]
}

/// What a path leads to.
#[derive(Debug)]
pub enum Reached {
    /// A descriptor this process holds, named through its /proc/PID/fd folder
    /// (which /dev/stdout, /dev/stderr and /dev/fd/N lead to).
    Descriptor(RawFd),
    /// Something stands at the path: `item`, named `name` in `folder`.
    Found {
        folder: Held,
        name: CString,
        item: Held,
    },
    /// The path ends at a folder named by `/`, `.` or `..`.
    Folder(Held),
    /// Nothing stands at the path: `folder` is the deepest that exists and
    /// `missing` the names below it (at least one).
    Missing {
        folder: Held,
        missing: Vec<OsString>,
    },
}

/// Whether a link at the very end of the path is followed, or the link itself
/// is what the path names (as lstat and unlink see it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LastLink {
    Follow,
    Keep,
}

/// Reaches `path` one name at a time, following only links owned by one of
/// `link_owners` (none when it is empty).
pub fn reach(path: &Path, link_owners: &[u32], last: LastLink) -> Result<Reached, Unreachable> {
    if path.as_os_str().is_empty() {
        return Err(Unreachable("the name is empty".into()));
    }
    let mut at = if path.is_absolute() {
        Held::root()?
    } else {
        Held::current()?
    };
    let mut todo = names(path);
    let mut links = 0;
    while let Some(name) = todo.pop_front() {
        if name == ".." {
            at = at.parent()?;
            continue;
        }
        if todo.is_empty()
            && let Some(fd) = own_descriptor(&at.path, &name)
        {
            return Ok(Reached::Descriptor(fd));
        }
        let Some(item) = at.open_name(&name)? else {
            if todo.iter().any(|n| n == "..") {
                return Err(no_folder(&at.path, std::slice::from_ref(&name)));
            }
            let mut missing = vec![name];
            missing.extend(todo);
            return Ok(Reached::Missing {
                folder: at,
                missing,
            });
        };
        let is_link = kind(&item.st) == libc::S_IFLNK;
        if is_link && !(todo.is_empty() && last == LastLink::Keep) {
            trusted_link(&item.path, item.st.st_uid, link_owners)?;
            links += 1;
            if links > MAX_LINKS {
                return Err(Unreachable(format!(
                    "more than {MAX_LINKS} symbolic links lead from {}",
                    path.display()
                )));
            }
            let target = item.link_target()?;
            if target.is_absolute() {
                at = Held::root()?;
            }
            for n in names(&target).into_iter().rev() {
                todo.push_front(n);
            }
            continue;
        }
        if todo.is_empty() {
            let name = crate::tempname::c_name(&name).map_err(|e| Unreachable(plain(&e)))?;
            return Ok(Reached::Found {
                folder: at,
                name,
                item,
            });
        }
        if kind(&item.st) != libc::S_IFDIR {
            return Err(Unreachable(format!(
                "{} is not a folder",
                item.path.display()
            )));
        }
        at = item;
    }
    Ok(Reached::Folder(at))
}

/// The names a path walks through, `..` kept (`.` and `/` are no step).
fn names(path: &Path) -> VecDeque<OsString> {
    path.components()
        .filter_map(|c| match c {
            Component::Normal(n) => Some(n.to_os_string()),
            Component::ParentDir => Some(OsString::from("..")),
            _ => None,
        })
        .collect()
}

/// "directory X does not exist", for a path whose folders are missing.
pub fn no_folder(existing: &Path, missing: &[OsString]) -> Unreachable {
    let mut dir = existing.to_path_buf();
    dir.extend(missing);
    Unreachable(format!("directory {} does not exist", dir.display()))
}

/// Refuses a link whose owner is not one of `owners`, naming the rule.
pub fn trusted_link(at: &Path, owner: u32, owners: &[u32]) -> Result<(), Unreachable> {
    if owners.contains(&owner) {
        return Ok(());
    }
    let mut names: Vec<String> = owners.iter().map(|u| who(*u)).collect();
    names.dedup();
    let rule = match names.as_slice() {
        [] => "oslab follows no symbolic link here".to_string(),
        [one] => format!("oslab follows only links owned by {one}"),
        [a, b, ..] => format!("oslab follows only links owned by {a} or by {b}"),
    };
    Err(Unreachable(format!(
        "{} is a symbolic link owned by {}, and {rule}",
        at.display(),
        who(owner)
    )))
}

/// The descriptor `dir/name` stands for when `dir` is this process's own fd
/// folder (/proc/PID/fd, or a thread's /proc/PID/task/TID/fd).
fn own_descriptor(dir: &Path, name: &OsStr) -> Option<RawFd> {
    let fd: RawFd = name.to_str()?.parse().ok()?;
    let pid = PathBuf::from(format!("/proc/{}", std::process::id()));
    let rest = dir.strip_prefix(&pid).ok()?;
    let parts: Vec<_> = rest.components().collect();
    let fd_folder = match parts.as_slice() {
        [Component::Normal(f)] => *f == "fd",
        [
            Component::Normal(t),
            Component::Normal(_),
            Component::Normal(f),
        ] => *t == "task" && *f == "fd",
        _ => false,
    };
    fd_folder.then_some(fd)
}

#[cfg(test)]
mod tests;
