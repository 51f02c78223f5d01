//! The interposer carried inside the binary (crates/wcall/build.rs builds it), for
//! a copy of oslab that has no `liboslab_wcall.so` beside it: written once per
//! process into a folder of its own, made fresh with a random name (mkdtemp) in
//! the first of /run, /var/tmp and /tmp (root) or $XDG_RUNTIME_DIR and the
//! temporary folder (a user) that is an absolute path LD_PRELOAD can carry and not
//! mounted noexec (Debian and Ubuntu mount /run noexec: the dynamic loader cannot
//! map a library from there). The folder and the file are readable by every
//! user, so another user's service can load it, and writable by nobody else;
//! journaled and removed when oslab exits.

use std::ffi::CString;
use std::io::Write;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use oslab_sys::journal::{Undo, with_global};

static LIB: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/liboslab_wcall.so"));

/// The file name of the interposer cdylib: of the copy written here, and of the
/// library oslab looks for beside its binary first.
pub const PRELOAD_NAME: &str = "liboslab_wcall.so";

/// The interposer's bytes, as carried (what `oslab wcall interposer` installs).
pub fn bytes() -> &'static [u8] {
    LIB
}

/// The interposer's path, written on the first call; the reason when it cannot be.
pub fn path() -> Result<PathBuf, String> {
    static WRITTEN: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    WRITTEN
        .get_or_init(|| {
            let mut why = Vec::new();
            for base in bases() {
                match usable(&base).and_then(|()| write_into(&base, journal)) {
                    Ok(p) => return Ok(p),
                    Err(e) => why.push(e),
                }
            }
            Err(why.join("; "))
        })
        .clone()
}

/// Where the folder may be made, in order.
fn bases() -> Vec<PathBuf> {
    if oslab_sys::process::is_root() {
        return ["/run", "/var/tmp", "/tmp"].map(PathBuf::from).to_vec();
    }
    let mut v: Vec<PathBuf> = std::env::var_os("XDG_RUNTIME_DIR")
        .map(PathBuf::from)
        .into_iter()
        .collect();
    v.push(std::env::temp_dir());
    v
}

/// Whether a library under `base` can be named in LD_PRELOAD (an absolute path
/// with no `:` or space, which separate its entries) and mapped executable.
fn usable(base: &Path) -> Result<(), String> {
    let text = base.as_os_str().as_bytes();
    if !base.is_absolute() || text.iter().any(|b| *b == b':' || b.is_ascii_whitespace()) {
        return Err(format!("{} cannot be named in LD_PRELOAD", base.display()));
    }
    let c = CString::new(text).map_err(|_| "a folder's name holds a NUL byte".to_string())?;
    // SAFETY: statvfs of a NUL-terminated path into a zeroed local.
    let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
    if unsafe { libc::statvfs(c.as_ptr(), &mut st) } != 0 {
        return Err(format!(
            "{}: {}",
            base.display(),
            std::io::Error::last_os_error()
        ));
    }
    if st.f_flag & libc::ST_NOEXEC != 0 {
        return Err(format!("{} is mounted noexec", base.display()));
    }
    // the dynamic loader opens the library by path: no folder on it may be one
    // that another user could change
    let owners = [0, oslab_sys::process::euid()];
    oslab_sys::chase::chain::stable_folder(
        base,
        &owners,
        oslab_sys::chase::chain::LastFolder::MaySticky,
    )
    .map(drop)
    .map_err(|e| e.to_string())
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

/// Journals the folder's removal.
fn journal(dir: &Path) -> Result<(), String> {
    with_global(|j| {
        j.record_private(
            format!("the governor's interposer in {}", dir.display()),
            Undo::RemovePath {
                path: dir.to_path_buf(),
            },
        )
    })
    .map(drop)
    .map_err(|e| format!("cannot journal the interposer's copy: {e}"))
}

/// Writes the library into a fresh folder under `base`, recorded (journaled)
/// before anything is written into it.
fn write_into(
    base: &Path,
    record: impl FnOnce(&Path) -> Result<(), String>,
) -> Result<PathBuf, String> {
    let dir = fresh_dir(base)?;
    if let Err(e) = record(&dir) {
        let _ = std::fs::remove_dir(&dir);
        return Err(e);
    }
    let fail =
        |e: std::io::Error| format!("cannot write the interposer into {}: {e}", dir.display());
    // mkdtemp made it 0700: governed programs of other users must reach the file
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).map_err(fail)?;
    let path = dir.join(PRELOAD_NAME);
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
    use super::*;
    use std::os::unix::fs::MetadataExt;

    #[test]
    fn the_copy_is_every_user_s_to_read_and_nobody_else_s_to_change() {
        let base = tempfile::tempdir().unwrap();
        let nothing = |_: &Path| Ok(());
        let a = write_into(base.path(), nothing).unwrap();
        let b = write_into(base.path(), nothing).unwrap();
        let refused = write_into(base.path(), |_: &Path| Err("no journal".to_string()));
        assert_eq!(refused, Err("no journal".to_string()));
        assert_eq!(
            std::fs::read_dir(base.path()).unwrap().count(),
            2,
            "a folder that could not be journaled is not left"
        );
        assert_ne!(a.parent(), b.parent(), "a fresh folder each time");
        let dir = std::fs::symlink_metadata(a.parent().unwrap()).unwrap();
        assert!(dir.is_dir() && dir.mode() & 0o7777 == 0o755);
        let file = std::fs::symlink_metadata(&a).unwrap();
        assert!(file.is_file() && file.mode() & 0o7777 == 0o644);
        assert_eq!(std::fs::read(&a).unwrap(), LIB);
        assert!(usable(Path::new("relative")).is_err());
        assert!(
            usable(Path::new("/tmp/a:b")).is_err(),
            "':' splits LD_PRELOAD"
        );
    }

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
