//! The governor and a real database (issue 31): root starts PostgreSQL under a
//! user of its own with pg_ctl, through `oslab wcall run --group rt-high`, as a
//! service manager would, beside a `dd` in the normal group, under a daemon with
//! the sync guard. The user's server processes are governed in rt-high and placed
//! in its cgroups, the guard limits the normal group while they are there, and
//! afterwards pgbench's data is checked: a history row per transaction, the
//! balances, amcheck on every pgbench index, the copy's bytes. No latency is
//! asserted (a shared machine); the figures are the experiment's and the note's.

// A test here tells one scenario from start to end: longer than 80 lines.
#![allow(clippy::too_many_lines)]

mod common;

use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use common::governor::{start_daemon, status_of, stop};
use common::users::{TestUser, shared_copies};

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// A server of the test user's, stopped (immediately) when the test ends.
struct Server<'a> {
    user: &'a TestUser,
    bin: PathBuf,
    data: PathBuf,
    socket: PathBuf,
}

impl Server<'_> {
    fn as_user(&self, program: &str) -> Command {
        let mut c = Command::new("runuser");
        c.args(["-u", &self.user.name, "--"])
            .arg(self.bin.join(program));
        c
    }

    /// One value from psql, as the user, on database postgres.
    fn query(&self, sql: &str) -> String {
        let o = self
            .as_user("psql")
            .arg("-h")
            .arg(&self.socket)
            .args([
                "-X",
                "-d",
                "postgres",
                "-Atq",
                "-v",
                "ON_ERROR_STOP=1",
                "-c",
                sql,
            ])
            .output()
            .unwrap();
        assert!(o.status.success(), "{sql}: {}", stderr(&o));
        String::from_utf8_lossy(&o.stdout).trim().to_string()
    }
}

impl Drop for Server<'_> {
    fn drop(&mut self) {
        let _ = self
            .as_user("pg_ctl")
            .arg("-D")
            .arg(&self.data)
            .args(["-m", "immediate", "-w", "stop"])
            .output();
    }
}

fn succeed(cmd: &mut Command) -> Output {
    let o = cmd.output().unwrap();
    assert!(o.status.success(), "{:?}: {}", cmd, stderr(&o));
    o
}

/// pgbench's "number of transactions actually processed: N".
fn transactions(pgbench_out: &str) -> u64 {
    pgbench_out
        .lines()
        .find_map(|l| l.strip_prefix("number of transactions actually processed: "))
        .and_then(|n| n.split_whitespace().next()?.parse().ok())
        .unwrap_or_else(|| panic!("no transaction count in:\n{pgbench_out}"))
}

fn wait_for<T>(what: &str, mut f: impl FnMut() -> Option<T>) -> T {
    let start = Instant::now();
    loop {
        if let Some(v) = f() {
            return v;
        }
        assert!(start.elapsed() < Duration::from_secs(20), "{what}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn postgres_of_another_user_is_governed_in_rt_high_and_loses_nothing() {
    if !common::is_root() {
        eprintln!("skipped: root's daemon, a second user and PostgreSQL need root");
        return;
    }
    let Some(bin) = oslab_store::testing::find_binaries().filter(|b| {
        ["pg_ctl", "pgbench", "psql"]
            .iter()
            .all(|p| b.join(p).is_file())
    }) else {
        eprintln!("skipped: no PostgreSQL server with pg_ctl, pgbench and psql here");
        return;
    };
    let Some(user) = TestUser::new("pg") else {
        eprintln!("skipped: useradd is not available");
        return;
    };
    let shared = shared_copies();
    let oslab = || {
        let mut c = Command::new(shared.path().join("oslab"));
        c.env("OSLAB_WCALL_LIB", shared.path().join("liboslab_wcall.so"))
            .env(
                "OSLAB_JOURNAL_DIR",
                common::journal_dir("oslab-wcall-database-tests"),
            );
        c
    };
    let dir = tempfile::tempdir().unwrap();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let home = dir.path().join("pg");
    std::fs::create_dir(&home).unwrap();
    std::os::unix::fs::chown(&home, Some(user.uid), None).unwrap();
    // the socket's folder: the user's alone
    std::fs::set_permissions(&home, std::fs::Permissions::from_mode(0o700)).unwrap();
    let name = format!("db-{}", std::process::id());
    // started before the server's guard, so a failing test stops the server
    // before the daemon
    let daemon = start_daemon(oslab(), &name, &["--sync-guard", "4MiB"]);
    let server = Server {
        user: &user,
        bin: bin.clone(),
        data: home.join("data"),
        socket: home.clone(),
    };
    succeed(
        server
            .as_user("initdb")
            .arg("-D")
            .arg(&server.data)
            .args(["--auth-local=peer", "--auth-host=reject", "--no-sync"])
            .stdout(Stdio::null()),
    );

    // root starts the server as the user, in rt-high, as a service is started
    let started = oslab()
        .args(["wcall", "run", "--name", &name, "--group", "rt-high", "--"])
        .args(["runuser", "-u", &user.name, "--"])
        .arg(bin.join("pg_ctl"))
        .arg("-D")
        .arg(&server.data)
        .arg("-l")
        .arg(home.join("log"))
        .arg("-o")
        .arg(format!("-k {} -c listen_addresses=''", home.display()))
        .args(["-w", "start"])
        .output()
        .unwrap();
    assert!(started.status.success(), "{}", stderr(&started));
    let pgbench = |args: &[&str]| {
        succeed(
            server
                .as_user("pgbench")
                .arg("-h")
                .arg(&home)
                .args(args)
                .arg("postgres"),
        )
    };
    pgbench(&["-i", "-s", "1", "-q"]);
    let before: i64 = server
        .query("select sum(abalance) from pgbench_accounts")
        .parse()
        .unwrap();

    let status = wait_for("the server's processes are governed", || {
        let s = status_of(oslab(), &name);
        let of_user = s["processes"]
            .as_array()?
            .iter()
            .filter(|p| p["uid"] == user.uid)
            .count();
        (of_user >= 2).then_some(s)
    });
    // the copy, in the normal group, while pgbench runs
    let copy = dir.path().join("copy");
    let dd = oslab()
        .args(["wcall", "run", "--name", &name, "--group", "normal", "--"])
        .arg("dd")
        .arg("if=/dev/zero")
        .arg(format!("of={}", copy.display()))
        .args(["bs=1M", "count=256", "status=none"])
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let bench = pgbench(&["-N", "-c", "2", "-j", "2", "-T", "4"]);
    let dd = dd.wait_with_output().unwrap();
    assert!(dd.status.success(), "{}", stderr(&dd));
    assert!(
        stderr(&dd).contains(&format!("joining governor '{name}'")),
        "{}",
        stderr(&dd)
    );

    let procs = status["processes"].as_array().unwrap();
    for p in procs.iter().filter(|p| p["uid"] == user.uid) {
        assert_eq!(p["group"], "rt-high", "root's launch stands: {p}");
    }
    let normal = status["groups"]
        .as_array()
        .unwrap()
        .iter()
        .find(|g| g["group"] == "normal")
        .unwrap();
    assert!(
        normal["limit_bytes"].as_u64().is_some_and(|l| l <= 4 << 20),
        "the guard limits the normal group while rt-high is governed: {normal}"
    );
    // the server's processes sit in the rt-high memory cgroup
    let postmaster: u32 = std::fs::read_to_string(server.data.join("postmaster.pid"))
        .unwrap()
        .lines()
        .next()
        .unwrap()
        .parse()
        .unwrap();
    let memcg = oslab_sys::parse::memcg::own_cgroup(&oslab_sys::fsread::Root::live());
    wait_for("the server is placed", || {
        if memcg.is_none() {
            return Some(());
        }
        let c = std::fs::read_to_string(format!("/proc/{postmaster}/cgroup")).ok()?;
        c.contains(&format!("/oslab-wcall-{}/rt-high", daemon.0.id()))
            .then_some(())
    });

    // nothing lost: a history row per transaction, balances that add up, indexes
    // amcheck accepts, and the copy's bytes
    let tx = transactions(&String::from_utf8_lossy(&bench.stdout));
    assert!(tx > 0);
    assert_eq!(
        server.query("select count(*) from pgbench_history"),
        tx.to_string()
    );
    assert_eq!(
        server.query(&format!(
            "select (select sum(abalance) from pgbench_accounts) - {before} = \
             (select coalesce(sum(delta), 0) from pgbench_history)"
        )),
        "t"
    );
    server.query("create extension if not exists amcheck");
    assert_eq!(
        server.query(
            "select count(bt_index_check(i.indexrelid)) from pg_index i \
             join pg_class c on c.oid = i.indexrelid where c.relname like 'pgbench_%'"
        ),
        "3"
    );
    let written = std::fs::read(&copy).unwrap();
    assert_eq!(written.len(), 256 << 20);
    assert!(written.iter().all(|b| *b == 0), "the copy's bytes changed");
    drop(server);
    stop(daemon);
}

/// The pid of a running postmaster whose data folder is on an oslab testbed, with
/// that testbed's folder.
fn testbed_postmaster() -> Option<(u32, String)> {
    for entry in std::fs::read_dir("/proc").ok()?.flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(cmd) = std::fs::read(entry.path().join("cmdline")) else {
            continue;
        };
        let args: Vec<String> = cmd
            .split(|b| *b == 0)
            .map(|a| String::from_utf8_lossy(a).into_owned())
            .collect();
        if !args.first().is_some_and(|a| a.ends_with("/postgres")) {
            continue;
        }
        let Some(data) = args.iter().skip_while(|a| *a != "-D").nth(1) else {
            continue;
        };
        if let Some(at) = data.find("/oslab-testbed-") {
            let end = data[at + 1..].find('/').map_or(data.len(), |e| at + 1 + e);
            return Some((pid, data[..end].to_string()));
        }
    }
    None
}

/// Loop devices whose backing file is under `dir`.
fn loops_under(dir: &str) -> Vec<String> {
    std::fs::read_dir("/sys/block")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| {
            let f = std::fs::read_to_string(e.path().join("loop/backing_file")).ok()?;
            f.starts_with(&format!("{dir}/"))
                .then(|| e.file_name().to_string_lossy().into_owned())
        })
        .collect()
}

/// Whether process `pid` is running (there, and not a zombie).
fn running(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .is_ok_and(|s| s.rsplit(") ").next().is_some_and(|r| !r.starts_with('Z')))
}

/// Whether the server at testbed folder `dir` says it is ready (the last line of
/// postmaster.pid).
fn ready(dir: &str) -> bool {
    std::fs::read_to_string(format!("{dir}/mnt/postgres/data/postmaster.pid"))
        .is_ok_and(|s| s.lines().nth(7).is_some_and(|l| l.trim() == "ready"))
}

/// Ctrl-C while wb.database's server runs, as a terminal sends it (to the whole
/// foreground process group: oslab, the server's supervisor, pgbench): oslab undoes
/// its changes (the testbed's mount, its loop device) before it exits, while the
/// server (its own user's, its data on that testbed) still holds the file system.
/// The server must still go when oslab does, and the mount and the loop device
/// with it. While it runs, the postmaster is oslab's child (adopted when pg_ctl
/// exited), so its time is counted as the experiment's.
#[test]
fn an_interrupted_database_run_leaves_no_server_mount_or_loop_device() {
    if !common::is_root() {
        eprintln!("skipped: the testbed and a server of user postgres need root");
        return;
    }
    let has_user = Command::new("id")
        .arg("postgres")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    let has_binaries = oslab_store::testing::find_binaries().is_some_and(|b| {
        ["pg_ctl", "pgbench", "psql"]
            .iter()
            .all(|p| b.join(p).is_file())
    });
    if !has_binaries || !has_user {
        eprintln!("skipped: no PostgreSQL server with its user postgres here");
        return;
    }
    let mut run = Command::new(env!("CARGO_BIN_EXE_oslab"));
    std::os::unix::process::CommandExt::process_group(&mut run, 0);
    let mut run = run
        .args(["run", "wb.database", "--quick", "--no-db"])
        .env(
            "OSLAB_JOURNAL_DIR",
            common::journal_dir("oslab-database-interrupted"),
        )
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    /// Interrupts oslab's group if the test fails before it did.
    struct Group(i32);
    impl Drop for Group {
        fn drop(&mut self) {
            // SAFETY: kill(2) of the group this test made; gone, it is refused
            unsafe { libc::kill(-self.0, libc::SIGINT) };
        }
    }
    let group = Group(run.id() as i32);
    let start = Instant::now();
    let (pid, testbed) = loop {
        if let Some(found) = testbed_postmaster().filter(|(_, dir)| ready(dir)) {
            break found;
        }
        if let Ok(Some(status)) = run.try_wait() {
            panic!("wb.database ended ({status}) before its server was seen ready");
        }
        assert!(
            start.elapsed() < Duration::from_secs(180),
            "no server ready on a testbed after 180 s"
        );
        std::thread::sleep(Duration::from_millis(100));
    };
    /// Stops the server at once if the test fails with it still running (the pid
    /// still a postmaster on that testbed, not a process that took the pid since).
    struct Leftover(u32, String);
    impl Drop for Leftover {
        fn drop(&mut self) {
            if testbed_postmaster().is_some_and(|(pid, dir)| pid == self.0 && dir == self.1) {
                // SAFETY: kill(2) with a pid and a signal number
                unsafe { libc::kill(self.0 as i32, libc::SIGQUIT) };
            }
        }
    }
    let _leftover = Leftover(pid, testbed.clone());
    // pg_ctl exits once the server is up; the postmaster is then oslab's, not
    // init's, so its CPU time counts as the experiment's, not other programs'
    let parent = || {
        std::fs::read_to_string(format!("/proc/{pid}/stat"))
            .ok()
            .and_then(|s| {
                s.rsplit(") ")
                    .next()?
                    .split(' ')
                    .nth(1)?
                    .parse::<u32>()
                    .ok()
            })
    };
    wait_for("the postmaster adopted by oslab once pg_ctl exited", || {
        (parent() == Some(run.id())).then_some(())
    });
    std::thread::sleep(Duration::from_secs(1));
    // SAFETY: a signal to the process group of the child this test started and
    // has not reaped
    unsafe { libc::kill(-group.0, libc::SIGINT) };
    let status = run.wait().unwrap();
    assert_eq!(status.code(), Some(130), "interrupted by SIGINT");
    let gone = Instant::now();
    while running(pid) || !loops_under(&testbed).is_empty() {
        assert!(
            gone.elapsed() < Duration::from_secs(90),
            "90 s after oslab ended: server {pid} running {}, loop devices over {testbed}: {:?}",
            running(pid),
            loops_under(&testbed)
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    assert!(!std::path::Path::new(&testbed).exists(), "{testbed} left");
}
