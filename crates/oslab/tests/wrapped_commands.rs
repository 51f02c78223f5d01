//! A user's command run by oslab (`oslab wcall run -- CMD`, `oslab tweak -- CMD`)
//! behaves as under `timeout`: SIGINT, SIGTERM and SIGHUP to oslab reach the command,
//! oslab waits for it and leaves with its status; if oslab is killed outright, the
//! command gets SIGTERM and is never left held by a dead governor.

mod common;

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A shell command that writes "started" to `ready`, then loops until SIGTERM or
/// SIGINT, which it answers by writing the signal's name to `got` and exiting 7.
fn trapping_script(ready: &Path, got: &Path) -> String {
    format!(
        "trap 'echo TERM > {got}; exit 7' TERM; trap 'echo INT > {got}; exit 7' INT; \
         echo started > {ready}; while :; do sleep 0.05; done",
        got = got.display(),
        ready = ready.display()
    )
}

fn wait_for(path: &Path, what: &str) {
    let t = Instant::now();
    while !path.exists() {
        assert!(
            t.elapsed() < Duration::from_secs(30),
            "{what} never happened"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn wait_exit(child: &mut Child) -> std::process::ExitStatus {
    let t = Instant::now();
    loop {
        if let Some(s) = child.try_wait().unwrap() {
            return s;
        }
        if t.elapsed() > Duration::from_secs(30) {
            // what it was doing, then what it said
            let state =
                std::fs::read_to_string(format!("/proc/{}/status", child.id())).unwrap_or_default();
            let _ = child.kill();
            let _ = child.wait();
            // on a thread: the command, still running, may hold the pipe open
            let (tx, rx) = std::sync::mpsc::channel();
            if let Some(mut e) = child.stderr.take() {
                std::thread::spawn(move || {
                    let mut err = String::new();
                    let _ = std::io::Read::read_to_string(&mut e, &mut err);
                    let _ = tx.send(err);
                });
            }
            let err = rx.recv_timeout(Duration::from_secs(5)).unwrap_or_default();
            panic!("oslab did not end; its state:\n{state}\nits stderr:\n{err}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn kill(pid: u32, sig: &str) {
    let ok = Command::new("kill")
        .args([&format!("-{sig}"), &pid.to_string()])
        .status()
        .unwrap()
        .success();
    assert!(ok, "kill -{sig} {pid}");
}

fn wcall_run(script: &str, journal: &Path) -> Child {
    common::oslab()
        .env("OSLAB_WCALL_LIB", common::preload_lib())
        .env("OSLAB_JOURNAL_DIR", journal)
        .args([
            "wcall",
            "run",
            "--private",
            "--no-cgroups",
            "--",
            "sh",
            "-c",
            script,
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

#[test]
fn signals_to_oslab_reach_the_command_and_its_status_comes_back() {
    for sig in ["TERM", "INT", "HUP"] {
        let dir = tempfile::tempdir().unwrap();
        let (ready, got) = (dir.path().join("ready"), dir.path().join("got"));
        let mut oslab = wcall_run(&trapping_script(&ready, &got), dir.path());
        wait_for(&ready, "the command's start");
        kill(oslab.id(), sig);
        let status = wait_exit(&mut oslab);
        match sig {
            // the script traps TERM and INT and exits 7; HUP ends sh: 128 + 1
            "HUP" => assert_eq!(status.code(), Some(129), "{sig}"),
            _ => {
                assert_eq!(
                    status.code(),
                    Some(7),
                    "oslab leaves with the command's status"
                );
                assert_eq!(std::fs::read_to_string(&got).unwrap().trim(), sig);
            }
        }
        let mut err = String::new();
        std::io::Read::read_to_string(oslab.stderr.as_mut().unwrap(), &mut err).unwrap();
        assert!(err.contains("passed signal"), "{err}");
    }
}

#[test]
fn a_killed_oslab_takes_its_command_down_politely() {
    let dir = tempfile::tempdir().unwrap();
    let (ready, got) = (dir.path().join("ready"), dir.path().join("got"));
    let mut oslab = wcall_run(&trapping_script(&ready, &got), dir.path());
    wait_for(&ready, "the command's start");
    kill(oslab.id(), "KILL");
    let _ = oslab.wait();
    wait_for(&got, "the command's SIGTERM");
    assert_eq!(std::fs::read_to_string(&got).unwrap().trim(), "TERM");
}

#[test]
fn a_writer_outlives_its_killed_governor_and_loses_nothing() {
    // dd keeps writing under a governor that is killed: it must finish, every byte
    // there, rather than wait for a coordinator that will never answer
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let script = format!(
        "trap '' TERM; dd if=/dev/zero of={} bs=64K count=256 2>/dev/null; sleep 1; dd if=/dev/zero of={} bs=64K count=256 oflag=append conv=notrunc 2>/dev/null; echo done > {}",
        out.display(),
        out.display(),
        dir.path().join("done").display()
    );
    let mut oslab = wcall_run(&script, dir.path());
    std::thread::sleep(Duration::from_millis(500));
    kill(oslab.id(), "KILL");
    let _ = oslab.wait();
    wait_for(&dir.path().join("done"), "the writer's end");
    assert_eq!(std::fs::metadata(&out).unwrap().len(), 2 * 256 * 64 * 1024);
}

#[test]
fn tweak_passes_signals_on_too() {
    if !common::is_root() {
        eprintln!("skipped: oslab tweak needs root");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let (ready, got) = (dir.path().join("ready"), dir.path().join("got"));
    let knob = "/proc/sys/vm/dirty_expire_centisecs";
    let before = std::fs::read_to_string(knob).unwrap();
    let mut oslab = common::oslab()
        .env("OSLAB_JOURNAL_DIR", dir.path())
        .args(["tweak", "vm.dirty_expire_centisecs=2999", "--", "sh", "-c"])
        .arg(trapping_script(&ready, &got))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    wait_for(&ready, "the command's start");
    kill(oslab.id(), "INT");
    assert_eq!(wait_exit(&mut oslab).code(), Some(7));
    assert_eq!(std::fs::read_to_string(knob).unwrap(), before, "put back");
}
