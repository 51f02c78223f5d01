//! The governor against its own governed programs (issue 16, "Security of the
//! governor"): a program that resizes the shared table, descriptor numbers reused
//! behind the interposer's back, and a table written with pids and files that are
//! not the writer's. The C programs are compiled at test time from the sources
//! below.

mod common;

use std::os::fd::AsRawFd;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use oslab_wcall::shm::{FILE_FREE, FILE_READY, Mapped, NORMAL, RT_HIGH};

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

/// Opens the table the way a governed program does, then tries to resize it, and
/// watches the coordinator's heartbeat (at byte offset argv[1]) go on.
const TRUNCATE_C: &str = r#"
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <fcntl.h>
#include <unistd.h>

int main(int argc, char **argv) {
    const char *path = getenv("OSLAB_WCALL_SHM");
    if (!path || argc < 2) return 20;
    long heartbeat = atol(argv[1]);
    int fd = open(path, O_RDWR);
    if (fd < 0) return 21;
    struct stat st;
    if (fstat(fd, &st)) return 22;
    if (ftruncate(fd, 0) == 0) return 23;
    if (errno != EPERM) return 24;
    if (ftruncate(fd, st.st_size * 2) == 0) return 25;
    if (errno != EPERM) return 26;
    struct stat after;
    if (fstat(fd, &after) || after.st_size != st.st_size) return 27;
    char *m = mmap(0, st.st_size, PROT_READ, MAP_SHARED, fd, 0);
    if (m == MAP_FAILED) return 28;
    volatile uint64_t *beat = (volatile uint64_t *)(m + heartbeat);
    uint64_t first = *beat;
    for (int i = 0; i < 200 && *beat == first; i++) usleep(10000);
    if (*beat == first) return 29;
    return 0;
}
"#;

#[test]
fn a_governed_program_cannot_resize_the_table_and_the_coordinator_goes_on() {
    let dir = workdir();
    let exe = compile(dir.path(), "truncate", TRUNCATE_C);
    let heartbeat = std::mem::offset_of!(oslab_wcall::shm::Header, heartbeat_ns);
    // without cgroups: an oslab killed by SIGBUS (as before the seals) leaves none
    let o = oslab()
        .args([
            "wcall",
            "run",
            "--private",
            "--no-cgroups",
            "--group",
            "normal",
            "--",
        ])
        .arg(&exe)
        .arg(heartbeat.to_string())
        .output()
        .unwrap();
    // before the seals: ftruncate(0) worked (exit 23) and oslab died of SIGBUS
    assert_eq!(o.status.code(), Some(0), "{:?} {}", o.status, stderr(&o));
    assert!(stderr(&o).contains("oslab wcall: policy"), "{}", stderr(&o));
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

// libc is no dependency of this crate: the two open flags (x86-64 Linux values)
const O_NONBLOCK: i32 = 0o4000;
const O_PATH: i32 = 0o10000000;

fn mkfifo(path: &Path) {
    let ok = Command::new("mkfifo")
        .arg(path)
        .status()
        .is_ok_and(|s| s.success());
    assert!(ok, "mkfifo {}", path.display());
}

/// A child killed when the test ends, also when it fails: a daemon left behind
/// would hold the test's output open.
struct Reaped(std::process::Child);

impl Drop for Reaped {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn wait_for_governor(name: &str) -> oslab_wcall::service::Found {
    let start = Instant::now();
    loop {
        if let Some(f) = oslab_wcall::service::discover(&oslab_sys::fsread::Root::live())
            .into_iter()
            .find(|f| f.name == name)
        {
            return f;
        }
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "governor {name} did not show up"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn status_of(name: &str) -> serde_json::Value {
    let o = oslab()
        .args(["wcall", "status", "--json", "--name", name])
        .output()
        .unwrap();
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    v[0]["status"].clone()
}

/// A process that writes the table of a running daemon (as root, with cgroups
/// where the machine has them): a pid that is not governed, as rt-high, and files
/// it does not hold open for writing, one of them a FIFO that an open would wait
/// on for ever. The coordinator goes on passing, counts and moves nobody, and
/// opens nothing.
#[test]
fn a_daemon_acts_on_nothing_a_hostile_table_claims() {
    let dir = workdir();
    let name = format!("hostile-{}", std::process::id());
    let mut daemon = Reaped(
        oslab()
            .args(["wcall", "daemon", "--every", "0", "--name", &name])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    let found = wait_for_governor(&name);
    let view = Mapped::open(&found.path).unwrap();
    let t = view.table();

    // a process nobody governs, claimed as an rt-high writer
    let victim_out = std::fs::File::create(dir.path().join("victim-out")).unwrap();
    let victim = Reaped(
        Command::new("sleep")
            .arg("30")
            .stdout(victim_out.try_clone().unwrap())
            .spawn()
            .unwrap(),
    );
    let victim_pid = victim.0.id();
    let slot = t.claim_proc(victim_pid, RT_HIGH).unwrap();
    t.procs[slot]
        .last_write_ns
        .store(oslab_sys::clock::monotonic_ns(), Ordering::Relaxed);
    let register = |pid: u32, fd: i32, m: std::fs::Metadata| {
        assert!(t.register_file(m.dev(), m.ino(), NORMAL, pid, fd as u32));
    };
    // the victim's stdout, in its name
    register(victim_pid, 1, victim_out.metadata().unwrap());
    // a FIFO without a writer, and a file this process only names
    let fifo = dir.path().join("fifo");
    mkfifo(&fifo);
    let reader = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(O_NONBLOCK)
        .open(&fifo)
        .unwrap();
    register(
        std::process::id(),
        reader.as_raw_fd(),
        reader.metadata().unwrap(),
    );
    let named = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(O_PATH)
        .open("/etc/hostname")
        .unwrap();
    register(
        std::process::id(),
        named.as_raw_fd(),
        std::fs::metadata("/etc/hostname").unwrap(),
    );

    // every claim dropped, the coordinator still passing
    let start = Instant::now();
    let passes_then = t.header.passes.load(Ordering::Relaxed);
    loop {
        let open_claims = t
            .files
            .iter()
            .filter(|f| f.state.load(Ordering::Relaxed) == FILE_READY)
            .count();
        if open_claims == 0 && t.header.passes.load(Ordering::Relaxed) > passes_then + 5 {
            break;
        }
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "the coordinator stopped passing or kept a claim: {} passes, {open_claims} files",
            t.header.passes.load(Ordering::Relaxed)
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(
        t.files
            .iter()
            .all(|f| f.state.load(Ordering::Relaxed) == FILE_FREE)
    );
    let s = status_of(&name);
    assert!(s["coordinator_alive"].as_bool().unwrap(), "{s}");
    assert!(s["refused_entries"].as_u64().unwrap() >= 4, "{s}");
    assert_eq!(s["groups"][0]["group"], "rt-high");
    assert_eq!(s["groups"][0]["tasks"], 0, "the victim is no task: {s}");
    if common::is_root() && oslab_sys::memcg::own_cgroup(&oslab_sys::fsread::Root::live()).is_some()
    {
        assert!(
            s["groups"][0]["memcg_dirty_bytes"].is_u64(),
            "the daemon made its cgroups: {s}"
        );
    }
    let cgroup = std::fs::read_to_string(format!("/proc/{victim_pid}/cgroup")).unwrap();
    assert!(
        !cgroup.contains("oslab-wcall-"),
        "the victim was moved: {cgroup}"
    );

    drop(victim);
    // stopped as Ctrl-C would: it removes its cgroups itself
    let _ = Command::new("kill")
        .args(["-TERM", &daemon.0.id().to_string()])
        .status();
    let _ = daemon.0.wait();
    let r = oslab().arg("restore").output().unwrap();
    assert!(r.status.success(), "{}", stderr(&r));
}
