//! Another local user plants a journal where oslab looks for one (issue 27, item 2).
//!
//! User A makes /tmp/oslab-UID_B first, with a journal that would remove one of
//! B's files and overwrite another. B, who has no XDG_RUNTIME_DIR, runs `oslab
//! info` and `oslab restore`: the folder is refused with one sentence naming its
//! owner, B's files are untouched, and restore exits 1. B is not locked out: a
//! later run of B's keeps its journal in a fresh private folder, and `oslab
//! restore` finds it there after a kill -9.
//!
//! Needs root (to make the two users, removed again even when the test fails) and
//! setpriv (util-linux); skipped with the reason otherwise.

// A test here tells one scenario from start to end: longer than 80 lines.
#![allow(clippy::too_many_lines)]

mod common;

use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

struct User {
    name: String,
    uid: u32,
    gid: u32,
}

/// The test's users and what it made in /tmp, removed when dropped (also on panic).
#[derive(Default)]
struct Cleanup {
    users: Vec<String>,
    dirs: Vec<PathBuf>,
    children: Vec<Child>,
    /// Folders in /tmp whose names start with this are removed too, unless
    /// they were there before the test (someone else's).
    prefix: Option<String>,
    before: Vec<std::ffi::OsString>,
}

impl Cleanup {
    /// Removes, when dropped, the folders in /tmp named `prefix...` that the
    /// test makes.
    fn remove_new(&mut self, prefix: String) {
        self.before = std::fs::read_dir("/tmp")
            .unwrap()
            .flatten()
            .map(|e| e.file_name())
            .collect();
        self.prefix = Some(prefix);
    }
}

impl Drop for Cleanup {
    fn drop(&mut self) {
        for c in &mut self.children {
            let _ = c.kill();
            let _ = c.wait();
        }
        for d in &self.dirs {
            let _ = std::fs::remove_dir_all(d);
        }
        if let (Some(prefix), Ok(rd)) = (&self.prefix, std::fs::read_dir("/tmp")) {
            for e in rd.flatten() {
                let name = e.file_name();
                if name.to_string_lossy().starts_with(prefix.as_str())
                    && !self.before.contains(&name)
                {
                    let _ = std::fs::remove_dir_all(e.path());
                }
            }
        }
        for u in &self.users {
            let _ = Command::new("userdel").arg(u).output();
        }
    }
}

fn id_of(name: &str, flag: &str) -> u32 {
    let out = Command::new("id").args([flag, name]).output().unwrap();
    String::from_utf8_lossy(&out.stdout).trim().parse().unwrap()
}

fn add_user(name: &str, cleanup: &mut Cleanup) -> User {
    let out = Command::new("useradd")
        .args(["--no-create-home", "--no-user-group", "--shell", "/bin/sh"])
        .arg(name)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "useradd {name}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    cleanup.users.push(name.to_string());
    User {
        name: name.to_string(),
        uid: id_of(name, "-u"),
        gid: id_of(name, "-g"),
    }
}

/// `program` as `u`, with only HOME, PATH and TMPDIR=/tmp set (no XDG_RUNTIME_DIR,
/// no OSLAB_JOURNAL_DIR): the defaults of a user on a shared machine.
fn as_user(u: &User, home: &Path, program: &Path) -> Command {
    let mut c = Command::new("setpriv");
    c.arg(format!("--reuid={}", u.uid))
        .arg(format!("--regid={}", u.gid))
        .args(["--clear-groups", "--"])
        .arg(program)
        .env_clear()
        .env("HOME", home)
        .env("TMPDIR", "/tmp")
        .env("PATH", std::env::var_os("PATH").unwrap_or_default());
    c
}

/// The oslab binary where both users can run it: the build's own when every
/// folder above it lets others in, else a copy in a folder of mode 0755.
fn reachable_oslab(cleanup: &mut Cleanup) -> PathBuf {
    let built = assert_cmd::cargo::cargo_bin("oslab");
    let open_to_all = built.ancestors().skip(1).all(|d| {
        d.as_os_str().is_empty()
            || std::fs::metadata(d).is_ok_and(|m| m.permissions().mode() & 0o001 != 0)
    });
    if open_to_all {
        return built;
    }
    let dir = tempfile::Builder::new()
        .prefix("oslabt-bin-")
        .tempdir()
        .unwrap()
        .keep();
    cleanup.dirs.push(dir.clone());
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).unwrap();
    let copy = dir.join("oslab");
    std::fs::copy(&built, &copy).unwrap();
    std::fs::set_permissions(&copy, std::fs::Permissions::from_mode(0o755)).unwrap();
    copy
}

/// A folder of `u`'s own, mode 0700, in /tmp.
fn private_home(u: &User, cleanup: &mut Cleanup) -> PathBuf {
    let d = tempfile::Builder::new()
        .prefix("oslabt-home-")
        .tempdir()
        .unwrap()
        .keep();
    cleanup.dirs.push(d.clone());
    std::os::unix::fs::chown(&d, Some(u.uid), Some(u.gid)).unwrap();
    d
}

fn text(out: &Output) -> (String, String) {
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// A's journal: pid 999999 (no such process), removing `keep` and writing into `conf`.
fn planted_journal(keep: &Path, conf: &Path) -> String {
    let header = r#"{"oslab_journal":1,"pid":999999,"start_time":1,"command":"oslab run x"}"#;
    let remove = serde_json::json!({
        "seq": 1, "description": "scratch", "undo": {"kind": "remove_path", "path": keep}
    });
    let write = serde_json::json!({
        "seq": 2, "description": "knob",
        "undo": {"kind": "write_file", "path": conf, "contents": "planted"}
    });
    format!("{header}\n{remove}\n{write}\n")
}

fn plant(a: &User, folder: &Path, journal: &str) {
    let mut c = as_user(a, Path::new("/"), Path::new("/bin/sh"));
    c.args([
        "-c",
        "umask 022 && mkdir \"$1\" && cat > \"$1/journal-999999.jsonl\"",
        "sh",
    ])
    .arg(folder)
    .stdin(Stdio::piped());
    let mut child = c.spawn().unwrap();
    use std::io::Write;
    child
        .stdin
        .take()
        .unwrap()
        .write_all(journal.as_bytes())
        .unwrap();
    assert!(child.wait().unwrap().success(), "A could not plant");
}

/// B's journals in the private folders oslab made for B: `oslab-UID-journals-HEX`.
fn private_journals(b: &User) -> Vec<PathBuf> {
    let prefix = format!("oslab-{}-journals-", b.uid);
    let mut found = Vec::new();
    for e in std::fs::read_dir("/tmp").unwrap().flatten() {
        if !e.file_name().to_string_lossy().starts_with(&prefix) {
            continue;
        }
        for j in std::fs::read_dir(e.path()).into_iter().flatten().flatten() {
            if j.file_name().to_string_lossy().starts_with("journal-") {
                found.push(j.path());
            }
        }
    }
    found
}

#[test]
fn a_journal_planted_by_another_user_is_refused_and_the_victim_is_not_locked_out() {
    if !common::is_root() {
        eprintln!("skipped: making two test users needs root");
        return;
    }
    for tool in ["useradd", "userdel", "setpriv"] {
        if Command::new(tool).arg("--help").output().is_err() {
            eprintln!("skipped: {tool} is not installed");
            return;
        }
    }
    let mut cleanup = Cleanup::default();
    let pid = std::process::id();
    let a = add_user(&format!("oslabt-a-{pid}"), &mut cleanup);
    let b = add_user(&format!("oslabt-b-{pid}"), &mut cleanup);
    let planted_folder = PathBuf::from(format!("/tmp/oslab-{}", b.uid));
    // a uid can come back after userdel; what an earlier user of it left is
    // not this test's to remove
    if std::fs::symlink_metadata(&planted_folder).is_ok() {
        eprintln!(
            "skipped: {} is there already (an earlier user of uid {})",
            planted_folder.display(),
            b.uid
        );
        return;
    }
    cleanup.remove_new(format!("oslab-{}-journals-", b.uid));
    let oslab = reachable_oslab(&mut cleanup);
    let home = private_home(&b, &mut cleanup);
    let keep = home.join("keep.txt");
    let conf = home.join("conf.txt");
    for (f, t) in [(&keep, "B's notes"), (&conf, "original")] {
        std::fs::write(f, t).unwrap();
        std::os::unix::fs::chown(f, Some(b.uid), Some(b.gid)).unwrap();
    }
    cleanup.dirs.push(planted_folder.clone());
    plant(&a, &planted_folder, &planted_journal(&keep, &conf));
    let untouched = || {
        assert_eq!(std::fs::read_to_string(&keep).unwrap(), "B's notes");
        assert_eq!(std::fs::read_to_string(&conf).unwrap(), "original");
    };
    let owner_named = format!(
        "{} is owned by uid {} ({})",
        planted_folder.display(),
        a.uid,
        a.name
    );

    let info = as_user(&b, &home, &oslab).arg("info").output().unwrap();
    let (_, err) = text(&info);
    assert_eq!(info.status.code(), Some(0), "{err}");
    assert!(err.contains(&owner_named), "{err}");
    assert!(!err.contains("interrupted"), "{err}");
    untouched();

    let restore = as_user(&b, &home, &oslab).arg("restore").output().unwrap();
    let (out, err) = text(&restore);
    assert_eq!(restore.status.code(), Some(1), "{out}{err}");
    assert!(err.contains(&owner_named), "{err}");
    untouched();
    assert!(planted_folder.join("journal-999999.jsonl").exists());

    // B's own run, killed: its journal is in a private folder restore finds
    let run = as_user(&b, &home, &oslab)
        .args(["run", "io.write", "--quick", "--json", "-"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    cleanup.children.push(run);
    let t = Instant::now();
    let journal = loop {
        if let Some(j) = private_journals(&b).into_iter().next() {
            break j;
        }
        assert!(
            t.elapsed() < Duration::from_secs(120),
            "no journal appeared in a private folder of B's"
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    let run = cleanup.children.last_mut().unwrap();
    run.kill().unwrap();
    run.wait().unwrap();
    let folder = journal.parent().unwrap();
    let m = std::fs::symlink_metadata(folder).unwrap();
    assert!(m.is_dir());
    assert_eq!(m.uid(), b.uid);
    assert_eq!(m.permissions().mode() & 0o7777, 0o700);
    let random = folder
        .file_name()
        .unwrap()
        .to_string_lossy()
        .rsplit('-')
        .next()
        .unwrap()
        .to_string();
    assert!(
        random.len() >= 16 && random.chars().all(|c| c.is_ascii_hexdigit()),
        "{}",
        folder.display()
    );
    assert!(journal.exists(), "kill -9 leaves the journal");

    let info = as_user(&b, &home, &oslab).arg("info").output().unwrap();
    let (_, err) = text(&info);
    assert!(
        err.contains("an interrupted oslab run left changes"),
        "{err}"
    );
    let restore = as_user(&b, &home, &oslab).arg("restore").output().unwrap();
    let (out, err) = text(&restore);
    assert!(out.contains("undone: scratch directory"), "{out}{err}");
    // the planted folder is still there, and still refused
    assert_eq!(restore.status.code(), Some(1), "{out}{err}");
    assert!(!journal.exists(), "{out}{err}");
    untouched();
}
