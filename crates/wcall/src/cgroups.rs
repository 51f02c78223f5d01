//! Memory cgroups per group: where the memory controller is available (v1, or v2 with
//! the controller delegated), the coordinator places each governed process in a
//! cgroup of its group, so the kernel's own accounting (memory.stat: dirty and
//! writeback bytes) can be set beside the per-file cachestat() figures the policy
//! uses. The cgroups are created under the coordinator's own memory cgroup (never at
//! the root, which could lift a container's limit), named after the coordinator's
//! pid, journaled, and removed when the governor stops, on Ctrl-C, or by
//! `oslab restore`.
//!
//! Placement changes no limit: no memory.max, memory.high or io.weight is set. On v1
//! a memory cgroup has no dirty limit of its own, so writers behave as before; on v2
//! cgroup writeback would apply per-cgroup dirty limits (balance_dirty_pages per
//! memcg domain), which is why placement can be turned off (`--no-cgroups`).

use std::path::{Path, PathBuf};

use oslab_sys::journal::{Undo, with_global};
use oslab_sys::memcg::{self, Version};

use crate::shm::{GROUP_NAMES, GROUPS};

pub struct GroupCgroups {
    version: Version,
    base: PathBuf,
    /// Journal entries to undo at the end, newest last.
    seqs: Vec<u64>,
}

/// The folder of a coordinator's cgroups, under `own` (its own memory cgroup).
fn base_dir(own: &Path, coordinator_pid: u32) -> PathBuf {
    own.join(format!("oslab-wcall-{coordinator_pid}"))
}

impl GroupCgroups {
    /// Creates one cgroup per group under this process's memory cgroup. The error
    /// says why not (no memory controller, v2 without it delegated, no permission).
    pub fn create() -> Result<GroupCgroups, String> {
        let (version, own) =
            memcg::own_cgroup().ok_or("no memory cgroup controller is mounted for this process")?;
        if version == Version::V2 {
            let delegated = std::fs::read_to_string(own.join("cgroup.subtree_control"))
                .is_ok_and(|c| c.split_whitespace().any(|x| x == "memory"));
            if !delegated {
                return Err(format!(
                    "the memory controller is not enabled for the children of {}",
                    own.display()
                ));
            }
        }
        let base = base_dir(&own, std::process::id());
        let mut me = GroupCgroups {
            version,
            base: base.clone(),
            seqs: Vec::new(),
        };
        let dirs = std::iter::once((base.clone(), own.clone()))
            .chain(GROUP_NAMES.iter().map(|g| (base.join(g), base.clone())));
        for (dir, parent) in dirs {
            let seq = with_global(|j| {
                j.record_private(
                    format!("create memory cgroup {}", dir.display()),
                    Undo::RemoveCgroup {
                        path: dir.clone(),
                        parent: parent.clone(),
                    },
                )
            })
            .map_err(|e| e.to_string())?;
            me.seqs.push(seq);
            std::fs::create_dir(&dir)
                .map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
        }
        Ok(me)
    }

    pub fn version(&self) -> Version {
        self.version
    }

    pub fn dir(&self, group: usize) -> PathBuf {
        self.base.join(GROUP_NAMES[group.min(GROUPS - 1)])
    }

    /// Moves a process (its threads with it) into its group's cgroup; children it
    /// starts afterwards are born there.
    pub fn place(&self, pid: u32, group: usize) -> std::io::Result<()> {
        std::fs::write(self.dir(group).join("cgroup.procs"), pid.to_string())
    }

    /// Where the group cgroups are.
    pub fn base(&self) -> &Path {
        &self.base
    }
}

/// Dropping moves every process out and removes the cgroups (through the journal).
impl Drop for GroupCgroups {
    fn drop(&mut self) {
        for seq in self.seqs.drain(..).rev() {
            let _ = with_global(|j| j.undo(seq));
        }
    }
}

/// (dirty, writeback) bytes per group from the memory cgroups of the coordinator
/// `pid`, when it made them; read by anyone (`oslab wcall status`).
pub fn usage_of(coordinator_pid: u32) -> Option<Vec<(u64, u64)>> {
    let me = std::fs::read_to_string(format!("/proc/{coordinator_pid}/cgroup")).ok()?;
    let mounts = std::fs::read_to_string("/proc/self/mounts").ok()?;
    let (v1, v2) = memcg::memory_mounts(&mounts);
    let candidates = [(Version::V2, v2), (Version::V1, v1)];
    for (version, root) in candidates {
        let (Some(root), Some(rel)) = (root, memcg::own_path(&me, version)) else {
            continue;
        };
        let base = base_dir(&root.join(rel.trim_start_matches('/')), coordinator_pid);
        if !base.is_dir() {
            continue;
        }
        return GROUP_NAMES
            .iter()
            .map(|g| {
                let stat = std::fs::read_to_string(base.join(g).join("memory.stat")).ok()?;
                memcg::dirty_writeback(&stat, version)
            })
            .collect();
    }
    None
}
