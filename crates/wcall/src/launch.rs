//! Starting a program under the governor: where the interposer is, the environment
//! that carries it to the program and its children, and the programs it cannot
//! reach (statically linked ones).

use std::path::{Path, PathBuf};

use crate::embedded::{self, PRELOAD_NAME};

/// Overrides where the interposer is looked for.
pub const ENV_LIB: &str = "OSLAB_WCALL_LIB";

/// The interposer: $OSLAB_WCALL_LIB, or next to the oslab executable (or in its
/// deps/ folder, or one folder up, as cargo lays out test binaries), else the copy
/// carried inside the binary, written out ([`crate::embedded`]).
///
/// Whatever this returns is handed to the dynamic loader as a path, to be
/// loaded into programs that may run as root, so a library is taken only where
/// nobody but root or this user could change what the path names
/// ([`trusted`]); `$OSLAB_WCALL_LIB` that fails the rule is refused, a library
/// beside the binary that fails it, or is not the copy this binary carries, is
/// passed over for the embedded copy.
pub fn preload_path() -> Result<PathBuf, String> {
    if let Some(p) = std::env::var_os(ENV_LIB) {
        let p = PathBuf::from(p);
        return trusted(&p).map_err(|e| format!("{ENV_LIB}={} cannot be used: {e}", p.display()));
    }
    let exe = std::env::current_exe().map_err(|e| format!("cannot find oslab's own path: {e}"))?;
    let dir = exe.parent().unwrap_or(Path::new("/"));
    let candidates = [
        Some(dir.join(PRELOAD_NAME)),
        Some(dir.join("deps").join(PRELOAD_NAME)),
        dir.parent().map(|up| up.join(PRELOAD_NAME)),
    ];
    match candidates.iter().flatten().find_map(|p| of_this_build(p)) {
        Some(p) => Ok(p),
        None => embedded::path().map_err(|e| {
            format!(
                "the interposer {PRELOAD_NAME} is not next to {} and its copy inside oslab could not be written: {e}",
                exe.display()
            )
        }),
    }
}

/// A library beside the binary, when it may be loaded ([`trusted`]) and is the
/// interposer this binary carries, byte for byte. A library of another build
/// (left beside a binary rebuilt alone, or copied in) may read the governor's
/// board in another layout: its programs would refuse to join and write
/// ungoverned, so the carried copy is used instead.
fn of_this_build(path: &Path) -> Option<PathBuf> {
    let p = trusted(path).ok()?;
    let carried = embedded::bytes();
    let same = std::fs::metadata(&p).is_ok_and(|m| m.len() == carried.len() as u64)
        && std::fs::read(&p).is_ok_and(|b| b == carried);
    same.then_some(p)
}

/// The path (without links) of a library that may be loaded into the programs
/// oslab governs: a regular file of root's or this user's that nobody else can
/// write, reached through no link and no folder that anyone else could change
/// (`oslab_sys::chase::chain::stable_file`: every folder from `/` down is root's
/// or this user's and writable by others only when sticky). A copy of oslab in
/// a folder of the temporary directory must not load a library another user put
/// there, or a `deps` link of theirs that they swap after the check.
fn trusted(path: &Path) -> Result<PathBuf, String> {
    let owners = [0, oslab_sys::process::euid()];
    oslab_sys::chase::chain::stable_file(path, &owners).map_err(|e| e.to_string())
}

/// The program a command name runs: itself when it has a slash, else from PATH.
pub fn resolve(program: &str) -> Option<PathBuf> {
    if program.contains('/') {
        let p = PathBuf::from(program);
        return p.is_file().then_some(p);
    }
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join(program))
        .find(|p| p.is_file())
}

/// Whether an ELF file has no program interpreter (PT_INTERP), so the dynamic
/// loader, and with it LD_PRELOAD, never runs. None when it is not a 64-bit
/// little-endian ELF (a script, say: its interpreter is what runs).
pub fn is_static_elf(bytes: &[u8]) -> Option<bool> {
    if bytes.len() < 64 || &bytes[..4] != b"\x7fELF" || bytes[4] != 2 || bytes[5] != 1 {
        return None;
    }
    let u16_at = |o: usize| u16::from_le_bytes([bytes[o], bytes[o + 1]]) as usize;
    let u64_at = |o: usize| {
        bytes
            .get(o..o + 8)
            .map(|b| u64::from_le_bytes(b.try_into().unwrap_or([0; 8])) as usize)
    };
    let phoff = u64_at(32)?;
    let (phentsize, phnum) = (u16_at(54), u16_at(56));
    for i in 0..phnum {
        let o = phoff + i * phentsize;
        let kind = bytes.get(o..o + 4)?;
        if u32::from_le_bytes(kind.try_into().ok()?) == 3 {
            return Some(false);
        }
    }
    Some(true)
}

/// Reads enough of `path` to tell whether it is a static ELF.
pub fn is_static(path: &Path) -> Option<bool> {
    use std::io::Read;
    let mut f = std::fs::File::open(path).ok()?;
    let mut head = vec![0u8; 64 * 1024];
    let n = f.read(&mut head).ok()?;
    head.truncate(n);
    is_static_elf(&head)
}

/// The environment for a governed program: the interposer first in LD_PRELOAD
/// (keeping what was there) and the governor's socket. Its group is not in it:
/// the coordinator decides that (`crate::admission`).
pub fn env(lib: &Path, socket: &Path) -> Vec<(String, String)> {
    let mut preload = lib.display().to_string();
    if let Ok(old) = std::env::var("LD_PRELOAD")
        && !old.is_empty()
    {
        preload = format!("{preload}:{old}");
    }
    vec![
        ("LD_PRELOAD".into(), preload),
        (crate::shm::ENV_SOCKET.into(), socket.display().to_string()),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn elf_interpreter_tells_static_from_dynamic() {
        // this test binary is dynamically linked (Rust links glibc dynamically)
        let me = std::env::current_exe().unwrap();
        assert_eq!(is_static(&me), Some(false));
        assert_eq!(is_static_elf(b"#!/bin/sh\necho hi\n"), None);
        // a minimal ELF header with no program headers: nothing to interpret it
        let mut h = vec![0u8; 64];
        h[..4].copy_from_slice(b"\x7fELF");
        h[4] = 2;
        h[5] = 1;
        assert_eq!(is_static_elf(&h), Some(true));
    }

    #[test]
    fn programs_resolve_from_path() {
        assert!(resolve("sh").is_some());
        assert!(resolve("surely-no-such-program-here").is_none());
    }

    #[test]
    fn a_library_beside_the_binary_is_loaded_only_when_it_is_the_one_carried() {
        let dir = tempfile::tempdir().unwrap();
        let lib = dir.path().join(PRELOAD_NAME);
        // an interposer of another build: the same name, other bytes
        let mut other = embedded::bytes().to_vec();
        let middle = other.len() / 2;
        other[middle] ^= 0xff;
        std::fs::write(&lib, &other).unwrap();
        assert!(trusted(&lib).is_ok());
        assert_eq!(of_this_build(&lib), None, "another build's library");
        std::fs::write(&lib, &other[..other.len() - 1]).unwrap();
        assert_eq!(of_this_build(&lib), None, "a shorter one");
        std::fs::write(&lib, embedded::bytes()).unwrap();
        assert_eq!(
            of_this_build(&lib),
            Some(lib.canonicalize().unwrap()),
            "the carried copy"
        );
    }

    #[test]
    fn a_library_beside_the_binary_is_loaded_only_when_nobody_else_could_have_put_it() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let lib = dir.path().join(PRELOAD_NAME);
        std::fs::write(&lib, b"\x7fELF").unwrap();
        std::fs::set_permissions(&lib, std::fs::Permissions::from_mode(0o644)).unwrap();
        assert!(trusted(&lib).is_ok(), "the user's own file");
        std::fs::set_permissions(&lib, std::fs::Permissions::from_mode(0o666)).unwrap();
        assert!(trusted(&lib).is_err(), "a file others may write");
        std::fs::set_permissions(&lib, std::fs::Permissions::from_mode(0o644)).unwrap();
        let link = dir.path().join("link.so");
        std::os::unix::fs::symlink(&lib, &link).unwrap();
        assert_eq!(
            trusted(&link).unwrap(),
            lib.canonicalize().unwrap(),
            "a link of the user's own leads to the file itself"
        );
        if oslab_sys::process::is_root() {
            // SAFETY: chown of a file this test made, to nobody.
            let c = std::ffi::CString::new(lib.as_os_str().as_encoded_bytes()).unwrap();
            assert_eq!(unsafe { libc::chown(c.as_ptr(), 65534, 65534) }, 0);
            assert!(trusted(&lib).is_err(), "another user's file, as root");
            assert!(trusted(&link).is_err(), "a link to it");
        }
    }
}
