//! The interposer carried inside the binary (crates/wcall/build.rs builds it), for
//! a copy of oslab that has no `liboslab_wcall.so` beside it: written once per
//! process into a folder of its own, made fresh with a random name (mkdtemp) in
//! /run for root, else in $XDG_RUNTIME_DIR or the temporary folder; the folder and
//! the file are readable by every user, so another user's service can load it,
//! and writable by nobody else; journaled and removed when oslab exits.

use std::ffi::CString;
use std::io::Write;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use oslab_sys::journal::{Undo, with_global};

static LIB: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/liboslab_wcall.so"));

/// The interposer's path, written on the first call; the reason when it cannot be.
pub fn path() -> Result<PathBuf, String> {
    static WRITTEN: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    WRITTEN.get_or_init(write).clone()
}

/// Where the folder is made.
fn base() -> PathBuf {
    if oslab_sys::process::is_root() {
        return PathBuf::from("/run");
    }
    match std::env::var_os("XDG_RUNTIME_DIR").map(PathBuf::from) {
        Some(d) if d.is_absolute() && d.is_dir() => d,
        _ => std::env::temp_dir(),
    }
}

/// A new folder `BASE/oslab-interposer-XXXXXX` that no other process had.
fn fresh_dir(base: &Path) -> Result<PathBuf, String> {
    let template = CString::new(base.join("oslab-interposer-XXXXXX").as_os_str().as_bytes())
        .map_err(|_| "the folder's name holds a NUL byte".to_string())?;
    let mut bytes = template.into_bytes_with_nul();
    // SAFETY: a NUL-terminated template of our own that mkdtemp fills in.
    let made = unsafe { libc::mkdtemp(bytes.as_mut_ptr().cast()) };
    if made.is_null() {
        return Err(format!(
            "cannot make a folder in {}: {}",
            base.display(),
            std::io::Error::last_os_error()
        ));
    }
    bytes.pop();
    Ok(PathBuf::from(std::ffi::OsStr::from_bytes(&bytes)))
}

fn write() -> Result<PathBuf, String> {
    let dir = fresh_dir(&base())?;
    with_global(|j| {
        j.record_private(
            format!("the governor's interposer in {}", dir.display()),
            Undo::RemovePath { path: dir.clone() },
        )
    })
    .map_err(|e| format!("cannot journal the interposer's copy: {e}"))?;
    let fail =
        |e: std::io::Error| format!("cannot write the interposer into {}: {e}", dir.display());
    // mkdtemp made it 0700: governed programs of other users must reach the file
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).map_err(fail)?;
    let path = dir.join(crate::launch::PRELOAD_NAME);
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o644)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(&path)
        .map_err(fail)?;
    // whatever the umask: readable by every user, as a library in /usr/lib is
    f.set_permissions(std::fs::Permissions::from_mode(0o644))
        .map_err(fail)?;
    f.write_all(LIB).map_err(fail)?;
    Ok(path)
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_carried_interposer_is_a_shared_object() {
        let lib = super::LIB;
        assert_eq!(&lib[..4], b"\x7fELF");
        // e_type ET_DYN (3): a shared object, little-endian
        assert_eq!(u16::from_le_bytes([lib[16], lib[17]]), 3);
        let text = String::from_utf8_lossy(lib);
        assert!(
            text.contains("OSLAB_WCALL_SOCK"),
            "it is oslab's interposer"
        );
    }
}
