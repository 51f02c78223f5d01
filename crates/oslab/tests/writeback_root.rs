//! The write-back lab on the real kernel (root): experiments end to end on short
//! runs, and the system exactly as before afterwards, also after kill -9 at several
//! points and `oslab restore`. Skips itself without root.

mod common;
use common::{is_root, json_output};

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The tests here change global settings and compare snapshots of them: one at a time.
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn serial() -> std::sync::MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|p| p.into_inner())
}

/// Everything the lab may change: dirty sysctls, loop devices, throttles, mounts.
fn system_state() -> String {
    let mut s = String::new();
    for k in [
        "dirty_background_ratio",
        "dirty_background_bytes",
        "dirty_ratio",
        "dirty_bytes",
        "dirty_writeback_centisecs",
        "dirty_expire_centisecs",
    ] {
        s += &format!(
            "{k}={}\n",
            std::fs::read_to_string(format!("/proc/sys/vm/{k}"))
                .unwrap()
                .trim()
        );
    }
    let loops = Command::new("losetup")
        .arg("-a")
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
        .unwrap_or_default();
    s += &format!("loops:\n{loops}");
    s += &format!(
        "throttle:\n{}",
        std::fs::read_to_string("/sys/fs/cgroup/blkio/blkio.throttle.write_bps_device")
            .unwrap_or_default()
    );
    let mounts: String = std::fs::read_to_string("/proc/mounts")
        .unwrap()
        .lines()
        .filter(|l| l.contains("oslab"))
        .map(|l| format!("{l}\n"))
        .collect();
    s + "mounts:\n" + &mounts
}

fn oslab(journal: &std::path::Path) -> Command {
    let mut c = common::oslab();
    c.env("OSLAB_JOURNAL_DIR", journal);
    c
}

fn json_run(
    journal: &std::path::Path,
    scratch: &std::path::Path,
    args: &[&str],
) -> serde_json::Value {
    json_output(oslab(journal).args(args).arg("--scratch").arg(scratch))
}

/// `claim_verdict`, where a claim not judged for other programs' work reads
/// "disturbed" (`common::verdict_or_disturbed`).
fn verdict_unless_disturbed(r: &serde_json::Value, id: &str) -> String {
    let claim = r["claims"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["id"] == id)
        .unwrap();
    common::verdict_or_disturbed(claim).to_string()
}

fn claim_verdict(r: &serde_json::Value, id: &str) -> String {
    r["claims"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["id"] == id)
        .unwrap()["verdict"]
        .as_str()
        .unwrap()
        .to_string()
}

#[test]
fn experiments_run_and_leave_nothing_changed() {
    let _serial = serial();
    if !is_root() {
        eprintln!("skipped: the write-back lab needs root");
        return;
    }
    let journal = tempfile::tempdir().unwrap();
    let scratch = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let before = system_state();

    let v = json_run(
        journal.path(),
        scratch.path(),
        &[
            "run",
            "wb.periodic",
            "--quick",
            "--set",
            "expire=2s",
            "--set",
            "interval=1s",
            "--set",
            "duration=7s",
        ],
    );
    let r = &v["results"][0];
    assert_eq!(r["status"]["state"], "completed");
    assert!(
        ["holds", "differs", "not_testable", "disturbed"]
            .contains(&verdict_unless_disturbed(r, "periodic-expiry").as_str())
    );
    assert_eq!(system_state(), before);

    let v = json_run(
        journal.path(),
        scratch.path(),
        &[
            "run",
            "wb.background",
            "--quick",
            "--set",
            "duration=12s",
            "--set",
            "background=16MiB",
        ],
    );
    let r = &v["results"][0];
    assert_eq!(r["status"]["state"], "completed");
    assert!(
        r["plots"][0]["series"][0]["points"]
            .as_array()
            .unwrap()
            .len()
            > 50,
        "10 Hz trace"
    );
    // what the kernel reported while the writer ran is kept and shown
    assert_eq!(
        r["params"]["sysctls_in_force"]["vm.dirty_background_bytes"],
        (16 << 20).to_string()
    );
    assert_eq!(system_state(), before);

    let v = json_run(
        journal.path(),
        scratch.path(),
        &["run", "wb.throttle", "--quick", "--set", "duration=4s"],
    );
    let r = &v["results"][0];
    assert_eq!(r["status"]["state"], "completed");
    let lat = r["measurements"][0]["samples"].as_array().unwrap();
    assert!(!lat.is_empty() && lat.iter().all(|x| x.as_f64().unwrap() >= 0.0));
    assert_eq!(system_state(), before);
    assert_eq!(
        std::fs::read_dir(scratch.path()).unwrap().count(),
        0,
        "no files left"
    );
    assert_eq!(
        std::fs::read_dir(journal.path()).unwrap().count(),
        0,
        "no journal left"
    );
}

#[test]
fn kill_9_at_any_point_is_undone_by_restore() {
    let _serial = serial();
    if !is_root() {
        eprintln!("skipped: the write-back lab needs root");
        return;
    }
    let before = system_state();
    // While the testbed is built, while knobs are set and writers run, a bit later.
    for delay_ms in [300u64, 1500, 4000] {
        let journal = tempfile::tempdir().unwrap();
        let scratch = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
        let mut child = oslab(journal.path())
            .args([
                "run",
                "wb.throttle",
                "--quick",
                "--set",
                "duration=10s",
                "--scratch",
            ])
            .arg(scratch.path())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        std::thread::sleep(Duration::from_millis(delay_ms));
        child.kill().unwrap();
        child.wait().unwrap();
        let out = oslab(journal.path()).arg("restore").output().unwrap();
        assert!(
            out.status.success(),
            "restore after {delay_ms} ms: {}",
            String::from_utf8_lossy(&out.stdout)
        );
        // a lazily detached loop device can take a moment to go
        let t = Instant::now();
        while system_state() != before && t.elapsed() < Duration::from_secs(10) {
            std::thread::sleep(Duration::from_millis(100));
        }
        assert_eq!(
            system_state(),
            before,
            "after kill -9 at {delay_ms} ms and restore"
        );
        assert_eq!(
            std::fs::read_dir(scratch.path()).unwrap().count(),
            0,
            "scratch emptied"
        );
    }
}

#[test]
fn explain_matches_the_kernel() {
    let _serial = serial();
    let journal = tempfile::tempdir().unwrap();
    let out = common::oslab()
        .env("OSLAB_JOURNAL_DIR", journal.path())
        .args(["dirty", "explain", "--json", "-"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let ours = v["limits"]["normal"]["thresh"].as_f64().unwrap();
    let kernel = v["kernel_thresh"].as_f64().unwrap();
    assert!((ours - kernel).abs() / kernel < 0.01, "{ours} vs {kernel}");
    let rules = v["rules"].as_array().unwrap();
    assert_eq!(rules.len(), 5);
    if is_root() {
        // rule c is a fact of every kernel since 2.6.29
        let c = rules
            .iter()
            .find(|r| r["id"] == "rule-c-bytes-override")
            .unwrap();
        assert_eq!(c["verdict"], "holds");
    } else {
        assert!(
            rules
                .iter()
                .filter(|r| r["verdict"] == "not_testable")
                .count()
                >= 4
        );
    }
}

#[test]
fn advise_from_given_rates() {
    let out = common::oslab()
        .args([
            "dirty",
            "advise",
            "--device-bandwidth",
            "10MiB/s",
            "--rate",
            "2MiB/s",
            "--json",
            "-",
        ])
        .output()
        .unwrap();
    assert!(out.status.success());
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["dirty_background_bytes"], 10 << 20);
    assert_eq!(v["dirty_bytes"], 30 << 20);
    let bad = common::oslab()
        .args([
            "dirty",
            "advise",
            "--device-bandwidth",
            "fast",
            "--rate",
            "1MiB/s",
        ])
        .output()
        .unwrap();
    assert_eq!(bad.status.code(), Some(2));
}

#[test]
fn wcall_evaluation_runs_every_cell_and_leaves_nothing_changed() {
    let _serial = serial();
    if !is_root() {
        eprintln!("skipped: the WCALL evaluation needs root (testbed, SCHED_FIFO writers)");
        return;
    }
    // a quick run leaves out what no claim needs; asked for, every cell runs
    let r = wcall_evaluation(&["writes=30", "starts=late,together", "alone_governed=yes"]);
    for p in ["vanilla", "wcall", "wcall-fair"] {
        // contested scenarios run twice: competitors started late and together
        for (s, n) in [
            ("alone", 30),
            ("rt45x2", 60),
            ("bulkx2", 60),
            ("fig7-nice4", 42),
        ] {
            let m = common::named(&r["measurements"], &format!("latency.{p}.{s}"));
            assert_eq!(
                m["samples"].as_array().unwrap().len(),
                n,
                "{p} {s}: every write timed"
            );
        }
    }
    for id in [
        "vanilla-stalls-the-high-writer",
        "wcall-keeps-latency",
        "wcall-fair-keeps-latency",
        "fig7-no-overhead",
    ] {
        assert!(
            ["holds", "differs", "disturbed"].contains(&verdict_unless_disturbed(&r, id).as_str()),
            "{id}"
        );
    }
    assert_eq!(claim_verdict(&r, "no-byte-lost"), "holds");
    let plots = common::strings(&r["plots"], "id");
    for id in [
        "fig4-vanilla",
        "fig5-wcall",
        "fig5-wcall-fair",
        "fig6-mean",
        "fig7-nice4",
        "dirty-wcall-fair",
    ] {
        assert!(plots.contains(&id), "plot {id}");
    }
}

/// One quick wb.wcall run with these `--set` values; it must complete and leave
/// the system and its scratch folder as they were.
fn wcall_evaluation(sets: &[&str]) -> serde_json::Value {
    let journal = tempfile::tempdir().unwrap();
    let scratch = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let before = system_state();
    let mut cmd = oslab(journal.path());
    cmd.env("OSLAB_WCALL_LIB", common::preload_lib())
        .args(["run", "wb.wcall", "--quick", "--scratch"])
        .arg(scratch.path());
    for s in sets {
        cmd.args(["--set", s]);
    }
    let r = json_output(&mut cmd)["results"][0].clone();
    assert_eq!(r["status"]["state"], "completed", "{}", r["status"]);
    assert_eq!(system_state(), before);
    assert_eq!(
        std::fs::read_dir(scratch.path()).unwrap().count(),
        0,
        "no files left"
    );
    r
}

/// Part of the matrix: only the cells asked for run, the claims that need a
/// missing cell are not judged (with the cells they need as the reason) rather
/// than judged on nothing, and the notes count what ran.
#[test]
fn wcall_evaluation_runs_only_the_cells_asked_for() {
    let _serial = serial();
    if !is_root() {
        eprintln!("skipped: the WCALL evaluation needs root (testbed, SCHED_FIFO writers)");
        return;
    }
    let r = wcall_evaluation(&["writes=20", "scenarios=rt45x2", "policies=wcall-fair"]);
    let names = common::strings(&r["measurements"], "name");
    assert_eq!(names, ["latency.wcall-fair.rt45x2"]);
    let claims = common::strings(&r["claims"], "id");
    assert_eq!(
        claims,
        [
            "vanilla-stalls-the-high-writer",
            "wcall-keeps-latency",
            "wcall-fair-keeps-latency",
            "competitors-not-starved",
            "fig7-no-overhead",
            "no-byte-lost"
        ]
    );
    for id in [
        "vanilla-stalls-the-high-writer",
        "wcall-keeps-latency",
        "wcall-fair-keeps-latency",
        "fig7-no-overhead",
    ] {
        assert_eq!(claim_verdict(&r, id), "not_judged", "{id}");
    }
    assert!(
        ["holds", "differs", "disturbed"]
            .contains(&verdict_unless_disturbed(&r, "competitors-not-starved").as_str())
    );
    // the governed writers' files are read back: every byte must be there
    assert_eq!(claim_verdict(&r, "no-byte-lost"), "holds");
    let why = |id: &str| {
        r["claims"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["id"] == id)
            .unwrap()["why"]
            .as_str()
            .unwrap()
            .to_string()
    };
    let w = why("wcall-fair-keeps-latency");
    assert!(
        w.contains("the reference cell (vanilla, alone) was not run")
            && w.contains("scenarios=rt45x2 and policies=wcall-fair"),
        "{w}"
    );
    let notes = r["notes"].to_string();
    assert!(
        notes.contains("1 run(s) x 1 scenario of 4 (rt45x2) x 1 policy of 3 (wcall-fair)"),
        "{notes}"
    );
    assert_eq!(r["params"]["scenarios"], serde_json::json!(["rt45x2"]));
}

/// The governor's daemon killed with SIGKILL halfway through a governed cell:
/// the writers carry on ungoverned, every byte reaches its file, and what the
/// daemon changed (its cgroups) is undone as `oslab restore` would.
#[test]
fn wcall_evaluation_loses_no_byte_when_the_daemon_is_killed() {
    let _serial = serial();
    if !is_root() {
        eprintln!("skipped: the WCALL evaluation needs root (testbed, SCHED_FIFO writers)");
        return;
    }
    let r = wcall_evaluation(&[
        "writes=60",
        "scenarios=rt45x2",
        "policies=wcall-fair",
        "starts=together",
        "kill_coordinator=true",
    ]);
    let c = r["claims"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["id"] == "no-byte-lost")
        .unwrap()
        .clone();
    assert_eq!(c["verdict"], "holds", "{c}");
    let observed = c["observed"].as_str().unwrap();
    assert!(
        observed.contains("3 files read back after 1 governed cell; the daemon was killed (SIGKILL) mid-cell in 1 of them"),
        "{observed}"
    );
}
