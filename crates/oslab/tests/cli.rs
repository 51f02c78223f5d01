//! The command line end to end, on the real binary.

mod common;

use assert_cmd::Command;
use predicates::prelude::*;

fn oslab() -> Command {
    let mut c = Command::cargo_bin("oslab").unwrap();
    c.env("OSLAB_DB", common::test_db());
    // Keep any journal this test might cause away from the real one.
    c.env(
        "OSLAB_JOURNAL_DIR",
        std::env::temp_dir().join("oslab-cli-tests"),
    );
    c
}

#[test]
fn list_shows_every_experiment() {
    oslab()
        .arg("list")
        .assert()
        .success()
        .stdout(predicate::str::contains("cpu.syscall").and(predicate::str::contains("null")));
    let out = oslab().args(["list", "--json"]).output().unwrap();
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let ids = common::strings(&v, "id");
    assert!(ids.contains(&"cpu.syscall"));
}

#[test]
fn unknown_experiment_is_one_sentence_with_a_suggestion() {
    oslab()
        .args(["run", "cpu.sycall"])
        .assert()
        .code(2)
        .stdout("")
        .stderr(predicate::str::contains(
            "unknown experiment 'cpu.sycall'; did you mean 'cpu.syscall'?",
        ))
        .stderr(predicate::str::contains("panicked").not());
}

#[test]
fn bad_flags_and_values_exit_2() {
    oslab().args(["run", "null", "--bogus"]).assert().code(2);
    oslab()
        .args(["run", "null", "--repeat", "0"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("--repeat"));
    oslab()
        .args(["run", "null", "--json", "/nonexistent-dir/x.json"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("does not exist"));
    oslab().args(["run"]).assert().code(2);
    oslab()
        .args(["info", "--scratch", "/nonexistent-dir"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("scratch directory"));
    oslab().args(["tweak", "vm.dirty_ratio"]).assert().code(2);
}

#[test]
fn null_run_writes_every_format() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("r.json");
    oslab()
        .args(["run", "null", "--seed", "3", "--json"])
        .arg(&json)
        .arg("--csv")
        .arg(dir.path().join("csv"))
        .arg("--plots")
        .arg(dir.path().join("plots"))
        .assert()
        .success()
        .stdout(predicate::str::contains("HOLDS").and(predicate::str::contains("DIFFERS")));
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(v["schema_version"], 1);
    assert_eq!(v["results"][0]["experiment"], "null");
    assert_eq!(v["results"][0]["environment"]["seed"], 3);
    for f in [
        "null.samples.csv",
        "null.summary.csv",
        "null.findings.csv",
        "null.claims.csv",
    ] {
        assert!(dir.path().join("csv").join(f).is_file(), "{f}");
    }
    assert!(dir.path().join("plots/null-samples.svg").is_file());
}

#[test]
fn syscall_json_has_samples_summary_and_verdicts() {
    let out = oslab()
        .args([
            "run",
            "cpu.syscall",
            "--quick",
            "--repeat",
            "5",
            "--json",
            "-",
        ])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("stdout is only JSON");
    let r = &v["results"][0];
    assert_eq!(r["experiment"], "cpu.syscall");
    assert_eq!(r["status"]["state"], "completed");
    for name in ["loop", "gettid", "getppid", "clock_gettime_vdso"] {
        let m = r["measurements"]
            .as_array()
            .unwrap()
            .iter()
            .find(|m| m["name"] == name)
            .unwrap_or_else(|| panic!("measurement {name}"));
        assert_eq!(m["samples"].as_array().unwrap().len(), 5);
        let s = &m["summary"];
        let (lo, med, hi) = (
            s["ci95"]["low"].as_f64().unwrap(),
            s["median"].as_f64().unwrap(),
            s["ci95"]["high"].as_f64().unwrap(),
        );
        assert!(lo <= med && med <= hi, "{name}: CI contains the median");
        assert!(
            m["samples"]
                .as_array()
                .unwrap()
                .iter()
                .all(|x| x.as_f64().unwrap() >= 0.0)
        );
    }
    let claim = r["claims"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["id"] == "syscall-is-mode-switch")
        .unwrap();
    assert!(["holds", "differs"].contains(&claim["verdict"].as_str().unwrap()));
    assert!(r["environment"]["load"]["steal_fraction"].is_number());
}

#[test]
fn info_json_describes_this_machine() {
    let out = oslab().args(["info", "--json"]).output().unwrap();
    assert!(out.status.success());
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(v["cpu"]["logical_cpus"].as_u64().unwrap() >= 1);
    assert!(v["kernel"]["release"].as_str().is_some());
    assert!(["cfs", "eevdf", "unknown"].contains(&v["kernel"]["scheduler"].as_str().unwrap()));
    assert!(v["caches"]["levels"].is_array());
    oslab()
        .arg("info")
        .assert()
        .success()
        .stdout(predicate::str::contains("Caches (sysfs)").and(predicate::str::contains("Kernel")));
}

#[test]
fn restore_with_nothing_to_do() {
    let dir = tempfile::tempdir().unwrap();
    oslab()
        .env("OSLAB_JOURNAL_DIR", dir.path())
        .arg("restore")
        .assert()
        .success()
        .stdout("nothing to restore\n");
}

#[test]
fn a_closed_pipe_is_not_an_error() {
    // `oslab info | head -1`: stdout closes early; no panic, no backtrace.
    let out = std::process::Command::new("sh")
        .arg("-c")
        .arg(format!(
            "{} info | head -1",
            assert_cmd::cargo::cargo_bin("oslab").display()
        ))
        .output()
        .unwrap();
    assert!(!String::from_utf8_lossy(&out.stderr).contains("panicked"));
}
