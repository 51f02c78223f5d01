//! The page-cache experiments end to end on small files: structure and invariants,
//! never timings. Each uses its own scratch directory so leftovers are visible.

use std::process::{Command, Stdio};
use std::time::Duration;

mod common;
use common::{json_output, named};

fn run_json(args: &[&str], scratch: &std::path::Path) -> serde_json::Value {
    json_output(common::oslab().args(args).arg("--scratch").arg(scratch))
}

fn finding(r: &serde_json::Value, name: &str) -> f64 {
    named(&r["findings"], name)["value"].as_f64().unwrap()
}

fn scratch_dir() -> tempfile::TempDir {
    // Under the current directory (target/, a real file system), not a tmpfs /tmp:
    // eviction and device counters need a block device.
    tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap()
}

fn on_block_device(p: &std::path::Path) -> bool {
    oslab_sys::fileio::device_name_of(&oslab_sys::fsread::Root::live(), p).is_some()
}

#[test]
fn read_cold_and_warm() {
    let dir = scratch_dir();
    let v = run_json(
        &[
            "run",
            "io.read",
            "--quick",
            "--set",
            "size=32MiB",
            "--repeat",
            "1",
        ],
        dir.path(),
    );
    let r = &v["results"][0];
    assert_eq!(r["status"]["state"], "completed");
    for m in [
        "cold_read",
        "warm_read",
        "mmap_cold",
        "mmap_warm",
        "cold_device_read",
    ] {
        let m = r["measurements"]
            .as_array()
            .unwrap()
            .iter()
            .find(|x| x["name"] == m)
            .unwrap();
        assert_eq!(m["samples"].as_array().unwrap().len(), 1);
    }
    assert_eq!(r["params"]["size_bytes"], 32 << 20);
    assert!(
        finding(r, "cached_after_warm") > 0.95,
        "the warm read leaves the file cached"
    );
    if on_block_device(dir.path()) {
        assert!(
            finding(r, "warm_device_share") < 0.05,
            "a warm read barely touches the device"
        );
        assert!(
            finding(r, "cached_before_cold") < 0.05,
            "eviction emptied the cache"
        );
    }
    assert!(
        !r["system"].as_array().unwrap().is_empty(),
        "sampled sar series attached"
    );
    assert_eq!(r["claims"].as_array().unwrap().len(), 2);
    assert_eq!(
        std::fs::read_dir(dir.path()).unwrap().count(),
        0,
        "no files left"
    );
}

#[test]
fn write_paths() {
    let dir = scratch_dir();
    let v = run_json(
        &["run", "io.write", "--quick", "--set", "size=8.5MiB"],
        dir.path(),
    );
    let r = &v["results"][0];
    assert_eq!(r["status"]["state"], "completed");
    // written in whole MiB: the size recorded is the size written, not the one asked
    assert_eq!(r["params"]["size"], 8 << 20);
    let names = common::strings(&r["measurements"], "name");
    for n in [
        "write_rate.buffered.4K",
        "write_rate.buffered.1M",
        "sync_s.buffered.1M",
        "write_rate.dsync.1M",
    ] {
        assert!(names.contains(&n), "{n} in {names:?}");
    }
    if on_block_device(dir.path()) {
        // fdatasync put every buffered byte on the device
        assert!(
            finding(r, "device_during.buffered.1M") + finding(r, "device_after.buffered.1M") >= 0.9
        );
        // O_DSYNC writes are on the device when write() returns
        assert!(finding(r, "device_during.dsync.1M") >= 0.9);
    }
    assert!(finding(r, "first_touch_ns_per_page") > 0.0);
    assert_eq!(
        std::fs::read_dir(dir.path()).unwrap().count(),
        0,
        "no files left"
    );
}

#[test]
fn too_little_disk_is_one_clear_failure() {
    let dir = scratch_dir();
    let out = common::oslab()
        .args([
            "run",
            "io.write",
            "--quick",
            "--set",
            "size=1000GiB",
            "--scratch",
        ])
        .arg(dir.path())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("are needed"), "{text}");
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
}

#[test]
fn unknown_or_bad_settings_are_usage_errors() {
    let out = common::oslab()
        .args(["run", "io.read", "--set", "sise=1G"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("known: size, drop_caches"));
    let out = common::oslab()
        .args(["run", "io.read", "--set", "size=lots"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let out = common::oslab()
        .args(["run", "wb.wcall", "--set", "scenarios=alone,solo"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&out.stderr)
            .contains("'solo' is not one of alone, rt45x2, bulkx2, fig7-nice4"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn ctrl_c_leaves_no_files() {
    let dir = scratch_dir();
    let journal = tempfile::tempdir().unwrap();
    let child = common::oslab()
        .args(["run", "io.read", "--set", "size=512MiB", "--scratch"])
        .arg(dir.path())
        .env("OSLAB_JOURNAL_DIR", journal.path())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // wait until the experiment's scratch directory exists, then interrupt
    let t = std::time::Instant::now();
    while std::fs::read_dir(dir.path()).unwrap().count() == 0 {
        assert!(
            t.elapsed() < Duration::from_secs(30),
            "the run never started"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    std::thread::sleep(Duration::from_millis(200));
    Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(130),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        std::fs::read_dir(dir.path()).unwrap().count(),
        0,
        "scratch removed"
    );
    assert_eq!(
        std::fs::read_dir(journal.path()).unwrap().count(),
        0,
        "journal settled"
    );
}
