//! Programs oslab runs by name (losetup, mkfs.ext4, perf, cc, dd, runuser,
//! setpriv), found so that nobody but root (or the user oslab runs as) chose
//! what runs: only in the folders of `$PATH` that no other user can change
//! ([`crate::chase::chain`]: every folder from `/` down root's or this user's,
//! the folder itself writable by nobody else), and only a file of root's or
//! this user's that nobody else can write. The program is started by the path
//! found, with `PATH` narrowed to those folders, so the programs it runs in turn
//! (the C compiler's assembler and linker, setpriv's shell) are found the same
//! way. A command the user typed (`oslab stalls -- CMD`, `oslab wcall run --
//! CMD`) is the user's choice and runs as their shell would run it.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::chase::chain::{LastFolder, stable_file, stable_folder};

/// The search path when `$PATH` is not set, as Debian's root has it.
const DEFAULT_PATH: &str = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

/// Who may own what oslab runs: root and the user it runs as.
fn owners() -> [u32; 2] {
    [0, crate::process::euid()]
}

/// The folders of `$PATH` nobody but root or this user can change, in order.
pub fn trusted_dirs() -> Vec<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_else(|| DEFAULT_PATH.into());
    let mut dirs: Vec<PathBuf> = Vec::new();
    for d in std::env::split_paths(&path) {
        if !d.is_absolute() || dirs.contains(&d) {
            continue;
        }
        if stable_folder(&d, &owners(), LastFolder::Private).is_ok() {
            dirs.push(d);
        }
    }
    dirs
}

/// `PATH` for the programs oslab starts: [`trusted_dirs`] joined.
pub fn trusted_path() -> OsString {
    std::env::join_paths(trusted_dirs()).unwrap_or_default()
}

/// The program `name` (no slash) from [`trusted_dirs`], as its path without
/// links; a program with a slash in its name must itself pass the rule.
pub fn find(name: &str) -> Result<PathBuf, String> {
    if name.contains('/') {
        return stable_file(Path::new(name), &owners())
            .map_err(|e| format!("{name} is not run: {e}"));
    }
    let dirs = trusted_dirs();
    for d in &dirs {
        let candidate = d.join(name);
        if candidate.exists()
            && let Ok(p) = stable_file(&candidate, &owners())
            && is_executable(&p)
        {
            return Ok(p);
        }
    }
    Err(format!(
        "{name} was not found in the folders of PATH that only root can change ({})",
        std::env::join_paths(&dirs)
            .map(|p| p.to_string_lossy().into_owned())
            .unwrap_or_default()
    ))
}

fn is_executable(p: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(p).is_ok_and(|m| m.permissions().mode() & 0o111 != 0)
}

/// A command that runs the program `name` found by [`find`], with `PATH`
/// narrowed to [`trusted_dirs`].
pub fn command(name: &str) -> Result<Command, String> {
    let mut c = Command::new(find(name)?);
    c.env("PATH", trusted_path());
    Ok(c)
}

/// The command line `argv` with its program found by [`find`]: for a lab that
/// hands a command to `oslab wcall run` or starts it itself.
pub fn resolve_argv(argv: &[String]) -> Result<Vec<String>, String> {
    let Some((first, rest)) = argv.split_first() else {
        return Err("an empty command".into());
    };
    let mut v = vec![find(first)?.to_string_lossy().into_owned()];
    v.extend(rest.iter().cloned());
    Ok(v)
}

/// This very binary, for running itself again: /proc/self/exe, which the
/// kernel resolves to the file this process was started from (even if its
/// path has been renamed or replaced since), never a path another user could
/// have swapped.
pub fn own_exe() -> PathBuf {
    PathBuf::from("/proc/self/exe")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn programs_are_found_in_folders_only_root_can_change() {
        let sh = find("sh").expect("sh is on every machine");
        assert!(sh.is_absolute(), "{}", sh.display());
        assert!(
            !std::fs::symlink_metadata(&sh)
                .unwrap()
                .file_type()
                .is_symlink()
        );
        let e = find("surely-no-such-program-here").unwrap_err();
        assert!(e.contains("was not found in the folders of PATH"), "{e}");
        let p = trusted_path();
        assert!(!p.is_empty());
        for d in std::env::split_paths(&p) {
            assert!(d.is_absolute());
        }
    }

    #[test]
    fn a_planted_program_in_a_shared_folder_is_never_found() {
        use std::os::unix::fs::PermissionsExt;
        let d = tempfile::tempdir().unwrap();
        let shared = d.path().join("shared");
        std::fs::create_dir(&shared).unwrap();
        std::fs::set_permissions(&shared, std::fs::Permissions::from_mode(0o1777)).unwrap();
        let planted = shared.join("sh");
        std::fs::write(&planted, "#!/bin/sh\n").unwrap();
        std::fs::set_permissions(&planted, std::fs::Permissions::from_mode(0o777)).unwrap();
        let e = find(planted.to_str().unwrap()).unwrap_err();
        assert!(e.contains("writable by every user"), "{e}");
        assert!(
            stable_folder(&shared, &owners(), LastFolder::Private).is_err(),
            "a folder every user can add programs to is no PATH folder of ours"
        );
    }
}
