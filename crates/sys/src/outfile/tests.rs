use std::ffi::CString;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{FileTypeExt, MetadataExt, PermissionsExt};
use std::path::Path;

use super::*;

fn is_root() -> bool {
    euid() == 0
}

fn c(path: &Path) -> CString {
    CString::new(path.as_os_str().as_bytes()).unwrap()
}

fn lchown(path: &Path, uid: u32) {
    // SAFETY: a NUL-terminated path; lchown has no memory effects.
    assert_eq!(unsafe { libc::lchown(c(path).as_ptr(), uid, uid) }, 0);
}

fn names_in(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

#[test]
fn a_file_is_replaced_whole_and_keeps_its_mode_and_nothing_is_left_beside() {
    let d = tempfile::tempdir().unwrap();
    let f = d.path().join("out.json");
    write_whole(&f, b"first").unwrap();
    assert_eq!(std::fs::read(&f).unwrap(), b"first");
    std::fs::set_permissions(&f, std::fs::Permissions::from_mode(0o640)).unwrap();
    let inode = std::fs::metadata(&f).unwrap().ino();
    write_whole(&f, b"second").unwrap();
    let m = std::fs::metadata(&f).unwrap();
    assert_eq!(std::fs::read(&f).unwrap(), b"second");
    assert_eq!(m.permissions().mode() & 0o7777, 0o640);
    assert_ne!(m.ino(), inode, "a new file took its place");
    assert_eq!(names_in(d.path()), ["out.json"]);
}

#[test]
fn as_root_a_file_of_another_user_keeps_its_owner() {
    if !is_root() {
        eprintln!("skipped: needs root to give a file to another uid");
        return;
    }
    let d = tempfile::tempdir().unwrap();
    let f = d.path().join("theirs.json");
    std::fs::write(&f, "old").unwrap();
    std::fs::set_permissions(&f, std::fs::Permissions::from_mode(0o600)).unwrap();
    lchown(&f, 4242);
    write_whole(&f, b"new").unwrap();
    let m = std::fs::metadata(&f).unwrap();
    assert_eq!((m.uid(), m.gid()), (4242, 4242));
    assert_eq!(m.permissions().mode() & 0o7777, 0o600);
    assert_eq!(std::fs::read(&f).unwrap(), b"new");
}

#[test]
fn a_fifo_is_written_through_and_stays_a_fifo() {
    use std::io::Read;
    use std::os::unix::fs::OpenOptionsExt;
    let d = tempfile::tempdir().unwrap();
    let fifo = d.path().join("fifo");
    let p = c(&fifo);
    // SAFETY: a NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(p.as_ptr(), 0o600) }, 0);
    // nobody reads it yet: refused at once, never waited on
    let e = write_whole(&fifo, b"x").unwrap_err();
    assert!(e.0.contains("nobody reads from"), "{e}");
    let mut reader = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(&fifo)
        .unwrap();
    assert_eq!(check(&fifo), Ok(Target::Stream(fifo.clone())));
    write_whole(&fifo, b"through").unwrap();
    let mut got = Vec::new();
    reader.read_to_end(&mut got).unwrap();
    assert_eq!(got, b"through");
    assert!(
        std::fs::symlink_metadata(&fifo)
            .unwrap()
            .file_type()
            .is_fifo()
    );
}

#[test]
fn a_fifo_or_device_of_another_user_is_refused() {
    if !is_root() {
        eprintln!("skipped: needs root to make a FIFO owned by another uid");
        return;
    }
    let d = tempfile::tempdir().unwrap();
    let fifo = d.path().join("f.json");
    // SAFETY: a NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c(&fifo).as_ptr(), 0o666) }, 0);
    lchown(&fifo, 4242);
    let e = check(&fifo).unwrap_err();
    assert!(e.0.contains("a FIFO owned by uid 4242"), "{e}");
    assert!(write_whole(&fifo, b"x").is_err());
    assert!(open_stream(&fifo).is_err());
}

#[test]
fn devices_folders_and_descriptors() {
    let null = check(Path::new("/dev/null")).unwrap();
    assert_eq!(null, Target::Stream("/dev/null".into()));
    assert!(!null.is_file());
    let d = tempfile::tempdir().unwrap();
    let e = check(d.path()).unwrap_err();
    assert!(e.0.contains("is a directory"), "{e}");
    assert!(check(Path::new("/proc/self/fd/1")).unwrap().is_stdout());
    let e = check(Path::new("/proc/self/fd/987")).unwrap_err();
    assert!(e.0.contains("descriptor 987"), "{e}");
    if is_root() {
        let block = d.path().join("blk");
        let p = c(&block);
        // SAFETY: a NUL-terminated path; a block node of loop 200 (never opened).
        let rc = unsafe { libc::mknod(p.as_ptr(), libc::S_IFBLK | 0o600, libc::makedev(7, 200)) };
        assert_eq!(rc, 0);
        let e = check(&block).unwrap_err();
        assert!(e.0.contains("block device"), "{e}");
        assert!(write_whole(&block, b"x").is_err());
        assert!(
            std::fs::symlink_metadata(&block)
                .unwrap()
                .file_type()
                .is_block_device()
        );
    }
}

#[test]
fn a_link_of_another_user_is_refused_and_its_target_untouched() {
    if !is_root() {
        eprintln!("skipped: needs root to make a link owned by another uid");
        return;
    }
    let d = tempfile::tempdir().unwrap();
    let victim = d.path().join("victim");
    std::fs::write(&victim, "keep").unwrap();
    let link = d.path().join("out.json");
    std::os::unix::fs::symlink(&victim, &link).unwrap();
    lchown(&link, 4242);
    let e = write_whole(&link, b"x").unwrap_err();
    assert!(e.0.contains("owned by uid 4242"), "{e}");
    assert!(open_stream(&link).is_err());
    // a folder on the way counts as much as the last name
    let sub = d.path().join("sub");
    std::fs::create_dir(&sub).unwrap();
    let via = d.path().join("via");
    std::os::unix::fs::symlink(&sub, &via).unwrap();
    lchown(&via, 4242);
    assert!(write_whole(&via.join("x"), b"x").is_err());
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "keep");
    assert!(names_in(&sub).is_empty());
    // root's own link is followed, and stays a link
    lchown(&link, 0);
    write_whole(&link, b"through").unwrap();
    assert_eq!(std::fs::read(&victim).unwrap(), b"through");
    assert!(
        std::fs::symlink_metadata(&link)
            .unwrap()
            .file_type()
            .is_symlink()
    );
}

#[test]
fn streaming_empties_a_file_in_place_and_creates_a_new_one() {
    let d = tempfile::tempdir().unwrap();
    let f = d.path().join("lines.jsonl");
    std::fs::write(&f, "old old old").unwrap();
    std::fs::set_permissions(&f, std::fs::Permissions::from_mode(0o604)).unwrap();
    let inode = std::fs::metadata(&f).unwrap().ino();
    open_stream(&f).unwrap().write_all(b"new\n").unwrap();
    let m = std::fs::metadata(&f).unwrap();
    assert_eq!((m.ino(), m.permissions().mode() & 0o777), (inode, 0o604));
    assert_eq!(std::fs::read(&f).unwrap(), b"new\n");
    let other = d.path().join("other");
    std::fs::write(&other, "keep").unwrap();
    let hard = d.path().join("hard.jsonl");
    std::fs::hard_link(&other, &hard).unwrap();
    let e = open_stream(&hard).unwrap_err();
    assert!(e.0.contains("hard links"), "{e}");
    assert_eq!(std::fs::read(&other).unwrap(), b"keep");
    let g = d.path().join("new.jsonl");
    open_stream(&g).unwrap().write_all(b"x").unwrap();
    assert_eq!(std::fs::read(&g).unwrap(), b"x");
}

#[test]
fn folders_are_made_one_at_a_time_and_never_through_a_link() {
    let d = tempfile::tempdir().unwrap();
    let deep = d.path().join("a/b/oslab");
    let made = ensure_folders(&deep, 0o700).unwrap();
    assert!(made.ends_with("a/b/oslab"));
    let m = std::fs::metadata(&deep).unwrap();
    assert_eq!(m.permissions().mode() & 0o777, 0o700);
    ensure_folders(&deep, 0o700).unwrap();
    if is_root() {
        let elsewhere = d.path().join("elsewhere");
        std::fs::create_dir(&elsewhere).unwrap();
        let planted = d.path().join("share");
        std::os::unix::fs::symlink(&elsewhere, &planted).unwrap();
        lchown(&planted, 4242);
        let e = ensure_folders(&planted.join("oslab"), 0o700).unwrap_err();
        assert!(e.0.contains("owned by uid 4242"), "{e}");
        assert!(names_in(&elsewhere).is_empty());
    }
    let e = check_folder(&d.path().join("x/y/z")).unwrap_err();
    assert!(e.0.contains("does not exist"), "{e}");
    assert!(!d.path().join("x").exists());
    let out = make_folder(&d.path().join("plots")).unwrap();
    assert!(out.is_dir());
    let file = d.path().join("file");
    std::fs::write(&file, "").unwrap();
    assert!(
        check_folder(&file)
            .unwrap_err()
            .0
            .contains("not a directory")
    );
}

#[test]
fn a_write_error_is_one_phrase() {
    if !Path::new("/dev/full").exists() {
        return;
    }
    let e = write_whole(Path::new("/dev/full"), b"x").unwrap_err();
    assert_eq!(e.0, "No space left on device");
}
