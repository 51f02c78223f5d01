//! Cgroups per group: where the memory controller is available (v1, or v2), the
//! coordinator places each governed process in a cgroup of its group, so the
//! kernel's own accounting (memory.stat: dirty and writeback bytes) can be set
//! beside the per-file cachestat() figures the policy uses, and, on cgroup v2, so
//! the kernel itself can treat the groups differently (io.weight, memory.high).
//!
//! Where they go: on v1 under the coordinator's own memory cgroup. On v2 a cgroup
//! that holds processes cannot give controllers to children ("no internal
//! processes"), so the groups go under the coordinator's own cgroup only when it
//! already delegates `memory` to its children, else beside it, under its parent
//! (processes moved there leave limits set on the coordinator's own cgroup, not
//! those of the parent). Never directly under the root of the hierarchy, which
//! could lift a container's limit, unless the coordinator itself is in the root
//! cgroup (a machine without systemd, a kernel matrix guest), where a move lifts
//! nothing: there it turns memory and io on for the root's children first, as
//! systemd does for its slices, journaled and turned off again when it stops.
//! Named after the coordinator's pid, journaled,
//! and removed when the governor stops, on Ctrl-C, or by `oslab restore`; what is
//! set inside them goes with them.
//!
//! On v1 nothing is limited: a v1 memory cgroup has no dirty limit of its own and
//! v1 blkio cannot tell which cgroup dirtied a page. On v2 with cgroup writeback,
//! placement alone gives each group its own dirty limits (the kernel scales
//! vm.dirty_* by the group's memory headroom, mm/page-writeback.c
//! domain_dirty_limits), which is why placement can be turned off (`--no-cgroups`).

use std::path::{Path, PathBuf};

use oslab_sys::cgroup_controllers::{give_to_children, not_given, words};
use oslab_sys::fsread::Root;
use oslab_sys::journal::{Undo, with_global};
use oslab_sys::parse::memcg::{self, Version};

use crate::shm::{GROUP_NAMES, GROUPS};

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
    base: PathBuf,
    /// What was set, one line each ("rt-high io.weight default 400"), and what could
    /// not be and why.
    applied: Vec<String>,
    not_applied: Vec<String>,
    /// Journal entries to undo at the end, newest last.
    seqs: Vec<u64>,
    placer: Option<Placer>,
}

/// Moves processes into cgroups on a thread of its own. A write to cgroup.procs
/// waits for an RCU grace period whenever the kernel's threadgroup lock has gone
/// back to its slow mode (7.5 ms here for the first move after a pause), and a
/// coordinator pass must not wait that long.
struct Placer {
    tx: Option<std::sync::mpsc::Sender<(PathBuf, u32)>>,
    handle: Option<std::thread::JoinHandle<()>>,
}

impl Placer {
    fn start() -> Option<Placer> {
        let (tx, rx) = std::sync::mpsc::channel::<(PathBuf, u32)>();
        let handle = std::thread::Builder::new()
            .name("wcall-placer".into())
            .spawn(move || {
                for (procs, pid) in rx {
                    // a process gone in between is no error; it is simply not placed
                    let _ = std::fs::write(procs, pid.to_string());
                }
            })
            .ok()?;
        Some(Placer {
            tx: Some(tx),
            handle: Some(handle),
        })
    }

    /// Waits for the moves asked for so far.
    fn stop(&mut self) {
        self.tx.take();
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
    }
}

/// The folder of a coordinator's cgroups, under `parent`.
fn base_dir(parent: &Path, coordinator_pid: u32) -> PathBuf {
    parent.join(format!("oslab-wcall-{coordinator_pid}"))
}

/// Where a coordinator in cgroup `own` of a v2 hierarchy mounted at `root` puts
/// its groups: under `own` when it gives `memory` to its children, else under its
/// parent when that does (and is not the root), else why neither works.
pub fn v2_parent(own: &Path, root: &Path) -> Result<PathBuf, String> {
    let gives_memory = |dir: &Path| {
        words(&dir.join("cgroup.subtree_control"))
            .iter()
            .any(|c| c == "memory")
    };
    if gives_memory(own) {
        return Ok(own.to_path_buf());
    }
    match own.parent() {
        Some(up) if up != root && up.starts_with(root) && gives_memory(up) => Ok(up.to_path_buf()),
        _ => Err(format!(
            "the memory controller is not enabled for the children of {} or of its parent (below the root)",
            own.display()
        )),
    }
}

/// Turns memory and io on for the children of the root cgroup `root` where the
/// hierarchy has them and they are off; journaled, so they go off again.
fn turn_on_for_children(root: &Path) -> Result<Vec<u64>, String> {
    let mut seqs = Vec::new();
    let r = give_to_children(root, &not_given(root, &["memory", "io"]), &mut |d, u| {
        let s = with_global(|j| j.record(d, u))?;
        seqs.push(s);
        Ok(s)
    });
    if let Err(e) = r {
        for s in seqs.into_iter().rev() {
            let _ = with_global(|j| j.undo(s));
        }
        return Err(e.to_string());
    }
    Ok(seqs)
}

impl GroupCgroups {
    /// Creates one cgroup per group where this process's memory cgroup allows it.
    /// The error says why not (no memory controller, v2 without it delegated, no
    /// permission).
    pub fn create(limits: &CgroupLimits) -> Result<GroupCgroups, String> {
        let (version, own) = memcg::own_cgroup(&Root::live())
            .ok_or("no memory cgroup controller is mounted for this process")?;
        let mut root_seqs = Vec::new();
        let parent = match version {
            Version::V1 => own.clone(),
            Version::V2 => {
                let root = memcg::read_memory_mounts(&Root::live())
                    .ok_or("cannot read /proc/self/mounts")?
                    .1
                    .ok_or("no cgroup2 mount found")?;
                if own == root {
                    root_seqs = turn_on_for_children(&root)?;
                    root
                } else {
                    v2_parent(&own, &root)?
                }
            }
        };
        match Self::create_at(version, &parent, &own, std::process::id(), limits) {
            Ok(mut me) => {
                me.seqs.splice(0..0, root_seqs);
                Ok(me)
            }
            Err(e) => {
                for seq in root_seqs.into_iter().rev() {
                    let _ = with_global(|j| j.undo(seq));
                }
                Err(e)
            }
        }
    }

    /// Creates `parent/oslab-wcall-PID/{rt-high,rt-low,normal}`; processes left in
    /// them at the end go back to `home`. On v2 the controllers `parent` gives its
    /// children are passed on to the groups, and `limits` are set.
    pub fn create_at(
        version: Version,
        parent: &Path,
        home: &Path,
        pid: u32,
        limits: &CgroupLimits,
    ) -> Result<GroupCgroups, String> {
        let base = base_dir(parent, pid);
        let mut me = GroupCgroups {
            version,
            base: base.clone(),
            applied: Vec::new(),
            not_applied: Vec::new(),
            seqs: Vec::new(),
            placer: Placer::start(),
        };
        let dirs = std::iter::once(base.clone()).chain(GROUP_NAMES.iter().map(|g| base.join(g)));
        let mut io = false;
        for (k, dir) in dirs.enumerate() {
            let seq = with_global(|j| {
                j.record_private(
                    format!("create cgroup {}", dir.display()),
                    Undo::RemoveCgroup {
                        path: dir.clone(),
                        // a v2 parent that gives controllers to its children may
                        // hold no process, so stragglers go home
                        parent: home.to_path_buf(),
                    },
                )
            })
            .map_err(|e| e.to_string())?;
            me.seqs.push(seq);
            std::fs::create_dir(&dir)
                .map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
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
        let procs = self.dir(group).join("cgroup.procs");
        match self.placer.as_ref().and_then(|p| p.tx.as_ref()) {
            Some(tx) if tx.send((procs.clone(), pid)).is_ok() => {}
            // no thread could be started: move it here
            _ => {
                let _ = std::fs::write(procs, pid.to_string());
            }
        }
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

    /// What was set on the groups, one line each.
    pub fn applied(&self) -> &[String] {
        &self.applied
    }

    /// What was asked and could not be set, with the reason.
    pub fn not_applied(&self) -> &[String] {
        &self.not_applied
    }
}

/// Dropping moves every process out and removes the cgroups (through the journal).
impl Drop for GroupCgroups {
    fn drop(&mut self) {
        if let Some(p) = &mut self.placer {
            p.stop();
        }
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

/// Each group's usage from the cgroups of the coordinator `pid` (its /proc entry
/// under `root`), when it made them; read by anyone (`oslab wcall status`).
pub fn usage_of(root: &Root, coordinator_pid: u32) -> Option<Vec<GroupUsage>> {
    for (version, own) in memcg::cgroup_dirs(root, &coordinator_pid.to_string()) {
        let Some(base) = [own.as_path(), own.parent().unwrap_or(&own)]
            .into_iter()
            .map(|p| base_dir(p, coordinator_pid))
            .find(|b| b.is_dir())
        else {
            continue;
        };
        return GROUP_NAMES
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
            .collect();
    }
    None
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
