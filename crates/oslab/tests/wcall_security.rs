//! The governor against its own governed programs and against other users
//! (issue 27, item 4; docs/wcall.md, "The trust boundary"): a program that attacks
//! the board and sends requests it must refuse, a program that drops from root to
//! nobody and lies, descriptor numbers reused behind the interposer's back, and
//! another user who joins root's daemon. The C programs are compiled at test time
//! from tests/fixtures/wcall/.

// A test here tells one scenario from start to end: longer than 80 lines.
#![allow(clippy::too_many_lines)]

mod common;

use std::io::{BufRead, BufReader};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use common::governor::{Reaped, stop};
use common::users::{TestUser, shared_copies};

fn oslab() -> Command {
    let mut c = common::oslab();
    c.env("OSLAB_WCALL_LIB", common::preload_lib());
    c.env(
        "OSLAB_JOURNAL_DIR",
        common::journal_dir("oslab-wcall-security-tests"),
    );
    c
}

fn workdir() -> tempfile::TempDir {
    tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Compiles C source text into `dir/name` with the system compiler.
fn compile(dir: &Path, name: &str, source: &str) -> PathBuf {
    let src = dir.join(format!("{name}.c"));
    std::fs::write(&src, source).unwrap();
    let exe = dir.join(name);
    let ok = Command::new("cc")
        .args(["-O2", "-Wall", "-o"])
        .arg(&exe)
        .arg(&src)
        .status()
        .is_ok_and(|s| s.success());
    assert!(
        ok,
        "cc could not build {name}.c (install gcc and libc6-dev)"
    );
    exe
}

/// Compiles tests/fixtures/wcall/NAME.c (with its wire.h) into `dir/name`.
fn compile_fixture(dir: &Path, name: &str) -> PathBuf {
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/wcall");
    let exe = dir.join(name);
    let ok = Command::new("cc")
        .args(["-O2", "-Wall", "-I"])
        .arg(&fixtures)
        .arg("-o")
        .arg(&exe)
        .arg(fixtures.join(format!("{name}.c")))
        .status()
        .is_ok_and(|s| s.success());
    assert!(
        ok,
        "cc could not build {name}.c (install gcc and libc6-dev)"
    );
    exe
}

fn start_daemon(name: &str, extra: &[&str]) -> Reaped {
    common::governor::start_daemon(oslab(), name, extra)
}

fn status_of(name: &str) -> serde_json::Value {
    common::governor::status_of(oslab(), name)
}

/// A program under a governor asks for the board and tries to write, resize,
/// punch and remap it writable, and sends requests the governor must refuse;
/// the coordinator goes on passing, under a governor of its own and under a
/// daemon, and `status` and `run --name` still find the daemon afterwards.
#[test]
fn a_governed_program_cannot_change_the_board_and_the_coordinator_goes_on() {
    let dir = workdir();
    let exe = compile_fixture(dir.path(), "attack_board");
    let heartbeat = std::mem::offset_of!(oslab_wcall::shm::board::Header, heartbeat_ns);
    let o = oslab()
        .args(["wcall", "run", "--private", "--no-cgroups", "--"])
        .arg(&exe)
        .arg(heartbeat.to_string())
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{:?} {}", o.status, stderr(&o));
    assert!(stderr(&o).contains("oslab wcall: policy"), "{}", stderr(&o));

    let name = format!("attacked-{}", std::process::id());
    let daemon = start_daemon(&name, &["--no-cgroups"]);
    let o = oslab()
        .args(["wcall", "run", "--name", &name, "--"])
        .arg(&exe)
        .arg(heartbeat.to_string())
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{:?} {}", o.status, stderr(&o));
    let s = status_of(&name);
    assert!(s["coordinator_alive"].as_bool().unwrap(), "{s}");
    assert!(s["refused_entries"].as_u64().unwrap() >= 4, "{s}");
    let again = oslab()
        .args(["wcall", "run", "--name", &name, "--", "true"])
        .output()
        .unwrap();
    assert!(again.status.success(), "{}", stderr(&again));
    assert!(
        stderr(&again).contains("joining governor"),
        "{}",
        stderr(&again)
    );
    stop(daemon);
    assert!(
        !oslab_wcall::rendezvous::discover()
            .iter()
            .any(|f| f.name == name),
        "the socket went with the daemon"
    );
}

/// Descriptor numbers that come back as another file. Every write is either a
/// regular file's (governed) or not (passed through); the program exits non-zero
/// if a number did not come back as the test needs.
const FD_REUSE_C: &str = r#"
#define _GNU_SOURCE
#include <dirent.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

static char buf[4096];
static void put(int fd, size_t n, int code) {
    if (write(fd, buf, n) != (ssize_t)n) _exit(code);
}
static char *in(const char *dir, const char *name) {
    char *p = malloc(strlen(dir) + strlen(name) + 2);
    sprintf(p, "%s/%s", dir, name);
    return p;
}
/* a directory under number `want`, written to once (not a regular file: passed
   through) and closed by closedir(), whose close inside libc is not interposed */
static void dir_closed_inside_libc(int want, int code) {
    int d = open(".", O_RDONLY | O_DIRECTORY);
    if (d != want) _exit(code);
    if (write(d, buf, 1) != -1) _exit(code + 1);
    DIR *dd = fdopendir(d);
    if (!dd || closedir(dd)) _exit(code + 2);
}

int main(int argc, char **argv) {
    if (argc < 2) return 2;
    memset(buf, 'x', sizeof buf);

    /* 1. dup2 a pipe over a governed file's descriptor, and the file back */
    int fd = open(in(argv[1], "a"), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0) return 10;
    put(fd, 4096, 11);                                   /* governed 1 */
    int p[2];
    if (pipe(p)) return 12;
    int saved = dup(fd);
    if (saved < 0) return 13;
    if (dup2(p[1], fd) != fd) return 14;
    put(fd, 100, 15); put(fd, 100, 15); put(fd, 100, 15); /* passed 3 */
    if (dup2(saved, fd) != fd) return 16;
    put(fd, 4096, 17); put(fd, 4096, 17);                /* governed 3 */

    /* 2. dup3 the pipe over it */
    if (dup3(p[1], fd, O_CLOEXEC) != fd) return 18;
    put(fd, 100, 19);                                    /* passed 4 */

    /* 3. close_range frees the number; fopen (an open inside libc) takes it */
    if (close_range(fd, fd, 0)) return 20;
    FILE *f = fopen(in(argv[1], "b"), "w");
    if (!f || fileno(f) != fd) return 21;
    put(fd, 4096, 22);                                   /* governed 4 */

    /* 4. fclose (a close inside libc); an eventfd (not interposed) takes it */
    if (fclose(f)) return 23;
    int ev = eventfd(0, 0);
    if (ev != fd) return 24;
    uint64_t one = 1;
    if (write(ev, &one, 8) != 8) return 25;              /* passed 5 */

    /* 5. closedir frees it with a stale class; fcntl(F_DUPFD) takes it */
    if (close(ev)) return 26;
    dir_closed_inside_libc(fd, 27);                      /* passed 6 */
    if (fcntl(saved, F_DUPFD, fd) != fd) return 30;
    put(fd, 4096, 31);                                   /* governed 5 */

    /* 6. the same, and open() takes it */
    if (close(fd)) return 32;
    dir_closed_inside_libc(fd, 33);                      /* passed 7 */
    if (open(in(argv[1], "c"), O_WRONLY | O_CREAT | O_TRUNC, 0644) != fd) return 36;
    put(fd, 4096, 37);                                   /* governed 6 */

    /* 7. fopen, a plain write, fclose; then a pipe takes the number */
    int low = open("/dev/null", O_RDONLY);
    if (low < 0) return 38;
    FILE *g = fopen(in(argv[1], "d"), "w");
    if (!g) return 39;
    int n = fileno(g);
    put(n, 4096, 40);                                    /* governed 7 */
    if (fclose(g) || close(low)) return 41;
    int q[2];
    if (pipe(q) || q[0] != low || q[1] != n) return 42;
    put(q[1], 100, 43);                                  /* passed 8 */
    return 0;
}
"#;

#[test]
fn reused_descriptor_numbers_are_classified_afresh() {
    let dir = workdir();
    let exe = compile(dir.path(), "fdreuse", FD_REUSE_C);
    let o = oslab()
        .args(["wcall", "run", "--private", "--group", "normal", "--"])
        .arg(&exe)
        .arg(dir.path())
        .output()
        .unwrap();
    let e = stderr(&o);
    assert_eq!(o.status.code(), Some(0), "{e}");
    // seven 4 KiB writes to regular files; the rest went to a pipe, an eventfd
    // or a directory. Before: the pipe writes after dup2 and dup3 and the eventfd
    // write were governed, and the file writes after close_range, F_DUPFD and
    // open() were passed through.
    assert!(
        e.contains("normal   7 writes (28 KiB)"),
        "governed writes: {e}"
    );
    assert!(
        e.contains("  8 writes passed through"),
        "passed through: {e}"
    );
    for (name, len) in [("a", 4 * 4096), ("b", 4096), ("c", 4096), ("d", 4096)] {
        assert_eq!(
            std::fs::metadata(dir.path().join(name)).unwrap().len(),
            len,
            "{name}"
        );
    }
}

/// The cgroups a process is in (/proc/PID/cgroup), "" once it is gone.
fn cgroups_of(pid: u32) -> String {
    std::fs::read_to_string(format!("/proc/{pid}/cgroup")).unwrap_or_default()
}

/// A root-launched program drops to nobody and turns on the governor: lies in its
/// own table, rt-high asked for its children, and a child with a root saved uid, a
/// set-user-ID passwd, pid 1 and the coordinator offered as its launched programs.
/// Nothing but its own figures change: nobody is moved or counted on its word, no
/// process lands in rt-high, the coordinator and pid 1 stay where they were.
#[test]
fn a_program_that_drops_root_moves_and_lifts_nothing() {
    if !common::is_root() {
        eprintln!("skipped: dropping from root to nobody needs root");
        return;
    }
    let dir = workdir();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o1777)).unwrap();
    let exe = compile_fixture(dir.path(), "attack_dropper");
    let name = format!("dropper-{}", std::process::id());
    let daemon = start_daemon(&name, &[]);
    let coordinator_cgroups = cgroups_of(daemon.0.id());
    let init_cgroups = cgroups_of(1);
    use oslab_wcall::shm::own::{Own, OwnFile, OwnHeader};
    let offsets = [
        std::mem::offset_of!(OwnHeader, writes),
        std::mem::offset_of!(OwnHeader, last_write_ns),
        std::mem::offset_of!(Own, files),
        std::mem::size_of::<OwnFile>(),
    ];
    // the interposer must be readable by nobody
    let shared = shared_copies();
    let mut run = Reaped(
        oslab()
            .env("OSLAB_WCALL_LIB", shared.path().join("liboslab_wcall.so"))
            .args(["wcall", "run", "--name", &name, "--group", "normal", "--"])
            .arg(&exe)
            .arg(dir.path())
            .args(offsets.map(|o| o.to_string()))
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap(),
    );
    let mut line = String::new();
    BufReader::new(run.0.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let pids: Vec<u32> = line
        .split_whitespace()
        .filter_map(|x| x.parse().ok())
        .collect();
    if pids.len() != 4 {
        let code = run.0.wait().unwrap();
        let mut err = String::new();
        std::io::Read::read_to_string(&mut run.0.stderr.take().unwrap(), &mut err).unwrap();
        panic!("the attacker stopped early ({code}): {err}");
    }
    let (b, c, d, coordinator) = (pids[0], pids[1], pids[2], pids[3]);
    assert_eq!(
        coordinator,
        daemon.0.id(),
        "the kernel names the coordinator"
    );
    // D (a plain child of the dropper, nobody) joins by itself
    let start = Instant::now();
    let s = loop {
        let s = status_of(&name);
        let seen = s["processes"]
            .as_array()
            .unwrap()
            .iter()
            .any(|p| p["pid"] == d);
        if seen || start.elapsed() > Duration::from_secs(2) {
            break s;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let procs = s["processes"].as_array().unwrap();
    let me = procs
        .iter()
        .find(|p| p["uid"] == 65534 && p["pid"] != d)
        .unwrap_or_else(|| panic!("the dropper is governed: {s}"));
    assert_eq!(me["group"], "normal", "root gave it normal: {s}");
    assert!(
        me["writes"].as_u64().unwrap() < 1000 && me["bytes"].as_u64().unwrap() < 1 << 30,
        "its lies are bounded by the kernel's counts: {s}"
    );
    assert!(
        procs.iter().all(|p| p["group"] != "rt-high"),
        "rt-high asked by nobody lifts nobody: {s}"
    );
    for pid in [b, c, 1, coordinator] {
        assert!(
            procs.iter().all(|p| p["pid"] != pid),
            "pid {pid} is governed: {s}"
        );
    }
    // B and C were born in the dropper's group's cgroup (children start where
    // their parent is); nothing moved them up to rt-high
    for pid in [b, c] {
        assert!(
            !cgroups_of(pid).contains("/rt-high"),
            "pid {pid} was moved: {}",
            cgroups_of(pid)
        );
    }
    assert_eq!(
        cgroups_of(daemon.0.id()),
        coordinator_cgroups,
        "the coordinator moved"
    );
    assert_eq!(cgroups_of(1), init_cgroups, "pid 1 moved");
    let code = run.0.wait().unwrap();
    let mut err = String::new();
    std::io::Read::read_to_string(&mut run.0.stderr.take().unwrap(), &mut err).unwrap();
    assert_eq!(
        code.code(),
        Some(0),
        "a check of the attacker failed: {err}"
    );
    stop(daemon);
}

/// Another user finds root's daemon, joins it (as PostgreSQL under its own user
/// would), and is governed; the rt-high it asks for is not granted, because its
/// scheduling does not reach it.
#[test]
fn another_user_joins_roots_daemon_but_cannot_lift_its_writers() {
    if !common::is_root() {
        eprintln!("skipped: making a second user and root's daemon need root");
        return;
    }
    let Some(user) = TestUser::new("join") else {
        eprintln!("skipped: useradd is not available");
        return;
    };
    let shared = shared_copies();
    let bin = shared.path().join("oslab");
    let lib = format!(
        "OSLAB_WCALL_LIB={}",
        shared.path().join("liboslab_wcall.so").display()
    );
    let work = tempfile::tempdir().unwrap();
    std::fs::set_permissions(work.path(), std::fs::Permissions::from_mode(0o1777)).unwrap();
    let name = format!("rootd-{}", std::process::id());
    let daemon = start_daemon(&name, &["--no-cgroups"]);

    let listed = user
        .command(&bin, &[])
        .args(["wcall", "status", "--json", "-"])
        .output()
        .unwrap();
    let v: serde_json::Value = serde_json::from_slice(&listed.stdout).unwrap_or_default();
    assert!(
        v.as_array()
            .is_some_and(|a| a.iter().any(|g| g["name"] == name.as_str())),
        "the user sees root's daemon: {v} {}",
        stderr(&listed)
    );
    let out = work.path().join("u.dat");
    let script = format!(
        "dd if=/dev/zero of={} bs=64k count=100 status=none && sleep 2",
        out.display()
    );
    let run = user
        .command(&bin, &[&lib])
        .args(["wcall", "run", "--name", &name, "--group", "rt-high", "--"])
        .args(["sh", "-c", &script])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut run = Reaped(run);
    let start = Instant::now();
    let seen = loop {
        let s = status_of(&name);
        let mine: Vec<serde_json::Value> = s["processes"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|p| p["uid"] == user.uid)
            .cloned()
            .collect();
        if !mine.is_empty() || start.elapsed() > Duration::from_secs(5) {
            break mine;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    assert!(!seen.is_empty(), "the user's processes are governed");
    assert!(
        seen.iter().all(|p| p["group"] == "normal"),
        "rt-high asked by a user whose programs run SCHED_OTHER: {seen:?}"
    );
    let o = run.0.wait_with_output_ref();
    assert!(o.0.success(), "{}", o.1);
    assert!(
        o.1.contains(&format!("joining governor '{name}'")),
        "{}",
        o.1
    );
    assert!(o.1.contains("root's"), "{}", o.1);
    assert_eq!(std::fs::metadata(&out).unwrap().len(), 100 * 65536);
    stop(daemon);

    // without root's daemon the user runs a governor of its own, in a folder of
    // its own; root's status does not list it (another user's governor is not
    // root's to join)
    let own = user
        .command(&bin, &[&lib, "TMPDIR=/tmp"])
        .args(["wcall", "run", "--private", "--", "dd", "if=/dev/zero"])
        .arg(format!("of={}", out.display()))
        .args(["bs=64k", "count=10", "status=none"])
        .output()
        .unwrap();
    assert!(own.status.success(), "{}", stderr(&own));
    assert!(
        stderr(&own).contains("normal   10 writes (640 KiB)"),
        "{}",
        stderr(&own)
    );
    // the user's socket folder is private while a governor listens there, and goes
    // with its last socket
    let folder = PathBuf::from(format!("/tmp/oslab-wcall-{}", user.uid));
    let seen = user
        .command(&bin, &[&lib, "TMPDIR=/tmp"])
        .args(["wcall", "run", "--private", "--", "stat", "-c", "%a %U"])
        .arg(&folder)
        .output()
        .unwrap();
    assert!(seen.status.success(), "{}", stderr(&seen));
    assert_eq!(
        String::from_utf8_lossy(&seen.stdout).trim(),
        format!("700 {}", user.name)
    );
    assert!(!folder.exists(), "{} is left behind", folder.display());
}

trait WaitRef {
    fn wait_with_output_ref(&mut self) -> (std::process::ExitStatus, String);
}

impl WaitRef for std::process::Child {
    fn wait_with_output_ref(&mut self) -> (std::process::ExitStatus, String) {
        let mut err = String::new();
        if let Some(mut e) = self.stderr.take() {
            let _ = std::io::Read::read_to_string(&mut e, &mut err);
        }
        (self.wait().unwrap(), err)
    }
}
