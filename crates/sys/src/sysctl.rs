//! Reading and (through the journal) changing sysctls under /proc/sys.
//!
//! The dirty-memory knobs come in exclusive pairs: writing `vm.dirty_bytes` zeroes
//! `vm.dirty_ratio` and the other way round (mm/page-writeback.c, dirty_bytes_handler
//! and dirty_ratio_handler), and `dirty_bytes` refuses 0. So the undo of a change to
//! either member of a pair is to write back whichever member was in force before.

use std::path::PathBuf;

use crate::error::SysResult;
use crate::fsread::Root;
use crate::journal::{Journal, Undo};

/// `vm.dirty_ratio` -> `/proc/sys/vm/dirty_ratio`.
pub fn sysctl_path(name: &str) -> String {
    format!("/proc/sys/{}", name.replace('.', "/"))
}

/// The trimmed value of a sysctl.
pub fn read(root: &Root, name: &str) -> SysResult<String> {
    root.read(&sysctl_path(name)).map(|s| s.trim().to_string())
}

const PAIRS: [(&str, &str); 2] = [
    ("vm.dirty_ratio", "vm.dirty_bytes"),
    ("vm.dirty_background_ratio", "vm.dirty_background_bytes"),
];

/// The exclusive partner of a sysctl, if it has one.
pub fn partner(name: &str) -> Option<&'static str> {
    PAIRS.iter().find_map(|(a, b)| {
        if *a == name {
            Some(*b)
        } else if *b == name {
            Some(*a)
        } else {
            None
        }
    })
}

/// The undo for changing `name`: the member of its pair in force now, with its value.
pub fn undo_for(root: &Root, name: &str) -> SysResult<Undo> {
    let own = read(root, name)?;
    let target = match partner(name) {
        Some(other) => {
            let theirs = read(root, other)?;
            // The member with a non-zero value is the one in force.
            if own.trim() == "0" && theirs.trim() != "0" {
                (other.to_string(), theirs)
            } else {
                (name.to_string(), own)
            }
        }
        None => (name.to_string(), own),
    };
    Ok(Undo::WriteFile {
        path: root.path(&sysctl_path(&target.0)),
        contents: target.1,
    })
}

/// Sets a sysctl on the live system, journaled so it is undone later.
pub fn set(journal: &mut Journal, name: &str, value: &str) -> SysResult<()> {
    let root = Root::live();
    let undo = undo_for(&root, name)?;
    let seq = journal.record(format!("sysctl {name} = {value}"), undo)?;
    let path: PathBuf = root.path(&sysctl_path(name));
    journal.write_or_forget(seq, &path, value)
}

/// Writes back all dirty data, then empties the page cache and slab caches
/// (`vm.drop_caches = 3`). Needs root. Journaled for the record; there is nothing
/// to undo, the caches refill by themselves.
pub fn drop_caches(journal: &mut Journal) -> SysResult<()> {
    // SAFETY: sync has no arguments and cannot fail.
    unsafe { libc::sync() };
    journal.record(
        "vm.drop_caches = 3 (nothing to undo: caches refill by themselves)",
        Undo::Nothing,
    )?;
    let path = Root::live().path("/proc/sys/vm/drop_caches");
    std::fs::write(&path, "3").map_err(|source| crate::error::SysError::Write { path, source })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fake(ratio: &str, bytes: &str) -> (tempfile::TempDir, Root) {
        let d = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(d.path().join("proc/sys/vm")).unwrap();
        std::fs::write(d.path().join("proc/sys/vm/dirty_ratio"), ratio).unwrap();
        std::fs::write(d.path().join("proc/sys/vm/dirty_bytes"), bytes).unwrap();
        let r = Root::at(d.path());
        (d, r)
    }

    #[test]
    fn ratio_in_force_is_what_undo_restores() {
        let (_d, root) = fake("20\n", "0\n");
        match undo_for(&root, "vm.dirty_bytes").unwrap() {
            Undo::WriteFile { path, contents } => {
                assert!(path.ends_with("vm/dirty_ratio"));
                assert_eq!(contents, "20");
            }
            u => panic!("{u:?}"),
        }
    }

    #[test]
    fn bytes_in_force_is_what_undo_restores() {
        let (_d, root) = fake("0\n", "67108864\n");
        match undo_for(&root, "vm.dirty_ratio").unwrap() {
            Undo::WriteFile { path, contents } => {
                assert!(path.ends_with("vm/dirty_bytes"));
                assert_eq!(contents, "67108864");
            }
            u => panic!("{u:?}"),
        }
    }

    #[test]
    fn paths_and_partners() {
        assert_eq!(sysctl_path("vm.dirty_ratio"), "/proc/sys/vm/dirty_ratio");
        assert_eq!(
            partner("vm.dirty_background_bytes"),
            Some("vm.dirty_background_ratio")
        );
        assert_eq!(partner("vm.dirty_expire_centisecs"), None);
    }
}
