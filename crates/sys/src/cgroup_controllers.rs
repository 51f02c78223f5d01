//! Which cgroup v2 controllers a cgroup gives its children, and giving them,
//! journaled: the one step the testbed's v2 cap and the governor's groups share
//! where oslab runs in the root cgroup (as systemd does for its slices).

use std::path::Path;

use crate::error::SysResult;
use crate::journal::Undo;

/// The words of a cgroup file (`cgroup.controllers`, `cgroup.subtree_control`);
/// none when it cannot be read.
pub fn words(path: &Path) -> Vec<String> {
    std::fs::read_to_string(path)
        .map(|t| t.split_whitespace().map(str::to_string).collect())
        .unwrap_or_default()
}

/// Those of `wanted` that `dir`'s hierarchy offers it but it does not yet give its
/// children.
pub fn not_given<'a>(dir: &Path, wanted: &[&'a str]) -> Vec<&'a str> {
    let offered = words(&dir.join("cgroup.controllers"));
    let given = words(&dir.join("cgroup.subtree_control"));
    wanted
        .iter()
        .copied()
        .filter(|c| offered.iter().any(|o| o == c) && !given.iter().any(|g| g == c))
        .collect()
}

/// Whether `dir` is a cgroup delegated to its owner as systemd marks it
/// (`Delegate=yes`: the extended attribute trusted.delegate or user.delegate set
/// to 1; systemd's docs, "Control Group APIs and Delegation").
pub fn delegated(dir: &Path) -> bool {
    use std::os::unix::ffi::OsStrExt;
    let Ok(c) = std::ffi::CString::new(dir.as_os_str().as_bytes()) else {
        return false;
    };
    ["trusted.delegate", "user.delegate"].iter().any(|name| {
        let name = std::ffi::CString::new(*name).expect("no NUL");
        let mut value = [0u8; 8];
        // SAFETY: c and name are NUL-terminated; value is a valid buffer of its length.
        let n = unsafe {
            libc::getxattr(
                c.as_ptr(),
                name.as_ptr(),
                value.as_mut_ptr().cast(),
                value.len(),
            )
        };
        n > 0 && value[..n as usize].starts_with(b"1")
    })
}

/// The first of `dir` and the folders above it, up to `root`, that is not root's
/// alone (owned by another uid, or writable by group or others), as
/// "PATH (uid U, mode M)"; None when all are.
pub fn not_roots_alone(dir: &Path, root: &Path) -> Option<String> {
    use std::os::unix::fs::MetadataExt;
    for d in dir.ancestors() {
        match std::fs::symlink_metadata(d) {
            Ok(m) if m.uid() == 0 && m.mode() & 0o022 == 0 => {}
            Ok(m) => {
                return Some(format!(
                    "{} (uid {}, mode {:o})",
                    d.display(),
                    m.uid(),
                    m.mode() & 0o7777
                ));
            }
            Err(e) => return Some(format!("{} ({e})", d.display())),
        }
        if d == root {
            break;
        }
    }
    None
}

/// Turns each of `controllers` on for the children of `dir`, recording its undo
/// (turning it off again, unless a cgroup made since then may use it) with
/// `record` before the change. On a failure the record of the change that failed
/// stands with the others, for the caller to undo (turning off what is off is
/// harmless).
pub fn give_to_children(
    dir: &Path,
    controllers: &[&str],
    record: &mut dyn FnMut(String, Undo) -> SysResult<u64>,
) -> SysResult<()> {
    let subtree = dir.join("cgroup.subtree_control");
    for c in controllers {
        record(
            format!(
                "cgroup v2: {c} controller for the children of {}",
                dir.display()
            ),
            Undo::WithdrawController {
                dir: dir.to_path_buf(),
                controller: c.to_string(),
                children: crate::cgroup_names::child_names(dir),
            },
        )?;
        crate::journal::write_text(&subtree, &format!("+{c}"))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_controllers_offered_and_not_yet_given_are_wanted() {
        let t = tempfile::tempdir().unwrap();
        std::fs::write(t.path().join("cgroup.controllers"), "cpu io memory pids\n").unwrap();
        std::fs::write(t.path().join("cgroup.subtree_control"), "memory\n").unwrap();
        assert_eq!(not_given(t.path(), &["memory", "io", "rdma"]), vec!["io"]);
        std::fs::remove_file(t.path().join("cgroup.controllers")).unwrap();
        assert!(
            not_given(t.path(), &["io"]).is_empty(),
            "unreadable: nothing offered"
        );
    }

    #[test]
    fn each_change_is_recorded_before_it_is_made() {
        let t = tempfile::tempdir().unwrap();
        let mut recorded = Vec::new();
        give_to_children(t.path(), &["io", "memory"], &mut |d, u| {
            // the file does not hold the change yet when its undo is recorded
            let now = std::fs::read_to_string(t.path().join("cgroup.subtree_control"));
            recorded.push((d, u, now.ok()));
            Ok(recorded.len() as u64)
        })
        .unwrap();
        assert_eq!(recorded.len(), 2);
        assert_eq!(recorded[0].2, None);
        assert_eq!(recorded[1].2.as_deref(), Some("+io"));
        assert_eq!(
            recorded[1].1,
            Undo::WithdrawController {
                dir: t.path().to_path_buf(),
                controller: "memory".into(),
                children: Vec::new(),
            }
        );
    }

    #[test]
    fn a_controller_a_later_cgroup_may_use_is_left_on() {
        let t = tempfile::tempdir().unwrap();
        std::fs::create_dir(t.path().join("mine-before")).unwrap();
        std::fs::write(t.path().join("cgroup.subtree_control"), "+io").unwrap();
        let undo = |children: Vec<String>| {
            let e = crate::journal::Entry {
                seq: 1,
                description: "io".into(),
                undo: Undo::WithdrawController {
                    dir: t.path().to_path_buf(),
                    controller: "io".into(),
                    children,
                },
            };
            crate::journal::undo_entries(&[e]).remove(0).result
        };
        std::fs::create_dir(t.path().join("theirs")).unwrap();
        let e = undo(vec!["mine-before".into()]).unwrap_err();
        assert!(e.contains("theirs came after oslab"), "{e}");
        let read = || std::fs::read_to_string(t.path().join("cgroup.subtree_control")).unwrap();
        assert_eq!(read(), "+io", "left on");
        undo(vec!["mine-before".into(), "theirs".into()]).unwrap();
        assert_eq!(read(), "-io", "turned off when nothing new is there");
        // a delegated cgroup its manager has removed since (systemd reaps an
        // emptied scope) gives nothing any more: done, not a failure kept for ever
        std::fs::remove_file(t.path().join("cgroup.subtree_control")).unwrap();
        undo(vec!["mine-before".into(), "theirs".into()]).unwrap();
        let gone = crate::journal::Entry {
            seq: 2,
            description: "io".into(),
            undo: Undo::WithdrawController {
                dir: t.path().join("no-such-scope"),
                controller: "io".into(),
                children: Vec::new(),
            },
        };
        assert!(
            crate::journal::undo_entries(&[gone])
                .remove(0)
                .result
                .is_ok()
        );
    }
}
