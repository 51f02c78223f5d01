//! `oslab wcall interposer --write FILE`: the interposer the binary carries,
//! installed for services that preload it by path. It is written as root where
//! a user named, so FILE is untrusted: what another user planted at the name or
//! on the way never receives it, and what is written is the caller's, mode
//! 0644, in folders nobody else can change. Device nodes are private copies made
//! with mknod in a temporary folder, never the machine's own.

mod common;

use std::ffi::CString;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{FileTypeExt, MetadataExt, PermissionsExt};
use std::path::Path;
use std::process::Output;

fn c(path: &Path) -> CString {
    CString::new(path.as_os_str().as_bytes()).unwrap()
}

/// Gives `path` (a link itself, not what it points to) to `uid`.
fn lchown(path: &Path, uid: u32) {
    // SAFETY: a NUL-terminated path; lchown has no memory effects.
    assert_eq!(unsafe { libc::lchown(c(path).as_ptr(), uid, uid) }, 0);
}

/// A device node `kind` (S_IFCHR, S_IFBLK) MAJOR:MINOR at `path` (needs root).
fn mknod(path: &Path, kind: libc::mode_t, major: u32, minor: u32) {
    // SAFETY: a NUL-terminated path; mknod has no memory effects.
    let rc = unsafe { libc::mknod(c(path).as_ptr(), kind | 0o666, libc::makedev(major, minor)) };
    assert_eq!(rc, 0, "mknod {}", path.display());
}

/// `oslab wcall interposer --write FILE` under umask 077, which must not narrow
/// the file's mode.
fn install(file: &Path) -> Output {
    let mut cmd = std::process::Command::new("sh");
    cmd.arg("-c")
        .arg(r#"umask 077; exec "$0" wcall interposer --write "$1""#)
        .arg(env!("CARGO_BIN_EXE_oslab"))
        .arg(file)
        .env(
            "OSLAB_JOURNAL_DIR",
            common::journal_dir("oslab-wcall-interposer"),
        );
    cmd.output().unwrap()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Refused before anything is written: exit 2 and one sentence that names FILE.
fn refused(o: &Output, file: &Path, why: &str) {
    let err = stderr(o);
    assert_eq!(o.status.code(), Some(2), "{}: {err}", file.display());
    assert_eq!(err.lines().count(), 1, "one sentence: {err}");
    assert!(
        err.contains(&format!(
            "cannot install the interposer at {}",
            file.display()
        )) && err.contains(why),
        "{err}"
    );
}

/// What the folder holds besides `keep`: nothing was left beside a refusal.
fn others_in(dir: &Path, keep: &[&str]) -> Vec<String> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| !keep.contains(&n.as_str()))
        .collect()
}

#[test]
fn the_interposer_written_out_is_the_carried_one_and_loads() {
    let d = tempfile::tempdir().unwrap();
    // missing folders are made, as `install -D` makes them
    let file = d.path().join("lib/oslab/liboslab_wcall.so");
    let o = install(&file);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        stderr(&o).starts_with("oslab: wrote the interposer ("),
        "{}",
        stderr(&o)
    );
    let carried = oslab_wcall::embedded::bytes();
    assert_eq!(std::fs::read(&file).unwrap(), carried, "the carried bytes");
    let m = std::fs::symlink_metadata(&file).unwrap();
    assert!(m.is_file());
    assert_eq!(
        m.mode() & 0o7777,
        0o644,
        "every user may load it, whatever the umask"
    );
    // SAFETY: geteuid cannot fail.
    assert_eq!(m.uid(), unsafe { libc::geteuid() });
    // the dynamic loader takes it (inert without a governor's socket): mapped
    // into the program, which runs as ever
    let run = std::process::Command::new("cat")
        .arg("/proc/self/maps")
        .env("LD_PRELOAD", &file)
        .env_remove("OSLAB_WCALL_SOCK")
        .output()
        .unwrap();
    assert!(run.status.success(), "{}", stderr(&run));
    assert!(stderr(&run).is_empty(), "the loader said: {}", stderr(&run));
    let maps = String::from_utf8_lossy(&run.stdout);
    assert!(
        maps.contains(&file.display().to_string()),
        "the library is mapped: {maps}"
    );
    // written again over a file that was there: replaced whole, the caller's
    std::fs::write(&file, b"old").unwrap();
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o666)).unwrap();
    if common::is_root() {
        lchown(&file, 65534);
    }
    let o = install(&file);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(std::fs::read(&file).unwrap(), carried);
    let m = std::fs::symlink_metadata(&file).unwrap();
    assert_eq!(m.mode() & 0o7777, 0o644, "not the old file's mode");
    // SAFETY: geteuid cannot fail.
    assert_eq!(
        m.uid(),
        unsafe { libc::geteuid() },
        "not the old file's owner"
    );
    assert!(others_in(file.parent().unwrap(), &["liboslab_wcall.so"]).is_empty());
}

#[test]
fn another_users_link_device_or_folder_never_gets_the_interposer() {
    if !common::is_root() {
        eprintln!("skipped: needs root (files and links of another user, mknod)");
        return;
    }
    let d = tempfile::tempdir().unwrap();
    let dir = d.path();
    // a link another user planted at the name, to a file root would then write
    let target = dir.join("target");
    let link = dir.join("planted.so");
    std::os::unix::fs::symlink(&target, &link).unwrap();
    lchown(&link, 65534);
    refused(&install(&link), &link, "");
    assert!(!target.exists(), "nothing written through the link");
    assert!(
        std::fs::symlink_metadata(&link)
            .unwrap()
            .file_type()
            .is_symlink()
    );
    // a device node (another user's, or root's own), a block device, a FIFO
    let chr_theirs = dir.join("chr-theirs");
    mknod(&chr_theirs, libc::S_IFCHR, 1, 3);
    lchown(&chr_theirs, 65534);
    let chr_roots = dir.join("chr-roots");
    mknod(&chr_roots, libc::S_IFCHR, 1, 3);
    let blk = dir.join("blk");
    mknod(&blk, libc::S_IFBLK, 7, 250);
    let fifo = dir.join("fifo");
    // SAFETY: a NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c(&fifo).as_ptr(), 0o666) }, 0);
    for node in [&chr_theirs, &chr_roots, &blk, &fifo] {
        let before = std::fs::symlink_metadata(node).unwrap();
        refused(&install(node), node, "");
        let after = std::fs::symlink_metadata(node).unwrap();
        assert_eq!(
            (after.ino(), after.rdev(), after.file_type().is_fifo()),
            (before.ino(), before.rdev(), before.file_type().is_fifo()),
            "{} stays what it was",
            node.display()
        );
    }
    refused(&install(dir), dir, "directory");
    // a folder another user could change: they could swap the library after
    let open = dir.join("open");
    std::fs::create_dir(&open).unwrap();
    std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o777)).unwrap();
    let in_open = open.join("liboslab_wcall.so");
    refused(&install(&in_open), &in_open, "could change");
    let theirs = dir.join("theirs");
    std::fs::create_dir(&theirs).unwrap();
    lchown(&theirs, 65534);
    let in_theirs = theirs.join("liboslab_wcall.so");
    refused(&install(&in_theirs), &in_theirs, "");
    // missing folders are not made through another user's link
    let hop = dir.join("hop");
    std::os::unix::fs::symlink(&theirs, &hop).unwrap();
    lchown(&hop, 65534);
    let via = hop.join("new/liboslab_wcall.so");
    refused(&install(&via), &via, "");
    assert!(!theirs.join("new").exists());
    assert!(others_in(&open, &[]).is_empty() && others_in(&theirs, &[]).is_empty());
    assert_eq!(
        others_in(
            dir,
            &[
                "planted.so",
                "chr-theirs",
                "chr-roots",
                "blk",
                "fifo",
                "open",
                "theirs",
                "hop"
            ]
        ),
        Vec::<String>::new(),
        "nothing left beside the refusals"
    );
}
