//! Cgroups named from the ids the kernel records (kernfs ids, which are the
//! inode numbers of the cgroups' directories), so a process that exited before
//! anyone looked at /proc/PID/cgroup is still named. The name is the one
//! /proc/PID/cgroup gives ([`crate::pidinfo::cgroup_of`]): the v1 memory
//! hierarchy's path where that is mounted, else the v2 path.
//!
//! The cgroup file systems are walked without following links, to a bounded
//! depth and count: their directory names come from whoever may create
//! cgroups, and are only ever shown, never opened by name.

use std::collections::HashMap;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use crate::fsread::Root;
use crate::parse::memcg::{Version, read_memory_mounts};

const MAX_DEPTH: usize = 32;
const MAX_DIRS: usize = 100_000;

/// Why a cgroup has no name.
pub const GONE: &str = "removed before it was named";
pub const NOT_MOUNTED: &str = "no cgroup hierarchy mounted";
pub const NOT_RECORDED: &str = "not recorded";

pub struct CgroupNames {
    /// The hierarchy names come from and where it is mounted.
    hierarchy: Option<(Version, PathBuf)>,
    known: HashMap<u64, String>,
    /// Ids not found after a fresh walk: their cgroups are gone (ids are never
    /// reused while the system runs).
    gone: std::collections::HashSet<u64>,
}

impl CgroupNames {
    pub fn live(root: &Root) -> CgroupNames {
        let hierarchy = read_memory_mounts(root).and_then(|(v1, v2)| {
            v1.map(|p| (Version::V1, p))
                .or_else(|| v2.map(|p| (Version::V2, p)))
        });
        CgroupNames {
            hierarchy,
            known: HashMap::new(),
            gone: Default::default(),
        }
    }

    /// The cgroup of a task that recorded `cgroup_id` (v2) and `memcg_id` (its
    /// memory cgroup), or why it has no name.
    pub fn name(&mut self, cgroup_id: u64, memcg_id: u64) -> Result<String, &'static str> {
        let Some((version, mount)) = self.hierarchy.clone() else {
            return Err(NOT_MOUNTED);
        };
        let id = match version {
            Version::V1 => memcg_id,
            Version::V2 => cgroup_id,
        };
        if id == 0 {
            return Err(NOT_RECORDED);
        }
        if let Some(n) = self.known.get(&id) {
            return Ok(n.clone());
        }
        if self.gone.contains(&id) {
            return Err(GONE);
        }
        self.known = walk(&mount);
        self.known.get(&id).cloned().ok_or_else(|| {
            self.gone.insert(id);
            GONE
        })
    }
}

/// Every cgroup directory under `mount` by inode number, named from the mount.
pub fn walk(mount: &Path) -> HashMap<u64, String> {
    let mut out = HashMap::new();
    let mut todo = vec![(mount.to_path_buf(), "/".to_string(), 0usize)];
    while let Some((dir, name, depth)) = todo.pop() {
        let Ok(meta) = std::fs::symlink_metadata(&dir) else {
            continue;
        };
        if !meta.is_dir() {
            continue;
        }
        out.insert(meta.ino(), name.clone());
        if depth >= MAX_DEPTH || out.len() >= MAX_DIRS {
            continue;
        }
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for e in entries.flatten() {
            if e.file_type().is_ok_and(|t| t.is_dir()) {
                let child = e.file_name().to_string_lossy().into_owned();
                let shown = if name == "/" {
                    format!("/{child}")
                } else {
                    format!("{name}/{child}")
                };
                todo.push((e.path(), shown, depth + 1));
            }
        }
    }
    out
}

/// The names of the child cgroups of `dir`, sorted.
pub fn child_names(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tree_is_named_by_inode_without_following_links() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::create_dir_all(root.join("a/b")).unwrap();
        std::fs::create_dir_all(root.join("c")).unwrap();
        std::os::unix::fs::symlink("/", root.join("c/escape")).unwrap();
        let names = walk(root);
        let ino = |p: &str| std::fs::metadata(root.join(p)).unwrap().ino();
        assert_eq!(names[&ino("a/b")], "/a/b");
        assert_eq!(names[&ino("c")], "/c");
        assert_eq!(names[&std::fs::metadata(root).unwrap().ino()], "/");
        assert_eq!(names.len(), 4, "the link is not followed: {names:?}");
    }

    #[test]
    fn this_process_is_named_as_proc_names_it() {
        let root = Root::live();
        let mut names = CgroupNames::live(&root);
        let Some((version, mount)) = names.hierarchy.clone() else {
            eprintln!("skipped: no cgroup hierarchy mounted here");
            return;
        };
        let me = crate::pidinfo::cgroup(&root, std::process::id()).unwrap();
        let dir = mount.join(me.trim_start_matches('/'));
        let id = std::fs::metadata(&dir).unwrap().ino();
        let (v2, memcg) = match version {
            Version::V1 => (0, id),
            Version::V2 => (id, 0),
        };
        assert_eq!(names.name(v2, memcg), Ok(me));
        assert_eq!(names.name(0, 0), Err(NOT_RECORDED));
        assert_eq!(names.name(u64::MAX, u64::MAX), Err(GONE));
    }
}
