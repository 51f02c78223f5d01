//! Where an output goes: the path reached once ([`crate::chase`], links followed
//! only when root or the caller owns them) and what stands there judged fit.

use std::ffi::{CString, OsString};
use std::os::fd::RawFd;
use std::path::PathBuf;

use super::{OutputError, Target, at};
use crate::chase::{self, Held, LastLink, Reached, kind, trusted_owners};
use crate::owned::who;

/// An output, reached.
pub(super) enum Place {
    /// A descriptor this process was handed.
    Descriptor(RawFd),
    /// A character device or FIFO of root's or the caller's, in `folder`.
    Stream {
        folder: Held,
        name: CString,
        item: Held,
    },
    /// A regular file or a free name in `folder`.
    File { folder: Held, name: CString },
}

impl Place {
    pub(super) fn target(&self) -> Target {
        match self {
            Place::Descriptor(fd) => Target::Descriptor(*fd),
            Place::Stream { item, .. } => Target::Stream(item.path.clone()),
            Place::File { folder, name } => Target::File(folder.path.join(name_text(name))),
        }
    }
}

fn name_text(name: &CString) -> OsString {
    use std::os::unix::ffi::OsStringExt;
    OsString::from_vec(name.as_bytes().to_vec())
}

/// Reaches the output `path` and judges what stands there.
pub(super) fn place(path: &std::path::Path) -> Result<Place, OutputError> {
    match chase::reach(path, &trusted_owners(), LastLink::Follow)? {
        Reached::Descriptor(fd) => descriptor(fd),
        Reached::Folder(_) => Err(unfit(libc::S_IFDIR)),
        Reached::Missing { folder, missing } => match missing.as_slice() {
            [name] => Ok(Place::File {
                name: crate::tempname::c_name(name)?,
                folder,
            }),
            _ => Err(chase::no_folder(&folder.path, &missing[..missing.len() - 1]).into()),
        },
        Reached::Found { folder, name, item } => match kind(&item.st) {
            libc::S_IFREG => Ok(Place::File { folder, name }),
            libc::S_IFCHR | libc::S_IFIFO => {
                special_of_trusted_owner(&item)?;
                Ok(Place::Stream { folder, name, item })
            }
            k => Err(unfit(k)),
        },
    }
}

/// A descriptor this process was handed, when an output can go to it (a socket
/// too, as standard output often is).
fn descriptor(fd: RawFd) -> Result<Place, OutputError> {
    let st = at::stat_fd(fd)
        .map_err(|_| OutputError(format!("it names descriptor {fd}, which is not open")))?;
    match at::kind(&st) {
        k @ (libc::S_IFDIR | libc::S_IFBLK) => Err(unfit(k)),
        _ => Ok(Place::Descriptor(fd)),
    }
}

/// A FIFO or device is written into only when root or the caller owns it: one
/// another user made at the name (a FIFO that would hold root, a terminal of
/// theirs) is refused.
fn special_of_trusted_owner(item: &Held) -> Result<(), OutputError> {
    let owners = trusted_owners();
    if owners.contains(&item.uid()) {
        return Ok(());
    }
    let what = if kind(&item.st) == libc::S_IFIFO {
        "a FIFO"
    } else {
        "a character device"
    };
    Err(OutputError(format!(
        "it is {what} owned by {}, and oslab writes into FIFOs and devices only when {} owns them",
        who(item.uid()),
        if owners[1] == 0 {
            "root".to_string()
        } else {
            format!("root or {}", who(owners[1]))
        }
    )))
}

pub(super) fn unfit(kind: libc::mode_t) -> OutputError {
    OutputError(
        match kind {
            libc::S_IFDIR => "it is a directory; give a file name",
            libc::S_IFBLK => {
                "it is a block device; oslab writes only to files, character devices, FIFOs and standard output"
            }
            libc::S_IFSOCK => "it is a socket; oslab writes only to files, character devices, FIFOs and standard output",
            _ => "it is neither a file, a character device nor a FIFO",
        }
        .into(),
    )
}

/// An output folder: one that exists, or a free name in one.
pub(super) enum FolderPlace {
    Existing(Held),
    Free { folder: Held, name: CString },
}

impl FolderPlace {
    pub(super) fn path(&self) -> PathBuf {
        match self {
            FolderPlace::Existing(h) => h.path.clone(),
            FolderPlace::Free { folder, name } => folder.path.join(name_text(name)),
        }
    }
}

/// Reaches the output folder `path`.
pub(super) fn folder(path: &std::path::Path) -> Result<FolderPlace, OutputError> {
    let not_folder = || OutputError("it is a file, not a directory".into());
    match chase::reach(path, &trusted_owners(), LastLink::Follow)? {
        Reached::Folder(h) => Ok(FolderPlace::Existing(h)),
        Reached::Found { item, .. } if kind(&item.st) == libc::S_IFDIR => {
            Ok(FolderPlace::Existing(item))
        }
        Reached::Missing { folder, missing } => match missing.as_slice() {
            [name] => Ok(FolderPlace::Free {
                name: crate::tempname::c_name(name)?,
                folder,
            }),
            _ => Err(chase::no_folder(&folder.path, &missing[..missing.len() - 1]).into()),
        },
        _ => Err(not_folder()),
    }
}
