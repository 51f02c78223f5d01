//! Users made for a test, and oslab where they can run it.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;

/// oslab and its interposer copied where every user can read and run them (the
/// build folder may be under a home another user cannot enter).
pub fn shared_copies() -> tempfile::TempDir {
    shared(&[
        (PathBuf::from(env!("CARGO_BIN_EXE_oslab")), "oslab"),
        (super::preload_lib(), "liboslab_wcall.so"),
    ])
}

/// oslab alone, copied where every user can read and run it, for a command
/// that governs nothing.
pub fn shared_oslab() -> tempfile::TempDir {
    shared(&[(PathBuf::from(env!("CARGO_BIN_EXE_oslab")), "oslab")])
}

fn shared(files: &[(PathBuf, &str)]) -> tempfile::TempDir {
    let d = tempfile::tempdir().unwrap();
    std::fs::set_permissions(d.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    for (from, to) in files {
        std::fs::copy(from, d.path().join(to)).unwrap();
        std::fs::set_permissions(d.path().join(to), std::fs::Permissions::from_mode(0o755))
            .unwrap();
    }
    d
}

/// A user made for one test and removed after it, also when the test fails.
pub struct TestUser {
    pub name: String,
    pub uid: u32,
}

impl TestUser {
    pub fn new(tag: &str) -> Option<TestUser> {
        let name = format!("oslabt-{tag}-{}", std::process::id() % 100_000);
        let ok = Command::new("useradd")
            .args(["--no-create-home", "--shell", "/usr/sbin/nologin", &name])
            .status()
            .is_ok_and(|s| s.success());
        if !ok {
            return None;
        }
        let out = Command::new("id").args(["-u", &name]).output().ok()?;
        let uid = String::from_utf8_lossy(&out.stdout).trim().parse().ok()?;
        Some(TestUser { name, uid })
    }

    /// A command run as this user, with an empty environment but for PATH and
    /// `vars` (each NAME=VALUE).
    pub fn command(&self, program: &Path, vars: &[&str]) -> Command {
        let mut c = Command::new("runuser");
        c.args(["-u", &self.name, "--", "env", "-i", "PATH=/usr/bin:/bin"])
            .args(vars)
            .arg(program);
        c
    }
}

impl Drop for TestUser {
    fn drop(&mut self) {
        let _ = Command::new("pkill")
            .args(["-KILL", "-u", &self.name])
            .status();
        let _ = Command::new("userdel").arg(&self.name).status();
        // what oslab keeps for an ordinary user under TMPDIR=/tmp (its journal
        // folder, its governors' socket folder) outlives the user otherwise
        for folder in [
            format!("/tmp/oslab-{}", self.uid),
            format!("/tmp/oslab-wcall-{}", self.uid),
        ] {
            let owned_by_it = std::fs::symlink_metadata(&folder)
                .is_ok_and(|m| m.is_dir() && std::os::unix::fs::MetadataExt::uid(&m) == self.uid);
            if owned_by_it {
                let _ = std::fs::remove_dir_all(&folder);
            }
        }
    }
}
