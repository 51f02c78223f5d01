//! `oslab sim` end to end: scenarios, TOML files, policies, sweeps, errors.

use assert_cmd::Command;
use predicates::prelude::*;

mod common;

/// oslab with no stored machine profile (a data folder that does not exist).
fn oslab() -> Command {
    let mut c = Command::cargo_bin("oslab").unwrap();
    c.env("XDG_DATA_HOME", "/nonexistent/oslab-sim-tests");
    c
}

/// A scenario file: one bulk writer on a 10 MiB/s disk for 3 s.
const BULK_WRITER: &str = r#"
rules = "linux-6"
dirtyable_bytes = 1073741824
duration_s = 3.0
cpus = 2
[sysctls]
dirty_bytes = 33554432
dirty_background_bytes = 16777216
[device]
bandwidth_bytes_s = 10485760.0
[[writers]]
name = "w"
type = "bulk"
chunk = 524288
class = { normal = { nice = 0 } }
"#;

/// The JSON a successful command printed.
fn json_of(out: std::process::Output) -> serde_json::Value {
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn list_names_the_paper_and_material_scenarios() {
    oslab()
        .args(["sim", "list"])
        .assert()
        .success()
        .stdout(predicate::str::contains("paper-fig2").and(predicate::str::contains("material-a")));
}

#[test]
fn a_run_compares_the_three_policies() {
    let out = oslab()
        .args(["sim", "run", "paper-fig2", "--json", "-"])
        .output()
        .unwrap();
    let v = json_of(out);
    let r = &v["results"][0];
    assert_eq!(r["experiment"], "sim.paper-fig2");
    for p in ["vanilla", "wcall", "wcall-fair"] {
        let m = r["measurements"]
            .as_array()
            .unwrap()
            .iter()
            .find(|m| m["name"] == format!("latency.{p}.rt55"))
            .unwrap_or_else(|| panic!("{p}"));
        assert_eq!(
            m["samples"].as_array().unwrap().len(),
            700,
            "every write of the paper's workload"
        );
    }
    let plots: Vec<&str> = r["plots"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["id"].as_str().unwrap())
        .collect();
    assert!(plots.contains(&"average") && plots.contains(&"latency-wcall"));
}

#[test]
fn toml_scenarios_and_bad_input() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("mine.toml");
    std::fs::write(&f, BULK_WRITER).unwrap();
    oslab()
        .args(["sim", "run"])
        .arg(&f)
        .args(["--policy", "vanilla"])
        .assert()
        .success();
    std::fs::write(&f, "rules = \"linux-6\"\n").unwrap();
    oslab()
        .args(["sim", "run"])
        .arg(&f)
        .assert()
        .code(2)
        .stderr(predicate::str::contains("mine.toml"));
    oslab()
        .args(["sim", "run", "paper-fig99"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("unknown scenario"));
    oslab()
        .args(["sim", "run", "paper-fig2", "--policy", "greedy"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("unknown policy"));
    oslab()
        .args(["sim", "run", "paper-fig2", "--set", "bandwidth=fast"])
        .assert()
        .code(2);
}

/// A scenario given by a path with folders is named after its stem, so `--csv
/// DIR` writes `sim.cell.*` there (it once named it after the whole path and
/// failed on a folder that did not exist), and Dirty and Writeback are findings
/// of their own beside the sum.
#[test]
fn a_scenario_file_s_result_is_named_after_its_stem_with_dirty_and_writeback_apart() {
    let dir = tempfile::tempdir().unwrap();
    let folder = dir.path().join("x");
    std::fs::create_dir(&folder).unwrap();
    let f = folder.join("cell.toml");
    std::fs::write(&f, BULK_WRITER).unwrap();
    let csv = dir.path().join("csv");
    std::fs::create_dir(&csv).unwrap();
    let out = oslab()
        .args(["sim", "run"])
        .arg(&f)
        .args(["--policy", "vanilla", "--json", "-", "--csv"])
        .arg(&csv)
        .output()
        .unwrap();
    let v = json_of(out);
    let r = &v["results"][0];
    assert_eq!(r["experiment"], "sim.cell");
    assert!(csv.join("sim.cell.findings.csv").is_file());
    let finding = |name: &str| {
        r["findings"]
            .as_array()
            .unwrap()
            .iter()
            .find(|f| f["name"] == name)
            .and_then(|f| f["value"].as_f64())
            .unwrap_or_else(|| panic!("{name}"))
    };
    let (dirty, writeback, both) = (
        finding("peak_mib.dirty.vanilla"),
        finding("peak_mib.writeback.vanilla"),
        finding("peak_mib.dirty_writeback.vanilla"),
    );
    // a bulk writer on a 10 MiB/s disk keeps both counters up, and neither
    // alone reaches the sum's peak by more than the other's share
    assert!(dirty > 0.0 && writeback > 0.0, "{dirty} {writeback}");
    assert!(both <= dirty + writeback && both >= dirty.max(writeback));
}

#[test]
fn a_sweep_returns_every_point_in_order() {
    let out = oslab()
        .args([
            "sim",
            "sweep",
            "testbed-fig2",
            "--vary",
            "dirty_bytes=16MiB..128MiB",
            "--steps",
            "8",
            "--set",
            "duration=5s",
            "--json",
            "-",
        ])
        .output()
        .unwrap();
    let v = json_of(out);
    let pts = v.as_array().unwrap();
    assert_eq!(pts.len(), 8);
    // the points keep the unit the range was given in
    assert_eq!(pts[0]["value"], "16MiB");
    assert_eq!(pts[1]["value"], "32MiB");
    assert_eq!(pts[7]["value"], "128MiB");
}

/// `sim list --settings` prints every `--set` key from its declaration, and
/// docs/sim-scenarios.md shows exactly that output; a bad value names the range.
#[test]
fn the_settings_list_comes_from_the_declarations_and_the_docs_show_it() {
    let out = oslab()
        .args(["sim", "list", "--settings"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    for k in oslab_wbsim::keys::KEYS {
        assert!(text.contains(k.field), "{}", k.field);
    }
    let docs = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/sim-scenarios.md"),
    )
    .unwrap();
    let trimmed =
        |t: &str| -> String { t.lines().map(|l| l.trim_end().to_string() + "\n").collect() };
    let block = docs
        .split("<!-- oslab sim list --settings -->\n```\n")
        .nth(1)
        .and_then(|rest| rest.split("```\n").next())
        .expect("docs/sim-scenarios.md has the settings block");
    assert_eq!(
        trimmed(block),
        trimmed(&text),
        "docs/sim-scenarios.md: paste the output of `oslab sim list --settings`"
    );
    oslab()
        .args(["sim", "run", "paper-fig2", "--set", "dirty_ratio=150"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains(
            "--set dirty_ratio=150 is out of range: give 0 to 100",
        ));
}

#[test]
fn a_run_starts_from_the_steady_state_unless_told_and_carries_no_host_facts() {
    let text = |args: &[&str]| {
        let out = oslab().args(args).output().unwrap();
        assert!(out.status.success(), "{args:?}");
        String::from_utf8(out.stdout).unwrap()
    };
    let steady = text(&["sim", "run", "testbed-fig2", "--policy", "vanilla"]);
    assert!(
        steady.contains("simulated on the scenario's machine"),
        "{steady}"
    );
    assert!(
        !steady.contains("steal") && !steady.contains("outliers"),
        "{steady}"
    );
    assert!(steady.contains("steady state of its writers"), "{steady}");
    let boot = text(&[
        "sim",
        "run",
        "testbed-fig2",
        "--policy",
        "vanilla",
        "--from-boot",
    ]);
    assert!(
        boot.contains("from the estimates the scenario gives"),
        "{boot}"
    );
    assert!(
        boot.contains("dirty_ratelimit 100 MiB/s"),
        "INIT_BW at the start: {boot}"
    );
    // the JSON says the same, and names no host's load
    let json = text(&[
        "sim",
        "run",
        "testbed-fig2",
        "--policy",
        "vanilla",
        "--json",
        "-",
    ]);
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    let r = &v["results"][0];
    assert!(r["simulated"].as_str().unwrap().contains("40 MiB/s"));
    let start = r["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["name"] == "start.vanilla")
        .expect("the start finding");
    assert!(start["value"].as_f64().unwrap() >= 20.0, "a warm-up ran");
}

#[test]
fn advice_states_its_objective_and_why_the_first_wins() {
    let out = oslab()
        .args([
            "sim",
            "advise",
            "testbed-fig2",
            "--p99",
            "50ms",
            "--prefer",
            "latency",
        ])
        .output()
        .unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(out.status.success(), "{text}");
    assert!(
        text.contains("rt55's p99 under 50 ms; then preferring the lowest p99"),
        "{text}"
    );
    assert!(text.contains("\nwhy first: "), "{text}");
    assert!(text.contains("no: p99 "), "the misses are named: {text}");
    oslab()
        .args([
            "sim",
            "advise",
            "testbed-fig2",
            "--p99",
            "50ms",
            "--protect",
            "nobody",
        ])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("no writer or group of that name"));
}

#[test]
fn a_calibrated_profile_fills_what_the_scenario_leaves_to_the_machine() {
    // the device probe needs direct I/O: not tmpfs
    let dir = tempfile::tempdir_in("/var/tmp").unwrap();
    let profile = dir.path().join("profile.json");
    let out = oslab()
        .args(["sim", "calibrate", "--quick", "--scratch"])
        .arg(dir.path())
        .arg("--out")
        .arg(&profile)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(
        out.status.success(),
        "{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(text.contains("device write bandwidth"), "{text}");
    let p: serde_json::Value = serde_json::from_slice(&std::fs::read(&profile).unwrap()).unwrap();
    assert!(p["device_write_bytes_s"].as_f64().unwrap() > 0.0);
    assert_eq!(p["page_alloc_ns"].as_array().unwrap().len(), 128);
    // only the probe's file was made, and it is gone
    let left: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .flatten()
        .map(|e| e.file_name())
        .collect();
    assert_eq!(left, vec![std::ffi::OsString::from("profile.json")]);
    let run = |scenario: &str, extra: &[&str]| {
        let out = oslab()
            .args(["sim", "run", scenario, "--policy", "vanilla", "--profile"])
            .arg(&profile)
            .args(extra)
            .output()
            .unwrap();
        assert!(out.status.success(), "{scenario}");
        String::from_utf8(out.stdout).unwrap()
    };
    assert!(run("testbed-fig2", &[]).contains("simulated on the machine profile"));
    // a scenario of another machine takes nothing from it
    assert!(run("paper-fig2", &[]).contains("simulated on the scenario's machine"));
    // a hostile or stale profile: one sentence, exit 2
    std::fs::write(&profile, "{\"version\": 1}").unwrap();
    oslab()
        .args(["sim", "run", "testbed-fig2", "--profile"])
        .arg(&profile)
        .assert()
        .code(2)
        .stderr(predicate::str::contains("is not one"));
    std::fs::write(
        &profile,
        std::fs::read(dir.path().join("profile.json")).unwrap(),
    )
    .unwrap();
}

#[test]
fn the_kernels_rules_are_the_users_to_pick_and_named() {
    let run = |args: &[&str]| {
        let out = oslab()
            .args(["sim", "run", "testbed-bulk", "--policy", "vanilla"])
            .args(args)
            .output()
            .unwrap();
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let (rc, out, _) = run(&[]);
    assert_eq!(rc, Some(0));
    assert!(out.contains("HZ 250, Linux 6.14+'s rules)"), "{out}");
    let (rc, out, _) = run(&["--set", "kernel=6.1"]);
    assert_eq!(rc, Some(0));
    assert!(out.contains("HZ 250, Linux 6.1-6.13's rules)"), "{out}");
    let (rc, _, err) = run(&["--set", "kernel=5.4"]);
    assert_eq!(rc, Some(2));
    assert_eq!(
        err.trim(),
        "oslab: --set kernel=5.4: '5.4' is not one of 6.14, 6.1"
    );
}

/// `--live DIR` reads the state of the disk holding DIR as root and says where
/// each estimate came from; for another user it says it could not (no root)
/// and starts from the steady state.
#[test]
fn a_live_start_says_what_it_read_and_without_root_that_it_could_not() {
    if !common::is_root() {
        eprintln!("skipped: the live state needs root, and the other user needs useradd");
        return;
    }
    let args = [
        "sim",
        "run",
        "testbed-fig2",
        "--policy",
        "vanilla",
        "--set",
        "duration=2s",
        "--json",
        "-",
        "--live",
    ];
    let result = |out: std::process::Output| {
        let r = json_of(out)["results"][0].clone();
        let start = r["findings"]
            .as_array()
            .unwrap()
            .iter()
            .find(|f| f["name"] == "start.vanilla")
            .map(|f| f["detail"].as_str().unwrap().to_string())
            .unwrap();
        (r["simulated"].as_str().unwrap().to_string(), start)
    };
    let (machine, start) = result(oslab().args(args).arg("/var/tmp").output().unwrap());
    assert!(machine.contains("the live state of"), "{machine}");
    assert!(
        machine.contains("avg_write_bandwidth") && machine.contains("traced around a probe write"),
        "{machine}"
    );
    assert!(start.contains("live state (--live)"), "{start}");

    let Some(user) = common::users::TestUser::new("simlive") else {
        eprintln!("skipped the other user's half: useradd failed");
        return;
    };
    let shared = common::users::shared_oslab();
    let bin = shared.path().join("oslab");
    let out = user
        .command(&bin, &["XDG_DATA_HOME=/nonexistent/oslab-sim-tests"])
        .args(args)
        .arg("/tmp")
        .output()
        .unwrap();
    let (machine, start) = result(out);
    assert!(
        machine.contains("the live state was not read") && machine.contains("needs root"),
        "{machine}"
    );
    assert!(start.contains("steady state of its writers"), "{start}");
}
