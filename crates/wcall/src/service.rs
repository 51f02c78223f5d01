//! A running governor: the board, the socket programs join through, and the
//! coordinator on its own thread passing every `interval`. Used by `oslab wcall
//! run`, `oslab wcall daemon` and the `wb.wcall` and `sim.validate` experiments.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use oslab_sys::clock::monotonic_ns;
use oslab_wbsim::policy::Policy;

use crate::coordinator::{Coordinator, policy_code};
pub use crate::listener::Access;
use crate::listener::Listener;
use crate::registry::{Launcher, Lineage, Registry};
use crate::shm::BoardMap;
use crate::view::snapshot_of;
use oslab_model::governor::Snapshot;

pub use crate::rendezvous::{Found, discover};

pub struct Governor {
    board: Arc<BoardMap>,
    registry: Arc<Mutex<Registry>>,
    listener: Option<Listener>,
    stop: Arc<AtomicBool>,
    handle: Option<std::thread::JoinHandle<Coordinator>>,
    cgroups: CgroupUse,
    /// Moves the processes placed in the group cgroups back out (see
    /// `crate::placer`), where there are group cgroups.
    returner: Option<Returner>,
    monitor: Result<(), String>,
}

type Returner = Arc<dyn Fn() -> Vec<String> + Send + Sync>;

/// Whether governed processes are placed in memory cgroups, and where or why not.
#[derive(Debug, Clone, PartialEq)]
pub enum CgroupUse {
    NotAsked,
    Placed {
        base: PathBuf,
        version: String,
        /// What was set on the groups (v2), and what could not be, with why.
        applied: Vec<String>,
        not_applied: Vec<String>,
    },
    Unavailable(String),
}

impl CgroupUse {
    pub fn describe(&self) -> String {
        match self {
            CgroupUse::NotAsked => "cgroups: not used (--no-cgroups)".into(),
            CgroupUse::Placed {
                base,
                version,
                applied,
                not_applied,
            } => {
                let mut line = format!("cgroups ({version}): {}/<group>", base.display());
                if version == "v1" {
                    line += " (accounting only: v1 has no io.weight or memory.high)";
                }
                if !applied.is_empty() {
                    line += &format!("; set: {}", applied.join(", "));
                }
                if !not_applied.is_empty() {
                    line += &format!("; not set: {}", not_applied.join("; "));
                }
                line
            }
            CgroupUse::Unavailable(why) => format!("cgroups: not used ({why})"),
        }
    }
}

/// The coordinator's SCHED_FIFO priority when run as root: above every writer it may
/// hold (RT-LOW is 1 to 50, NORMAL is not real-time), so busy writers cannot delay
/// its passes, and below RT-HIGH (51 to 99), the group it protects: a pass scans the
/// page cache of every governed file (cachestat, about 2 µs per cached MiB here) and
/// must not preempt a high-priority writer in the middle of its write(). The
/// socket's listener serves at the same priority (within a CPU share of its own:
/// for others' requests: `listener::RT_SHARE`), so a program can join beside busy
/// real-time writers.
pub const COORDINATOR_FIFO: i32 = 50;

/// How the coordinator runs.
#[derive(Debug, Clone)]
pub struct Options {
    pub policy: Policy,
    /// The wcall block (HZ/10 in the paper).
    pub block_ns: u64,
    pub interval: Duration,
    /// Run the coordinator thread SCHED_FIFO at this priority (needs root), so
    /// busy writers cannot delay its passes.
    pub fifo_priority: Option<i32>,
    /// Place governed processes in memory cgroups of their groups (root).
    pub cgroups: bool,
    /// What to set on those cgroups where they are cgroup v2.
    pub cgroup_limits: crate::cgroups::CgroupLimits,
    /// Headroom and page recycling (see `crate::coordinator::Tuning`).
    pub tuning: crate::coordinator::Tuning,
    /// Watch the kernel's writeback_dirty_folio records (root with BTF) to see
    /// every file governed processes dirty, not only those they write().
    pub kernel_monitor: bool,
    /// Who may join: every user (a daemon of root's) or this user alone.
    pub access: Access,
    /// The groups root gives system services' processes (`--service`).
    pub services: Vec<crate::services::ServiceRule>,
}

/// When the pass after one due at `due` starts, given that it ended at `ended`:
/// one `step` later on schedule; a pass that overran its interval is not caught up
/// with passes back to back, the next comes a whole `step` after it ended. The
/// listener runs at the coordinator's real-time priority, and on one CPU a
/// SCHED_FIFO thread that never sleeps keeps its equal off the CPU: under an
/// emulated CPU, where a pass took longer than its interval, no program could
/// join (the kernel matrix's 6.12 guest, a writer started beside two others).
fn next_pass(due: u64, step: u64, ended: u64) -> u64 {
    if due + step > ended {
        due + step
    } else {
        ended + step
    }
}

/// Whether this machine hands free memory back to its hypervisor (virtio-balloon
/// free page reporting): there, writes that reuse written-back pages avoid a host
/// page fault per page, and recycling them pays.
pub fn page_reporting() -> bool {
    std::path::Path::new("/sys/module/page_reporting").exists()
}

/// Room for the descriptors a governor holds at most: a pidfd per governed
/// process and per launcher, one per governed file and per waiting connection,
/// beside what the program already holds.
fn raise_descriptor_limit() {
    let held = 2 * oslab_wcall_table::MAX_MEMBERS
        + crate::registry::LAUNCHERS.total
        + crate::files::DISCOVERED.total
        + crate::files::CLAIMED.total
        + crate::serve::WAITING.total;
    oslab_sys::process::raise_open_files_limit(held as u64 + 4096);
}

/// The group cgroups where asked and possible, handed to the coordinator; what
/// moves their processes back out.
fn use_cgroups(
    o: &Options,
    coordinator: &mut Coordinator,
    registry: &Mutex<Registry>,
) -> (CgroupUse, Option<Returner>) {
    if !o.cgroups {
        return (CgroupUse::NotAsked, None);
    }
    if !oslab_sys::process::is_root() {
        return (CgroupUse::Unavailable("needs root".into()), None);
    }
    match crate::cgroups::GroupCgroups::create(&o.cgroup_limits) {
        Ok(c) => {
            let used = CgroupUse::Placed {
                base: c.base().to_path_buf(),
                version: match c.version() {
                    oslab_sys::parse::memcg::Version::V1 => "v1".into(),
                    oslab_sys::parse::memcg::Version::V2 => "v2".into(),
                },
                applied: c.applied().to_vec(),
                not_applied: c.not_applied().to_vec(),
            };
            let returner: Returner = Arc::new(c.returner());
            if let Ok(mut reg) = registry.lock() {
                reg.groups_at = c.hierarchy_path();
            }
            coordinator.use_cgroups(c);
            (used, Some(returner))
        }
        Err(why) => (CgroupUse::Unavailable(why), None),
    }
}

impl Governor {
    /// Starts a governor named `name` (a file name: see `rendezvous::check_name`),
    /// listening on its socket in this user's folder.
    pub fn start(name: &str, o: Options) -> std::io::Result<Governor> {
        let socket = crate::rendezvous::socket_path(name).map_err(std::io::Error::other)?;
        raise_descriptor_limit();
        // loaded before the table exists, so no one sees the governor without it
        let kernel = if o.kernel_monitor {
            crate::monitor::KernelMonitor::start()
        } else {
            Err("kernel tracing off".into())
        };
        let board = Arc::new(BoardMap::create(name, policy_code(o.policy))?);
        let mut reg = Registry::new(oslab_sys::process::uid());
        reg.services = o.services.clone();
        let registry = Arc::new(Mutex::new(reg));
        let mut coordinator = Coordinator::tuned(
            board.clone(),
            registry.clone(),
            o.policy,
            o.block_ns,
            o.tuning,
        );
        let monitor = kernel.map(|m| coordinator.use_kernel_monitor(m));
        let (cgroups, returner) = use_cgroups(&o, &mut coordinator, &registry);
        coordinator.tick();
        let listener = Listener::start(
            &socket,
            board.clone(),
            registry.clone(),
            o.fifo_priority,
            o.access,
        )?;
        let stop = Arc::new(AtomicBool::new(false));
        let s = stop.clone();
        let handle = std::thread::Builder::new()
            .name("wcall-coordinator".into())
            .spawn(move || {
                if let Some(p) = o.fifo_priority {
                    let _ = oslab_sys::process::set_fifo(p);
                }
                let step = o.interval.as_nanos().max(1_000_000) as u64;
                let mut next = monotonic_ns() + step;
                while !s.load(Ordering::Relaxed) {
                    let now = monotonic_ns();
                    if next > now {
                        std::thread::sleep(Duration::from_nanos(next - now));
                    }
                    coordinator.tick();
                    next = next_pass(next, step, monotonic_ns());
                }
                coordinator.stop();
                coordinator
            })?;
        Ok(Governor {
            board,
            registry,
            listener: Some(listener),
            stop,
            handle: Some(handle),
            cgroups,
            returner,
            monitor,
        })
    }

    /// How the coordinator sees the groups' dirty pages, in words.
    pub fn monitor(&self) -> String {
        let seen = match &self.monitor {
            Ok(()) => "monitor: the kernel's writeback_dirty_folio records (every file a governed process dirties, by write(), mappings or stdio) and cachestat()".to_string(),
            Err(why) => format!(
                "monitor: cachestat() of the files governed write() calls reach ({why})"
            ),
        };
        if oslab_sys::fileio::has_cachestat() {
            return seen;
        }
        let instead = match &self.cgroups {
            CgroupUse::Placed { .. } => {
                "each group's dirty and writeback bytes come from its cgroup's memory.stat instead"
            }
            _ => {
                "and with no cgroups for the groups nothing measures their dirty pages: no writer is held"
            }
        };
        format!(
            "{seen}; this kernel has no cachestat() (it came in 6.5): {instead}; the sync guard's own write back and the recycling of written-back pages find their pages by cachestat() too, so both are off"
        )
    }

    /// Stops placing processes in the group cgroups and moves those in them back
    /// where they came from; one line for each process moved (nothing without
    /// group cgroups). Callable from any thread, a signal's way out included:
    /// under systemd what is left in the daemon's unit when it exits is killed.
    pub fn returner(&self) -> impl Fn() -> Vec<String> + Send + 'static {
        let r = self.returner.clone();
        move || r.as_ref().map(|f| f()).unwrap_or_default()
    }

    /// Whether governed processes go into memory cgroups.
    pub fn cgroups(&self) -> &CgroupUse {
        &self.cgroups
    }

    /// The socket governed programs join through (OSLAB_WCALL_SOCK).
    pub fn socket(&self) -> &Path {
        self.listener.as_ref().map_or(Path::new(""), |l| l.path())
    }

    /// Makes this process a launcher for `group` (a group number or AUTO): the
    /// programs it starts from now on join in that group. What `oslab wcall run
    /// --private` and the experiments do with a governor of their own.
    pub fn launch_as(&self, group: u32) -> std::io::Result<()> {
        let me = std::process::id();
        let pidfd = crate::trust::pidfd_open(me)
            .map_err(|_| std::io::Error::other("cannot hold this process by a pidfd"))?;
        let mut budget = crate::trust::Budget::new(1 << 16);
        let ids = crate::facts::ids(me, &mut budget)
            .map_err(|_| std::io::Error::other("cannot read this process's ids"))?;
        let mut reg = self
            .registry
            .lock()
            .map_err(|_| std::io::Error::other("the governor's registry is poisoned"))?;
        reg.add_launcher(Launcher {
            member: crate::trust::Member::confirmed(me, pidfd),
            ids,
            lineage: Lineage::Given(group),
        })
        .map_err(std::io::Error::other)
    }

    /// Puts a child of this process that has exited, and is not reaped yet (wait
    /// for it with WNOWAIT first), on the board from the kernel's final counts:
    /// what a launcher's `Ask::Count` does for `oslab wcall run`'s command.
    pub fn count_exited(&self, pid: u32) {
        let mut budget = crate::trust::Budget::new(1 << 16);
        if let Ok(mut reg) = self.registry.lock() {
            crate::roster::count_now(&mut reg, pid, self.board.board(), &mut budget);
        }
    }

    /// Something that can tell the governed programs the governor stopped, from
    /// anywhere (a signal handler thread, say).
    pub fn releaser(&self) -> impl Fn() + Send + 'static {
        let b = self.board.clone();
        move || b.board().release()
    }

    pub fn snapshot(&self) -> Snapshot {
        snapshot_of(self.board.board(), monotonic_ns(), std::process::id())
    }

    /// Stops the coordinator (governed programs then proceed ungoverned) and returns
    /// the last picture.
    pub fn finish(mut self) -> Snapshot {
        self.halt();
        self.snapshot()
    }

    fn halt(&mut self) {
        // no one joins a governor that is stopping
        drop(self.listener.take());
        self.stop.store(true, Ordering::Relaxed);
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
    }
}

impl Drop for Governor {
    fn drop(&mut self) {
        self.halt();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pass_that_overran_is_followed_by_a_whole_interval_off_the_cpu() {
        assert_eq!(next_pass(1_000, 100, 1_030), 1_100, "on schedule");
        assert_eq!(next_pass(1_000, 100, 1_099), 1_100, "just in time");
        assert_eq!(next_pass(1_000, 100, 1_100), 1_200, "overran by nothing");
        assert_eq!(
            next_pass(1_000, 100, 1_750),
            1_850,
            "seven passes behind: none are caught up back to back"
        );
    }

    fn options() -> Options {
        Options {
            policy: Policy::WcallFair,
            block_ns: crate::coordinator::WCALL_BLOCK_NS,
            interval: Duration::from_millis(5),
            fifo_priority: None,
            cgroups: false,
            cgroup_limits: Default::default(),
            tuning: Default::default(),
            kernel_monitor: false,
            access: Access::Owner,
            services: Vec::new(),
        }
    }

    /// The SCHED_FIFO priority of this process's thread named `name`, if it is
    /// SCHED_FIFO.
    fn fifo_priority_of(name: &str) -> Option<i32> {
        // the kernel keeps 15 bytes of a thread's name
        let name = &name[..name.len().min(15)];
        for t in std::fs::read_dir("/proc/self/task").ok()?.flatten() {
            let comm = std::fs::read_to_string(t.path().join("comm")).unwrap_or_default();
            if comm.trim_end_matches('\n') != name {
                continue;
            }
            let tid: i32 = t.file_name().to_str()?.parse().ok()?;
            let (policy, prio) = crate::facts::thread_sched(tid)?;
            return (policy == libc::SCHED_FIFO).then_some(prio);
        }
        None
    }

    /// A governor listens on its socket, answers a look with its board, passes,
    /// and takes its socket away when it stops.
    #[test]
    fn a_governor_is_found_by_its_socket_and_leaves_nothing_behind() {
        let journal = tempfile::tempdir().unwrap();
        // SAFETY: no other test of this binary reads the variable at the same time
        // (the journal folder is only read when a change is recorded).
        unsafe { std::env::set_var("OSLAB_JOURNAL_DIR", journal.path()) };
        let name = format!("svc-test-{}", std::process::id());
        // as root, real-time as `oslab wcall daemon` runs it
        let root = oslab_sys::process::is_root();
        let g = Governor::start(
            &name,
            Options {
                fifo_priority: root.then_some(COORDINATOR_FIFO),
                ..options()
            },
        )
        .unwrap();
        let socket = g.socket().to_path_buf();
        assert_eq!(
            mode_of(&socket),
            Some(0o600),
            "a command's own: its user's alone"
        );
        if root {
            // both the passes and the socket's answers outrank real-time writers
            // of rt-low and normal
            for thread in ["wcall-coordinator", "wcall-listener"] {
                let start = std::time::Instant::now();
                while fifo_priority_of(thread) != Some(COORDINATOR_FIFO) {
                    assert!(
                        start.elapsed() < Duration::from_secs(10),
                        "{thread} is not SCHED_FIFO {COORDINATOR_FIFO}"
                    );
                    std::thread::sleep(Duration::from_millis(5));
                }
            }
        } else {
            eprintln!("real-time threads not checked: needs root");
        }
        let (board, server) = crate::rendezvous::look(&socket).unwrap();
        assert_eq!(server.pid as u32, std::process::id());
        let before = board.board().header.passes.load(Ordering::Relaxed);
        let start = std::time::Instant::now();
        while board.board().header.passes.load(Ordering::Relaxed) < before + 3 {
            assert!(
                start.elapsed() < Duration::from_secs(10),
                "the coordinator stopped passing"
            );
            std::thread::sleep(Duration::from_millis(5));
        }
        assert!(crate::rendezvous::discover().iter().any(|f| f.name == name));
        let last = g.finish();
        assert!(last.passes >= before + 3);
        assert!(!socket.exists(), "the socket is removed");
        if !root {
            return;
        }
        // a daemon of root's: every user's, and root's own socket beside it
        let shared = Options {
            access: Access::Shared,
            ..options()
        };
        let g = Governor::start(&name, shared).unwrap();
        let own = oslab_wcall_table::wire::root_path(g.socket()).unwrap();
        assert_eq!(mode_of(g.socket()), Some(0o666));
        assert_eq!(mode_of(&own), Some(0o600));
        g.finish();
        assert!(mode_of(&socket).is_none() && mode_of(&own).is_none());
    }

    fn mode_of(path: &Path) -> Option<u32> {
        use std::os::unix::fs::PermissionsExt;
        Some(std::fs::metadata(path).ok()?.permissions().mode() & 0o777)
    }
}
