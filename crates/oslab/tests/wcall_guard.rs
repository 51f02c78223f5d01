//! The sync guard as a user gets it (issue 52): a daemon started with no option
//! turns it on when a program root put in rt-high makes durable writes
//! (fdatasync), says so in `status` and its log, and turns it off once they
//! stopped for the quiet interval; a program of another user that is in rt-high
//! by its own scheduling (as RLIMIT_RTPRIO would allow) cannot turn it on for
//! everyone's copies.

mod common;

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::governor::{Reaped, start_daemon, status_of, stop};
use common::users::{TestUser, shared_copies};

fn oslab() -> Command {
    let mut c = common::oslab();
    c.env("OSLAB_WCALL_LIB", common::preload_lib());
    c.env(
        "OSLAB_JOURNAL_DIR",
        common::journal_dir("oslab-wcall-guard"),
    );
    c
}

/// The commit loop (tests/fixtures/wcall/durable_loop.c), built into `dir`.
fn durable_loop(dir: &Path) -> PathBuf {
    fixture(dir, "durable_loop")
}

/// The fixture `wcall/NAME.c`, built into `dir`.
fn fixture(dir: &Path, name: &str) -> PathBuf {
    let exe = dir.join(name);
    assert!(
        common::compile_c(&format!("wcall/{name}.c"), &exe, &[]),
        "cc builds {name}.c (install gcc and libc6-dev)"
    );
    std::fs::set_permissions(&exe, std::fs::Permissions::from_mode(0o755)).unwrap();
    exe
}

/// Polls the guard of governor `name` until `until` holds of it, for at most 20 s.
fn guard_until(name: &str, until: impl Fn(&serde_json::Value) -> bool) -> serde_json::Value {
    let start = Instant::now();
    loop {
        let g = status_of(oslab(), name)["guard"].clone();
        if until(&g) || start.elapsed() > Duration::from_secs(20) {
            return g;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn rt_high_commits_turn_the_default_guard_on_and_quiet_turns_it_off() {
    if !common::is_root() {
        eprintln!("skipped: root's daemon and rt-high need root");
        return;
    }
    let work = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let prog = durable_loop(work.path());
    let name = format!("guard-{}", std::process::id());
    let daemon = start_daemon(
        oslab(),
        &name,
        &["--no-cgroups", "--sync-guard-quiet", "1s"],
    );
    let idle = status_of(oslab(), &name)["guard"].clone();
    assert_eq!(idle["setting"], "auto", "{idle}");
    assert!(
        idle["acting_bytes"].is_null(),
        "no durable write yet: {idle}"
    );

    let mut db = Reaped(
        oslab()
            .args(["wcall", "run", "--name", &name, "--group", "rt-high", "--"])
            .arg(&prog)
            .arg(work.path().join("wal"))
            .arg("4")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    let on = guard_until(&name, |g| !g["acting_bytes"].is_null());
    let bytes = on["acting_bytes"]
        .as_u64()
        .expect("the guard acts while rt-high commits");
    assert!((1 << 20..=256 << 20).contains(&bytes), "{on}");
    assert!(on["durable_pid"].as_u64().is_some(), "{on}");
    assert!(db.0.wait().unwrap().success());
    let off = guard_until(&name, |g| g["acting_bytes"].is_null());
    assert!(off["acting_bytes"].is_null(), "quiet for 1 s: {off}");
    assert!(
        off["last_durable_s"].as_f64().is_some_and(|s| s >= 1.0),
        "{off}"
    );
    stop(daemon);
}

/// The pid of the first process of `uid` governor `name` shows, within 20 s.
fn wait_for_process_of(name: &str, uid: u32) -> u32 {
    let start = Instant::now();
    loop {
        let s = status_of(oslab(), name);
        if let Some(pid) = s["processes"]
            .as_array()
            .unwrap()
            .iter()
            .find(|p| p["uid"] == uid)
            .and_then(|p| p["pid"].as_u64())
        {
            return pid as u32;
        }
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "no process of uid {uid}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn another_users_rt_high_by_its_own_scheduling_does_not_turn_the_guard_on() {
    if !common::is_root() {
        eprintln!("skipped: a second user and root's daemon need root");
        return;
    }
    let Some(user) = TestUser::new("guard") else {
        eprintln!("skipped: useradd is not available");
        return;
    };
    let shared = shared_copies();
    let prog = durable_loop(shared.path());
    let work = tempfile::tempdir().unwrap();
    std::fs::set_permissions(work.path(), std::fs::Permissions::from_mode(0o1777)).unwrap();
    let name = format!("guard-u-{}", std::process::id());
    let daemon = start_daemon(
        oslab(),
        &name,
        &["--no-cgroups", "--sync-guard-quiet", "1s"],
    );
    let lib = format!(
        "OSLAB_WCALL_LIB={}",
        shared.path().join("liboslab_wcall.so").display()
    );
    let mut run = Reaped(
        user.command(&shared.path().join("oslab"), &[&lib])
            .args(["wcall", "run", "--name", &name, "--group", "rt-high", "--"])
            .arg(&prog)
            .arg(work.path().join("wal"))
            .arg("6")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    // the program runs SCHED_FIFO 60, as one whose RLIMIT_RTPRIO allows it
    // would make itself (here root sets it: this machine's root may not raise
    // the limit), so its group follows its scheduling into rt-high
    let pid = wait_for_process_of(&name, user.uid);
    assert!(
        Command::new("chrt")
            .args(["-f", "-p", "60", &pid.to_string()])
            .status()
            .unwrap()
            .success()
    );
    let start = Instant::now();
    let mut seen_rt_high = false;
    while start.elapsed() < Duration::from_secs(3) {
        let s = status_of(oslab(), &name);
        seen_rt_high |= s["processes"]
            .as_array()
            .unwrap()
            .iter()
            .any(|p| p["uid"] == user.uid && p["group"] == "rt-high");
        assert!(
            s["guard"]["acting_bytes"].is_null(),
            "another user's commits turned the guard on: {}",
            s["guard"]
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    assert!(
        seen_rt_high,
        "the user's program ran in rt-high by its scheduling"
    );
    let _ = run.0.wait();
    stop(daemon);
}

/// Commits the interposer never sees (raw system calls) still turn the guard on:
/// the kernel's monitor counts the bios with a cache flush each process submits.
#[test]
fn commits_made_without_libc_are_seen_from_the_kernels_side() {
    if !common::is_root() {
        eprintln!("skipped: root's daemon and its kernel monitor need root");
        return;
    }
    if let Err(why) = oslab_trace::available() {
        eprintln!("skipped: no kernel tracing here ({why})");
        return;
    }
    let work = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let prog = fixture(work.path(), "raw_commits");
    let name = format!("guard-k-{}", std::process::id());
    let daemon = start_daemon(
        oslab(),
        &name,
        &["--no-cgroups", "--sync-guard-quiet", "2s"],
    );
    let mut db = Reaped(
        oslab()
            .args(["wcall", "run", "--name", &name, "--group", "rt-high", "--"])
            .arg(&prog)
            .arg(work.path().join("wal"))
            .arg("8")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    let on = guard_until(&name, |g| !g["acting_bytes"].is_null());
    assert!(
        on["acting_bytes"].as_u64().is_some(),
        "raw fdatasyncs of an rt-high program turn the guard on: {on}"
    );
    assert!(db.0.wait().unwrap().success());
    stop(daemon);
}
