//! Where oslab may make cgroups of its own on cgroup v2, and the steps before it
//! makes them: the one rule the testbed's io.max cap and the governor's group
//! cgroups both follow.
//!
//! A cgroup oslab makes goes only
//! - (a) under the root cgroup, when oslab runs in the root cgroup itself (a
//!   machine without systemd, a kernel matrix guest): a process moved there lifts
//!   nothing, and the controllers it needs are turned on for the root's children
//!   first (as systemd does for its slices);
//! - (b) inside oslab's own cgroup, when that one is delegated to it (systemd's
//!   `Delegate=yes` marks it with the trusted.delegate attribute): as systemd
//!   asks of a delegated cgroup's user, the processes in it first move into a leaf
//!   of oslab's own (`NAME-home`: a cgroup that gives controllers to its children
//!   may hold no process itself), then it gives the controllers to its children;
//! - (c) beside oslab's own cgroup, in a parent that is delegated and already gives
//!   the controllers to its children (the testbed's cgroup, which oslab made and
//!   marks delegated to the programs in its `lab`).
//!
//! Never in a service manager's tree that was not delegated (its cgroups are the
//! manager's to remove, and it may kill what it finds there), never directly
//! under the root from a cgroup below it (a process moved out of its cgroup would
//! leave that cgroup's limits behind), and only where the folders from the
//! parent up to the root are root's alone: a cgroup another user can write could
//! freeze or starve a root process placed under it.

use std::path::{Path, PathBuf};

use crate::cgroup_controllers::{delegated, give_to_children, not_given, not_roots_alone, words};
use crate::error::{SysError, SysResult};
use crate::fsread::Root;
use crate::journal::{Undo, write_text};
use crate::parse::memcg::{self, Version};
use crate::process::has_exited;

/// The controllers a use of cgroups needs (without them it cannot be), and those
/// it takes where they are offered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Needs {
    pub required: &'static [&'static str],
    pub wanted: &'static [&'static str],
}

impl Needs {
    fn all(&self) -> Vec<&'static str> {
        self.required.iter().chain(self.wanted).copied().collect()
    }
}

/// Where oslab's cgroups go and what must be done first.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Placement {
    /// The cgroup they are made in.
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

/// Those of `needs.required` that the list in `dir`'s `file` lacks.
fn lacks(dir: &Path, file: &str, needs: &Needs) -> Vec<&'static str> {
    let have = words(&dir.join(file));
    needs
        .required
        .iter()
        .copied()
        .filter(|c| !have.iter().any(|h| h == c))
        .collect()
}

/// The fix every refusal below names.
const FIX: &str = "give oslab a delegated cgroup of its own (Delegate=yes in its systemd unit, or systemd-run --scope -p Delegate=yes oslab ...), or run it from the root cgroup";

/// Where a process in cgroup `own` of the v2 hierarchy mounted at `root` can make
/// cgroups that get `needs`, or why it cannot (one sentence, naming the fix).
pub fn placement(own: &Path, root: &Path, needs: &Needs) -> Result<Placement, String> {
    let missing = lacks(root, "cgroup.controllers", needs);
    if !missing.is_empty() {
        return Err(format!(
            "cgroup v2 here has no {} controller",
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
            enable: not_given(root, &needs.all()),
            home: own.to_path_buf(),
            vacate: false,
        });
    }
    if own.starts_with(root) && delegated(own) {
        return inside_own(own, root, needs);
    }
    beside_own(own, root, needs)
}

/// (b): oslab's own cgroup is delegated to it.
fn inside_own(own: &Path, root: &Path, needs: &Needs) -> Result<Placement, String> {
    let missing = lacks(own, "cgroup.controllers", needs);
    if !missing.is_empty() {
        return Err(format!(
            "oslab's cgroup {} is delegated but is not given {} (systemd: Delegate=yes, or Delegate= naming {})",
            own.display(),
            missing.join(" or "),
            needs.required.join(" ")
        ));
    }
    if let Some(who) = not_roots_alone(own, root) {
        return Err(not_roots(&who));
    }
    Ok(Placement {
        parent: own.to_path_buf(),
        enable: not_given(own, &needs.all()),
        home: own.to_path_buf(),
        vacate: true,
    })
}

/// (c): the parent of oslab's cgroup is delegated and gives the controllers.
fn beside_own(own: &Path, root: &Path, needs: &Needs) -> Result<Placement, String> {
    let Some(parent) = own.parent().filter(|p| *p != root && p.starts_with(root)) else {
        return Err(format!(
            "oslab's cgroup {} sits directly under the root, and moving out of it could lift its limits; {FIX}",
            own.display()
        ));
    };
    if !delegated(parent) {
        return Err(format!(
            "oslab's cgroup {} is not delegated to it, nor is {} (systemd's Delegate=yes marks a delegated cgroup), and cgroups made in a service manager's tree are the manager's; {FIX}",
            own.display(),
            parent.display()
        ));
    }
    let missing = lacks(parent, "cgroup.subtree_control", needs);
    if !missing.is_empty() {
        return Err(format!(
            "{} does not give {} to its children, so no cgroup can be made beside oslab's own; {FIX}",
            parent.display(),
            missing.join(" and ")
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

/// The cgroup v2 root and this process's own cgroup in it, or why there are none.
pub fn live_own() -> Result<(PathBuf, PathBuf), String> {
    let root = memcg::read_memory_mounts(&Root::live())
        .and_then(|(_, v2)| v2)
        .ok_or("no cgroup2 file system is mounted")?;
    let own = memcg::cgroup_dirs(&Root::live(), "self")
        .into_iter()
        .find_map(|(v, d)| (v == Version::V2).then_some(d))
        .ok_or("this process's cgroup v2 is not in /proc/self/cgroup")?;
    Ok((own, root))
}

/// This process's placement on the live system, or why there is none.
pub fn live_placement(needs: &Needs) -> Result<Placement, String> {
    let (own, root) = live_own()?;
    placement(&own, &root, needs)
}

/// The steps before oslab's cgroups named `name` are made at `at`: where it
/// vacates its own cgroup, the leaf `NAME-home` made and its processes moved in;
/// the controllers turned on. Returns the cgroup oslab's processes now wait in
/// (the leaf, or `at.home`). `record` journals each step's undo before the step.
pub fn prepare(
    at: &Placement,
    name: &str,
    record: &mut dyn FnMut(String, Undo) -> SysResult<u64>,
) -> SysResult<PathBuf> {
    let home = if at.vacate {
        let leaf = at.parent.join(format!("{name}-home"));
        make_cgroup(&leaf, &at.home, record)?;
        vacate(&at.parent, &leaf)?;
        leaf
    } else {
        at.home.clone()
    };
    give_to_children(&at.parent, &at.enable, record)?;
    Ok(home)
}

/// Makes cgroup `dir`, its removal (stragglers to `home`) journaled first.
pub fn make_cgroup(
    dir: &Path,
    home: &Path,
    record: &mut dyn FnMut(String, Undo) -> SysResult<u64>,
) -> SysResult<u64> {
    let seq = record(
        format!("create cgroup {}", dir.display()),
        Undo::RemoveCgroup {
            path: dir.to_path_buf(),
            parent: home.to_path_buf(),
        },
    )?;
    std::fs::create_dir(dir).map_err(|source| SysError::Write {
        path: dir.to_path_buf(),
        source,
    })?;
    Ok(seq)
}

/// Marks a cgroup oslab made as delegated to the programs it runs inside it
/// (trusted.delegate, as systemd marks one for `Delegate=yes`), so that one of
/// them may make cgroups beside its own there (rule (c)).
pub fn mark_delegated(dir: &Path) -> SysResult<()> {
    set_delegate(dir, c"trusted.delegate").map_err(|source| SysError::Write {
        path: dir.join("(trusted.delegate)"),
        source,
    })
}

/// Sets the extended attribute `name` (trusted.delegate, user.delegate) of
/// `dir` to 1, as systemd marks a delegated cgroup.
pub(crate) fn set_delegate(dir: &Path, name: &std::ffi::CStr) -> std::io::Result<()> {
    use std::os::unix::ffi::OsStrExt;
    let c = std::ffi::CString::new(dir.as_os_str().as_bytes()).map_err(std::io::Error::other)?;
    // SAFETY: NUL-terminated path and name, a one-byte value of its length.
    let rc = unsafe { libc::setxattr(c.as_ptr(), name.as_ptr(), b"1".as_ptr().cast(), 1, 0) };
    if rc == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
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
mod tests;
