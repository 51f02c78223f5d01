//! Moving governed processes into their group's cgroup, and, when the governor
//! stops, back out to where each came from.
//!
//! Moves happen on a thread of their own: a write to cgroup.procs waits for an
//! RCU grace period whenever the kernel's threadgroup lock has gone back to its
//! slow mode (7.5 ms here for the first move after a pause), and a coordinator
//! pass must not wait that long.
//!
//! Back where it came from: under systemd the group cgroups are inside the
//! daemon's own unit (`Delegate=yes`), and whatever is left in a unit's cgroup
//! when its main process has exited systemd kills. So before the groups are
//! removed every process in them goes back to the cgroup it was in when it was
//! placed (a process born inside a group, to the one its nearest placed
//! ancestor came from). Where that cgroup is gone (systemd removes a scope once
//! its last process left it) or takes no process (it gives controllers to
//! children now), the nearest cgroup above it that takes one: at worst the
//! root cgroup, which takes any. A process whose ancestors were none of them
//! placed (its parents exited) goes to the root cgroup. No cgroup taken is one
//! the process was not under before.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::mpsc::Sender;
use std::sync::{Arc, Mutex, MutexGuard};

use oslab_sys::fsread::Root;
use oslab_sys::parse::memcg::{self, Version};

/// Origins kept before those of processes that exited are dropped.
const ORIGINS_KEPT: usize = 4096;

/// Rounds of moving a group's processes out before giving up on one that forks
/// as fast as it is moved.
const RETURN_ROUNDS: usize = 16;

/// Parents looked through for a placed ancestor.
const ANCESTRY: usize = 64;

/// What the mover and the return share: once stopped, nothing is moved in.
struct State {
    stopped: bool,
    /// Placed pid -> the cgroup it was in before.
    origins: HashMap<u32, PathBuf>,
}

pub struct Shared {
    version: Version,
    /// The mount point of the hierarchy the groups are in.
    mount: PathBuf,
    /// The folder of the group cgroups.
    base: PathBuf,
    state: Mutex<State>,
}

impl Shared {
    fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Moves `pid` into the cgroup whose procs file is `procs`, its origin noted
    /// first; nothing once the governor stops.
    fn move_in(&self, procs: &Path, pid: u32) {
        let mut st = self.state();
        if st.stopped {
            return;
        }
        if let Some(now) = cgroup_of(pid, self.version)
            && !now.starts_with(&self.base)
        {
            if st.origins.len() >= ORIGINS_KEPT {
                st.origins
                    .retain(|p, _| Path::new(&format!("/proc/{p}")).exists());
            }
            st.origins.insert(pid, now);
        }
        // a process gone in between is no error; it is simply not placed
        let _ = std::fs::write(procs, pid.to_string());
    }

    /// Where `pid` goes back to: its own origin, else its nearest placed
    /// ancestor's.
    fn origin_of(&self, pid: u32, st: &State) -> Option<PathBuf> {
        let mut p = pid;
        for _ in 0..ANCESTRY {
            if let Some(o) = st.origins.get(&p) {
                return Some(o.clone());
            }
            let stat = std::fs::read_to_string(format!("/proc/{p}/stat")).ok()?;
            p = crate::facts::ppid_of_stat(&stat).filter(|pp| *pp > 1)?;
        }
        None
    }

    /// Moves `pid` back out: the cgroups tried in turn, and the one that took it.
    fn send_back(&self, pid: u32, st: &State) -> Result<PathBuf, String> {
        let start = self
            .origin_of(pid, st)
            .unwrap_or_else(|| self.mount.clone());
        let tries = start
            .ancestors()
            .take_while(|d| d.starts_with(&self.mount))
            .filter(|d| !d.starts_with(&self.base));
        let mut last = String::from("no cgroup to go to");
        for dir in tries {
            match std::fs::write(dir.join("cgroup.procs"), pid.to_string()) {
                Ok(()) => return Ok(dir.to_path_buf()),
                Err(e) if oslab_sys::process::has_exited(&e) => return Ok(dir.to_path_buf()),
                Err(e) => last = format!("{}: {e}", dir.display()),
            }
        }
        Err(last)
    }
}

/// The cgroup `pid` is in, in the hierarchy of `version`.
fn cgroup_of(pid: u32, version: Version) -> Option<PathBuf> {
    memcg::cgroup_dirs(&Root::live(), &pid.to_string())
        .into_iter()
        .find_map(|(v, d)| (v == version).then_some(d))
}

/// The thread that moves processes in, and what it shares with the return.
pub struct Placer {
    shared: Arc<Shared>,
    tx: Option<Sender<(PathBuf, u32)>>,
    handle: Option<std::thread::JoinHandle<()>>,
}

impl Placer {
    /// A mover for the group cgroups in `base` of the hierarchy mounted at
    /// `mount`.
    pub fn start(version: Version, mount: PathBuf, base: PathBuf) -> Placer {
        let shared = Arc::new(Shared {
            version,
            mount,
            base,
            state: Mutex::new(State {
                stopped: false,
                origins: HashMap::new(),
            }),
        });
        let (tx, rx) = std::sync::mpsc::channel::<(PathBuf, u32)>();
        let s = shared.clone();
        let handle = std::thread::Builder::new()
            .name("wcall-placer".into())
            .spawn(move || {
                for (procs, pid) in rx {
                    s.move_in(&procs, pid);
                }
            })
            .ok();
        Placer {
            shared,
            tx: handle.is_some().then_some(tx),
            handle,
        }
    }

    /// Moves `pid` into the cgroup of `procs` soon, without waiting.
    pub fn place(&self, procs: PathBuf, pid: u32) {
        match &self.tx {
            Some(tx) => {
                if let Err(e) = tx.send((procs, pid)) {
                    let (procs, pid) = e.0;
                    self.shared.move_in(&procs, pid);
                }
            }
            // no thread could be started: move it here
            None => self.shared.move_in(&procs, pid),
        }
    }

    /// What returns the placed processes, for a signal's way out.
    pub fn returner(&self) -> Returner {
        Returner(self.shared.clone())
    }

    /// Waits for the moves asked for so far, then stops taking more.
    pub fn stop(&mut self) {
        self.tx.take();
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
    }
}

/// Sends every process in the group cgroups back out (see the module); callable
/// from any thread, as often as needed.
#[derive(Clone)]
pub struct Returner(Arc<Shared>);

impl Returner {
    /// Stops all moves in and moves every process out of the cgroups `dirs`; one
    /// line for each process moved, and for each that no cgroup took.
    pub fn return_all(&self, dirs: &[PathBuf]) -> Vec<String> {
        let s = &self.0;
        let st = {
            let mut st = s.state();
            st.stopped = true;
            st
        };
        // the last word on each process, in pid order
        let mut outcome = std::collections::BTreeMap::new();
        for _ in 0..RETURN_ROUNDS {
            let pids: Vec<u32> = dirs.iter().flat_map(|d| procs_of(d)).collect();
            if pids.is_empty() {
                break;
            }
            for pid in pids {
                outcome.insert(pid, s.send_back(pid, &st));
            }
        }
        outcome
            .into_iter()
            .map(|(pid, r)| match r {
                Ok(to) => format!("process {pid} moved back to {}", to.display()),
                Err(why) => format!("process {pid} could not be moved out ({why})"),
            })
            .collect()
    }
}

/// The processes in cgroup `dir`, from its cgroup.procs (none where it cannot be
/// read).
pub fn procs_of(dir: &Path) -> Vec<u32> {
    std::fs::read_to_string(dir.join("cgroup.procs"))
        .unwrap_or_default()
        .split_whitespace()
        .filter_map(|p| p.parse().ok())
        .collect()
}
