//! Kill oslab with SIGKILL at several moments of everything that forks or changes
//! the machine, then check that no process it started survives and that
//! `oslab restore` puts the machine back exactly: sysctls, loop devices, mounts,
//! blkio throttles, cgroups, scratch files and journals. Needs root (the write-back
//! experiments build a throttled loop device); skipped with the reason otherwise.
//!
//! The test process makes itself a child subreaper (PR_SET_CHILD_SUBREAPER), so
//! whatever a killed oslab leaves running becomes its child and is seen here. One
//! test in this file: the tests of one file run as threads of one process, and a
//! second test's children would look like leftovers.

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
    for controller in files_in("/sys/fs/cgroup") {
        for level1 in files_in(&controller.display().to_string()) {
            let name = level1.display().to_string();
            if name.contains("oslab") {
                oslab_cgroups.insert(name.clone());
            }
            if level1.is_dir() {
                for level2 in files_in(&name) {
                    if level2.to_string_lossy().contains("oslab") {
                        oslab_cgroups.insert(level2.display().to_string());
                    }
                }
            }
        }
    }
    MachineState {
        sysctls,
        loop_devices,
        mounts,
        throttles,
        oslab_cgroups,
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
}

fn case(args: &str, kill_at: &'static [f64]) -> Case {
    Case {
        args: args.split_whitespace().map(String::from).collect(),
        kill_at,
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
    let cases = [
        case("run cpu.ctxsw --quick", &[0.3, 2.0]),
        case("run cpu.ctxsw-ws --quick", &[0.5, 2.0]),
        case("run mem.latency --quick", &[0.5]),
        case("run mem.bandwidth mem.tlb mem.locality --quick", &[1.0]),
        case("run sched.multiload --quick", &[0.5, 1.5]),
        case("run sched.slices --quick", &[0.5, 1.5]),
        case("run sched.nice --quick", &[0.7]),
        case("run sched.scaling --quick", &[0.7]),
        case("run sched.smt --quick", &[0.2]),
        case("run io.read --quick", &[0.5, 1.2]),
        case("run io.write --quick", &[0.5, 3.0]),
        case("run wb.background --quick", &[0.5, 4.0]),
        case("run wb.periodic --quick", &[4.0]),
        case("run wb.cases --quick", &[4.0]),
        case("run wb.throttle --quick", &[1.5, 5.0]),
        case("run wb.wcall --quick --set scenarios=rt45x2", &[2.0, 6.0]),
        case("run wb.wcall-overhead --quick", &[0.5]),
        case("dirty explain", &[1.0]),
        case("tweak vm.dirty_expire_centisecs=2999 --for 60", &[0.5]),
        case("testbed up --bandwidth 20MiB/s", &[0.2, 1.0]),
        case(
            "wcall run --no-cgroups -- dd if=/dev/zero of=/dev/null bs=1M count=100000000",
            &[0.5],
        ),
    ];
    let before = machine_state();
    let mut failures = Vec::new();
    for c in &cases {
        for &at in c.kill_at {
            let journal = tempfile::tempdir().unwrap();
            let scratch = tempfile::tempdir().unwrap();
            let what = format!("{} (killed at {at} s)", c.args.join(" "));
            let mut oslab = spawn(&c.args, journal.path(), scratch.path());
            std::thread::sleep(Duration::from_secs_f64(at));
            if oslab.try_wait().unwrap().is_some() {
                // it skipped or finished (a faster machine): still nothing may be left
                eprintln!("note: {what} ended before the kill");
            }
            let _ = signal_process(oslab.id(), 9);
            let _ = oslab.wait();
            std::thread::sleep(Duration::from_secs(2));
            let left = survivors();
            if !left.is_empty() {
                failures.push(format!("{what}: still running 2 s later: {left:?}"));
                for (pid, _) in &left {
                    let _ = signal_process(*pid, 9);
                }
            }
            let restore = common::oslab()
                .env("OSLAB_JOURNAL_DIR", journal.path())
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
            if after != before {
                failures.push(format!("{what}: the machine differs after restore:\n  before {before:?}\n  after  {after:?}"));
            }
            let scratch_left: Vec<PathBuf> = files_in(&scratch.path().display().to_string());
            if !scratch_left.is_empty() {
                failures.push(format!("{what}: scratch files left: {scratch_left:?}"));
            }
            let journals: Vec<PathBuf> = files_in(&journal.path().display().to_string())
                .into_iter()
                .filter(|p| p.to_string_lossy().ends_with(".jsonl"))
                .collect();
            if !journals.is_empty() {
                failures.push(format!("{what}: journals left after restore: {journals:?}"));
            }
            eprintln!("checked: {what}");
        }
    }
    let deadline = Instant::now() + Duration::from_secs(5);
    while !survivors().is_empty() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(100));
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
