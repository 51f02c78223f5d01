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
//! Where oslab's own cgroup is delegated to it (systemd's `Delegate=yes`, e.g.
//! `systemd-run --scope -p Delegate=yes oslab ...`), P is that cgroup: as systemd
//! asks of a delegated cgroup's user, oslab first moves the processes in it into
//! a leaf of its own (`P/oslab-testbed-X-home`: a cgroup that gives controllers to
//! its children may hold no process itself), then gives io and memory to P's
//! children; every step journaled and undone in reverse. Elsewhere P must already
//! give both controllers to its children and be delegated. P and the folders
//! above it must belong to root alone: a P another user owns could freeze or
//! starve oslab, and moving out of a cgroup directly under the root could lift a
//! limit set on it.

use std::path::{Path, PathBuf};

use oslab_sys::cgroup_controllers::{
    delegated, give_to_children, not_given, not_roots_alone, words,
};
use oslab_sys::fsread::Root;
use oslab_sys::journal::{Undo, write_text};
use oslab_sys::parse::memcg::{self, Version};
use oslab_sys::process::has_exited;
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
    /// Controllers to turn on for `parent`'s children (at the root, or in
    /// oslab's own delegated cgroup).
    pub enable: Vec<&'static str>,
    /// The cgroup oslab is in now, where it and its children go back to.
    pub home: PathBuf,
    /// `parent` is oslab's own (delegated) cgroup: its processes move into a
    /// leaf of it before it gives controllers to its children.
    pub vacate: bool,
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
            vacate: false,
        });
    }
    if own.starts_with(root) && delegated(own) {
        let missing = lacks(own, "cgroup.controllers");
        if !missing.is_empty() {
            return Err(format!(
                "oslab's cgroup {} is delegated but is not given {} (systemd: Delegate=yes, or Delegate=io memory)",
                own.display(),
                missing.join(" or ")
            ));
        }
        if let Some(who) = not_roots_alone(own, root) {
            return Err(not_roots(&who));
        }
        return Ok(Placement {
            parent: own.to_path_buf(),
            enable: not_given(own, &NEEDED),
            home: own.to_path_buf(),
            vacate: true,
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
            "{} is not delegated (systemd's Delegate=yes marks it), so cgroups oslab made there would be its manager's to remove; run oslab from the root cgroup or in a delegated scope of its own (systemd-run --scope -p Delegate=yes oslab ...)",
            parent.display()
        ));
    }
    match not_roots_alone(parent, root) {
        None => Ok(Placement {
            parent: parent.to_path_buf(),
            enable: Vec::new(),
            home: own.to_path_buf(),
            vacate: false,
        }),
        Some(who) => Err(not_roots(&who)),
    }
}

fn not_roots(who: &str) -> String {
    format!(
        "{who} is not root's alone: whoever else can write there could freeze or starve a root process placed under it"
    )
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
    // where oslab and whatever its cgroup held wait while the cap stands, and
    // where stragglers go when it is taken down
    let home = if at.vacate {
        let leaf = at.parent.join(format!("{name}-home"));
        make_cgroup(&leaf, &at.home, record)?;
        vacate(&at.parent, &leaf)?;
        leaf
    } else {
        at.home.clone()
    };
    give_to_children(&at.parent, &at.enable, record)?;
    let cgroup = at.parent.join(name);
    let lab = cgroup.join("lab");
    for dir in [&cgroup, &lab] {
        make_cgroup(dir, &home, record)?;
        if *dir == cgroup {
            write_text(&cgroup.join("cgroup.subtree_control"), "+io +memory")?;
            write_text(&cgroup.join("io.max"), &format!("{dev} wbps={bandwidth}"))?;
        }
    }
    write_text(&lab.join("cgroup.procs"), &std::process::id().to_string())?;
    Ok(IoMaxCap { cgroup, lab })
}

/// Makes cgroup `dir`, its removal (stragglers to `home`) journaled first.
fn make_cgroup(
    dir: &Path,
    home: &Path,
    record: &mut dyn FnMut(String, Undo) -> SysResult<u64>,
) -> SysResult<()> {
    record(
        format!("create cgroup {}", dir.display()),
        Undo::RemoveCgroup {
            path: dir.to_path_buf(),
            parent: home.to_path_buf(),
        },
    )?;
    std::fs::create_dir(dir).map_err(|source| SysError::Write {
        path: dir.to_path_buf(),
        source,
    })
}

/// How many times the processes of a cgroup being vacated are moved before
/// oslab gives up (a process forking as fast as it is moved).
const VACATE_ROUNDS: usize = 16;

/// Moves every process of `from` into `to`, until `from` holds none.
fn vacate(from: &Path, to: &Path) -> SysResult<()> {
    let procs = from.join("cgroup.procs");
    let mut last = None;
    for _ in 0..VACATE_ROUNDS {
        let text = std::fs::read_to_string(&procs).map_err(|source| SysError::Read {
            path: procs.clone(),
            source,
        })?;
        let pids: Vec<&str> = text.split_whitespace().collect();
        if pids.is_empty() {
            return Ok(());
        }
        for pid in pids {
            match write_text(&to.join("cgroup.procs"), pid) {
                Ok(()) => {}
                // a process that exited meanwhile is gone from both
                Err(SysError::Write { source, .. }) if has_exited(&source) => {}
                Err(e) => last = Some(format!("process {pid}: {e}")),
            }
        }
    }
    Err(SysError::Other(format!(
        "could not move every process of {} into {}: {}",
        from.display(),
        to.display(),
        last.unwrap_or_else(|| "processes kept arriving".into())
    )))
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

    /// The cap `oslab-testbed-x` built at `at`, and the undos recorded, each
    /// checked to come before its step.
    fn applied(at: &Placement) -> (IoMaxCap, Vec<Undo>) {
        let mut undos = Vec::new();
        let cap = apply(at, "oslab-testbed-x", "7:3", 10 << 20, &mut |d, u| {
            // nothing of the step exists yet when its undo is recorded
            if let Undo::RemoveCgroup { path, .. } = &u {
                assert!(!path.exists(), "{d}");
            }
            undos.push(u);
            Ok(undos.len() as u64)
        })
        .unwrap();
        (cap, undos)
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
        let (cap, undos) = applied(&at);
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
    fn in_a_delegated_cgroup_of_its_own_oslab_moves_into_a_leaf_and_builds_there() {
        // systemd-run --scope -p Delegate=yes: the scope is delegated and given io
        // and memory; its parent is neither
        let t = tree(&[
            ("cgroup.controllers", "io memory\n"),
            ("system.slice/cgroup.subtree_control", "io memory pids\n"),
            (
                "system.slice/run-u7.scope/cgroup.controllers",
                "io memory pids\n",
            ),
            ("system.slice/run-u7.scope/cgroup.subtree_control", ""),
            ("system.slice/run-u7.scope/cgroup.procs", ""),
        ]);
        let own = t.path().join("system.slice/run-u7.scope");
        let e = placement(&own, t.path()).unwrap_err();
        assert!(e.contains("system.slice is not delegated"), "{e}");
        delegate(&own);
        let at = Placement {
            parent: own.clone(),
            enable: vec!["io", "memory"],
            home: own.clone(),
            vacate: true,
        };
        match placement(&own, t.path()) {
            Ok(p) => assert_eq!(p, at),
            // the test's temporary folder is root's only when the tests run as root
            Err(e) => assert!(!oslab_sys::process::is_root() && e.contains("is not root's alone")),
        }
        let (cap, undos) = applied(&at);
        assert_eq!(cap.cgroup, own.join("oslab-testbed-x"));
        // the leaf first (its processes go back to the scope when it goes), then
        // the controllers, then the cap, whose stragglers wait in the leaf
        let home = own.join("oslab-testbed-x-home");
        let kinds: Vec<String> = undos
            .iter()
            .map(|u| match u {
                Undo::WithdrawController {
                    dir,
                    controller,
                    children,
                } => {
                    assert_eq!(dir, &own);
                    // the leaf was there before: withdrawing may go past it
                    assert_eq!(children, &["oslab-testbed-x-home".to_string()]);
                    format!("-{controller}")
                }
                Undo::RemoveCgroup { path, parent } => {
                    let back = if *path == home { &own } else { &home };
                    assert_eq!(parent, back, "{}", path.display());
                    path.strip_prefix(&own).unwrap().display().to_string()
                }
                other => panic!("{other:?}"),
            })
            .collect();
        assert_eq!(
            kinds,
            [
                "oslab-testbed-x-home",
                "-io",
                "-memory",
                "oslab-testbed-x",
                "oslab-testbed-x/lab"
            ]
        );
        assert!(home.is_dir());
    }

    #[test]
    fn a_delegated_cgroup_not_given_io_and_memory_says_so() {
        let t = tree(&[
            ("cgroup.controllers", "io memory\n"),
            ("a.slice/b.scope/cgroup.controllers", "pids memory\n"),
            ("a.slice/b.scope/cgroup.procs", ""),
        ]);
        let own = t.path().join("a.slice/b.scope");
        delegate(&own);
        let e = placement(&own, t.path()).unwrap_err();
        assert!(e.contains("is delegated but is not given io"), "{e}");
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
