//! Folders and files another user could have placed where oslab looks, checked
//! before they are trusted, as ssh's StrictModes and systemd-tmpfiles check theirs.
//!
//! oslab runs as root and as ordinary users on machines shared with others. A
//! journal folder, a socket folder or a file in one is trusted only when it is a
//! real folder or regular file (never a symbolic link, which is not followed),
//! owned by the user who trusts it, and writable by nobody else. Folders above it
//! must be owned by root or by that user, and writable by others only when sticky
//! (like /tmp, where nobody can rename or remove what another user owns).

use std::fs::{File, Metadata, OpenOptions};
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

/// Why a path is not trusted: one sentence naming the path and what is wrong.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refused {
    pub path: PathBuf,
    pub why: String,
}

impl std::fmt::Display for Refused {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} {}", self.path.display(), self.why)
    }
}

impl std::error::Error for Refused {}

fn refused(path: &Path, why: impl Into<String>) -> Refused {
    Refused {
        path: path.to_path_buf(),
        why: why.into(),
    }
}

/// The user a uid names, for messages: "root", "uid 1001 (alice)", or "uid 1001"
/// when no user has that uid.
pub fn who(uid: u32) -> String {
    if uid == 0 {
        return "root".into();
    }
    match user_name(uid) {
        Some(name) => format!("uid {uid} ({name})"),
        None => format!("uid {uid}"),
    }
}

/// The login name of `uid`, from the system's user database.
fn user_name(uid: u32) -> Option<String> {
    let mut buf = vec![0u8; 16 << 10];
    // SAFETY: an all-zero passwd is a valid value to be overwritten.
    let mut pwd: libc::passwd = unsafe { std::mem::zeroed() };
    let mut found: *mut libc::passwd = std::ptr::null_mut();
    // SAFETY: every pointer is valid for the call, buf for buf.len() bytes.
    let rc = unsafe {
        libc::getpwuid_r(
            uid,
            &mut pwd,
            buf.as_mut_ptr().cast(),
            buf.len(),
            &mut found,
        )
    };
    if rc != 0 || found.is_null() || pwd.pw_name.is_null() {
        return None;
    }
    // SAFETY: on success pw_name points to a NUL-terminated string inside buf.
    let name = unsafe { std::ffi::CStr::from_ptr(pwd.pw_name) };
    Some(name.to_string_lossy().chars().take(64).collect())
}

/// What is wrong with `m` (from lstat) as something `owner` may trust, if anything.
fn ownership_problem(m: &Metadata, owner: u32) -> Option<String> {
    if m.uid() != owner {
        return Some(format!(
            "is owned by {}, not by {}",
            who(m.uid()),
            who(owner)
        ));
    }
    let mode = m.permissions().mode();
    if mode & 0o022 != 0 {
        return Some(format!(
            "is writable by {} (mode {:o})",
            if mode & 0o002 != 0 {
                "every user"
            } else {
                "its group"
            },
            mode & 0o7777
        ));
    }
    None
}

/// Checks a folder that must be `owner`'s own: a real folder (a link to one is
/// refused), owned by `owner`, writable by nobody else.
pub fn check_dir(path: &Path, owner: u32) -> Result<(), Refused> {
    let m = std::fs::symlink_metadata(path)
        .map_err(|e| refused(path, format!("cannot be read: {e}")))?;
    if m.file_type().is_symlink() {
        return Err(refused(path, "is a symbolic link, not a folder"));
    }
    if !m.is_dir() {
        return Err(refused(path, "is not a folder"));
    }
    match ownership_problem(&m, owner) {
        Some(why) => Err(refused(path, why)),
        None => Ok(()),
    }
}

/// Checks every folder above `path`: owned by root or by `owner`, and writable by
/// others only when sticky. A folder someone else controls could have the checked
/// one renamed away and replaced.
pub fn check_ancestors(path: &Path, owner: u32) -> Result<(), Refused> {
    let mut at = path.parent();
    while let Some(dir) = at.filter(|d| !d.as_os_str().is_empty()) {
        let m = std::fs::metadata(dir).map_err(|e| refused(dir, format!("cannot be read: {e}")))?;
        if m.uid() != 0 && m.uid() != owner {
            return Err(refused(
                dir,
                format!(
                    "is owned by {}, neither root nor {}",
                    who(m.uid()),
                    who(owner)
                ),
            ));
        }
        let mode = m.permissions().mode();
        if mode & 0o022 != 0 && mode & 0o1000 == 0 {
            return Err(refused(
                dir,
                format!(
                    "is writable by others and not sticky (mode {:o})",
                    mode & 0o7777
                ),
            ));
        }
        at = dir.parent();
    }
    Ok(())
}

/// Makes the folder `path` (only its last component, with `mode`) when it is
/// missing, then checks it with [`check_dir`]; a folder that was already there,
/// made by someone else, is refused rather than used.
pub fn ensure_dir(path: &Path, owner: u32, mode: u32) -> Result<(), Refused> {
    match std::fs::DirBuilder::new().mode(mode).create(path) {
        Ok(()) => {
            // the umask may have taken bits away; never add any beyond `mode`
            let _ = std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode));
        }
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
        Err(e) => return Err(refused(path, format!("cannot be created: {e}"))),
    }
    check_dir(path, owner)
}

/// Opens a file that must be `owner`'s own for reading, without following a
/// link: refused when it is a link, not a regular file, owned by someone else or
/// writable by others. The checks are made on the opened file, so it cannot be
/// swapped between check and use.
pub fn open_owned(path: &Path, owner: u32) -> Result<File, Refused> {
    let opened = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_NOCTTY)
        .open(path);
    checked_file(path, opened, owner)
}

/// Opens the file `path` of `owner`'s for writing, making it with `mode` when it
/// is missing, without following a link (a lock file, say): refused like
/// [`open_owned`] when it is a link, not a regular file, owned by someone else or
/// writable by others. Nothing is truncated.
pub fn open_or_create(path: &Path, owner: u32, mode: u32) -> Result<File, Refused> {
    let opened = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .mode(mode)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_NOCTTY)
        .open(path);
    checked_file(path, opened, owner)
}

/// The file just opened at `path`, when it is a regular file `owner` may trust.
fn checked_file(path: &Path, opened: std::io::Result<File>, owner: u32) -> Result<File, Refused> {
    let f = opened.map_err(|e| {
        if e.raw_os_error() == Some(libc::ELOOP) {
            refused(path, "is a symbolic link, not a file")
        } else {
            refused(path, format!("cannot be opened: {e}"))
        }
    })?;
    let m = f
        .metadata()
        .map_err(|e| refused(path, format!("cannot be read: {e}")))?;
    if !m.is_file() {
        return Err(refused(path, "is not a regular file"));
    }
    match ownership_problem(&m, owner) {
        Some(why) => Err(refused(path, why)),
        None => Ok(f),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn me() -> u32 {
        crate::process::uid()
    }

    #[test]
    fn a_private_folder_passes_and_a_link_to_one_does_not() {
        let d = tempfile::tempdir().unwrap();
        let own = d.path().join("own");
        ensure_dir(&own, me(), 0o700).unwrap();
        assert_eq!(
            std::fs::metadata(&own).unwrap().permissions().mode() & 0o7777,
            0o700
        );
        check_dir(&own, me()).unwrap();
        let link = d.path().join("link");
        std::os::unix::fs::symlink(&own, &link).unwrap();
        let e = check_dir(&link, me()).unwrap_err();
        assert!(e.to_string().contains("symbolic link"), "{e}");
        let e = ensure_dir(&link, me(), 0o700).unwrap_err();
        assert!(e.to_string().contains("symbolic link"), "{e}");
    }

    #[test]
    fn a_folder_writable_by_others_or_owned_by_another_is_refused() {
        let d = tempfile::tempdir().unwrap();
        let open = d.path().join("open");
        std::fs::create_dir(&open).unwrap();
        std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o777)).unwrap();
        let e = check_dir(&open, me()).unwrap_err();
        assert!(e.to_string().contains("every user"), "{e}");
        std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o770)).unwrap();
        assert!(
            check_dir(&open, me())
                .unwrap_err()
                .why
                .contains("its group")
        );
        let e = check_dir(d.path(), me() + 1).unwrap_err();
        assert!(e.why.contains("is owned by"), "{e}");
    }

    #[test]
    fn files_are_opened_without_following_links_and_checked_on_the_descriptor() {
        let d = tempfile::tempdir().unwrap();
        let f = d.path().join("f");
        std::fs::write(&f, "x").unwrap();
        std::fs::set_permissions(&f, std::fs::Permissions::from_mode(0o600)).unwrap();
        open_owned(&f, me()).unwrap();
        let link = d.path().join("l");
        std::os::unix::fs::symlink(&f, &link).unwrap();
        assert!(
            open_owned(&link, me())
                .unwrap_err()
                .why
                .contains("symbolic link")
        );
        std::fs::set_permissions(&f, std::fs::Permissions::from_mode(0o666)).unwrap();
        assert!(open_owned(&f, me()).unwrap_err().why.contains("writable"));
        assert!(open_owned(d.path(), me()).is_err(), "a folder is no file");
    }

    #[test]
    fn ancestors_writable_by_others_must_be_sticky() {
        let d = tempfile::tempdir().unwrap();
        let open = d.path().join("open");
        std::fs::create_dir(&open).unwrap();
        std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o777)).unwrap();
        let inner = open.join("x");
        let e = check_ancestors(&inner, me()).unwrap_err();
        assert!(e.why.contains("not sticky"), "{e}");
        std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o1777)).unwrap();
        check_ancestors(&inner, me()).unwrap();
    }
}
