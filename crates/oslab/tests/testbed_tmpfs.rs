//! The testbed on a scratch folder whose file system refuses direct I/O (issue 53,
//! item 11): Debian 12's 6.1 refuses it on a tmpfs, as Debian 13, Fedora and Arch
//! mount /tmp, and `oslab testbed up` failed there ("losetup failed: ... failed to
//! set up loop device: Invalid argument"). This kernel accepts direct I/O on a
//! tmpfs, so the test plays 6.1's part with a ramfs, which every kernel refuses it
//! on: the testbed comes up buffered, says so, and says that its image lives in
//! memory. Root only (a mount, a loop device); it leaves nothing behind.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

/// A ramfs mounted for the test, unmounted when dropped.
struct Ramfs(PathBuf);

impl Ramfs {
    fn mount(at: &Path) -> Ramfs {
        std::fs::create_dir_all(at).unwrap();
        let ok = Command::new("mount")
            .args(["-t", "ramfs", "ramfs"])
            .arg(at)
            .status()
            .unwrap();
        assert!(ok.success(), "mount -t ramfs");
        Ramfs(at.to_path_buf())
    }
}

impl Drop for Ramfs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.0).status();
        let _ = std::fs::remove_dir(&self.0);
    }
}

#[test]
fn a_scratch_refusing_direct_io_gets_a_buffered_testbed_that_says_so() {
    if !common::is_root() {
        eprintln!("skipped: needs root (a mount and a loop device)");
        return;
    }
    let journal = common::journal_dir("testbed-ramfs");
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let scratch = Ramfs::mount(&dir.path().join("ramfs"));
    let out = common::oslab_journaled(&journal)
        .args([
            "testbed",
            "up",
            "--bandwidth",
            "20MiB/s",
            "--size",
            "64MiB",
            "--scratch",
        ])
        .arg(&scratch.0)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    let down = common::oslab_journaled(&journal)
        .args(["testbed", "down"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{err}");
    assert!(
        down.status.success(),
        "{}",
        String::from_utf8_lossy(&down.stderr)
    );
    assert!(text.contains("the loop device is buffered"), "{text}");
    assert!(text.contains("refused direct I/O"), "{text}");
    assert!(
        text.contains("the image is on a ramfs: it lives in memory, up to its 64 MiB (--size)"),
        "{text}"
    );
    // the testbed is gone: no loop device left over the image
    let loops = Command::new("losetup").arg("-a").output().unwrap();
    let loops = String::from_utf8_lossy(&loops.stdout);
    assert!(!loops.contains(scratch.0.to_str().unwrap()), "{loops}");
}
