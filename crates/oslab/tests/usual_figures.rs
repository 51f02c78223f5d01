//! A figure far from what this machine usually measures is said so (issue 53,
//! item 2): `oslab history --experiment` heads each row with the experiment's
//! headline figure (cpu.syscall's gettid, not the loop's overhead) and marks a
//! row further from the machine's earlier results than the noise; `oslab run`
//! says it after the result. The earlier results are imported result files whose
//! headline was set by hand, so nothing here depends on this machine's speed.

mod common;

use std::path::{Path, PathBuf};

use serde_json::Value;

fn ok(out: std::process::Output) -> (String, String) {
    let err = String::from_utf8_lossy(&out.stderr).to_string();
    assert!(out.status.success(), "exit {:?}: {err}", out.status.code());
    (String::from_utf8(out.stdout).unwrap(), err)
}

fn oslab(db: &Path) -> std::process::Command {
    let mut c = common::oslab();
    c.env("OSLAB_DB", db).env_remove("COLUMNS");
    c
}

/// A results file like `base` with measurement `name`'s median set to `median`
/// (its interval a hair around it) and its results started at minute `minute`.
fn with_median(base: &Value, name: &str, median: f64, minute: u32, dir: &Path) -> PathBuf {
    let mut v = base.clone();
    for r in v["results"].as_array_mut().unwrap() {
        r["started_at"] = Value::from(format!("2026-01-01T00:{minute:02}:00Z"));
        for m in r["measurements"].as_array_mut().unwrap() {
            if m["name"] == name {
                m["summary"]["median"] = Value::from(median);
                m["summary"]["ci95"]["low"] = Value::from(median * 0.99);
                m["summary"]["ci95"]["high"] = Value::from(median * 1.01);
            }
        }
    }
    let path = dir.join(format!("r{minute}.json"));
    std::fs::write(&path, serde_json::to_vec(&v).unwrap()).unwrap();
    path
}

fn import(db: &Path, files: &[PathBuf]) {
    ok(oslab(db).arg("import").args(files).output().unwrap());
}

/// Regression: `history --experiment cpu.syscall` showed the loop's overhead as
/// its first figure, so gettid at 131.7 ns after 73.4 ns went unseen.
#[test]
fn history_heads_each_row_with_the_headline_and_marks_one_far_from_usual() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("h.db");
    let raw = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../lab/tests/fixtures/raw/cpu.syscall.raw.json");
    let judged = dir.path().join("judged.json");
    ok(oslab(&db)
        .arg("judge")
        .arg(&raw)
        .arg("--json")
        .arg(&judged)
        .output()
        .unwrap());
    let base: Value = serde_json::from_slice(&std::fs::read(&judged).unwrap()).unwrap();
    let mut files: Vec<PathBuf> = [73.4, 72.9, 74.1, 73.0, 75.2]
        .iter()
        .enumerate()
        .map(|(i, m)| with_median(&base, "gettid", *m, i as u32, dir.path()))
        .collect();
    files.push(with_median(&base, "gettid", 131.7, 10, dir.path()));
    import(&db, &files);
    let (text, _) = ok(oslab(&db)
        .args(["history", "--experiment", "cpu.syscall"])
        .output()
        .unwrap());
    let rows: Vec<&str> = text.lines().skip(2).filter(|l| !l.is_empty()).collect();
    assert_eq!(rows.len(), 6, "{text}");
    assert!(rows[0].contains("gettid (ns/call)"), "{text}");
    assert!(!text.contains("loop (ns/call)"), "{text}");
    assert!(
        rows[0].contains("79 % above"),
        "the newest is far from usual:\n{text}"
    );
    assert!(rows[1..].iter().all(|r| !r.contains("above")), "{text}");
    let (json, _) = ok(oslab(&db)
        .args(["history", "--experiment", "cpu.syscall", "--json", "-"])
        .output()
        .unwrap());
    let json: Value = serde_json::from_str(&json).unwrap();
    assert_eq!(json[0]["headline"]["name"], "gettid");
    assert!(
        json[0]["far_from_usual"]
            .as_str()
            .unwrap()
            .contains("above"),
        "{json}"
    );
    assert!(json[1]["far_from_usual"].is_null());
}

/// After a run, a headline far from the machine's earlier results is said: the
/// null experiment's fixed samples (median 100 ns) against five earlier results
/// of 50 ns.
#[test]
fn a_run_says_when_its_headline_is_far_from_this_machines_usual() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("u.db");
    let first = dir.path().join("first.json");
    ok(oslab(&db)
        .args(["run", "null", "--no-db", "--json"])
        .arg(&first)
        .output()
        .unwrap());
    let base: Value = serde_json::from_slice(&std::fs::read(&first).unwrap()).unwrap();
    let files: Vec<PathBuf> = (0..5)
        .map(|i| with_median(&base, "latency", 50.0 + i as f64 * 0.2, i, dir.path()))
        .collect();
    import(&db, &files);
    let (_, err) = ok(oslab(&db).args(["run", "null"]).output().unwrap());
    assert!(
        err.contains("null's latency measured 100 ns, 98 % above this machine's usual 50.4 ns"),
        "{err}"
    );
}
