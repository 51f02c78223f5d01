//! Which cgroup v2 controllers a cgroup gives its children, and giving them,
//! journaled: the one step the testbed's v2 cap and the governor's groups share
//! where oslab runs in the root cgroup (as systemd does for its slices).

use std::path::Path;

use crate::error::{SysError, SysResult};
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

/// Turns each of `controllers` on for the children of `dir`, recording its undo
/// (turning it off again) with `record` before the change. On a failure the
/// record of the change that failed stands with the others, for the caller to
/// undo (turning off what is off is harmless).
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
            Undo::WriteFile {
                path: subtree.clone(),
                contents: format!("-{c}"),
            },
        )?;
        std::fs::write(&subtree, format!("+{c}")).map_err(|source| SysError::Write {
            path: subtree.clone(),
            source,
        })?;
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
            Undo::WriteFile {
                path: t.path().join("cgroup.subtree_control"),
                contents: "-memory".into()
            }
        );
    }
}
