//! The governor and systemd services (issue 52): a service root names with
//! `--service UNIT=GROUP` is in that group whichever user it runs as, its
//! processes stay in the unit's cgroup (systemd knows a service by it), and when
//! the daemon stops the service keeps running, ungoverned, with nothing lost. A
//! look-alike cgroup another user makes in a subtree given to them gets nothing
//! from root's rule.
//!
//! No systemd runs here: the tests make the cgroups systemd would (under
//! /system.slice of the hierarchy systemd uses) and start the programs in them
//! as a unit's `Environment=` lines would, with the interposer preloaded.

mod common;

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::governor::{Reaped, start_daemon, status_of, stop, wait_for_governor};
use common::users::{TestUser, shared_copies};

fn oslab() -> Command {
    let mut c = common::oslab();
    c.env("OSLAB_WCALL_LIB", common::preload_lib());
    c.env(
        "OSLAB_JOURNAL_DIR",
        common::journal_dir("oslab-wcall-services"),
    );
    c
}

/// The hierarchy systemd keeps its units in: cgroup v2, else v1's name=systemd.
fn manager_hierarchy() -> Option<PathBuf> {
    let mounts = std::fs::read_to_string("/proc/self/mounts").ok()?;
    let of = |want: &dyn Fn(&[&str]) -> bool| {
        mounts.lines().find_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            (f.len() > 3 && want(&f)).then(|| PathBuf::from(f[1]))
        })
    };
    of(&|f| f[2] == "cgroup2")
        .or_else(|| of(&|f| f[2] == "cgroup" && f[3].split(',').any(|o| o == "name=systemd")))
}

/// Cgroup folders a test made, removed (innermost first) when it ends.
struct Made(Vec<PathBuf>);

impl Made {
    fn dir(&mut self, path: PathBuf) -> PathBuf {
        if !path.exists() {
            std::fs::create_dir(&path).unwrap();
            self.0.push(path.clone());
        }
        path
    }
}

/// Removes cgroup `dir` and every cgroup under it, innermost first (what a
/// test's user made inside goes too, also when the test failed half way).
fn remove_cgroup_tree(dir: &Path) {
    if let Ok(entries) = std::fs::read_dir(dir) {
        for e in entries.flatten() {
            if e.file_type().is_ok_and(|t| t.is_dir()) {
                remove_cgroup_tree(&e.path());
            }
        }
    }
    // emptied by the test's processes' deaths, which may take a moment
    for _ in 0..50 {
        if std::fs::remove_dir(dir).is_ok() || !dir.exists() {
            return;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

impl Drop for Made {
    fn drop(&mut self) {
        for d in self.0.iter().rev() {
            remove_cgroup_tree(d);
        }
    }
}

/// The governed process of `uid` as status shows it, within 20 s.
fn process_of(name: &str, uid: u32) -> serde_json::Value {
    let start = Instant::now();
    loop {
        let s = status_of(oslab(), name);
        if let Some(p) = s["processes"]
            .as_array()
            .unwrap()
            .iter()
            .find(|p| p["uid"] == uid)
        {
            return p.clone();
        }
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "no process of uid {uid} joined: {s}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// The program's lines of /proc/PID/cgroup for every hierarchy.
fn cgroups_of(pid: u64) -> String {
    std::fs::read_to_string(format!("/proc/{pid}/cgroup")).unwrap_or_default()
}

/// `sh -c SCRIPT` as root, the program's environment passed to the user's
/// command as a unit's Environment= lines would give it.
fn in_cgroup(script: &str) -> Command {
    let mut c = Command::new("sh");
    c.args(["-c", script])
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    c
}

struct Setup {
    user: TestUser,
    shared: tempfile::TempDir,
    work: tempfile::TempDir,
    prog: PathBuf,
    hierarchy: PathBuf,
}

fn setup(tag: &str) -> Option<Setup> {
    if !common::is_root() {
        eprintln!("skipped: cgroups, a second user and root's daemon need root");
        return None;
    }
    let Some(hierarchy) = manager_hierarchy() else {
        eprintln!("skipped: neither cgroup v2 nor v1's name=systemd is mounted");
        return None;
    };
    let Some(user) = TestUser::new(tag) else {
        eprintln!("skipped: useradd is not available");
        return None;
    };
    let shared = shared_copies();
    let prog = shared.path().join("durable_loop");
    assert!(
        common::compile_c("wcall/durable_loop.c", &prog, &[]),
        "cc builds durable_loop.c (install gcc and libc6-dev)"
    );
    std::fs::set_permissions(&prog, std::fs::Permissions::from_mode(0o755)).unwrap();
    let work = tempfile::tempdir().unwrap();
    std::fs::set_permissions(work.path(), std::fs::Permissions::from_mode(0o1777)).unwrap();
    Some(Setup {
        user,
        shared,
        work,
        prog,
        hierarchy,
    })
}

impl Setup {
    /// The user's command line for the commit loop writing FILE for SECONDS, with
    /// the interposer preloaded to join governor socket `socket`.
    fn loop_as_user(&self, socket: &Path, file: &str, seconds: u32) -> String {
        format!(
            "runuser -u {} -- env -i PATH=/usr/bin:/bin LD_PRELOAD={} OSLAB_WCALL_SOCK={} {} {} {seconds}",
            self.user.name,
            self.shared.path().join("liboslab_wcall.so").display(),
            socket.display(),
            self.prog.display(),
            self.work.path().join(file).display(),
        )
    }
}

#[test]
fn a_service_root_named_is_rt_high_in_place_outlives_the_daemon_and_rejoins_its_successor() {
    // dropped last: after the user's processes are killed with the user
    let mut made = Made(Vec::new());
    let Some(s) = setup("svc") else { return };
    let unit = format!("oslabt-db-{}.service", std::process::id());
    let slice = made.dir(s.hierarchy.join("system.slice"));
    let cg = made.dir(slice.join(&unit));

    let name = format!("svc-{}", std::process::id());
    // cgroups on (the default): the service's processes must not be moved
    let daemon = start_daemon(
        oslab(),
        &name,
        &[
            "--service",
            &format!("{unit}=rt-high"),
            "--sync-guard-quiet",
            "1s",
        ],
    );
    let socket = wait_for_governor(&name).socket;
    let mut db = Reaped(
        in_cgroup(&format!(
            "echo $$ > {}/cgroup.procs && exec {}",
            cg.display(),
            s.loop_as_user(&socket, "wal", 20)
        ))
        .spawn()
        .unwrap(),
    );
    let p = process_of(&name, s.user.uid);
    assert_eq!(p["group"], "rt-high", "root named the service: {p}");
    assert_eq!(p["service"], unit.as_str(), "{p}");
    let pid = p["pid"].as_u64().unwrap();
    let before = cgroups_of(pid);
    assert!(before.contains(&unit), "{before}");
    // the guard acts for a service root put in rt-high
    let start = Instant::now();
    while status_of(oslab(), &name)["guard"]["acting_bytes"].is_null() {
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "the service's commits did not turn the guard on"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    let after = cgroups_of(pid);
    assert_eq!(
        before, after,
        "the service's process was moved out of its cgroups"
    );
    assert!(!after.contains("oslab-wcall-"), "{after}");

    // the daemon stops: the service goes on, ungoverned
    stop(daemon);
    assert!(
        Path::new(&format!("/proc/{pid}")).exists(),
        "stopping the daemon stopped the service"
    );
    // a new daemon on the same socket (a restart, an upgrade) takes the running
    // service back, in place, without the service restarting
    let daemon = start_daemon(oslab(), &name, &["--service", &format!("{unit}=rt-high")]);
    assert_eq!(wait_for_governor(&name).socket, socket);
    let p = process_of(&name, s.user.uid);
    assert_eq!(
        p["pid"].as_u64(),
        Some(pid),
        "the same process rejoined: {p}"
    );
    assert_eq!(p["group"], "rt-high", "{p}");
    assert_eq!(cgroups_of(pid), before, "the rejoined service was moved");
    // and it finishes its commits
    stop(daemon);
    let status = db.0.wait().unwrap();
    assert!(
        status.success(),
        "the service's commits failed after the daemon stopped: {status}"
    );
}

#[test]
fn a_look_alike_service_another_user_makes_gets_nothing_from_roots_rule() {
    // dropped last: after the user's processes are killed with the user
    let mut made = Made(Vec::new());
    let Some(s) = setup("svcx") else { return };
    let unit = format!("oslabt-db-{}.service", std::process::id());
    // a subtree given to the user, as a delegated unit or their own manager has
    let given = made.dir(
        s.hierarchy
            .join(format!("oslabt-given-{}", std::process::id())),
    );
    for f in [
        "",
        "cgroup.procs",
        "cgroup.threads",
        "cgroup.subtree_control",
    ] {
        let p = if f.is_empty() {
            given.clone()
        } else {
            given.join(f)
        };
        if p.exists() {
            std::os::unix::fs::chown(&p, Some(s.user.uid), None).unwrap();
        }
    }
    let name = format!("svcx-{}", std::process::id());
    let daemon = start_daemon(
        oslab(),
        &name,
        &["--no-cgroups", "--service", &format!("{unit}=rt-high")],
    );
    let socket = wait_for_governor(&name).socket;
    // the user makes system.slice/UNIT inside their subtree and moves in
    let look_alike = given.join("system.slice").join(&unit);
    let user_script = format!(
        "mkdir -p {d} && echo $$ > {d}/cgroup.procs && exec env LD_PRELOAD={lib} OSLAB_WCALL_SOCK={sock} {prog} {file} 4",
        d = look_alike.display(),
        lib = s.shared.path().join("liboslab_wcall.so").display(),
        sock = socket.display(),
        prog = s.prog.display(),
        file = s.work.path().join("wal").display(),
    );
    let mut attacker = Reaped(
        in_cgroup(&format!(
            "echo $$ > {}/cgroup.procs && exec runuser -u {} -- sh -c '{user_script}'",
            given.display(),
            s.user.name,
        ))
        .spawn()
        .unwrap(),
    );
    let p = process_of(&name, s.user.uid);
    let pid = p["pid"].as_u64().unwrap();
    assert!(
        cgroups_of(pid).contains(&format!("system.slice/{unit}")),
        "the attack ran in its look-alike cgroup: {}",
        cgroups_of(pid)
    );
    let start = Instant::now();
    while start.elapsed() < Duration::from_secs(2) {
        let s = status_of(oslab(), &name);
        for p in s["processes"].as_array().unwrap() {
            assert_ne!(p["group"], "rt-high", "a look-alike got root's group: {p}");
        }
        assert!(s["guard"]["acting_bytes"].is_null(), "{}", s["guard"]);
        std::thread::sleep(Duration::from_millis(100));
    }
    let _ = attacker.0.wait();
    stop(daemon);
}
