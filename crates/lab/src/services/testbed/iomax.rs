//! The testbed's write cap on cgroup v2: io.max on a cgroup oslab makes and moves
//! itself into.
//!
//! Why a cgroup of oslab's own: v2 takes no io.max on the root cgroup, and with
//! cgroup writeback (memory and io controllers both on v2) the flusher's writes of
//! a page are charged to the cgroup that dirtied it, so the cap on the cgroup that
//! holds the writers holds for their write back too (kernel
//! Documentation/admin-guide/cgroup-v2.rst, "Writeback"). What other processes
//! write to the device is not capped, unlike v1's machine-wide blkio throttle.
//!
//! The shape, under the cgroup P that holds oslab's own cgroup:
//! `P/oslab-testbed-X/` (io.max, and io and memory given to its children) with
//! `P/oslab-testbed-X/lab/` holding oslab and the programs it starts. The governor
//! places its groups beside `lab` (its `v2_parent` finds the testbed cgroup).
//! Where oslab sits in the root cgroup, P is the root and oslab turns on io and
//! memory for the root's children if they are off (journaled: turned off again).
//! Elsewhere P must already give both controllers to its children and belong to
//! root: a P another user owns could freeze or starve oslab, and moving out of a
//! cgroup directly under the root could lift a limit set on it.

use std::path::{Path, PathBuf};

use oslab_sys::cgroup_controllers::{
    delegated, give_to_children, not_given, not_roots_alone, words,
};
use oslab_sys::fsread::Root;
use oslab_sys::journal::{Undo, write_text};
use oslab_sys::parse::memcg::{self, Version};
use oslab_sys::{SysError, SysResult};
use serde::{Deserialize, Serialize};

/// The controllers cgroup writeback needs on v2.
const NEEDED: [&str; 2] = ["io", "memory"];

/// A cap that is set: the testbed's cgroup and the one oslab's writers run in.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct IoMaxCap {
    pub cgroup: PathBuf,
    pub lab: PathBuf,
}

/// Where the testbed's cgroup goes and what must be turned on first.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Placement {
    /// The cgroup the testbed's cgroup is made in.
    pub parent: PathBuf,
    /// Controllers to turn on for `parent`'s children (only ever at the root).
    pub enable: Vec<&'static str>,
    /// The cgroup oslab is in now, where it and its children go back to.
    pub home: PathBuf,
}

fn lacks(dir: &Path, file: &str) -> Vec<&'static str> {
    let have = words(&dir.join(file));
    NEEDED
        .into_iter()
        .filter(|c| !have.iter().any(|h| h == c))
        .collect()
}

/// Where a process in cgroup `own` of the v2 hierarchy mounted at `root` can have
/// a capped testbed cgroup, or why it cannot.
pub fn placement(own: &Path, root: &Path) -> Result<Placement, String> {
    let missing = lacks(root, "cgroup.controllers");
    if !missing.is_empty() {
        return Err(format!(
            "cgroup v2 here has no {} controller (cgroup writeback needs io and memory)",
            missing.join(" or ")
        ));
    }
    if own == root {
        if root.join("cgroup.type").exists() {
            return Err(format!(
                "oslab sits in the root of a cgroup namespace ({}), not of the machine's hierarchy, so it cannot give controllers there",
                root.display()
            ));
        }
        return Ok(Placement {
            parent: root.to_path_buf(),
            enable: not_given(root, &NEEDED),
            home: own.to_path_buf(),
        });
    }
    let Some(parent) = own.parent().filter(|p| *p != root && p.starts_with(root)) else {
        return Err(format!(
            "oslab's cgroup {} sits directly under the root, and moving out of it could lift its limits; run oslab from the root cgroup, or from a cgroup inside a delegated one (systemd's Delegate=yes) that gives io and memory to its children",
            own.display()
        ));
    };
    let missing = lacks(parent, "cgroup.subtree_control");
    if !missing.is_empty() {
        return Err(format!(
            "{} does not give {} to its children, so no capped cgroup can be made beside oslab's own (delegate them, e.g. systemd's Delegate=yes)",
            parent.display(),
            missing.join(" and ")
        ));
    }
    if !delegated(parent) {
        return Err(format!(
            "{} is not delegated (systemd's Delegate=yes marks it), so cgroups oslab made there would be its manager's to remove; run oslab from the root cgroup or inside a delegated cgroup",
            parent.display()
        ));
    }
    match not_roots_alone(parent, root) {
        None => Ok(Placement {
            parent: parent.to_path_buf(),
            enable: Vec::new(),
            home: own.to_path_buf(),
        }),
        Some(who) => Err(format!(
            "{who} is not root's alone: whoever else can write there could freeze or starve a root process placed under it"
        )),
    }
}

/// This process's placement on the live system, or why there is none.
pub fn live_placement() -> Result<Placement, String> {
    let root = memcg::read_memory_mounts(&Root::live())
        .and_then(|(_, v2)| v2)
        .ok_or("no cgroup2 file system is mounted")?;
    let own = memcg::cgroup_dirs(&Root::live(), "self")
        .into_iter()
        .find_map(|(v, d)| (v == Version::V2).then_some(d))
        .ok_or("this process's cgroup v2 is not in /proc/self/cgroup")?;
    placement(&own, &root)
}

/// Makes the capped cgroup `name` for device `dev` ("MAJOR:MINOR") at
/// `bandwidth` bytes per second and moves this process into its `lab`;
/// `record` journals each step's undo before the step.
pub fn apply(
    at: &Placement,
    name: &str,
    dev: &str,
    bandwidth: u64,
    record: &mut dyn FnMut(String, Undo) -> SysResult<u64>,
) -> SysResult<IoMaxCap> {
    give_to_children(&at.parent, &at.enable, record)?;
    let cgroup = at.parent.join(name);
    let lab = cgroup.join("lab");
    for dir in [&cgroup, &lab] {
        record(
            format!("create cgroup {}", dir.display()),
            Undo::RemoveCgroup {
                path: dir.clone(),
                parent: at.home.clone(),
            },
        )?;
        std::fs::create_dir(dir).map_err(|source| SysError::Write {
            path: dir.clone(),
            source,
        })?;
        if *dir == cgroup {
            write_text(&cgroup.join("cgroup.subtree_control"), "+io +memory")?;
            write_text(&cgroup.join("io.max"), &format!("{dev} wbps={bandwidth}"))?;
        }
    }
    write_text(&lab.join("cgroup.procs"), &std::process::id().to_string())?;
    Ok(IoMaxCap { cgroup, lab })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tree(files: &[(&str, &str)]) -> tempfile::TempDir {
        let t = tempfile::tempdir().unwrap();
        for (p, text) in files {
            let path = t.path().join(p);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, text).unwrap();
        }
        t
    }

    #[test]
    fn at_the_root_the_missing_controllers_are_turned_on_there() {
        let t = tree(&[
            ("cgroup.controllers", "cpuset cpu io memory pids\n"),
            ("cgroup.subtree_control", "memory\n"),
        ]);
        let p = placement(t.path(), t.path()).unwrap();
        assert_eq!(p.parent, t.path());
        assert_eq!(p.enable, vec!["io"]);
        assert_eq!(p.home, t.path());
    }

    #[test]
    fn the_cap_is_built_in_order_with_each_undo_recorded_first() {
        let t = tree(&[
            ("cgroup.controllers", "io memory pids\n"),
            ("cgroup.subtree_control", ""),
        ]);
        let at = placement(t.path(), t.path()).unwrap();
        let mut undos = Vec::new();
        let cap = apply(&at, "oslab-testbed-x", "7:3", 10 << 20, &mut |d, u| {
            // nothing of the step exists yet when its undo is recorded
            if let Undo::RemoveCgroup { path, .. } = &u {
                assert!(!path.exists(), "{d}");
            }
            undos.push(u);
            Ok(undos.len() as u64)
        })
        .unwrap();
        let cg = t.path().join("oslab-testbed-x");
        assert_eq!(cap.cgroup, cg);
        assert_eq!(cap.lab, cg.join("lab"));
        let kinds: Vec<String> = undos
            .iter()
            .map(|u| match u {
                Undo::WithdrawController { controller, .. } => format!("-{controller}"),
                Undo::RemoveCgroup { path, parent } => {
                    assert_eq!(parent, t.path(), "stragglers go back where oslab was");
                    path.strip_prefix(t.path()).unwrap().display().to_string()
                }
                other => panic!("{other:?}"),
            })
            .collect();
        assert_eq!(
            kinds,
            ["-io", "-memory", "oslab-testbed-x", "oslab-testbed-x/lab"]
        );
        let read = |p: &str| std::fs::read_to_string(t.path().join(p)).unwrap();
        assert_eq!(read("oslab-testbed-x/io.max"), "7:3 wbps=10485760");
        assert_eq!(
            read("oslab-testbed-x/cgroup.subtree_control"),
            "+io +memory"
        );
        assert_eq!(
            read("oslab-testbed-x/lab/cgroup.procs"),
            std::process::id().to_string()
        );
    }

    #[test]
    fn without_io_or_memory_on_v2_there_is_no_cap() {
        let t = tree(&[("cgroup.controllers", "cpu pids\n")]);
        let e = placement(t.path(), t.path()).unwrap_err();
        assert!(e.contains("no io or memory controller"), "{e}");
    }

    fn delegate(dir: &Path) {
        oslab_sys::testing::mark_delegated(dir).unwrap();
    }

    #[test]
    fn below_the_root_the_parent_must_delegate_both_and_be_roots_alone() {
        let t = tree(&[
            ("cgroup.controllers", "io memory\n"),
            ("a.slice/cgroup.subtree_control", "memory pids\n"),
            ("a.slice/me.scope/cgroup.procs", ""),
        ]);
        let own = t.path().join("a.slice/me.scope");
        let e = placement(&own, t.path()).unwrap_err();
        assert!(e.contains("does not give io to its children"), "{e}");
        std::fs::write(t.path().join("a.slice/cgroup.subtree_control"), "io memory").unwrap();
        let e = placement(&own, t.path()).unwrap_err();
        assert!(e.contains("is not delegated"), "{e}");
        delegate(&t.path().join("a.slice"));
        // the test's temporary folder is root's only when the tests run as root
        match placement(&own, t.path()) {
            Ok(p) => {
                assert_eq!(p.parent, t.path().join("a.slice"));
                assert!(p.enable.is_empty(), "nothing is turned on below the root");
            }
            Err(e) => assert!(!oslab_sys::process::is_root() && e.contains("is not root's alone")),
        }
    }

    #[test]
    fn the_root_of_a_cgroup_namespace_is_not_the_machines() {
        let t = tree(&[
            ("cgroup.controllers", "io memory\n"),
            ("cgroup.type", "domain\n"),
        ]);
        let e = placement(t.path(), t.path()).unwrap_err();
        assert!(e.contains("root of a cgroup namespace"), "{e}");
    }

    #[test]
    fn a_cgroup_directly_under_the_root_is_not_left() {
        let t = tree(&[
            ("cgroup.controllers", "io memory\n"),
            ("cgroup.subtree_control", "io memory\n"),
            ("box/cgroup.procs", ""),
        ]);
        let e = placement(&t.path().join("box"), t.path()).unwrap_err();
        assert!(e.contains("directly under the root"), "{e}");
    }

    #[test]
    fn a_parent_another_user_owns_is_refused() {
        if !oslab_sys::process::is_root() {
            eprintln!("skipped: needs root to give the folder to another uid");
            return;
        }
        let t = tree(&[
            ("cgroup.controllers", "io memory\n"),
            ("u.slice/cgroup.subtree_control", "io memory\n"),
            ("u.slice/me.scope/cgroup.procs", ""),
        ]);
        let parent = t.path().join("u.slice");
        delegate(&parent);
        std::os::unix::fs::chown(&parent, Some(65534), None).unwrap();
        let e = placement(&parent.join("me.scope"), t.path()).unwrap_err();
        assert!(
            e.contains("uid 65534") && e.contains("not root's alone"),
            "{e}"
        );
    }
}
