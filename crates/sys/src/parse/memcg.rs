//! The memory cgroup a process is in, and the dirty and writeback bytes a memory
//! cgroup holds, for cgroup v1 and v2.
//!
//! v1 (`memory` controller on its own hierarchy): `memory.stat` has `dirty` and
//! `writeback` (this cgroup) and `total_dirty` / `total_writeback` (with its
//! children). v2 (the unified hierarchy with the memory controller enabled):
//! `file_dirty` and `file_writeback`, children included (kernel
//! Documentation/admin-guide/cgroup-v2.rst, "memory.stat"). All in bytes. Parsers take
//! text, so they are tested on captured files; the readers take a [`Root`] for
//! /proc, and the cgroup directories they give are under that root.

use std::path::PathBuf;

use crate::fsread::Root;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Version {
    V1,
    V2,
}

/// Where the memory controller is mounted, from /proc/self/mounts.
pub fn memory_mounts(mounts: &str) -> (Option<PathBuf>, Option<PathBuf>) {
    let mut v1 = None;
    let mut v2 = None;
    for line in mounts.lines() {
        let f: Vec<&str> = line.split_whitespace().collect();
        if f.len() < 4 {
            continue;
        }
        match f[2] {
            "cgroup" if f[3].split(',').any(|o| o == "memory") => {
                v1.get_or_insert_with(|| PathBuf::from(f[1]));
            }
            "cgroup2" => {
                v2.get_or_insert_with(|| PathBuf::from(f[1]));
            }
            _ => {}
        }
    }
    (v1, v2)
}

/// The path of a process's cgroup in the hierarchy that holds `memory`, from
/// /proc/PID/cgroup: the v1 line naming memory, else the v2 line `0::PATH`.
pub fn own_path(proc_cgroup: &str, version: Version) -> Option<String> {
    proc_cgroup.lines().find_map(|l| {
        let mut parts = l.splitn(3, ':');
        let (_, controllers, path) = (parts.next()?, parts.next()?, parts.next()?);
        let hit = match version {
            Version::V1 => controllers.split(',').any(|c| c == "memory"),
            Version::V2 => controllers.is_empty(),
        };
        hit.then(|| path.to_string())
    })
}

/// [`memory_mounts`] of /proc/self/mounts under `root`, the mount points under
/// `root` too.
pub fn read_memory_mounts(root: &Root) -> Option<(Option<PathBuf>, Option<PathBuf>)> {
    let (v1, v2) = memory_mounts(&root.read("/proc/self/mounts").ok()?);
    let under = |p: PathBuf| root.path(&p.to_string_lossy());
    Some((v1.map(under), v2.map(under)))
}

/// The cgroup directories of process `pid` (a number, or `self`) in the
/// hierarchies that can hold memory, v2 first: where its memory cgroup may be.
pub fn cgroup_dirs(root: &Root, pid: &str) -> Vec<(Version, PathBuf)> {
    let (Some(me), Some((v1, v2))) = (
        root.read(&format!("/proc/{pid}/cgroup")).ok(),
        read_memory_mounts(root),
    ) else {
        return Vec::new();
    };
    [(Version::V2, v2), (Version::V1, v1)]
        .into_iter()
        .filter_map(|(v, mount)| {
            let rel = own_path(&me, v)?;
            Some((v, mount?.join(rel.trim_start_matches('/'))))
        })
        .collect()
}

/// The memory cgroup directory this process is in, and its version. v2 counts only
/// when its root lists the memory controller (on a hybrid host it does not).
pub fn own_cgroup(root: &Root) -> Option<(Version, PathBuf)> {
    let (_, v2) = read_memory_mounts(root)?;
    let v2_has_memory = v2.is_some_and(|m| {
        std::fs::read_to_string(m.join("cgroup.controllers"))
            .is_ok_and(|c| c.split_whitespace().any(|x| x == "memory"))
    });
    cgroup_dirs(root, "self")
        .into_iter()
        .find(|(v, _)| *v == Version::V1 || v2_has_memory)
}

/// (dirty, writeback) bytes of a cgroup, children included, from its memory.stat.
pub fn dirty_writeback(stat: &str, version: Version) -> Option<(u64, u64)> {
    let get = |key: &str| -> Option<u64> {
        stat.lines().find_map(|l| {
            let (k, v) = l.split_once(' ')?;
            (k == key).then(|| v.trim().parse().ok())?
        })
    };
    match version {
        Version::V1 => Some((
            get("total_dirty").or_else(|| get("dirty"))?,
            get("total_writeback").or_else(|| get("writeback"))?,
        )),
        Version::V2 => Some((get("file_dirty")?, get("file_writeback")?)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const V1_STAT: &str = include_str!("../../tests/fixtures/memcg/v1-memory.stat");
    const V2_STAT: &str = include_str!("../../tests/fixtures/memcg/v2-memory.stat");

    #[test]
    fn v1_stat_gives_the_hierarchical_totals() {
        assert_eq!(
            dirty_writeback(V1_STAT, Version::V1),
            Some((204_210_176, 0))
        );
    }

    #[test]
    fn v2_stat_gives_file_dirty_and_writeback() {
        assert_eq!(
            dirty_writeback(V2_STAT, Version::V2),
            Some((8_192_000, 1_048_576))
        );
        assert_eq!(dirty_writeback(V1_STAT, Version::V2), None);
    }

    #[test]
    fn mounts_of_a_hybrid_host() {
        let m = "cgroup /sys/fs/cgroup/memory cgroup rw,relatime,memory 0 0\n\
                 cgroup /sys/fs/cgroup/blkio cgroup rw,relatime,blkio 0 0\n\
                 cgroup2 /sys/fs/cgroup/unified cgroup2 rw,relatime 0 0\n";
        assert_eq!(
            memory_mounts(m),
            (
                Some(PathBuf::from("/sys/fs/cgroup/memory")),
                Some(PathBuf::from("/sys/fs/cgroup/unified"))
            )
        );
        assert_eq!(
            memory_mounts("cgroup2 /sys/fs/cgroup cgroup2 rw 0 0\n").0,
            None
        );
    }

    /// /proc/self/mounts and /proc/self/cgroup of this KVM guest (cgroup v1 with
    /// memory, and an empty cgroup2 hierarchy beside it), trimmed.
    const MOUNTS: &str = "/dev/vda / ext4 rw,relatime 0 0\ntmpfs /sys/fs/cgroup tmpfs rw,relatime,mode=755 0 0\ncgroup /sys/fs/cgroup/cpu cgroup rw,relatime,cpu 0 0\ncgroup /sys/fs/cgroup/memory cgroup rw,relatime,memory 0 0\ncgroup2 /sys/fs/cgroup/unified cgroup2 rw,relatime 0 0\n";
    const CGROUP: &str =
        "9:name=systemd:/\n4:memory:/process_api/45b828cf711126f7deabf26d09f9537f\n1:cpu:/\n0::/\n";

    fn tree(v2_controllers: &str) -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        let w = |p: &str, text: &str| {
            let f = dir.path().join(p);
            std::fs::create_dir_all(f.parent().unwrap()).unwrap();
            std::fs::write(f, text).unwrap();
        };
        w("proc/self/mounts", MOUNTS);
        w("proc/self/cgroup", CGROUP);
        w("proc/42/cgroup", "4:memory:/a\n0::/b/c\n");
        w("sys/fs/cgroup/unified/cgroup.controllers", v2_controllers);
        dir
    }

    #[test]
    fn readers_take_a_root() {
        let dir = tree("hugetlb\n");
        let root = Root::at(dir.path());
        let cg = dir.path().join("sys/fs/cgroup");
        assert_eq!(
            read_memory_mounts(&root),
            Some((Some(cg.join("memory")), Some(cg.join("unified"))))
        );
        // v2 without the memory controller: the v1 memory cgroup
        assert_eq!(
            own_cgroup(&root),
            Some((
                Version::V1,
                cg.join("memory/process_api/45b828cf711126f7deabf26d09f9537f")
            ))
        );
        assert_eq!(
            cgroup_dirs(&root, "42"),
            vec![
                (Version::V2, cg.join("unified/b/c")),
                (Version::V1, cg.join("memory/a"))
            ]
        );
        assert!(cgroup_dirs(&root, "43").is_empty());
        let v2 = tree("cpu memory io\n");
        let cg2 = v2.path().join("sys/fs/cgroup");
        assert_eq!(
            own_cgroup(&Root::at(v2.path())),
            Some((Version::V2, cg2.join("unified")))
        );
    }

    #[test]
    fn own_path_per_version() {
        let c = "9:name=systemd:/\n4:memory:/process_api/2d8c\n3:cpuset:/\n0::/user.slice\n";
        assert_eq!(
            own_path(c, Version::V1).as_deref(),
            Some("/process_api/2d8c")
        );
        assert_eq!(own_path(c, Version::V2).as_deref(), Some("/user.slice"));
        assert_eq!(own_path("0::/a/b\n", Version::V1), None);
    }
}
