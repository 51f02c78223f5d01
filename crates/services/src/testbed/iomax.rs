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
//! The shape, under the cgroup P that oslab may make cgroups in
//! (`oslab_sys::cgroup_place`: the root, when oslab runs there; its own cgroup,
//! when that is delegated to it, after it moved into the leaf
//! `P/oslab-testbed-X-home`; or a delegated parent that gives io and memory):
//! `P/oslab-testbed-X/` (io.max, and io and memory given to its children) with
//! `P/oslab-testbed-X/lab/` holding oslab and the programs it starts. The
//! testbed's cgroup is marked delegated (trusted.delegate) to what runs in `lab`,
//! so a governor started there places its groups beside `lab`, under the cap.
//! Every step is journaled and undone in reverse.

use std::path::PathBuf;

use oslab_sys::SysResult;
use oslab_sys::cgroup_place::{self, Needs, Placement, make_cgroup, mark_delegated, prepare};
use oslab_sys::journal::{Undo, write_text};
use serde::{Deserialize, Serialize};

/// The controllers cgroup writeback needs on v2.
const NEEDED: Needs = Needs {
    required: &["io", "memory"],
    wanted: &[],
};

/// A cap that is set: the testbed's cgroup and the one oslab's writers run in.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct IoMaxCap {
    pub cgroup: PathBuf,
    pub lab: PathBuf,
}

/// This process's placement on the live system, or why there is none.
pub fn live_placement() -> Result<Placement, String> {
    cgroup_place::live_placement(&NEEDED)
        .map_err(|why| format!("{why} (cgroup writeback needs io and memory)"))
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
    let home = prepare(at, name, record)?;
    let cgroup = at.parent.join(name);
    let lab = cgroup.join("lab");
    for dir in [&cgroup, &lab] {
        make_cgroup(dir, &home, record)?;
        if *dir == cgroup {
            write_text(&cgroup.join("cgroup.subtree_control"), "+io +memory")?;
            write_text(&cgroup.join("io.max"), &format!("{dev} wbps={bandwidth}"))?;
            // a governor started in `lab` may place its groups beside it (rule (c)
            // of cgroup_place); where the attribute cannot be set it says why not
            let _ = mark_delegated(&cgroup);
        }
    }
    write_text(&lab.join("cgroup.procs"), &std::process::id().to_string())?;
    Ok(IoMaxCap { cgroup, lab })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

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
    fn the_cap_is_built_in_order_with_each_undo_recorded_first() {
        let t = tree(&[
            ("cgroup.controllers", "io memory pids\n"),
            ("cgroup.subtree_control", ""),
        ]);
        let at = cgroup_place::placement(t.path(), t.path(), &NEEDED).unwrap();
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
        if oslab_sys::process::is_root() {
            assert!(
                oslab_sys::cgroup_controllers::delegated(&cg),
                "a governor in lab may place its groups beside it"
            );
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
        let at = Placement {
            parent: own.clone(),
            enable: vec!["io", "memory"],
            home: own.clone(),
            vacate: true,
        };
        let (cap, undos) = applied(&at);
        assert_eq!(cap.cgroup, own.join("oslab-testbed-x"));
        // the leaf first (its processes go back to the scope when it goes), then
        // the controllers, then the cap, whose stragglers wait in the leaf
        let home = own.join("oslab-testbed-x-home");
        let kinds: Vec<String> = undos
            .iter()
            .map(|u| match u {
                Undo::WithdrawController { controller, .. } => format!("-{controller}"),
                Undo::RemoveCgroup { path, parent } => {
                    let back: &Path = if *path == home { &own } else { &home };
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
}
