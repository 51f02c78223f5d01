//! The rule on fake cgroup trees: folders and files laid out like cgroupfs, the
//! delegation marked with the user.delegate attribute a test may set.

use super::*;

const IO_MEMORY: Needs = Needs {
    required: &["io", "memory"],
    wanted: &[],
};

const MEMORY_AND_IO: Needs = Needs {
    required: &["memory"],
    wanted: &["io"],
};

fn tree(files: &[(&str, &str)]) -> tempfile::TempDir {
    let t = tempfile::tempdir().unwrap();
    for (p, text) in files {
        let path = t.path().join(p);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }
    t
}

fn delegate(dir: &Path) {
    crate::testing::mark_delegated(dir).unwrap();
}

/// The placement, or (when the tests do not run as root, so the temporary
/// folder is not root's) the refusal that says so.
fn as_root(p: Result<Placement, String>) -> Option<Placement> {
    match p {
        Ok(p) => Some(p),
        Err(e) => {
            assert!(
                !crate::process::is_root() && e.contains("is not root's alone"),
                "{e}"
            );
            None
        }
    }
}

#[test]
fn at_the_root_the_missing_controllers_are_turned_on_there() {
    let t = tree(&[
        ("cgroup.controllers", "cpuset cpu io memory pids\n"),
        ("cgroup.subtree_control", "memory\n"),
    ]);
    let p = placement(t.path(), t.path(), &IO_MEMORY).unwrap();
    assert_eq!(p.parent, t.path());
    assert_eq!(p.enable, vec!["io"]);
    assert_eq!(p.home, t.path());
    assert!(!p.vacate);
}

#[test]
fn a_controller_only_wanted_is_turned_on_where_offered_and_never_required() {
    let t = tree(&[("cgroup.controllers", "cpu memory pids\n")]);
    let p = placement(t.path(), t.path(), &MEMORY_AND_IO).unwrap();
    assert_eq!(p.enable, vec!["memory"], "no io offered: memory alone");
    std::fs::write(t.path().join("cgroup.controllers"), "io memory\n").unwrap();
    let p = placement(t.path(), t.path(), &MEMORY_AND_IO).unwrap();
    assert_eq!(p.enable, vec!["memory", "io"]);
    std::fs::write(t.path().join("cgroup.controllers"), "io pids\n").unwrap();
    let e = placement(t.path(), t.path(), &MEMORY_AND_IO).unwrap_err();
    assert!(e.contains("no memory controller"), "{e}");
}

#[test]
fn without_the_required_controllers_there_is_no_place() {
    let t = tree(&[("cgroup.controllers", "cpu pids\n")]);
    let e = placement(t.path(), t.path(), &IO_MEMORY).unwrap_err();
    assert!(e.contains("no io or memory controller"), "{e}");
}

#[test]
fn beside_its_own_cgroup_only_in_a_delegated_parent_that_gives_the_controllers() {
    let t = tree(&[
        ("cgroup.controllers", "io memory\n"),
        ("a.slice/cgroup.subtree_control", "memory pids\n"),
        ("a.slice/me.scope/cgroup.procs", ""),
    ]);
    let own = t.path().join("a.slice/me.scope");
    let e = placement(&own, t.path(), &IO_MEMORY).unwrap_err();
    assert!(
        e.contains("is not delegated") && e.contains("Delegate=yes"),
        "a manager's tree that gives the controllers is still its own: {e}"
    );
    delegate(&t.path().join("a.slice"));
    let e = placement(&own, t.path(), &IO_MEMORY).unwrap_err();
    assert!(e.contains("does not give io to its children"), "{e}");
    // the governor needs memory only; io where given
    if let Some(p) = as_root(placement(&own, t.path(), &MEMORY_AND_IO)) {
        assert_eq!(p.parent, t.path().join("a.slice"));
        assert!(p.enable.is_empty(), "nothing is turned on below the root");
        assert_eq!(p.home, own);
    }
    std::fs::write(t.path().join("a.slice/cgroup.subtree_control"), "io memory").unwrap();
    if let Some(p) = as_root(placement(&own, t.path(), &IO_MEMORY)) {
        assert_eq!(p.parent, t.path().join("a.slice"));
        assert!(!p.vacate);
    }
}

/// The governor's unit as shipped: `Delegate=yes` on oslab-wcall.service, under
/// system.slice, which systemd never delegates.
#[test]
fn in_a_delegated_unit_its_cgroups_go_inside_it_after_a_leaf_takes_its_processes() {
    let t = tree(&[
        ("cgroup.controllers", "cpu io memory pids\n"),
        (
            "system.slice/cgroup.subtree_control",
            "cpu io memory pids\n",
        ),
        (
            "system.slice/oslab-wcall.service/cgroup.controllers",
            "cpu io memory pids\n",
        ),
        (
            "system.slice/oslab-wcall.service/cgroup.subtree_control",
            "",
        ),
        ("system.slice/oslab-wcall.service/cgroup.procs", ""),
    ]);
    let own = t.path().join("system.slice/oslab-wcall.service");
    // without Delegate=yes: refused, though system.slice gives memory and io
    let e = placement(&own, t.path(), &MEMORY_AND_IO).unwrap_err();
    assert!(
        e.contains("oslab-wcall.service is not delegated")
            && e.contains("system.slice (systemd's")
            && e.contains("Delegate=yes in its systemd unit"),
        "{e}"
    );
    delegate(&own);
    if let Some(p) = as_root(placement(&own, t.path(), &MEMORY_AND_IO)) {
        assert_eq!(
            p,
            Placement {
                parent: own.clone(),
                enable: vec!["memory", "io"],
                home: own.clone(),
                vacate: true,
            }
        );
    }
}

#[test]
fn preparing_a_delegated_cgroup_moves_its_processes_to_a_leaf_then_gives_controllers() {
    let t = tree(&[
        ("cgroup.controllers", "io memory\n"),
        ("unit/cgroup.controllers", "io memory pids\n"),
        ("unit/cgroup.subtree_control", ""),
        // a cgroupfs-like tree: what is written to cgroup.procs replaces it
        ("unit/cgroup.procs", ""),
    ]);
    let own = t.path().join("unit");
    let at = Placement {
        parent: own.clone(),
        enable: vec!["io", "memory"],
        home: own.clone(),
        vacate: true,
    };
    let mut undos = Vec::new();
    let home = prepare(&at, "oslab-x", &mut |d, u| {
        if let Undo::RemoveCgroup { path, .. } = &u {
            assert!(!path.exists(), "recorded before it is made: {d}");
        }
        undos.push(u);
        Ok(undos.len() as u64)
    })
    .unwrap();
    assert_eq!(home, own.join("oslab-x-home"));
    assert!(home.is_dir());
    assert_eq!(
        undos[0],
        Undo::RemoveCgroup {
            path: home.clone(),
            parent: own.clone()
        },
        "the leaf's processes go back to the unit when it goes"
    );
    let withdrawn: Vec<String> = undos[1..]
        .iter()
        .map(|u| match u {
            Undo::WithdrawController {
                dir,
                controller,
                children,
            } => {
                assert_eq!(dir, &own);
                assert_eq!(children, &["oslab-x-home".to_string()]);
                controller.clone()
            }
            other => panic!("{other:?}"),
        })
        .collect();
    assert_eq!(withdrawn, ["io", "memory"]);
    assert_eq!(
        std::fs::read_to_string(own.join("cgroup.subtree_control")).unwrap(),
        "+memory",
        "each controller written in turn"
    );
}

#[test]
fn a_delegated_cgroup_not_given_the_controllers_says_so() {
    let t = tree(&[
        ("cgroup.controllers", "io memory\n"),
        ("a.slice/b.scope/cgroup.controllers", "pids memory\n"),
        ("a.slice/b.scope/cgroup.procs", ""),
    ]);
    let own = t.path().join("a.slice/b.scope");
    delegate(&own);
    let e = placement(&own, t.path(), &IO_MEMORY).unwrap_err();
    assert!(e.contains("is delegated but is not given io"), "{e}");
}

#[test]
fn the_root_of_a_cgroup_namespace_is_not_the_machines() {
    let t = tree(&[
        ("cgroup.controllers", "io memory\n"),
        ("cgroup.type", "domain\n"),
    ]);
    let e = placement(t.path(), t.path(), &IO_MEMORY).unwrap_err();
    assert!(e.contains("root of a cgroup namespace"), "{e}");
}

#[test]
fn a_cgroup_directly_under_the_root_is_not_left() {
    let t = tree(&[
        ("cgroup.controllers", "io memory\n"),
        ("cgroup.subtree_control", "io memory\n"),
        ("box/cgroup.procs", ""),
    ]);
    let e = placement(&t.path().join("box"), t.path(), &MEMORY_AND_IO).unwrap_err();
    assert!(e.contains("directly under the root"), "{e}");
}

#[test]
fn a_parent_another_user_owns_is_refused() {
    if !crate::process::is_root() {
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
    let e = placement(&parent.join("me.scope"), t.path(), &IO_MEMORY).unwrap_err();
    assert!(
        e.contains("uid 65534") && e.contains("not root's alone"),
        "{e}"
    );
    // a delegated cgroup of its own under it: the same
    let own = parent.join("me.scope");
    std::fs::write(own.join("cgroup.controllers"), "io memory\n").unwrap();
    delegate(&own);
    let e = placement(&own, t.path(), &IO_MEMORY).unwrap_err();
    assert!(e.contains("uid 65534"), "{e}");
}
