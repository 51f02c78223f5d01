//! What stands at an output's name decides how it is written, never whether it is
//! destroyed (issue 27, item 1): a device or FIFO is written through and stays
//! what it was, a file of another user keeps its owner and mode, a link another
//! user planted is refused, a block device is refused before any work, a full
//! device is a failure in one sentence, and so is a full standard output, while a
//! closed pipe stays quiet. Device nodes are private copies made with mknod in a
//! temporary folder, never the machine's own.

mod common;

use std::ffi::CString;
use std::io::Read;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{FileTypeExt, MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::{Output, Stdio};

fn c(path: &Path) -> CString {
    CString::new(path.as_os_str().as_bytes()).unwrap()
}

/// A device node `kind` (S_IFCHR, S_IFBLK) MAJOR:MINOR at `path` (needs root).
fn mknod(path: &Path, kind: libc::mode_t, major: u32, minor: u32) {
    // SAFETY: a NUL-terminated path; mknod has no memory effects.
    let rc = unsafe { libc::mknod(c(path).as_ptr(), kind | 0o666, libc::makedev(major, minor)) };
    assert_eq!(rc, 0, "mknod {}", path.display());
}

/// Gives `path` (a link itself, not what it points to) to `uid`.
fn lchown(path: &Path, uid: u32) {
    // SAFETY: a NUL-terminated path; lchown has no memory effects.
    assert_eq!(unsafe { libc::lchown(c(path).as_ptr(), uid, uid) }, 0);
}

fn skip_unless_root(why: &str) -> bool {
    if common::is_root() {
        return false;
    }
    eprintln!("skipped: needs root ({why})");
    true
}

fn oslab() -> std::process::Command {
    let mut c = common::oslab();
    c.env(
        "OSLAB_JOURNAL_DIR",
        common::journal_dir("oslab-output-targets"),
    );
    c
}

fn run_null(out_flag: &str, target: &Path) -> Output {
    oslab()
        .args(["run", "null", "--no-db", out_flag])
        .arg(target)
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Exactly one line on stderr, and it contains `text`.
fn one_sentence(o: &Output, text: &str) {
    let err = stderr(o);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains(text), "{err}");
}

fn rdev(path: &Path) -> (bool, bool, u64) {
    let m = std::fs::symlink_metadata(path).unwrap();
    (
        m.file_type().is_char_device(),
        m.file_type().is_block_device(),
        m.rdev(),
    )
}

#[test]
fn a_character_device_is_written_through_and_stays_a_device() {
    if skip_unless_root("mknod") {
        return;
    }
    let d = tempfile::tempdir().unwrap();
    let null = d.path().join("null");
    mknod(&null, libc::S_IFCHR, 1, 3);
    let before = rdev(&null);
    for flag in ["--json", "--html"] {
        let o = run_null(flag, &null);
        assert!(o.status.success(), "{flag}: {}", stderr(&o));
        assert_eq!(rdev(&null), before, "{flag} left the device in place");
    }
    let names: Vec<_> = std::fs::read_dir(d.path()).unwrap().collect();
    assert_eq!(names.len(), 1, "nothing written beside the device");
}

#[test]
fn a_fifo_gets_the_whole_document_once_and_stays_a_fifo() {
    let d = tempfile::tempdir().unwrap();
    let fifo = d.path().join("fifo");
    // SAFETY: a NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c(&fifo).as_ptr(), 0o600) }, 0);
    let reader = {
        let fifo = fifo.clone();
        std::thread::spawn(move || {
            let mut s = String::new();
            std::fs::File::open(fifo)
                .unwrap()
                .read_to_string(&mut s)
                .unwrap();
            s
        })
    };
    let o = run_null("--json", &fifo);
    assert!(o.status.success(), "{}", stderr(&o));
    let kind = std::fs::symlink_metadata(&fifo).unwrap().file_type();
    assert!(kind.is_fifo(), "the FIFO was replaced: {kind:?}");
    let text = reader.join().unwrap();
    let v: serde_json::Value = serde_json::from_str(&text).expect("one JSON document");
    assert_eq!(common::experiment_ids(&v["results"]), ["null"]);
}

/// A private /dev/full as root; the machine's own otherwise (where an ordinary
/// user cannot replace it).
fn full_device(d: &Path) -> PathBuf {
    if common::is_root() {
        let p = d.join("full");
        mknod(&p, libc::S_IFCHR, 1, 7);
        p
    } else {
        PathBuf::from("/dev/full")
    }
}

#[test]
fn a_full_device_is_a_runtime_failure_in_one_sentence() {
    let d = tempfile::tempdir().unwrap();
    let full = full_device(d.path());
    let before = rdev(&full);
    let said = format!(
        "oslab: cannot write {}: No space left on device",
        full.display()
    );
    for flag in ["--json", "--html"] {
        let o = run_null(flag, &full);
        assert_eq!(o.status.code(), Some(1), "{flag}: {}", stderr(&o));
        one_sentence(&o, &said);
        assert_eq!(rdev(&full), before);
    }
    let results = d.path().join("r.json");
    assert!(run_null("--json", &results).status.success());
    let o = oslab()
        .arg("report")
        .arg(&results)
        .arg("--html")
        .arg(&full)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    one_sentence(&o, &said);
}

#[test]
fn a_file_of_another_user_keeps_its_owner_and_mode() {
    if skip_unless_root("chown") {
        return;
    }
    let d = tempfile::tempdir().unwrap();
    let f = d.path().join("theirs.json");
    std::fs::write(&f, "{}").unwrap();
    std::fs::set_permissions(&f, std::fs::Permissions::from_mode(0o600)).unwrap();
    lchown(&f, 4242);
    let o = run_null("--json", &f);
    assert!(o.status.success(), "{}", stderr(&o));
    let m = std::fs::metadata(&f).unwrap();
    assert_eq!((m.uid(), m.gid()), (4242, 4242));
    assert_eq!(m.permissions().mode() & 0o7777, 0o600);
    let v: serde_json::Value = serde_json::from_slice(&std::fs::read(&f).unwrap()).unwrap();
    assert_eq!(common::experiment_ids(&v["results"]), ["null"]);
}

#[test]
fn a_link_planted_by_another_user_is_refused_before_any_work() {
    if skip_unless_root("a link owned by another uid") {
        return;
    }
    let d = tempfile::tempdir().unwrap();
    let victim = d.path().join("victim");
    std::fs::write(&victim, "precious").unwrap();
    let link = d.path().join("out.json");
    std::os::unix::fs::symlink(&victim, &link).unwrap();
    lchown(&link, 4242);
    for flag in ["--json", "--html"] {
        let o = run_null(flag, &link);
        assert_eq!(o.status.code(), Some(2), "{flag}: {}", stderr(&o));
        one_sentence(&o, "is a symbolic link owned by uid 4242");
        assert!(o.stdout.is_empty(), "refused before any work");
    }
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "precious");
    assert!(
        std::fs::symlink_metadata(&link)
            .unwrap()
            .file_type()
            .is_symlink()
    );
    // root's own link is followed: the file it names is written, the link stays
    lchown(&link, 0);
    let o = run_null("--json", &link);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        std::fs::read_to_string(&victim)
            .unwrap()
            .contains("\"null\"")
    );
    assert!(
        std::fs::symlink_metadata(&link)
            .unwrap()
            .file_type()
            .is_symlink()
    );
}

#[test]
fn a_block_device_is_refused_before_any_work() {
    if skip_unless_root("mknod") {
        return;
    }
    let d = tempfile::tempdir().unwrap();
    let block = d.path().join("sda");
    mknod(&block, libc::S_IFBLK, 7, 200);
    let before = rdev(&block);
    for flag in ["--json", "--html"] {
        let o = run_null(flag, &block);
        assert_eq!(o.status.code(), Some(2), "{flag}: {}", stderr(&o));
        one_sentence(&o, "is a block device");
        assert!(o.stdout.is_empty());
        assert_eq!(rdev(&block), before);
    }
}

#[test]
fn a_link_to_standard_output_works_like_a_dash() {
    let d = tempfile::tempdir().unwrap();
    let link = d.path().join("out");
    std::os::unix::fs::symlink("/proc/self/fd/1", &link).unwrap();
    let o = run_null("--json", &link);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("stdout is only JSON");
    assert_eq!(common::experiment_ids(&v["results"]), ["null"]);
    assert!(
        std::fs::symlink_metadata(&link)
            .unwrap()
            .file_type()
            .is_symlink()
    );
}

#[test]
fn an_explicit_database_in_a_missing_folder_is_a_usage_error_and_nothing_is_made() {
    let top = Path::new("/nonexistent-oslab-output-targets");
    let db = top.join("sub/x.db");
    let by_flag = oslab()
        .args(["run", "null", "--db"])
        .arg(&db)
        .output()
        .unwrap();
    let by_env = oslab()
        .env("OSLAB_DB", &db)
        .args(["run", "null"])
        .output()
        .unwrap();
    let made = top.exists();
    let _ = std::fs::remove_dir_all(top);
    assert!(!made, "a folder was made at the root of the file system");
    for o in [by_flag, by_env] {
        assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
        one_sentence(&o, "does not exist");
    }
}

fn to_full_stdout(args: &[&str]) -> Output {
    let full = std::fs::OpenOptions::new()
        .write(true)
        .open("/dev/full")
        .unwrap();
    oslab()
        .args(args)
        .stdout(Stdio::from(full))
        .output()
        .unwrap()
}

#[test]
fn a_full_standard_output_exits_1_in_one_sentence() {
    let d = tempfile::tempdir().unwrap();
    let raw = d.path().join("raw");
    let o = oslab()
        .args(["run", "null", "--no-db", "--save-raw"])
        .arg(&raw)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let raw_file = std::fs::read_dir(&raw)
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    let judge = ["judge", raw_file.to_str().unwrap(), "--json", "-"];
    for args in [
        &["info"][..],
        &["list"],
        &["man"],
        &["completions", "bash"],
        &["run", "null", "--no-db", "--json", "-"],
        &judge,
        &["--help"],
    ] {
        let o = to_full_stdout(args);
        assert_eq!(o.status.code(), Some(1), "{args:?}: {}", stderr(&o));
        one_sentence(
            &o,
            "oslab: cannot write standard output: No space left on device",
        );
    }
}

#[test]
fn a_closed_pipe_ends_quietly() {
    for args in [&["list"][..], &["man"], &["completions", "zsh"]] {
        let mut child = oslab()
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        // the reading end closes before oslab writes, as `| head -0` would
        drop(child.stdout.take());
        let o = child.wait_with_output().unwrap();
        assert_eq!(o.status.code(), Some(0), "{args:?}: {}", stderr(&o));
        assert!(o.stderr.is_empty(), "{args:?}: {}", stderr(&o));
    }
}

#[test]
fn a_database_or_data_folder_reached_through_another_users_link_is_not_used() {
    if skip_unless_root("links owned by another uid") {
        return;
    }
    let d = tempfile::tempdir().unwrap();
    let elsewhere = d.path().join("elsewhere");
    std::fs::create_dir(&elsewhere).unwrap();
    let db_link = d.path().join("x.db");
    std::os::unix::fs::symlink(elsewhere.join("x.db"), &db_link).unwrap();
    lchown(&db_link, 4242);
    let o = oslab()
        .args(["run", "null", "--db"])
        .arg(&db_link)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    one_sentence(&o, "is a symbolic link owned by uid 4242");
    // the default database: its folder planted as a link to somewhere else
    let home = d.path().join("home");
    std::fs::create_dir_all(home.join(".local/share")).unwrap();
    let data = home.join(".local/share/oslab");
    std::os::unix::fs::symlink(&elsewhere, &data).unwrap();
    lchown(&data, 4242);
    let o = oslab()
        .env_remove("OSLAB_DB")
        .env_remove("XDG_DATA_HOME")
        .env("HOME", &home)
        .args(["run", "null"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("results are not kept"),
        "{}",
        stderr(&o)
    );
    assert!(std::fs::read_dir(&elsewhere).unwrap().next().is_none());
}

#[test]
fn manual_pages_are_never_written_through_a_planted_link() {
    if skip_unless_root("a link owned by another uid") {
        return;
    }
    let d = tempfile::tempdir().unwrap();
    let victim = d.path().join("victim");
    std::fs::write(&victim, "precious").unwrap();
    let dir = d.path().join("man1");
    std::fs::create_dir(&dir).unwrap();
    let link = dir.join("oslab-run.1");
    std::os::unix::fs::symlink(&victim, &link).unwrap();
    lchown(&link, 4242);
    let o = oslab().args(["man", "--dir"]).arg(&dir).output().unwrap();
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    one_sentence(&o, "is a symbolic link owned by uid 4242");
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "precious");
}
