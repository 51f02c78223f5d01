//! `oslab stalls` at its edges (issue 53, item 8), on the real kernel (root,
//! eBPF): a command that cannot run is refused before anything else is printed;
//! with `--each` the banner comes before the column header; Ctrl-C ends it with
//! 128 + SIGINT as `watch` does; and the fork that runs the command is never
//! listed as oslab dirtying pages. Skips itself without root or kernel tracing.

mod common;

use std::time::{Duration, Instant};

use common::oslab_journaled as oslab;
use serde_json::Value;

macro_rules! traced_or_skip {
    ($name:expr) => {{
        let journal = common::journal_dir($name);
        if let Err(why) = common::stalls_tracing_here(&journal) {
            eprintln!("skipped: kernel tracing is not available ({why})");
            return;
        }
        journal
    }};
}

/// Regression: `stalls -- nosuchcmd` printed the tracing banner, then "cannot run".
#[test]
fn a_command_that_cannot_run_is_refused_before_anything_is_printed() {
    let journal = traced_or_skip!("stalls-nosuchcmd");
    let out = oslab(&journal)
        .args(["stalls", "--", "/nonexistent/nosuchcmd"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(out.stdout.is_empty());
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    assert!(err.contains("cannot run '/nonexistent/nosuchcmd'"), "{err}");
}

/// Regression: with `--each` the column header came before the banner.
#[test]
fn with_each_the_banner_comes_before_the_column_header() {
    let journal = traced_or_skip!("stalls-each-order");
    let bin = assert_cmd::cargo::cargo_bin("oslab");
    let out = std::process::Command::new("sh")
        .arg("-c")
        .arg("\"$0\" stalls --each -- true 2>&1")
        .arg(&bin)
        .env("OSLAB_JOURNAL_DIR", &journal)
        .output()
        .unwrap();
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    let banner = text.find("oslab: tracing").expect("banner");
    let header = text.find("LAT(ms)").expect("column header");
    assert!(banner < header, "{text}");
}

/// Regression: Ctrl-C ended stalls with exit 0 ("finishing (signal 2)") where
/// watch exits 130.
#[test]
fn ctrl_c_ends_it_with_130_after_the_last_interval() {
    let journal = traced_or_skip!("stalls-sigint");
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("lines.json");
    let child = oslab(&journal)
        .args(["stalls", "--interval", "100ms", "--json"])
        .arg(&json)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let start = Instant::now();
    while std::fs::metadata(&json).map_or(0, |m| m.len()) == 0 {
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "no interval written"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    oslab_sys::process::signal_process(child.id(), libc::SIGINT).unwrap();
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(130), "{err}");
    assert!(err.contains("finishing (signal 2)"), "{err}");
}

/// `stalls -- false` listed oslab itself as a dirtier. End to end: oslab writes
/// its own JSON lines during the run (pages dirtied under its name), and none of
/// them, nor anything of the fork before its exec, is listed as oslab. Whether an
/// exec dirties a page in the fork depends on the file system (here, ext4 with a
/// journal, the access time it writes does not), so the renaming of the fork's
/// records is proved on recorded records by the unit test
/// `the_commands_fork_is_named_as_the_command_and_oslab_itself_is_left_out`
/// (crates/trace/src/session.rs), which fails without it.
#[test]
fn the_fork_that_runs_the_command_is_named_as_the_command() {
    let journal = traced_or_skip!("stalls-own-fork");
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let prog = dir.path().join("old-true");
    std::fs::copy("/bin/true", &prog).unwrap();
    let two_days_ago = std::time::SystemTime::now() - Duration::from_secs(2 * 86_400);
    let f = std::fs::File::options().write(true).open(&prog).unwrap();
    f.set_times(std::fs::FileTimes::new().set_accessed(two_days_ago))
        .unwrap();
    drop(f);
    let json = dir.path().join("lines.json");
    let out = oslab(&journal)
        .args(["stalls", "--interval", "100ms", "--json"])
        .arg(&json)
        .arg("--")
        .arg(&prog)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let lines: Vec<Value> = std::fs::read_to_string(&json)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let dirtiers: Vec<&Value> = lines
        .iter()
        .flat_map(|l| l["dirtiers"].as_array().into_iter().flatten())
        .collect();
    assert!(
        dirtiers.iter().all(|d| d["comm"] != "oslab"),
        "oslab listed as a dirtier: {dirtiers:?}"
    );
}
