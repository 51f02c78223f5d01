//! Cgroups per group: where the memory controller is available (v1, or v2), the
//! coordinator places each governed process in a cgroup of its group, so the
//! kernel's own accounting (memory.stat: dirty and writeback bytes) can be set
//! beside the per-file cachestat() figures the policy uses, and, on cgroup v2, so
//! the kernel itself can treat the groups differently (io.weight, memory.high).
//!
//! Where they go: on v1 under the coordinator's own memory cgroup. On v2 where
//! `oslab_sys::cgroup_place` allows oslab cgroups of its own: under the root when
//! the coordinator runs in the root cgroup (memory and io turned on for the
//! root's children first, as systemd does for its slices); inside its own cgroup
//! when that is delegated to it (systemd's `Delegate=yes`, as
//! dist/systemd/oslab-wcall.service has), after the coordinator moved into the
//! leaf `oslab-wcall-PID-home` there; or beside it in a delegated parent that
//! gives memory to its children (a testbed's cgroup). Elsewhere (a service
//! manager's tree that was not delegated) none are made, and the governor runs
//! without them, saying why. Named after the coordinator's pid, journaled, and
//! removed when the governor stops, on Ctrl-C, or by `oslab restore`; what is set
//! inside them goes with them. Before they go, every process in them is moved
//! back where it came from (`crate::placer`).
//!
//! On v1 nothing is limited: a v1 memory cgroup has no dirty limit of its own and
//! v1 blkio cannot tell which cgroup dirtied a page. On v2 with cgroup writeback,
//! placement alone gives each group its own dirty limits (the kernel scales
//! vm.dirty_* by the group's memory headroom, mm/page-writeback.c
//! domain_dirty_limits), which is why placement can be turned off (`--no-cgroups`).

use std::path::{Path, PathBuf};

use oslab_sys::cgroup_controllers::words;
use oslab_sys::cgroup_place::{self, Needs, Placement};
use oslab_sys::fsread::Root;
use oslab_sys::journal::with_global;
use oslab_sys::parse::memcg::{self, Version};

use crate::placer::{Placer, Returner};
use crate::shm::{GROUP_NAMES, GROUPS};

/// The groups need memory (their dirty counts, their dirty limits); io gives
/// them their weights where it is offered.
const NEEDS: Needs = Needs {
    required: &["memory"],
    wanted: &["io"],
};

/// What to set on the group cgroups beyond placement (cgroup v2 only).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CgroupLimits {
    /// io.weight (and io.bfq.weight) per group, 1 to 1000; None leaves the default.
    pub io_weight: [Option<u32>; GROUPS],
    /// memory.high per group, bytes; None leaves it at max.
    pub memory_high: [Option<u64>; GROUPS],
}

impl CgroupLimits {
    /// io weights in the proportion of the policy's group weights (4 : 2 : 1), on
    /// the kernel's scale where 100 is the default: 400, 200, 100.
    pub fn policy_io_weights() -> CgroupLimits {
        let mut l = CgroupLimits::default();
        for (g, w) in l.io_weight.iter_mut().enumerate() {
            *w = Some((oslab_wbsim::policy::weight(GROUP_NAMES[g]) * 100) as u32);
        }
        l
    }
}

pub struct GroupCgroups {
    version: Version,
    /// The mount point of the hierarchy they are in.
    mount: PathBuf,
    base: PathBuf,
    /// What was set, one line each ("rt-high io.weight default 400"), and what could
    /// not be and why.
    applied: Vec<String>,
    not_applied: Vec<String>,
    /// Journal entries to undo at the end, newest last.
    seqs: Vec<u64>,
    placer: Placer,
}

/// The name of a coordinator's folder of cgroups.
fn base_name(coordinator_pid: u32) -> String {
    format!("oslab-wcall-{coordinator_pid}")
}

impl GroupCgroups {
    /// Creates one cgroup per group where this process's memory cgroup allows it.
    /// The error says why not (no memory controller, v2 in a cgroup not
    /// delegated to oslab, no permission), naming the fix.
    pub fn create(limits: &CgroupLimits) -> Result<GroupCgroups, String> {
        let (version, own) = memcg::own_cgroup(&Root::live())
            .ok_or("no memory cgroup controller is mounted for this process")?;
        let (v1, v2) =
            memcg::read_memory_mounts(&Root::live()).ok_or("cannot read /proc/self/mounts")?;
        let pid = std::process::id();
        match version {
            Version::V1 => {
                let mount = v1.ok_or("no cgroup v1 memory mount found")?;
                Self::create_at(version, &mount, &own, &own, pid, limits)
            }
            Version::V2 => {
                let root = v2.ok_or("no cgroup2 mount found")?;
                let at = cgroup_place::placement(&own, &root, &NEEDS)?;
                Self::create_placed(&at, &root, pid, limits)
            }
        }
    }

    /// The groups at a v2 placement: its steps first (the leaf the coordinator
    /// moves into, the controllers turned on), undone again if a later one fails.
    fn create_placed(
        at: &Placement,
        root: &Path,
        pid: u32,
        limits: &CgroupLimits,
    ) -> Result<GroupCgroups, String> {
        // controllers of the root are the machine's: the machine-wide lock
        let shared = at.parent == root;
        let mut seqs = Vec::new();
        let prepared = cgroup_place::prepare(at, &base_name(pid), &mut |d, u| {
            let s = with_global(|j| {
                if shared {
                    j.record(d, u)
                } else {
                    j.record_private(d, u)
                }
            })?;
            seqs.push(s);
            Ok(s)
        });
        let made = prepared
            .map_err(|e| e.to_string())
            .and_then(|home| Self::create_at(Version::V2, root, &at.parent, &home, pid, limits));
        match made {
            Ok(mut me) => {
                me.seqs.splice(0..0, seqs);
                Ok(me)
            }
            Err(e) => {
                for seq in seqs.into_iter().rev() {
                    let _ = with_global(|j| j.undo(seq));
                }
                Err(e)
            }
        }
    }

    /// Creates `parent/oslab-wcall-PID/{rt-high,rt-low,normal}` in the hierarchy
    /// mounted at `mount`; processes left in them after each was moved back
    /// where it came from go to `home` (by the journal: also on `oslab restore`).
    /// On v2 the controllers `parent` gives its children are passed on to the
    /// groups, and `limits` are set.
    pub fn create_at(
        version: Version,
        mount: &Path,
        parent: &Path,
        home: &Path,
        pid: u32,
        limits: &CgroupLimits,
    ) -> Result<GroupCgroups, String> {
        let base = parent.join(base_name(pid));
        let mut me = GroupCgroups {
            version,
            mount: mount.to_path_buf(),
            base: base.clone(),
            applied: Vec::new(),
            not_applied: Vec::new(),
            seqs: Vec::new(),
            placer: Placer::start(version, mount.to_path_buf(), base.clone()),
        };
        let mut io = false;
        for (k, dir) in me.dirs().into_iter().enumerate() {
            let seq = cgroup_place::make_cgroup(&dir, home, &mut |d, u| {
                with_global(|j| j.record_private(d, u))
            });
            match seq {
                Ok(seq) => me.seqs.push(seq),
                // recorded, not made: undone with the rest (nothing to remove)
                Err(e) => return Err(format!("cannot create {}: {e}", dir.display())),
            }
            if k == 0 && version == Version::V2 {
                io = me.pass_controllers_on(parent)?;
            }
        }
        if version == Version::V2 {
            me.set_limits(limits, io);
        } else if limits.memory_high.iter().any(Option::is_some) {
            me.not_applied
                .push("memory.high is a cgroup v2 control; this memory cgroup is v1".into());
        }
        Ok(me)
    }

    /// The base, then each group's cgroup.
    fn dirs(&self) -> Vec<PathBuf> {
        std::iter::once(self.base.clone())
            .chain(GROUP_NAMES.iter().map(|g| self.base.join(g)))
            .collect()
    }

    /// What moves every process in the groups back out where it came from, for
    /// a way out that drops nothing (a signal: `oslab_sys::journal::finish_global`
    /// removes the groups then); once called, nothing more is placed.
    pub fn returner(&self) -> impl Fn() -> Vec<String> + Send + Sync + 'static {
        let r: Returner = self.placer.returner();
        let dirs = self.dirs();
        move || r.return_all(&dirs)
    }

    /// Enables, for the groups, the controllers `parent` gives the base (memory
    /// always; io where available); whether io is among them.
    fn pass_controllers_on(&mut self, parent: &Path) -> Result<bool, String> {
        let given = words(&parent.join("cgroup.subtree_control"));
        let wanted: Vec<&str> = ["memory", "io"]
            .into_iter()
            .filter(|c| given.iter().any(|g| g == c))
            .collect();
        if !wanted.contains(&"memory") {
            return Err(format!(
                "the memory controller is not enabled for the children of {}",
                parent.display()
            ));
        }
        if !wanted.contains(&"io") {
            self.not_applied.push(format!(
                "io.weight: the io controller is not enabled for the children of {}",
                parent.display()
            ));
        }
        let line: Vec<String> = wanted.iter().map(|c| format!("+{c}")).collect();
        let path = self.base.join("cgroup.subtree_control");
        std::fs::write(&path, line.join(" ")).map_err(|e| {
            format!(
                "cannot enable {} in {}: {e}",
                wanted.join(", "),
                path.display()
            )
        })?;
        Ok(wanted.contains(&"io"))
    }

    /// The groups' io weights where `io` (their io controller is enabled), and
    /// their memory caps.
    fn set_limits(&mut self, limits: &CgroupLimits, io: bool) {
        for (g, name) in GROUP_NAMES.iter().enumerate() {
            let dir = self.dir(g);
            if let Some(w) = limits.io_weight[g].filter(|_| io) {
                // io.weight is read by blk-iocost, io.bfq.weight by BFQ; a kernel
                // may offer either or both
                let mut done = Vec::new();
                for file in ["io.weight", "io.bfq.weight"] {
                    if std::fs::write(dir.join(file), format!("default {w}")).is_ok() {
                        done.push(file);
                    }
                }
                if done.is_empty() {
                    self.not_applied.push(format!(
                        "{name} io weight {w}: no io.weight or io.bfq.weight took it"
                    ));
                } else {
                    self.applied
                        .push(format!("{name} {} {w}", done.join(" and ")));
                }
            }
            if let Some(b) = limits.memory_high[g] {
                match std::fs::write(dir.join("memory.high"), b.to_string()) {
                    Ok(()) => self.applied.push(format!("{name} memory.high {b}")),
                    Err(e) => self
                        .not_applied
                        .push(format!("{name} memory.high {b}: {e}")),
                }
            }
        }
    }

    pub fn version(&self) -> Version {
        self.version
    }

    pub fn dir(&self, group: usize) -> PathBuf {
        self.base.join(GROUP_NAMES[group.min(GROUPS - 1)])
    }

    /// Moves a process (its threads with it) into its group's cgroup soon, without
    /// waiting; children it starts afterwards are born there.
    pub fn place(&self, pid: u32, group: usize) {
        self.placer.place(self.dir(group).join("cgroup.procs"), pid);
    }

    /// Each group's dirty and writeback bytes as its cgroup's memory.stat counts
    /// them (children included), where all three can be read.
    pub fn dirty_writeback(&self) -> Option<[(u64, u64); GROUPS]> {
        let mut out = [(0, 0); GROUPS];
        for (g, slot) in out.iter_mut().enumerate() {
            *slot = dirty_writeback_of(&self.dir(g), self.version)?;
        }
        Some(out)
    }

    /// Where the group cgroups are.
    pub fn base(&self) -> &Path {
        &self.base
    }

    /// Their folder as a path of the v2 hierarchy (as /proc/PID/cgroup names
    /// cgroups); None on v1.
    pub fn hierarchy_path(&self) -> Option<String> {
        hierarchy_path(self.version, &self.base, &self.mount)
    }

    /// What was set on the groups, one line each.
    pub fn applied(&self) -> &[String] {
        &self.applied
    }

    /// What was asked and could not be set, with the reason.
    pub fn not_applied(&self) -> &[String] {
        &self.not_applied
    }
}

/// Dropping moves every process back where it came from and removes the
/// cgroups (through the journal).
impl Drop for GroupCgroups {
    fn drop(&mut self) {
        self.placer.stop();
        // a governor that stops says where they went (`service::Governor::return_placed`);
        // what is left to move here, nobody asked about
        let _ = (self.returner())();
        for seq in self.seqs.drain(..).rev() {
            let _ = with_global(|j| j.undo(seq));
        }
    }
}

/// What the kernel says of one group's cgroup.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct GroupUsage {
    pub dirty: u64,
    pub writeback: u64,
    /// v2: memory.high when not `max`.
    pub memory_high: Option<u64>,
    /// v2: the default io weight (io.weight, else io.bfq.weight).
    pub io_weight: Option<u32>,
}

/// The default weight from an io.weight or io.bfq.weight file ("default 400").
pub fn default_weight(text: &str) -> Option<u32> {
    text.lines().find_map(|l| {
        let (k, v) = l.trim().split_once(' ')?;
        (k == "default").then(|| v.trim().parse().ok())?
    })
}

/// A cgroup's dirty and writeback bytes from its memory.stat (children included).
fn dirty_writeback_of(dir: &Path, version: Version) -> Option<(u64, u64)> {
    let stat = std::fs::read_to_string(dir.join("memory.stat")).ok()?;
    memcg::dirty_writeback(&stat, version)
}

/// `base` of the hierarchy mounted at `mount` as /proc/PID/cgroup names it, on v2.
fn hierarchy_path(version: Version, base: &Path, mount: &Path) -> Option<String> {
    let rel = base.strip_prefix(mount).ok()?;
    (version == Version::V2).then(|| format!("/{}", rel.display()))
}

/// The group cgroups of the coordinator `pid` (its /proc entry under `root`),
/// when it made them: beside it or, where it moved into a leaf of its own
/// cgroup, beside that leaf.
fn groups_of(root: &Root, coordinator_pid: u32) -> Option<(Version, PathBuf)> {
    memcg::cgroup_dirs(root, &coordinator_pid.to_string())
        .into_iter()
        .find_map(|(version, own)| {
            [own.as_path(), own.parent().unwrap_or(&own)]
                .into_iter()
                .map(|p| p.join(base_name(coordinator_pid)))
                .find(|b| b.is_dir())
                .map(|b| (version, b))
        })
}

/// The group cgroups of the coordinator `pid` as a path of the v2 hierarchy
/// (see [`GroupCgroups::hierarchy_path`]).
pub fn hierarchy_path_of(root: &Root, coordinator_pid: u32) -> Option<String> {
    let (version, base) = groups_of(root, coordinator_pid)?;
    let mount = memcg::read_memory_mounts(root)?.1?;
    hierarchy_path(version, &base, &mount)
}

/// Each group's usage from the cgroups of the coordinator `pid` (its /proc entry
/// under `root`), when it made them; read by anyone (`oslab wcall status`).
pub fn usage_of(root: &Root, coordinator_pid: u32) -> Option<Vec<GroupUsage>> {
    let (version, base) = groups_of(root, coordinator_pid)?;
    GROUP_NAMES
        .iter()
        .map(|g| {
            let dir = base.join(g);
            let (dirty, writeback) = dirty_writeback_of(&dir, version)?;
            let read = |f: &str| std::fs::read_to_string(dir.join(f)).ok();
            Some(GroupUsage {
                dirty,
                writeback,
                memory_high: read("memory.high").and_then(|t| t.trim().parse().ok()),
                io_weight: read("io.weight")
                    .or_else(|| read("io.bfq.weight"))
                    .and_then(|t| default_weight(&t)),
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn io_weight_files_give_their_default() {
        assert_eq!(default_weight("default 100\n8:16 200\n"), Some(100));
        assert_eq!(default_weight("8:16 200\n"), None);
        assert_eq!(default_weight(""), None);
    }
}
