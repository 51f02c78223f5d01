//! Folders that only trusted users can change, for what oslab makes or runs by
//! name: a scratch folder or testbed made in a base folder and used by path
//! afterwards (mount, losetup, mkfs), a database SQLite opens beside its WAL and
//! journal files by name, a program or library handed to exec or ld.so as a path.
//! Such a path stays what was checked only if nobody else can rename or replace
//! anything on it, so every folder from `/` down must be owned by a trusted user
//! (root or the caller) and writable by others only when sticky (like /tmp, where
//! nobody can rename or remove what another user owns); a folder SQLite makes
//! files in by name must not be writable by others at all.

use std::path::{Path, PathBuf};

use super::{Held, LastLink, Reached, Unreachable, kind, reach};
use crate::owned::who;

/// How far the last folder may be shared.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LastFolder {
    /// Writable by others when sticky, as folders above it may be: what is made
    /// there has a fresh name and is owned by the maker.
    MaySticky,
    /// Writable by its trusted owner alone: names that a program makes there by
    /// itself (SQLite's -wal, -shm and -journal files) could be planted otherwise.
    Private,
}

/// Checks the folder `path` and every folder above it (see the module); the
/// folder's path without links, which nobody else can change.
pub fn stable_folder(
    path: &Path,
    owners: &[u32],
    last: LastFolder,
) -> Result<PathBuf, Unreachable> {
    let resolved = match reach(path, owners, LastLink::Follow)? {
        Reached::Found { item, .. } if kind(&item.st) == libc::S_IFDIR => item.path,
        Reached::Folder(held) => held.path,
        Reached::Missing { folder, missing } => {
            return Err(super::no_folder(&folder.path, &missing));
        }
        _ => return Err(Unreachable(format!("{} is not a folder", path.display()))),
    };
    let mut at = Held::root()?;
    check(
        &at,
        owners,
        resolved == Path::new("/") && last == LastFolder::Private,
    )?;
    let names: Vec<_> = resolved.components().skip(1).collect();
    for (i, name) in names.iter().enumerate() {
        let next = at
            .open_name(name.as_os_str())?
            .filter(|h| kind(&h.st) == libc::S_IFDIR)
            .ok_or_else(|| {
                Unreachable(format!(
                    "{} changed while oslab looked at it",
                    at.path.join(name).display()
                ))
            })?;
        check(
            &next,
            owners,
            i + 1 == names.len() && last == LastFolder::Private,
        )?;
        at = next;
    }
    Ok(resolved)
}

/// A folder on the chain: a trusted owner's, and writable by others only when
/// sticky (`private`: not at all).
fn check(folder: &Held, owners: &[u32], private: bool) -> Result<(), Unreachable> {
    owned_by(folder, owners)?;
    let mode = folder.mode();
    if mode & 0o022 != 0 && (private || mode & 0o1000 == 0) {
        let why = if private {
            "and files are made in it by name"
        } else {
            "and not sticky"
        };
        return Err(writable(folder, why));
    }
    Ok(())
}

fn owned_by(held: &Held, owners: &[u32]) -> Result<(), Unreachable> {
    if owners.contains(&held.uid()) {
        return Ok(());
    }
    let mut trusted: Vec<String> = owners.iter().map(|u| who(*u)).collect();
    trusted.dedup();
    Err(Unreachable(format!(
        "{} is owned by {}, not by {}, so it could be swapped",
        held.path.display(),
        who(held.uid()),
        trusted.join(" or ")
    )))
}

fn writable(held: &Held, why: &str) -> Unreachable {
    let mode = held.mode();
    let by = if mode & 0o002 != 0 {
        "every user"
    } else {
        "its group"
    };
    Unreachable(format!(
        "{} is writable by {by} (mode {mode:o}) {why}",
        held.path.display()
    ))
}

/// A regular file that nobody but a trusted owner can change or replace, to be
/// executed or loaded by path: its path without links.
pub fn stable_file(path: &Path, owners: &[u32]) -> Result<PathBuf, Unreachable> {
    let (folder, item) = match reach(path, owners, LastLink::Follow)? {
        Reached::Found { folder, item, .. } => (folder, item),
        Reached::Missing { .. } => {
            return Err(Unreachable(format!("{} does not exist", path.display())));
        }
        _ => return Err(Unreachable(format!("{} is not a file", path.display()))),
    };
    if kind(&item.st) != libc::S_IFREG {
        return Err(Unreachable(format!(
            "{} is not a regular file",
            item.path.display()
        )));
    }
    owned_by(&item, owners)?;
    if item.mode() & 0o022 != 0 {
        return Err(writable(&item, "and would be run as it is"));
    }
    stable_folder(&folder.path, owners, LastFolder::MaySticky)?;
    Ok(item.path)
}
