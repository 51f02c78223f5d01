//! The whole quick lab as an ordinary user, with the default journal, scratch and
//! database locations: it finishes with exit 0, every experiment that needs root is
//! skipped with its reason, nothing fails. As root (CI) the test drops to `nobody`
//! with setpriv; as an ordinary user it runs as that user.

mod common;

use std::path::Path;
use std::process::Command;

fn as_ordinary_user(home: &Path) -> Command {
    let oslab = assert_cmd::cargo::cargo_bin("oslab");
    let mut c = if common::is_root() {
        let mut c = Command::new("setpriv");
        c.args(["--reuid=65534", "--regid=65534", "--clear-groups", "--"])
            .arg(oslab);
        c
    } else {
        Command::new(oslab)
    };
    // the defaults: no OSLAB_DB, no OSLAB_JOURNAL_DIR, no XDG folders
    c.env_clear()
        .env("HOME", home)
        .env("TMPDIR", home)
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("OSLAB_WCALL_LIB", common::preload_lib());
    c
}

#[test]
fn the_quick_lab_runs_to_the_end_as_an_ordinary_user() {
    let home = tempfile::tempdir().unwrap();
    if common::is_root() {
        if Command::new("setpriv").arg("--version").output().is_err() {
            eprintln!("skipped: setpriv (util-linux) is not installed");
            return;
        }
        std::os::unix::fs::chown(home.path(), Some(65534), Some(65534)).unwrap();
    }
    let out = as_ordinary_user(home.path())
        .args(["run", "all", "--quick", "--json", "-"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("only JSON on stdout");
    let results = v["results"].as_array().unwrap();
    assert!(results.len() >= 20, "every experiment of the lab");
    for r in results {
        let id = r["experiment"].as_str().unwrap();
        match r["status"]["state"].as_str().unwrap() {
            "completed" => {}
            "skipped" => {
                let reason = r["status"]["reason"].as_str().unwrap_or_default();
                assert!(!reason.is_empty(), "{id} skipped without a reason");
            }
            other => panic!("{id}: {other}: {}", r["status"]),
        }
    }
    for id in ["wb.background", "wb.throttle", "wb.wcall"] {
        let r = results.iter().find(|r| r["experiment"] == id).unwrap();
        assert_eq!(r["status"]["state"], "skipped", "{id}");
        assert!(
            r["status"]["reason"]
                .as_str()
                .unwrap()
                .starts_with("needs root"),
            "{id}"
        );
    }
    assert!(!stderr.contains("No such file or directory"), "{stderr}");
    // the run is kept in the default database, and nothing is left in the scratch
    // folder but that database and the user's lock beside the journal
    assert!(home.path().join(".local/share/oslab/results.db").is_file());
    let left: Vec<String> = std::fs::read_dir(home.path())
        .unwrap()
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n != ".local")
        .filter(|n| {
            !n.starts_with("oslab-65534") && !n.starts_with(&format!("oslab-{}", lab_uid()))
        })
        .collect();
    assert!(left.is_empty(), "left in TMPDIR: {left:?}");
}

/// The uid the lab ran as.
fn lab_uid() -> u32 {
    if common::is_root() {
        65534
    } else {
        std::fs::read_to_string("/proc/self/status")
            .ok()
            .and_then(|s| {
                s.lines()
                    .find(|l| l.starts_with("Uid:"))
                    .and_then(|l| l.split_whitespace().nth(1)?.parse().ok())
            })
            .unwrap_or(0)
    }
}
