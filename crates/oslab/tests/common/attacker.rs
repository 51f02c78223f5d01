//! Another user, as the trust issue's tester played it (uid 65534, nobody), and
//! the kernel's own protections turned off for the length of a test, through
//! oslab's journal, so that a test shows oslab's rule and not the kernel's.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// The uid the attacks are played as.
pub const NOBODY: u32 = 65534;

/// A command run as uid and gid 65534 with no supplementary groups.
pub fn as_nobody(program: &str) -> Command {
    let mut c = Command::new("setpriv");
    c.args([
        "--reuid=65534",
        "--regid=65534",
        "--clear-groups",
        "--",
        program,
    ]);
    c
}

/// Runs `sh -c SCRIPT` as nobody and fails the test unless it succeeds.
pub fn nobody_sh(script: &str) {
    let out = as_nobody("sh").args(["-c", script]).output().unwrap();
    assert!(
        out.status.success(),
        "as nobody: {script}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A root-owned folder that every user may reach (mode 0755), removed after.
pub fn reachable_tempdir() -> (tempfile::TempDir, PathBuf) {
    use std::os::unix::fs::PermissionsExt;
    let d = tempfile::tempdir().unwrap();
    std::fs::set_permissions(d.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let p = d.path().canonicalize().unwrap();
    (d, p)
}

/// `parent/name`: a folder every user may write into, sticky, like /tmp.
pub fn sticky_folder(parent: &Path, name: &str) -> PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let d = parent.join(name);
    std::fs::create_dir(&d).unwrap();
    std::fs::set_permissions(&d, std::fs::Permissions::from_mode(0o1777)).unwrap();
    d
}

/// Tests that turn the protections off run one at a time.
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

/// fs.protected_symlinks, _fifos and _regular at 0 while it lives, set and put
/// back by `oslab tweak` (through its journal), also when the test fails.
pub struct ProtectionsOff {
    tweak: std::process::Child,
    _one: std::sync::MutexGuard<'static, ()>,
}

const PROTECTIONS: [&str; 3] = [
    "fs.protected_symlinks",
    "fs.protected_fifos",
    "fs.protected_regular",
];

fn sysctl_path(name: &str) -> PathBuf {
    PathBuf::from("/proc/sys").join(name.replace('.', "/"))
}

impl ProtectionsOff {
    pub fn new(journal: &Path) -> ProtectionsOff {
        let one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
        let tweak = super::oslab_journaled(journal)
            .arg("tweak")
            .args(PROTECTIONS.map(|p| format!("{p}=0")))
            .args(["--", "sleep", "3600"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let started = Instant::now();
        while !PROTECTIONS
            .iter()
            .all(|p| std::fs::read_to_string(sysctl_path(p)).is_ok_and(|v| v.trim() == "0"))
        {
            assert!(
                started.elapsed() < Duration::from_secs(30),
                "oslab tweak did not turn the protections off"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        ProtectionsOff { tweak, _one: one }
    }
}

impl Drop for ProtectionsOff {
    fn drop(&mut self) {
        // stopped as Ctrl-C stops it: it puts the settings back itself
        // SAFETY: kill(2) of our own child.
        unsafe { libc::kill(self.tweak.id() as i32, libc::SIGINT) };
        let _ = self.tweak.wait();
    }
}
