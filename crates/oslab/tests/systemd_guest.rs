//! The governor's units as shipped, started by a real systemd as pid 1 (issue 52).
//!
//! Debian 12's 6.12 kernel (linux-image-6.12-amd64) is booted under QEMU the way
//! the kernel matrix boots it (scripts/kernel-matrix/boot: the host's userspace
//! read-only over 9p, a scratch disk, cgroup v2 only), but pid 1 is the host's
//! systemd: scripts/systemd-guest/pid1 lays a tmpfs over the read-only root
//! (an overlay, so /etc and /var are writable) and starts systemd with
//! oslab-guest.target, which wants basic.target and the check unit, none of the
//! host's services. The check unit runs scripts/systemd-guest/job, which
//! installs oslab, its interposer (written out by `oslab wcall interposer
//! --write`), dist/systemd/oslab-wcall.service, the PostgreSQL drop-in and (for
//! the cluster it makes) dist/postgresql/environment as docs/wcall.md ("As a
//! service") says, and then: `systemctl start oslab-wcall.service` returns with
//! the governor answering (Type=notify), its group cgroups inside its own
//! (delegated) unit, itself in a leaf there, their io weights set; a program
//! `oslab wcall run --group normal` starts in a scope of its own (no service) is
//! placed in the normal group there; a PostgreSQL cluster made with pg_createcluster on the scratch
//! disk, started with `systemctl start postgresql@VERSION-oslab`, is rt-high and
//! governed in place, stays in its unit's cgroup, and its commits (pgbench)
//! turn the sync guard on; `systemctl stop oslab-wcall.service` leaves the server
//! running with every committed row and the placed program running, back in its
//! scope, with the unit's cgroup gone; no unit of ours failed and the guest
//! powers off. The guest's results are in target/tmp/systemd-guest/out.
//!
//! Gated as the kernel matrix is (root, its tools, Debian's archive,
//! OSLAB_KERNEL_MATRIX=off turns it off) and needs systemd and PostgreSQL's
//! Debian packaging (postgresql-common) on the host. About 5 minutes here
//! from boot to power-off on a quiet host, 10 on a busy one (one emulated vCPU;
//! pg_createcluster's initdb takes 1 to 4.5 of them).

mod common;

use std::path::{Path, PathBuf};

use common::guests::{self, checks, text};

const KERNEL: &str = "linux-image-6.12-amd64";
/// Boot to power-off: a guard against a hung guest, as the kernel matrix has.
/// Twice the usual run: on a host busy with other builds and guests
/// pg_createcluster alone took 4.5 minutes.
const LIMIT_S: u32 = 900;

/// What the guest needs of the host besides the kernel matrix's tools.
fn missing() -> Option<&'static str> {
    if !Path::new("/lib/systemd/systemd").is_file() {
        return Some("systemd is not installed");
    }
    ["pg_createcluster", "pgbench", "psql", "runuser"]
        .into_iter()
        .find(|p| guests::on_path(p).is_none())
        .map(|_| "PostgreSQL's Debian packaging is not installed (postgresql, postgresql-common)")
}

/// The "PID CGROUPS" lines the job recorded, as (pid, cgroup path) of cgroup v2.
fn cgroup_lines(out: &Path, name: &str) -> Vec<(u64, String)> {
    text(out, name)
        .lines()
        .map(|l| {
            let (pid, cg) = l.split_once(' ').unwrap_or((l, ""));
            (pid.parse().unwrap(), cg.trim().to_string())
        })
        .collect()
}

fn json(out: &Path, name: &str) -> serde_json::Value {
    serde_json::from_str(&text(out, name))
        .unwrap_or_else(|e| panic!("{name} is not JSON ({e}):\n{}", text(out, name)))
}

#[test]
fn systemd_starts_the_shipped_units_and_governs_postgresql_in_place() {
    if let Some(why) = guests::skip_reason().or_else(|| missing().map(String::from)) {
        eprintln!("skipped: {why}");
        return;
    }
    let cache = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("kernel-matrix");
    let kernel = match guests::prepare(&cache, &[KERNEL]) {
        Ok(k) => k.into_iter().next().expect("prepare names the kernel"),
        Err(why) => {
            eprintln!("skipped: the kernel could not be fetched or unpacked: {why}");
            return;
        }
    };
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("systemd-guest");
    let out = dir.join("out");
    let _ = std::fs::remove_dir_all(&out);
    std::fs::create_dir_all(&out).unwrap();
    let job = dir.join("job");
    let repo = guests::repo().canonicalize().unwrap();
    let mut script = format!(
        "export OSLAB={} REPO={}\n",
        env!("CARGO_BIN_EXE_oslab"),
        repo.display()
    );
    script += &std::fs::read_to_string(repo.join("scripts/systemd-guest/job")).unwrap();
    std::fs::write(&job, script).unwrap();
    eprintln!("systemd guest: booting {}", kernel.release);
    let pid1 = repo.join("scripts/systemd-guest/pid1");
    let wall_s = guests::boot(
        &cache.join(&kernel.release),
        &out,
        &job,
        LIMIT_S,
        Some(&pid1),
    );
    eprintln!("systemd guest: boot to power-off took {wall_s:.0} s");
    assert_guest(&out);
}

fn assert_guest(out: &Path) {
    let console = text(out, "console.log");
    assert!(
        console.contains("reboot: Power down"),
        "the guest powered off (see {})",
        out.join("console.log").display()
    );
    assert!(
        text(out, "pid1.txt").starts_with("the guest's pid 1: systemd;"),
        "{}",
        text(out, "pid1.txt")
    );
    let done = checks(out);
    let names: Vec<&str> = done.iter().map(|c| c.0.as_str()).collect();
    assert_eq!(
        names,
        [
            "install",
            "wcall-start",
            "user-placed",
            "pg-create",
            "pg-environment",
            "pg-start",
            "pgbench-init",
            "commits",
            "wcall-stop",
            "commit-after-stop",
            "pg-stop"
        ],
        "checks run"
    );
    for (name, rc, _) in &done {
        assert_eq!(
            *rc,
            0,
            "{name} exited {rc}:\n{}",
            text(out, &format!("{name}.txt"))
        );
    }
    let unit = text(out, "unit.txt").trim().to_string();
    assert_daemon_ready(out);
    let daemon_pid = assert_groups_in_the_unit(out);
    assert_placed_outside_services(out, daemon_pid);
    assert_governed_in_place(out, &unit);
    assert_outlives_the_daemon(out);
    assert_placed_goes_back_out(out);
    // nothing of ours failed (a host unit that cannot work in a guest may)
    let failed = text(out, "failed.txt");
    assert!(
        !failed.contains("oslab") && !failed.contains("postgresql"),
        "failed units: {failed}"
    );
    assert_eq!(text(out, "is-failed.txt"), "inactive\nactive\n");
}

/// Type=notify: `systemctl start` returned with the governor's socket answering.
fn assert_daemon_ready(out: &Path) {
    let unit = text(out, "wcall-unit.txt");
    assert!(
        unit.contains("Type=notify") && unit.contains("ActiveState=active"),
        "{unit}"
    );
    let ready = json(out, "ready.json");
    assert_eq!(ready[0]["name"], "system", "{ready}");
    assert!(ready[0]["status"]["coordinator_alive"] == true, "{ready}");
}

/// `Delegate=yes`: the group cgroups are inside the daemon's unit, not beside it
/// in system.slice, with their io weights, and the daemon waits in a leaf of its
/// own there. The daemon's pid.
fn assert_groups_in_the_unit(out: &Path) -> u64 {
    let unit = text(out, "wcall-unit.txt");
    let pid: u64 = unit
        .lines()
        .find_map(|l| l.strip_prefix("MainPID="))
        .and_then(|p| p.parse().ok())
        .expect("the daemon's MainPID");
    let own = "/system.slice/oslab-wcall.service";
    assert!(unit.contains(&format!("ControlGroup={own}")), "{unit}");
    let base = format!("{own}/oslab-wcall-{pid}");
    assert_eq!(
        text(out, "daemon-cgroup.txt").trim(),
        format!("{base}-home"),
        "the daemon left its unit's cgroup for a leaf, so the unit may give controllers"
    );
    let tree: Vec<String> = text(out, "wcall-tree.txt")
        .lines()
        .map(String::from)
        .collect();
    let mut expected = vec![own.to_string(), base.clone(), format!("{base}-home")];
    expected.extend(["normal", "rt-high", "rt-low"].map(|g| format!("{base}/{g}")));
    expected.sort();
    assert_eq!(
        tree, expected,
        "every cgroup of the governor's is inside its unit: none beside it in system.slice"
    );
    assert_eq!(
        text(out, "io-weight.txt"),
        format!(
            "{base}/normal/io.weight default 100\n{base}/rt-high/io.weight default 400\n{base}/rt-low/io.weight default 200\n"
        ),
        "the kernel took the groups' io weights"
    );
    pid
}

/// A governed program of root's that runs in no service is placed in its
/// group's cgroup inside the daemon's unit, and `status` shows it in no service.
fn assert_placed_outside_services(out: &Path, daemon_pid: u64) {
    let pid: u64 = text(out, "user-pid.txt")
        .trim()
        .parse()
        .expect("the program's pid");
    assert_eq!(
        text(out, "user-cgroup.txt").trim(),
        format!("/system.slice/oslab-wcall.service/oslab-wcall-{daemon_pid}/normal"),
        "{}",
        text(out, "user-run.txt")
    );
    let status = &json(out, "user-status.json")[0]["status"];
    let shown = status["processes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["pid"] == pid)
        .unwrap_or_else(|| panic!("{pid} is governed: {status}"));
    assert_eq!(shown["group"], "normal", "{shown}");
    assert!(
        shown["service"].is_null(),
        "placed by the governor, not in its unit as a service is: {shown}"
    );
}

/// `systemctl stop oslab-wcall` (KillMode=mixed): the placed program lives on,
/// back in the scope it came from, and the unit's cgroup is gone.
fn assert_placed_goes_back_out(out: &Path) {
    let pid = text(out, "user-pid.txt").trim().to_string();
    assert_eq!(
        text(out, "user-after-stop.txt"),
        "alive: yes\ncgroup: /system.slice/oslab-guest-user.scope\nthe unit's cgroup: gone\n"
    );
    let log = text(out, "wcall-journal.txt");
    assert!(
        log.contains(&format!(
            "oslab wcall: process {pid} moved back to /sys/fs/cgroup/system.slice/oslab-guest-user.scope"
        )),
        "the daemon said where it went:\n{log}"
    );
}

/// The server's processes: rt-high from root's rule, in their unit's cgroup
/// before, while and after they are governed, and their commits turn the guard on.
fn assert_governed_in_place(out: &Path, unit: &str) {
    let pg = text(out, "pg-unit.txt");
    assert!(
        pg.contains("/etc/systemd/system/postgresql@.service.d/oslab-wcall.conf"),
        "the shipped drop-in applies:\n{pg}"
    );
    assert!(
        pg.contains("LD_PRELOAD=/usr/local/lib/oslab/liboslab_wcall.so"),
        "{pg}"
    );
    let cgroup = format!("/system.slice/system-postgresql.slice/{unit}");
    assert!(pg.contains(&format!("ControlGroup={cgroup}")), "{pg}");
    let before = cgroup_lines(out, "pg-cgroups-before.txt");
    assert!(!before.is_empty());
    for (pid, cg) in &before {
        assert_eq!(cg, &format!("0::{cgroup}"), "process {pid}");
    }
    assert_eq!(
        before,
        cgroup_lines(out, "pg-cgroups-after.txt"),
        "the server's processes stayed in their unit's cgroup"
    );
    let main_pid: u64 = pg
        .lines()
        .find_map(|l| l.strip_prefix("MainPID="))
        .and_then(|p| p.parse().ok())
        .expect("the server's MainPID");
    let in_unit: Vec<u64> = text(out, "pg-procs-governed.txt")
        .lines()
        .map(|l| l.parse().unwrap())
        .collect();
    let status = &json(out, "governed.json")[0]["status"];
    let procs = status["processes"].as_array().unwrap();
    let server: Vec<&serde_json::Value> = procs.iter().filter(|p| p["service"] == unit).collect();
    assert!(
        server.iter().any(|p| p["pid"] == main_pid),
        "the postmaster ({main_pid}) is governed: {status}"
    );
    for p in &server {
        assert_eq!(p["group"], "rt-high", "root's rule for {unit}: {p}");
        let pid = p["pid"].as_u64().unwrap();
        assert!(
            in_unit.contains(&pid),
            "{p} is in its unit's cgroup ({in_unit:?})"
        );
    }
    let guard = &status["guard"];
    assert!(guard["acting_bytes"].is_u64(), "{guard}");
    let durable = guard["durable_pid"].as_u64().unwrap();
    assert!(
        in_unit.contains(&durable),
        "the server's commits turned the guard on: {guard}"
    );
    let shown = text(out, "governed.txt");
    assert!(
        shown.contains(&format!("in {unit}, governed in place")),
        "{shown}"
    );
    let log = text(out, "wcall-journal.txt");
    assert!(
        log.contains("sync guard: "),
        "the daemon logged the guard:\n{log}"
    );
}

/// The daemon stopped: the server runs on, with every committed row.
fn assert_outlives_the_daemon(out: &Path) {
    assert_eq!(
        text(out, "after-stop.txt"),
        "daemon: inactive\nserver: active\nserver's main pid the same: yes\n"
    );
    let rows = text(out, "rows-before-stop.txt");
    let n: u64 = rows.trim().parse().unwrap_or(0);
    assert!(n > 0, "pgbench committed rows: {rows}");
    assert_eq!(rows, text(out, "rows-after-stop.txt"));
    // the server's processes that write afterwards say once each that they
    // write ungoverned (one that had joined, or one forked since)
    let log = text(out, "pg-log.txt");
    assert!(
        log.lines().any(|l| l.starts_with("oslab wcall: ")
            && l.contains("; writes of pid ")
            && (l.ends_with(" proceed ungoverned") || l.ends_with(" are not governed"))),
        "the server's log:\n{log}"
    );
    assert!(
        text(out, "commit-after-stop.txt").trim_end().ends_with('1'),
        "the server commits, ungoverned: {}",
        text(out, "commit-after-stop.txt")
    );
}
