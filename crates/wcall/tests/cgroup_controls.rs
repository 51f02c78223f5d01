//! The cgroup v2 controls on a directory tree laid out like cgroupfs: which
//! controllers are passed on to the groups, what io.weight and memory.high get, and
//! what is reported as not set. Where the groups may go at all is
//! `oslab_sys::cgroup_place`'s rule, tested there. The kernel's reaction to these files cannot be
//! tested on a host without v2 controllers; `tests/wcall.rs` in the oslab crate
//! covers placement on the live hierarchy.

mod common;

use std::path::Path;

use oslab_sys::parse::memcg::Version;
use oslab_wcall::cgroups::{CgroupLimits, GroupCgroups, default_weight};

fn read(p: &Path) -> String {
    std::fs::read_to_string(p).unwrap_or_default()
}

/// Empties the fake group folders so the journal's rmdir can remove them, as it
/// can on cgroupfs where the interface files are not real files.
fn clear(base: &Path) {
    for entry in walk(base) {
        if entry.is_file() {
            std::fs::remove_file(entry).unwrap();
        }
    }
}

fn walk(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            out.extend(walk(&p));
        }
        out.push(p);
    }
    out
}

#[test]
fn v2_controls_on_a_cgroupfs_like_tree() {
    let journal = tempfile::tempdir().unwrap();
    // SAFETY: this test binary has this one test, so no other thread reads the
    // environment while it is set.
    unsafe { std::env::set_var("OSLAB_JOURNAL_DIR", journal.path()) };

    let tree = tempfile::tempdir().unwrap();
    let root = tree.path();
    let slice = root.join("user.slice");
    let own = slice.join("session-1.scope");
    std::fs::create_dir_all(&own).unwrap();

    // beside the coordinator's cgroup, in a parent that gives its children memory
    // and io (delegated: cgroup_place decides that)
    std::fs::write(slice.join("cgroup.subtree_control"), "cpu io memory pids\n").unwrap();

    let mut limits = CgroupLimits::policy_io_weights();
    assert_eq!(limits.io_weight, [Some(400), Some(200), Some(100)]);
    limits.memory_high[2] = Some(2 << 30);
    let cg = GroupCgroups::create_at(Version::V2, root, &slice, &own, 4242, &limits).unwrap();
    let base = slice.join("oslab-wcall-4242");
    assert_eq!(cg.base(), base);
    assert_eq!(read(&base.join("cgroup.subtree_control")), "+memory +io");
    assert_eq!(read(&base.join("rt-high/io.weight")), "default 400");
    assert_eq!(read(&base.join("rt-low/io.bfq.weight")), "default 200");
    assert_eq!(read(&base.join("normal/io.weight")), "default 100");
    assert_eq!(
        read(&base.join("normal/memory.high")),
        (2u64 << 30).to_string()
    );
    assert!(
        !base.join("rt-high/memory.high").exists(),
        "no cap asked for rt-high"
    );
    assert!(
        cg.applied()
            .iter()
            .any(|a| a == "normal memory.high 2147483648"),
        "{:?}",
        cg.applied()
    );
    assert!(cg.not_applied().is_empty(), "{:?}", cg.not_applied());
    assert_eq!(
        default_weight(&read(&base.join("rt-high/io.weight"))),
        Some(400)
    );
    clear(&base);
    drop(cg);
    assert!(
        !base.exists(),
        "the groups are removed when the governor stops"
    );

    // no io controller given: memory only, and io.weight reported as not set
    std::fs::write(slice.join("cgroup.subtree_control"), "memory\n").unwrap();
    let cg = GroupCgroups::create_at(Version::V2, root, &slice, &own, 4243, &limits).unwrap();
    let base = slice.join("oslab-wcall-4243");
    assert_eq!(read(&base.join("cgroup.subtree_control")), "+memory");
    assert!(!base.join("rt-high/io.weight").exists());
    assert!(
        cg.not_applied()[0].starts_with("io.weight: the io controller is not enabled"),
        "{:?}",
        cg.not_applied()
    );
    clear(&base);
    drop(cg);

    // v1: placement only; asked-for limits are reported as not set
    let cg = GroupCgroups::create_at(Version::V1, root, &own, &own, 4244, &limits).unwrap();
    let base = own.join("oslab-wcall-4244");
    assert!(base.join("normal").is_dir());
    assert!(!base.join("normal/memory.high").exists());
    assert!(cg.not_applied()[0].contains("memory.high is a cgroup v2 control"));
    drop(cg);
    assert!(!base.exists());
    assert!(
        common::no_journal_in(journal.path()),
        "no journal left behind"
    );
}
