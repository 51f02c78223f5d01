//! Another user (uid 65534, as the trust issue's tester played it) against root's
//! paths, with the kernel's own protections (fs.protected_symlinks, _fifos,
//! _regular) turned off through the journal, so that what stops each attack is
//! oslab's rule (docs/architecture.md, "Paths another user can touch"):
//!
//! - a library or program root hands to the loader or exec by path is taken only
//!   where every folder and link on the path is root's (attack 1: a `deps` link
//!   swapped after the check);
//! - a database is opened only in a folder chain that only root or the caller can
//!   change, and no folder is made for it by path (attack 6);
//! - a FIFO or device at an output is used only when root or the caller owns it,
//!   and opened without waiting (attack 8);
//! - an input follows no link of another user's and is never a file of the
//!   kernel's interfaces (attack 9).
//!
//! Each test fails on the code before these rules (said in its comment).

// A test here tells one scenario from start to end: longer than 80 lines.
#![allow(clippy::too_many_lines)]

mod common;

use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use common::attacker::{
    NOBODY, ProtectionsOff, as_nobody, nobody_sh, reachable_tempdir, sticky_folder,
};

const ONE_RESULT: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../store/tests/fixtures/null-result.json"
);
const RAW: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../lab/tests/fixtures/raw/cpu.syscall.raw.json"
);

fn journal() -> PathBuf {
    common::journal_dir("trust-paths")
}

fn oslab() -> Command {
    common::oslab_journaled(&journal())
}

fn skip_unless_root() -> bool {
    if common::is_root() {
        return false;
    }
    eprintln!("skipped: needs root (to play root against another user)");
    true
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Gives `path` (not what a link points to) to nobody.
fn give_to_nobody(path: &Path) {
    let c = std::ffi::CString::new(path.as_os_str().as_encoded_bytes()).unwrap();
    // SAFETY: a NUL-terminated path; lchown has no memory effects.
    assert_eq!(unsafe { libc::lchown(c.as_ptr(), NOBODY, NOBODY) }, 0);
}

/// A folder of nobody's at `path` (mode 0755).
fn nobodys_folder(path: &Path) -> PathBuf {
    std::fs::create_dir(path).unwrap();
    give_to_nobody(path);
    path.to_path_buf()
}

/// Waits for `child` at most `limit`; None (and the child killed) if it was
/// still running: a hang is what the attack made.
fn wait_at_most(child: &mut Child, limit: Duration) -> Option<std::process::ExitStatus> {
    let start = Instant::now();
    loop {
        if let Some(s) = child.try_wait().unwrap() {
            return Some(s);
        }
        if start.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            return None;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn wait_for(path: &Path) {
    let start = Instant::now();
    while !path.exists() {
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "{} never appeared",
            path.display()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Attack 1: root runs a copy of oslab from a sticky folder where another user
/// keeps a `deps` link to a folder holding a genuine, root-owned interposer;
/// once the governed program runs, the user points `deps` at their own library,
/// and every program the governed one starts would load it as root. Before the
/// rule, oslab checked the library through the link and handed
/// `<folder>/deps/liboslab_wcall.so` to the loader: the user's constructor ran
/// as uid 0. Now a library found through another user's link is passed over.
#[test]
fn a_library_beside_the_binary_reached_through_another_users_link_is_never_loaded() {
    if skip_unless_root() {
        return;
    }
    let _off = ProtectionsOff::new(&journal());
    let (_t, base) = reachable_tempdir();
    let public = sticky_folder(&base, "pub");
    let exe = public.join("oslab");
    std::fs::copy(env!("CARGO_BIN_EXE_oslab"), &exe).unwrap();
    std::fs::set_permissions(&exe, std::fs::Permissions::from_mode(0o755)).unwrap();
    let genuine = base.join("genuine");
    std::fs::create_dir(&genuine).unwrap();
    std::fs::copy(common::preload_lib(), genuine.join("liboslab_wcall.so")).unwrap();
    std::fs::set_permissions(
        genuine.join("liboslab_wcall.so"),
        std::fs::Permissions::from_mode(0o644),
    )
    .unwrap();
    // the user's own library, whose constructor marks who ran it
    let mark = base.join("marks");
    std::fs::create_dir(&mark).unwrap();
    std::fs::set_permissions(&mark, std::fs::Permissions::from_mode(0o777)).unwrap();
    let marked = mark.join("ran");
    let mine = public.join("mine");
    nobody_sh(&format!("mkdir {}", mine.display()));
    let evil = base.join("evil.so");
    assert!(
        common::compile_c(
            "evil_preload.c",
            &evil,
            &[
                "-shared",
                "-fPIC",
                &format!("-DMARK=\"{}\"", marked.display())
            ]
        ),
        "cc builds the user's library"
    );
    nobody_sh(&format!(
        "cp {} {}/liboslab_wcall.so && ln -s {} {}/deps",
        evil.display(),
        mine.display(),
        genuine.display(),
        public.display()
    ));
    let (started, go, seen) = (base.join("started"), base.join("go"), base.join("preload"));
    let script = format!(
        "echo \"$LD_PRELOAD\" > {seen}; touch {started}; while [ ! -e {go} ]; do sleep 0.05; done; exec /bin/true",
        seen = seen.display(),
        started = started.display(),
        go = go.display()
    );
    let mut root = Command::new(&exe)
        .env("OSLAB_JOURNAL_DIR", journal())
        .env_remove("OSLAB_WCALL_LIB")
        .args([
            "wcall",
            "run",
            "--private",
            "--no-cgroups",
            "--",
            "sh",
            "-c",
        ])
        .arg(&script)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    wait_for(&started);
    // the swap, as the user made it after oslab's check
    nobody_sh(&format!(
        "ln -s {mine} {p}/deps.new && mv -T {p}/deps.new {p}/deps",
        mine = mine.display(),
        p = public.display()
    ));
    std::fs::write(&go, "").unwrap();
    let status = wait_at_most(&mut root, Duration::from_secs(120)).expect("oslab ended");
    let mut err = String::new();
    std::io::Read::read_to_string(&mut root.stderr.take().unwrap(), &mut err).unwrap();
    assert!(status.success(), "{err}");
    assert!(
        !marked.exists(),
        "the other user's library ran: {}",
        std::fs::read_to_string(&marked).unwrap_or_default()
    );
    let preload = std::fs::read_to_string(&seen).unwrap();
    assert!(
        !preload.contains(public.to_str().unwrap()),
        "LD_PRELOAD names the shared folder: {preload}"
    );
    // named outright, it is refused with the reason
    let o = Command::new(&exe)
        .env("OSLAB_JOURNAL_DIR", journal())
        .env("OSLAB_WCALL_LIB", public.join("deps/liboslab_wcall.so"))
        .args([
            "wcall",
            "run",
            "--private",
            "--no-cgroups",
            "--",
            "/bin/true",
        ])
        .output()
        .unwrap();
    assert!(!o.status.success());
    let e = stderr(&o);
    assert!(e.contains("symbolic link owned by uid 65534"), "{e}");
    assert!(!marked.exists());
}

/// Attack 6: while root keeps importing into `--db pub/u/sub/x.db`, the user
/// swaps their folder `u` with a link to a folder of root's. Before the rule,
/// the check saw the user's folder and SQLite's open, by path, made `sub/` and
/// `x.db` in root's folder. Now a database is used only in a folder chain that
/// only root (or the caller) can change: every try is refused, and nothing is
/// made in root's folder.
#[test]
fn a_database_is_never_made_through_another_users_folders() {
    if skip_unless_root() {
        return;
    }
    let _off = ProtectionsOff::new(&journal());
    let (_t, base) = reachable_tempdir();
    let public = nobodys_folder(&base.join("pub"));
    let roots = base.join("roots");
    std::fs::create_dir(&roots).unwrap();
    let exchange = base.join("exchange");
    assert!(common::compile_c("exchange.c", &exchange, &[]));
    nobody_sh(&format!(
        "mkdir -p {p}/u/sub && ln -s {r} {p}/ulink",
        p = public.display(),
        r = roots.display()
    ));
    let mut swapper = as_nobody(exchange.to_str().unwrap())
        .arg(public.join("u"))
        .arg(public.join("ulink"))
        .spawn()
        .unwrap();
    let db = public.join("u/sub/x.db");
    let mut refused = 0;
    for _ in 0..150 {
        let o = oslab()
            .args(["import", ONE_RESULT, "--db"])
            .arg(&db)
            .output()
            .unwrap();
        if !o.status.success() {
            let e = stderr(&o);
            assert_eq!(o.status.code(), Some(2), "{e}");
            assert!(!e.contains("panicked"), "{e}");
            refused += 1;
        }
        if roots.join("sub").exists() {
            break;
        }
    }
    let _ = swapper.kill();
    let _ = swapper.wait();
    let made: Vec<_> = std::fs::read_dir(&roots)
        .unwrap()
        .flatten()
        .map(|e| e.file_name())
        .collect();
    assert!(made.is_empty(), "made in root's folder: {made:?}");
    assert_eq!(refused, 150, "every try is refused");
    // the reason, without the race: the user's folder on the way
    let o = oslab()
        .args(["import", ONE_RESULT, "--db"])
        .arg(public.join("x.db"))
        .output()
        .unwrap();
    let e = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{e}");
    assert!(e.contains("is owned by uid 65534"), "{e}");
    // a sticky folder every user writes is no place for one either: SQLite
    // makes its -wal and -shm files there by name
    let shared = sticky_folder(&base, "shared");
    let o = oslab()
        .args(["import", ONE_RESULT, "--db"])
        .arg(shared.join("x.db"))
        .output()
        .unwrap();
    assert!(
        stderr(&o).contains("files are made in it by name"),
        "{}",
        stderr(&o)
    );
    // root's own folder works as ever
    let o = oslab()
        .args(["import", ONE_RESULT, "--db"])
        .arg(roots.join("mine.db"))
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
}

/// `oslab judge RAW --json OUTPUT`, given a minute: its status (None if it
/// still waited) and its standard error.
fn judge_into(output: &Path) -> (Option<std::process::ExitStatus>, String) {
    let mut judge = oslab()
        .args(["judge", RAW, "--json"])
        .arg(output)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let status = wait_at_most(&mut judge, Duration::from_secs(60));
    let mut err = String::new();
    std::io::Read::read_to_string(&mut judge.stderr.take().unwrap(), &mut err).unwrap();
    (status, err)
}

/// Attack 8: the user makes a FIFO at the name root's `oslab judge RAW --json`
/// writes. Before the rule, root opened it for writing and waited for a reader
/// for ever. Now a FIFO of another user's is refused at once, and root's own
/// FIFO that nobody reads is refused rather than waited on.
#[test]
fn a_fifo_at_an_output_never_holds_root() {
    if skip_unless_root() {
        return;
    }
    let _off = ProtectionsOff::new(&journal());
    let (_t, base) = reachable_tempdir();
    let public = sticky_folder(&base, "pub");
    let fifo = public.join("f.json");
    nobody_sh(&format!("mkfifo -m 666 {}", fifo.display()));
    let (status, err) = judge_into(&fifo);
    let status = status.expect("oslab judge waited on another user's FIFO");
    assert_eq!(status.code(), Some(2), "{err}");
    assert!(err.contains("a FIFO owned by uid 65534"), "{err}");
    // root's own FIFO with no reader: refused at once, not waited on
    let own = base.join("own.json");
    assert!(Command::new("mkfifo").arg(&own).status().unwrap().success());
    let (status, err) = judge_into(&own);
    assert!(
        status.is_some(),
        "oslab judge waited on a FIFO nobody reads"
    );
    assert!(err.contains("nobody reads from"), "{err}");
}

/// Attack 9: the user's link `x.raw.json` -> /proc/self/pagemap. Before the
/// rule, root's `oslab judge` followed it and read up to its 1 GiB input bound
/// of root's own page map. Now an input follows no link of another user's (one
/// to /etc/shadow never shows a line of it), and no file of the kernel's
/// interfaces is an input, whoever's link leads there.
#[test]
fn an_input_follows_no_link_of_another_user_and_is_never_a_kernel_file() {
    if skip_unless_root() {
        return;
    }
    let _off = ProtectionsOff::new(&journal());
    let (_t, base) = reachable_tempdir();
    let public = sticky_folder(&base, "pub");
    for (name, to) in [
        ("x.raw.json", "/proc/self/pagemap"),
        ("s.raw.json", "/etc/shadow"),
    ] {
        nobody_sh(&format!("ln -s {to} {}/{name}", public.display()));
        let link = public.join(name);
        let o = oslab().arg("judge").arg(&link).output().unwrap();
        let e = stderr(&o);
        assert_eq!(o.status.code(), Some(2), "{e}");
        assert!(e.contains("symbolic link owned by uid 65534"), "{e}");
        assert!(!e.contains("root:"), "{e}");
        assert_eq!(std::fs::symlink_metadata(&link).unwrap().uid(), NOBODY);
    }
    // root's own link, or the path itself: still no kernel file
    let own = base.join("own.raw.json");
    std::os::unix::fs::symlink("/proc/self/pagemap", &own).unwrap();
    for input in [
        own.as_path(),
        Path::new("/proc/self/status"),
        Path::new("/sys/kernel/mm/transparent_hugepage/enabled"),
    ] {
        if !input.exists() {
            continue;
        }
        let o = oslab().arg("judge").arg(input).output().unwrap();
        let e = stderr(&o);
        assert_eq!(o.status.code(), Some(2), "{e}");
        assert!(e.contains("is a file of the kernel's"), "{e}");
    }
}
