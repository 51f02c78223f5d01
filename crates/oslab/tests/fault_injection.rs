//! Kill oslab with SIGKILL at several moments of everything that forks or changes
//! the machine, then check that no process it started survives and that
//! `oslab restore` puts the machine back exactly: sysctls, loop devices, mounts,
//! blkio throttles, cgroups (at any depth), the governor's sockets, scratch files
//! and journals. Needs root
//! (the write-back experiments build a throttled loop device); skipped with the
//! reason otherwise.
//!
//! Each experiment is killed early, in the middle and late in its quick run (the
//! moments are seconds measured on the 2-CPU development guest; write-back ones
//! twice or three times, they last 20-55 s). A kill counts only if oslab was still
//! running just before it: a run that ended first is retried with half the delay,
//! and fails the test when even that is too late. For an experiment that forks, one
//! of its kills must find a child of oslab running; if none did, one more run is
//! killed the moment a child appears.
//!
//! The test process makes itself a child subreaper (PR_SET_CHILD_SUBREAPER), so
//! whatever a killed oslab leaves running becomes its child and is seen here. One
//! test in this file starts processes: the tests of one file run as threads of one
//! process, and a second test's children would look like leftovers.

// A test here tells one scenario from start to end: longer than 80 lines.
#![allow(clippy::too_many_lines)]

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use oslab_sys::fsread::Root;
use oslab_sys::parse::pidstat::read_all;
use oslab_sys::process::{become_subreaper, reap_exited_children, signal_process};

/// What oslab may change, as it is now.
#[derive(Debug, PartialEq, Eq)]
struct MachineState {
    sysctls: BTreeMap<String, String>,
    loop_devices: BTreeSet<String>,
    mounts: BTreeSet<String>,
    throttles: BTreeMap<String, String>,
    oslab_cgroups: BTreeSet<String>,
    governor_sockets: BTreeSet<String>,
}

fn read(path: &Path) -> Option<String> {
    std::fs::read_to_string(path)
        .ok()
        .map(|s| s.trim().to_string())
}

fn files_in(dir: &str) -> Vec<PathBuf> {
    std::fs::read_dir(dir)
        .map(|rd| rd.filter_map(|e| e.ok().map(|e| e.path())).collect())
        .unwrap_or_default()
}

/// Every directory under `dir` (a cgroup hierarchy, at any depth) whose name holds
/// "oslab".
fn cgroups_named_oslab(dir: &Path, depth: u32, out: &mut BTreeSet<String>) {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return;
    };
    for e in rd.flatten() {
        if !e.file_type().is_ok_and(|t| t.is_dir()) {
            continue;
        }
        let p = e.path();
        if e.file_name().to_string_lossy().contains("oslab") {
            out.insert(p.display().to_string());
        }
        // cgroup trees are shallow; the bound only guards against a loop
        if depth < 64 {
            cgroups_named_oslab(&p, depth + 1, out);
        }
    }
}

fn machine_state() -> MachineState {
    let sysctls = files_in("/proc/sys/vm")
        .into_iter()
        .filter_map(|p| Some((p.display().to_string(), read(&p)?)))
        .collect();
    let loop_devices = files_in("/sys/block")
        .into_iter()
        .filter_map(|p| read(&p.join("loop/backing_file")).map(|f| format!("{} {f}", p.display())))
        .collect();
    let mounts = read(Path::new("/proc/self/mountinfo"))
        .unwrap_or_default()
        .lines()
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            Some(format!("{} {}", f.get(4)?, f.get(f.len().checked_sub(2)?)?))
        })
        .collect();
    let throttles = files_in("/sys/fs/cgroup/blkio")
        .into_iter()
        .filter(|p| {
            p.to_string_lossy().contains("throttle") && p.to_string_lossy().ends_with("_device")
        })
        .filter_map(|p| Some((p.display().to_string(), read(&p)?)))
        .collect();
    let mut oslab_cgroups = BTreeSet::new();
    cgroups_named_oslab(Path::new("/sys/fs/cgroup"), 0, &mut oslab_cgroups);
    let governor_sockets = files_in(oslab_wcall::rendezvous::ROOT_DIR)
        .into_iter()
        .map(|p| p.display().to_string())
        .collect();
    MachineState {
        sysctls,
        loop_devices,
        mounts,
        throttles,
        oslab_cgroups,
        governor_sockets,
    }
}

/// This process's children that are still running: whatever a killed oslab left.
fn survivors() -> Vec<(u32, String)> {
    reap_exited_children();
    let me = std::process::id();
    read_all(&Root::live())
        .into_iter()
        .filter(|(_, s)| s.ppid == me && s.state != 'Z')
        .map(|(pid, _)| {
            let cmd = read(Path::new(&format!("/proc/{pid}/cmdline")))
                .unwrap_or_default()
                .replace('\0', " ");
            (pid, cmd)
        })
        .collect()
}

struct Case {
    args: Vec<String>,
    /// Seconds after the start at which to kill oslab, one run each.
    kill_at: &'static [f64],
    /// It starts processes: one of its kills must find one running.
    forks: bool,
}

fn case(args: &str, kill_at: &'static [f64], forks: bool) -> Case {
    Case {
        args: args.split_whitespace().map(String::from).collect(),
        kill_at,
        forks,
    }
}

fn spawn(args: &[String], journal: &Path, scratch: &Path) -> Child {
    let mut c = common::oslab();
    c.env("OSLAB_JOURNAL_DIR", journal)
        .env("OSLAB_WCALL_LIB", common::preload_lib())
        .env("TMPDIR", scratch)
        .args(args)
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    if args[0] == "run" {
        c.arg("--scratch").arg(scratch).arg("--no-db");
    }
    c.spawn().unwrap()
}

#[derive(Clone, Copy)]
enum When {
    /// This many seconds after the start.
    After(f64),
    /// As soon as oslab has a child process (at most this long).
    FirstChild(Duration),
}

enum Outcome {
    /// oslab ended before the moment came: nothing was tested.
    Ended,
    /// Killed while it ran, with this many descendants running.
    Killed { descendants: usize },
}

fn descendants_of(pid: u32) -> usize {
    oslab_sys::parse::pidstat::descendants(&read_all(&Root::live()), pid)
        .iter()
        .filter(|(_, s)| s.state != 'Z')
        .count()
}

/// Starts oslab and kills it with SIGKILL when `when` comes, if it still runs then.
fn run_and_kill(args: &[String], when: When, journal: &Path, scratch: &Path) -> Outcome {
    let mut oslab = spawn(args, journal, scratch);
    let started = Instant::now();
    loop {
        if oslab.try_wait().unwrap().is_some() {
            return Outcome::Ended;
        }
        // it was running a moment ago: the kill falls inside the run
        let due = match when {
            When::After(s) => started.elapsed().as_secs_f64() >= s,
            When::FirstChild(limit) => descendants_of(oslab.id()) > 0 || started.elapsed() >= limit,
        };
        if due {
            break;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    let descendants = descendants_of(oslab.id());
    let _ = signal_process(oslab.id(), 9);
    let _ = oslab.wait();
    Outcome::Killed { descendants }
}

/// What a killed (or ended) run left: processes 2 s later, the machine after
/// `oslab restore`, scratch files and journals.
fn leftovers(what: &str, journal: &Path, scratch: &Path, before: &MachineState) -> Vec<String> {
    let mut failures = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(2);
    let mut left = survivors();
    while !left.is_empty() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
        left = survivors();
    }
    if !left.is_empty() {
        failures.push(format!("{what}: still running 2 s later: {left:?}"));
        for (pid, _) in &left {
            let _ = signal_process(*pid, 9);
        }
    }
    let restore = common::oslab()
        .env("OSLAB_JOURNAL_DIR", journal)
        .arg("restore")
        .output()
        .unwrap();
    if !restore.status.success() {
        failures.push(format!(
            "{what}: restore failed: {}",
            String::from_utf8_lossy(&restore.stderr)
        ));
    }
    let after = machine_state();
    if &after != before {
        failures.push(format!(
            "{what}: the machine differs after restore:\n  before {before:?}\n  after  {after:?}"
        ));
    }
    let scratch_left = files_in(&scratch.display().to_string());
    if !scratch_left.is_empty() {
        failures.push(format!("{what}: scratch files left: {scratch_left:?}"));
    }
    let journals: Vec<PathBuf> = files_in(&journal.display().to_string())
        .into_iter()
        .filter(|p| p.to_string_lossy().ends_with(".jsonl"))
        .collect();
    if !journals.is_empty() {
        failures.push(format!("{what}: journals left after restore: {journals:?}"));
    }
    failures
}

/// One run killed at `when`, checked: the outcome and what went wrong.
fn killed_and_checked(c: &Case, when: When, before: &MachineState) -> (Outcome, Vec<String>) {
    let journal = tempfile::tempdir().unwrap();
    let scratch = tempfile::tempdir().unwrap();
    let what = match when {
        When::After(s) => format!("{} (killed at {s:.2} s)", c.args.join(" ")),
        When::FirstChild(_) => format!("{} (killed at its first child)", c.args.join(" ")),
    };
    let outcome = run_and_kill(&c.args, when, journal.path(), scratch.path());
    let failures = leftovers(&what, journal.path(), scratch.path(), before);
    match &outcome {
        Outcome::Killed { descendants } => {
            eprintln!("checked: {what}, {descendants} processes of it running")
        }
        Outcome::Ended => eprintln!("note: {what} ended before the kill"),
    }
    (outcome, failures)
}

/// Regression: only three levels of cgroups were searched, and the governor's
/// groups sit deeper where oslab runs in a nested cgroup.
#[test]
fn cgroups_named_oslab_are_found_at_any_depth() {
    let dir = tempfile::tempdir().unwrap();
    let deep = dir.path().join("memory/a/b/c/oslab-wcall-42/rt-high");
    std::fs::create_dir_all(&deep).unwrap();
    std::fs::write(dir.path().join("memory/a/oslab-file"), "").unwrap();
    let mut found = BTreeSet::new();
    cgroups_named_oslab(dir.path(), 0, &mut found);
    let c = dir.path().join("memory/a/b/c");
    assert_eq!(
        found,
        BTreeSet::from([c.join("oslab-wcall-42").display().to_string()])
    );
}

fn has_smt() -> bool {
    read(Path::new("/sys/devices/system/cpu/smt/active")).as_deref() == Some("1")
}

#[test]
fn a_killed_oslab_leaves_nothing_running_and_restore_leaves_nothing_changed() {
    if !common::is_root() {
        eprintln!("skipped: needs root (the write-back experiments build a throttled loop device)");
        return;
    }
    become_subreaper().unwrap();
    assert!(
        survivors().is_empty(),
        "children before the test: {:?}",
        survivors()
    );
    // quick runs took here: ctxsw 6.6 s, ctxsw-ws 3.3, mem.latency 14.5,
    // mem.bandwidth 1.1, mem.tlb 0.4, mem.locality 2.3, multiload 2.5, slices 3.4,
    // nice 2.2, scaling 4.0, io.read 0.85, io.write 3.3, wcall-overhead 0.43
    let mut cases = vec![
        case("run cpu.ctxsw --quick", &[0.3, 2.5, 5.0], true),
        case("run cpu.ctxsw-ws --quick", &[0.3, 1.5, 2.4], true),
        case("run mem.latency --quick", &[0.5, 6.0, 12.0], false),
        case("run mem.bandwidth --quick", &[0.15, 0.5, 0.9], false),
        case("run mem.tlb --quick", &[0.05, 0.15, 0.3], false),
        case("run mem.locality --quick", &[0.2, 1.0, 1.9], false),
        case("run sched.multiload --quick", &[0.3, 1.2, 2.0], true),
        case("run sched.slices --quick", &[0.3, 1.5, 2.8], true),
        case("run sched.nice --quick", &[0.3, 1.0, 1.8], true),
        case("run sched.scaling --quick", &[0.3, 1.8, 3.3], true),
        case("run io.read --quick", &[0.1, 0.4, 0.7], false),
        case("run io.write --quick", &[0.3, 1.5, 2.8], false),
        case("run wb.background --quick", &[0.5, 4.0, 15.0], false),
        case("run wb.periodic --quick", &[1.0, 8.0, 18.0], false),
        case("run wb.cases --quick", &[1.0, 10.0, 30.0], false),
        case("run wb.throttle --quick", &[1.5, 5.0, 14.0], false),
        case(
            "run wb.wcall --quick --set scenarios=rt45x2",
            &[2.0, 6.0, 15.0],
            true,
        ),
        case("run wb.wcall-overhead --quick", &[0.05, 0.15, 0.3], true),
        case("dirty explain", &[1.0], false),
        case(
            "tweak vm.dirty_expire_centisecs=2999 --for 60s",
            &[0.5],
            false,
        ),
        case("testbed up --bandwidth 20MiB/s", &[0.2, 1.0], false),
        case(
            "wcall run --private --no-cgroups -- dd if=/dev/zero of=/dev/null bs=1M count=100000000",
            &[0.3, 1.0, 3.0],
            true,
        ),
    ];
    if has_smt() {
        cases.push(case("run sched.smt --quick", &[0.2, 1.0, 2.0], true));
    } else {
        eprintln!("note: sched.smt not killed: without SMT it runs nothing here");
    }
    let before = machine_state();
    let mut failures = Vec::new();
    for c in &cases {
        let mut saw_a_child = false;
        for &at in c.kill_at {
            let mut delay = at;
            for tries_left in (0..3).rev() {
                let (outcome, f) = killed_and_checked(c, When::After(delay), &before);
                failures.extend(f);
                match outcome {
                    Outcome::Killed { descendants } => {
                        saw_a_child |= descendants > 0;
                        break;
                    }
                    Outcome::Ended if tries_left > 0 => delay /= 2.0,
                    Outcome::Ended => failures.push(format!(
                        "{}: ended before every kill down to {delay:.2} s: nothing tested",
                        c.args.join(" ")
                    )),
                }
            }
        }
        if c.forks && !saw_a_child {
            let (outcome, f) =
                killed_and_checked(c, When::FirstChild(Duration::from_secs(60)), &before);
            failures.extend(f);
            if !matches!(outcome, Outcome::Killed { descendants } if descendants > 0) {
                failures.push(format!(
                    "{}: never seen with a process of its own running",
                    c.args.join(" ")
                ));
            }
        }
    }
    let deadline = Instant::now() + Duration::from_secs(5);
    while !survivors().is_empty() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(100));
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
