//! The memory cgroup a process is in, and the dirty and writeback bytes a memory
//! cgroup holds, for cgroup v1 and v2.
//!
//! v1 (`memory` controller on its own hierarchy): `memory.stat` has `dirty` and
//! `writeback` (this cgroup) and `total_dirty` / `total_writeback` (with its
//! children). v2 (the unified hierarchy with the memory controller enabled):
//! `file_dirty` and `file_writeback`, children included (kernel
//! Documentation/admin-guide/cgroup-v2.rst, "memory.stat"). All in bytes. Parsers take
//! text, so they are tested on captured files.

use std::path::{Path, PathBuf};

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

/// The memory cgroup directory this process is in, and its version. v2 counts only
/// when its root lists the memory controller (on a hybrid host it does not).
pub fn own_cgroup() -> Option<(Version, PathBuf)> {
    let mounts = std::fs::read_to_string("/proc/self/mounts").ok()?;
    let me = std::fs::read_to_string("/proc/self/cgroup").ok()?;
    let (v1, v2) = memory_mounts(&mounts);
    let pick = |v: Version, root: &Path| -> Option<(Version, PathBuf)> {
        let rel = own_path(&me, v)?;
        Some((v, root.join(rel.trim_start_matches('/'))))
    };
    if let Some(root) = v2.as_deref().filter(|r| {
        std::fs::read_to_string(r.join("cgroup.controllers"))
            .is_ok_and(|c| c.split_whitespace().any(|x| x == "memory"))
    }) {
        return pick(Version::V2, root);
    }
    pick(Version::V1, v1.as_deref()?)
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

    const V1_STAT: &str = include_str!("../tests/fixtures/memcg/v1-memory.stat");
    const V2_STAT: &str = include_str!("../tests/fixtures/memcg/v2-memory.stat");

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
