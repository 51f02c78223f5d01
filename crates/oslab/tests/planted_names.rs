//! Another user plants links and folders at the names oslab's temporary files
//! and folders would take (issue 27, item 1b), in a sticky folder everyone may
//! write, as /tmp is; with fs.protected_symlinks = 0 the kernel does not stop
//! root following them. oslab must create every temporary name fresh and
//! exclusively, with a name nobody can tell in advance (not the pid): the planted
//! things and what they point to stay untouched, and the run still succeeds (or
//! refuses in one sentence). As root the planted links belong to uid 4242, as
//! another user's would.

mod common;

use std::ffi::CString;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Output;

fn c(path: &Path) -> CString {
    CString::new(path.as_os_str().as_bytes()).unwrap()
}

fn oslab() -> std::process::Command {
    let mut c = common::oslab();
    c.env(
        "OSLAB_JOURNAL_DIR",
        common::journal_dir("oslab-planted-names"),
    );
    c
}

/// A folder every user may write into, sticky, like /tmp.
fn shared_folder(parent: &Path) -> PathBuf {
    let d = parent.join("shared");
    std::fs::create_dir(&d).unwrap();
    std::fs::set_permissions(&d, std::fs::Permissions::from_mode(0o1777)).unwrap();
    d
}

/// A symbolic link at `at` to `to`, as another user's where the test can make it so.
fn plant_link(at: &Path, to: &Path) {
    std::os::unix::fs::symlink(to, at).unwrap();
    if common::is_root() {
        // SAFETY: a NUL-terminated path; lchown has no memory effects.
        assert_eq!(unsafe { libc::lchown(c(at).as_ptr(), 4242, 4242) }, 0);
    }
}

/// The victim still holds what it held: nothing was written through a link.
fn untouched(victim: &Path) {
    let now = std::fs::read_to_string(victim).unwrap();
    assert!(
        now == "precious",
        "written through a planted link: {:.80}",
        now
    );
}

fn is_link_to(at: &Path, to: &Path) -> bool {
    std::fs::read_link(at).is_ok_and(|t| t == to)
}

/// The pids the kernel hands out next, as many as `n`.
fn next_pids(n: u32) -> Vec<u32> {
    let read = |f: &str| -> u32 { std::fs::read_to_string(f).unwrap().trim().parse().unwrap() };
    let (last, max) = (
        read("/proc/sys/kernel/ns_last_pid"),
        read("/proc/sys/kernel/pid_max"),
    );
    (1..=n)
        .map(|k| {
            let p = last + k;
            if p < max { p } else { 300 + (p - max) }
        })
        .collect()
}

fn names_in(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

/// The names created in a folder while it is watched (inotify).
struct Watch(std::fs::File);

impl Watch {
    fn new(dir: &Path) -> Watch {
        // SAFETY: plain system calls on a NUL-terminated path.
        let fd = unsafe { libc::inotify_init1(libc::IN_NONBLOCK | libc::IN_CLOEXEC) };
        assert!(fd >= 0);
        // SAFETY: as above.
        let wd = unsafe { libc::inotify_add_watch(fd, c(dir).as_ptr(), libc::IN_CREATE) };
        assert!(wd >= 0);
        // SAFETY: `fd` was just opened and is owned by nothing else.
        Watch(unsafe { <std::fs::File as std::os::fd::FromRawFd>::from_raw_fd(fd) })
    }

    fn created(mut self) -> Vec<String> {
        use std::io::Read;
        let mut names = Vec::new();
        let mut buf = vec![0u8; 1 << 16];
        while let Ok(n) = self.0.read(&mut buf) {
            let mut at = 0;
            while at + 16 <= n {
                let len = u32::from_ne_bytes(buf[at + 12..at + 16].try_into().unwrap()) as usize;
                let name = &buf[at + 16..at + 16 + len];
                let end = name.iter().position(|&b| b == 0).unwrap_or(len);
                names.push(String::from_utf8_lossy(&name[..end]).into_owned());
                at += 16 + len;
            }
        }
        names
    }
}

/// The names oslab made are not derived from its pid and carry at least 96
/// random bits (24 hex digits in a row).
fn unguessable(names: &[String], pid: u32) {
    assert!(!names.is_empty(), "no temporary name was seen");
    for n in names {
        assert!(
            !n.contains(&pid.to_string()),
            "{n} holds the pid {pid}: another user can plant it"
        );
        let longest_hex = n
            .split(|c: char| !c.is_ascii_hexdigit())
            .map(str::len)
            .max()
            .unwrap_or(0);
        assert!(longest_hex >= 24, "{n} has too little randomness");
    }
}

fn run(cmd: &mut std::process::Command) -> (u32, Output) {
    let child = cmd
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id();
    (pid, child.wait_with_output().unwrap())
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

#[test]
fn links_at_an_outputs_old_temporary_names_are_never_followed() {
    let d = tempfile::tempdir().unwrap();
    let shared = shared_folder(d.path());
    let victim = d.path().join("victim");
    std::fs::write(&victim, "precious").unwrap();
    let planted: Vec<PathBuf> = next_pids(3000)
        .into_iter()
        .map(|pid| shared.join(format!("out.json.tmp-{pid}")))
        .collect();
    for p in &planted {
        plant_link(p, &victim);
    }
    let out = shared.join("out.json");
    let watch = Watch::new(&shared);
    let (pid, o) = run(oslab().args(["run", "null", "--no-db", "--json"]).arg(&out));
    assert!(o.status.success(), "{}", stderr(&o));
    untouched(&victim);
    let m = std::fs::symlink_metadata(&out).unwrap();
    assert!(m.file_type().is_file(), "out.json is {:?}", m.file_type());
    let v: serde_json::Value = serde_json::from_slice(&std::fs::read(&out).unwrap()).unwrap();
    assert_eq!(common::experiment_ids(&v["results"]), ["null"]);
    assert!(planted.iter().all(|p| is_link_to(p, &victim)));
    let temporary: Vec<String> = watch
        .created()
        .into_iter()
        .filter(|n| n != "out.json")
        .collect();
    unguessable(&temporary, pid);
    assert_eq!(names_in(&shared).len(), planted.len() + 1, "nothing left");
}

/// io.read makes a scratch folder and a file in it, quickly.
fn read_run(scratch: &Path) -> (u32, Output) {
    run(oslab()
        .args(["run", "io.read", "--quick", "--set", "size=32MiB"])
        .args(["--repeat", "1", "--no-db", "--json", "-", "--scratch"])
        .arg(scratch))
}

fn completed(o: &Output) {
    assert!(o.status.success(), "{}", stderr(o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["results"][0]["status"]["state"], "completed", "{v}");
}

#[test]
fn links_and_folders_at_the_old_scratch_names_are_left_alone() {
    if !common::is_root() {
        eprintln!("skipped: needs root (io.read measures cold reads)");
        return;
    }
    let d = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let shared = shared_folder(d.path());
    let victim = d.path().join("victim");
    std::fs::create_dir(&victim).unwrap();
    std::fs::write(victim.join("canary"), "precious").unwrap();
    let names: Vec<PathBuf> = next_pids(3000)
        .into_iter()
        .map(|pid| shared.join(format!("oslab-{pid}-io-read")))
        .collect();
    for p in &names {
        plant_link(p, &victim);
    }
    let watch = Watch::new(&shared);
    let (pid, o) = read_run(&shared);
    completed(&o);
    assert_eq!(names_in(&victim), ["canary"]);
    assert!(names.iter().all(|p| is_link_to(p, &victim)));
    assert_eq!(names_in(&shared).len(), names.len(), "scratch left behind");
    unguessable(&watch.created(), pid);

    // folders this time, each with a file of its own that must survive
    for p in &names {
        std::fs::remove_file(p).unwrap();
    }
    let names: Vec<PathBuf> = next_pids(3000)
        .into_iter()
        .map(|pid| shared.join(format!("oslab-{pid}-io-read")))
        .collect();
    for p in &names {
        std::fs::create_dir(p).unwrap();
        std::fs::write(p.join("canary"), "theirs").unwrap();
    }
    let (_, o) = read_run(&shared);
    completed(&o);
    for p in &names {
        assert_eq!(names_in(p), ["canary"], "{}", p.display());
    }
    assert_eq!(names_in(&shared).len(), names.len(), "scratch left behind");
}

/// The raw file's name for a run started at `unix_s`, with `ext` for `json`.
fn raw_name(unix_s: u64, ext: &str) -> String {
    let stamp = oslab_sys::clock::rfc3339_utc(unix_s as f64).replace([':', '-', '.'], "");
    format!("null-{stamp}.raw.{ext}")
}

/// Names for the next minute of starts (and a few seconds back).
fn raw_names(dir: &Path, ext: &str) -> Vec<PathBuf> {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    (now - 3..now + 60)
        .map(|t| dir.join(raw_name(t, ext)))
        .collect()
}

fn save_raw(dir: &Path) -> Output {
    oslab()
        .args(["run", "null", "--no-db", "--save-raw"])
        .arg(dir)
        .output()
        .unwrap()
}

/// The raw files a run left (regular files whose name ends in .raw.json).
fn raw_files(dir: &Path) -> Vec<PathBuf> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.to_string_lossy().ends_with(".raw.json"))
        .filter(|p| std::fs::symlink_metadata(p).unwrap().is_file())
        .collect()
}

#[test]
fn links_and_folders_at_the_raw_files_temporary_name_are_left_alone() {
    let d = tempfile::tempdir().unwrap();
    let shared = shared_folder(d.path());
    let victim = d.path().join("victim");
    std::fs::write(&victim, "precious").unwrap();
    let planted = raw_names(&shared, "tmp");
    for p in &planted {
        plant_link(p, &victim);
    }
    let o = save_raw(&shared);
    assert!(o.status.success(), "{}", stderr(&o));
    untouched(&victim);
    assert!(planted.iter().all(|p| is_link_to(p, &victim)));
    assert_eq!(raw_files(&shared).len(), 1);
    for p in &planted {
        std::fs::remove_file(p).unwrap();
    }
    for p in raw_files(&shared) {
        std::fs::remove_file(p).unwrap();
    }

    let planted = raw_names(&shared, "tmp");
    for p in &planted {
        std::fs::create_dir(p).unwrap();
    }
    let o = save_raw(&shared);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(planted.iter().all(|p| names_in(p).is_empty()));
    assert_eq!(raw_files(&shared).len(), 1);
}

#[test]
fn a_link_of_another_user_at_the_raw_files_name_is_refused_in_one_sentence() {
    if !common::is_root() {
        eprintln!("skipped: needs root (a link owned by another uid)");
        return;
    }
    let d = tempfile::tempdir().unwrap();
    let shared = shared_folder(d.path());
    let victim = d.path().join("victim");
    std::fs::write(&victim, "precious").unwrap();
    for p in raw_names(&shared, "json") {
        plant_link(&p, &victim);
    }
    let o = save_raw(&shared);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let err = stderr(&o);
    assert_eq!(err.matches("oslab: ").count(), 1, "{err}");
    assert!(
        err.contains("is a symbolic link owned by uid 4242"),
        "{err}"
    );
    untouched(&victim);
}
