//! The testbed's named journal on the real kernel (issue 27, item 6): a testbed
//! whose `up` was killed after its loop device, mount and throttle were made is
//! flagged by `oslab info` and taken down by `oslab restore`; one that was built
//! and left up on purpose is not flagged. Needs root and loop devices; skipped
//! with the reason otherwise.

mod common;

use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

const PENDING: &str = "an interrupted oslab run left changes";

/// Takes down whatever the test left, even when an assertion fails.
struct Restore<'a>(&'a Path);

impl Drop for Restore<'_> {
    fn drop(&mut self) {
        let _ = common::oslab_journaled(self.0).arg("restore").output();
    }
}

fn up_args(scratch: &Path) -> Vec<String> {
    [
        "testbed",
        "up",
        "--bandwidth",
        "20MiB/s",
        "--size",
        "64MiB",
        "--scratch",
    ]
    .iter()
    .map(|s| s.to_string())
    .chain([scratch.display().to_string()])
    .collect()
}

fn info_stderr(journal: &Path) -> String {
    let out = common::succeed(common::oslab_journaled(journal).arg("info"));
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn skip_reason() -> Option<&'static str> {
    if !common::is_root() {
        return Some("a testbed needs root");
    }
    if !Path::new("/dev/loop-control").exists() {
        return Some("no loop devices");
    }
    None
}

#[test]
fn a_testbed_killed_half_built_is_flagged_and_one_left_up_is_not() {
    if let Some(why) = skip_reason() {
        eprintln!("skipped: {why}");
        return;
    }
    let journal = tempfile::tempdir().unwrap();
    let scratch = tempfile::tempdir().unwrap();
    let _restore = Restore(journal.path());
    let jp = journal.path().join("journal-testbed.jsonl");

    // built and left up: not flagged, although `up` has exited
    let out = common::oslab_journaled(journal.path())
        .args(up_args(scratch.path()))
        .output()
        .unwrap();
    if out.status.code() == Some(3) {
        eprintln!("skipped: {}", String::from_utf8_lossy(&out.stderr));
        return;
    }
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(!info_stderr(journal.path()).contains(PENDING));
    common::succeed(common::oslab_journaled(journal.path()).args(["testbed", "down"]));
    assert!(!jp.exists());

    // killed while it measures, after the throttle (its last change) is set
    let mut child = common::oslab_journaled(journal.path())
        .args(up_args(scratch.path()))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let t = Instant::now();
    while !std::fs::read_to_string(&jp).is_ok_and(|j| j.contains("blkio write throttle")) {
        assert!(
            t.elapsed() < Duration::from_secs(60),
            "the throttle never came"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
    child.kill().unwrap();
    child.wait().unwrap();
    let left = std::fs::read_to_string(&jp).unwrap();
    assert!(!left.contains("\"mark\""), "killed too late: {left}");

    let stderr = info_stderr(journal.path());
    assert!(stderr.contains(PENDING), "{stderr}");
    let out = common::succeed(common::oslab_journaled(journal.path()).arg("restore"));
    let text = String::from_utf8_lossy(&out.stdout);
    for step in [
        "blkio write throttle",
        "mount /dev/loop",
        "loop device",
        "testbed directory",
    ] {
        assert!(text.contains(&format!("undone: {step}")), "{step}: {text}");
    }
    assert!(!jp.exists());
    let mounts = std::fs::read_to_string("/proc/mounts").unwrap();
    assert!(
        !mounts.contains(&scratch.path().display().to_string()),
        "{mounts}"
    );
    assert!(!info_stderr(journal.path()).contains(PENDING));
}
