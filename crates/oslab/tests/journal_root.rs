//! The journal against the real kernel: a sysctl changed through it comes back after
//! a normal end, Ctrl-C, and kill -9 followed by `oslab restore`. Needs root.

mod common;
use common::is_root;

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const KNOB: &str = "/proc/sys/vm/dirty_expire_centisecs";

fn read_knob() -> String {
    std::fs::read_to_string(KNOB).unwrap().trim().to_string()
}

/// Puts the knob back even if an assertion fails half way.
struct Restore(String);
impl Drop for Restore {
    fn drop(&mut self) {
        let _ = std::fs::write(KNOB, &self.0);
    }
}

fn spawn_tweak(journal: &Path, value: &str) -> Child {
    common::oslab()
        .env("OSLAB_JOURNAL_DIR", journal)
        .args([
            "tweak",
            &format!("vm.dirty_expire_centisecs={value}"),
            "--for",
            "60s",
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap()
}

fn wait_for_knob(value: &str) {
    let t = Instant::now();
    while read_knob() != value {
        assert!(
            t.elapsed() < Duration::from_secs(20),
            "the change never happened"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn sysctl_change_survives_nothing() {
    if !is_root() {
        eprintln!("skipped: needs root to change a sysctl");
        return;
    }
    let original = read_knob();
    let _restore = Restore(original.clone());
    let changed = if original == "2999" { "2998" } else { "2999" };
    let dir = tempfile::tempdir().unwrap();

    // kill -9, then `oslab restore`
    let mut child = spawn_tweak(dir.path(), changed);
    wait_for_knob(changed);
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
    assert_eq!(read_knob(), changed, "nothing can undo after SIGKILL");
    let journals = std::fs::read_dir(dir.path()).unwrap().count();
    assert_eq!(journals, 1, "the journal file is left for restore");
    let out = common::oslab()
        .env("OSLAB_JOURNAL_DIR", dir.path())
        .arg("restore")
        .output()
        .unwrap();
    assert!(out.status.success());
    assert!(String::from_utf8_lossy(&out.stdout).contains("undone"));
    assert_eq!(read_knob(), original);
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);

    // SIGINT (Ctrl-C)
    let child = spawn_tweak(dir.path(), changed);
    wait_for_knob(changed);
    // SAFETY-free: send the signal with the kill command
    Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(130));
    assert_eq!(read_knob(), original);

    // normal end
    let status = common::oslab()
        .env("OSLAB_JOURNAL_DIR", dir.path())
        .args([
            "tweak",
            &format!("vm.dirty_expire_centisecs={changed}"),
            "--for",
            "50ms",
        ])
        .status()
        .unwrap();
    assert!(status.success());
    assert_eq!(read_knob(), original);
    assert_eq!(
        std::fs::read_dir(dir.path()).unwrap().count(),
        0,
        "no journal left"
    );
}
