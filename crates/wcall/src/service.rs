//! A running governor: the table, and the coordinator on its own thread passing
//! every `interval`. Used by `oslab wcall run`, `oslab wcall daemon` and the
//! `wb.wcall` experiment.

use std::os::fd::AsRawFd;
use std::os::unix::fs::MetadataExt;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use oslab_sys::clock::monotonic_ns;
use oslab_sys::fsread::Root;
use oslab_wbsim::policy::Policy;

use crate::coordinator::Coordinator;
use crate::shm::Mapped;
use crate::view::{Snapshot, snapshot_of};

pub struct Governor {
    _memfd: std::fs::File,
    path: PathBuf,
    view: Mapped,
    stop: Arc<AtomicBool>,
    handle: Option<std::thread::JoinHandle<Coordinator>>,
    cgroups: CgroupUse,
    monitor: Result<(), String>,
}

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
/// must not preempt a high-priority writer in the middle of its write().
pub const COORDINATOR_FIFO: i32 = 50;

/// How the coordinator runs.
#[derive(Debug, Clone, Copy)]
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
}

/// Whether this machine hands free memory back to its hypervisor (virtio-balloon
/// free page reporting): there, writes that reuse written-back pages avoid a host
/// page fault per page, and recycling them pays.
pub fn page_reporting() -> bool {
    std::path::Path::new("/sys/module/page_reporting").exists()
}

impl Governor {
    pub fn start(name: &str, o: Options) -> std::io::Result<Governor> {
        // a pidfd per governed process and a descriptor per governed file, beside
        // what the program already holds
        oslab_sys::process::raise_open_files_limit(
            (oslab_wcall_table::MAX_PROCS + oslab_wcall_table::MAX_FILES) as u64 + 1024,
        );
        // loaded before the table exists, so no one sees the governor without it
        let kernel = if o.kernel_monitor {
            crate::monitor::KernelMonitor::start()
        } else {
            Err("kernel tracing off".into())
        };
        let (map, memfd) = Mapped::create_memfd(name)?;
        let path = PathBuf::from(format!(
            "/proc/{}/fd/{}",
            std::process::id(),
            memfd.as_raw_fd()
        ));
        let view = Mapped::open(&path)?;
        let mut coordinator = Coordinator::tuned(map, o.policy, o.block_ns, o.tuning);
        let monitor = kernel.map(|m| coordinator.use_kernel_monitor(m));
        let cgroups = if !o.cgroups {
            CgroupUse::NotAsked
        } else if !oslab_sys::process::is_root() {
            CgroupUse::Unavailable("needs root".into())
        } else {
            match crate::cgroups::GroupCgroups::create(&o.cgroup_limits) {
                Ok(c) => {
                    let used = CgroupUse::Placed {
                        base: c.base().to_path_buf(),
                        version: match c.version() {
                            oslab_sys::memcg::Version::V1 => "v1".into(),
                            oslab_sys::memcg::Version::V2 => "v2".into(),
                        },
                        applied: c.applied().to_vec(),
                        not_applied: c.not_applied().to_vec(),
                    };
                    coordinator.use_cgroups(c);
                    used
                }
                Err(why) => CgroupUse::Unavailable(why),
            }
        };
        coordinator.tick();
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
                    next += step;
                    coordinator.tick();
                }
                coordinator.stop();
                coordinator
            })?;
        Ok(Governor {
            _memfd: memfd,
            path,
            view,
            stop,
            handle: Some(handle),
            cgroups,
            monitor,
        })
    }

    /// How the coordinator sees the groups' dirty pages, in words.
    pub fn monitor(&self) -> String {
        match &self.monitor {
            Ok(()) => "monitor: the kernel's writeback_dirty_folio records (every file a governed process dirties, by write(), mappings or stdio) and cachestat()".into(),
            Err(why) => format!(
                "monitor: cachestat() of the files governed write() calls reach ({why})"
            ),
        }
    }

    /// Whether governed processes go into memory cgroups.
    pub fn cgroups(&self) -> &CgroupUse {
        &self.cgroups
    }

    /// The path a governed program opens the table by (OSLAB_WCALL_SHM).
    pub fn path(&self) -> &std::path::Path {
        &self.path
    }

    /// Something that can tell the governed programs the governor stopped, from
    /// anywhere (a signal handler thread, say).
    pub fn releaser(&self) -> std::io::Result<impl Fn() + Send + 'static> {
        let m = Mapped::open(&self.path)?;
        Ok(move || m.table().release())
    }

    pub fn snapshot(&self) -> Snapshot {
        // our own pid, not the table's copy, which any governed process can write
        snapshot_of(self.view.table(), monotonic_ns(), std::process::id())
    }

    /// Stops the coordinator (governed programs then proceed ungoverned) and returns
    /// the last picture.
    pub fn finish(mut self) -> Snapshot {
        self.halt();
        self.snapshot()
    }

    fn halt(&mut self) {
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

/// A governor found running on this machine.
#[derive(Debug, Clone, PartialEq)]
pub struct Found {
    pub name: String,
    pub pid: u32,
    pub path: PathBuf,
}

/// Governors running now (/proc under `root`): processes holding a memory file
/// called oslab-wcall-NAME that was made by this user or by root. Joining a governor means obeying its
/// table, and any user can name a memory file so; a table of another user is
/// neither listed nor joined. (The interposer maps only tables sealed against
/// shrinking, so no table can fault a program that maps it.)
pub fn discover(root: &Root) -> Vec<Found> {
    let me = oslab_sys::process::uid();
    let mut out = Vec::new();
    let mut seen = Vec::new();
    let mut pids: Vec<u32> = root
        .list("/proc")
        .iter()
        .filter_map(|n| n.parse().ok())
        .collect();
    pids.sort_unstable();
    for pid in pids {
        let Ok(fds) = std::fs::read_dir(root.path(&format!("/proc/{pid}/fd"))) else {
            continue;
        };
        for fd in fds.flatten() {
            let Ok(target) = std::fs::read_link(fd.path()) else {
                continue;
            };
            let t = target.to_string_lossy();
            if let Some(rest) = t.strip_prefix("/memfd:oslab-wcall-") {
                let name = rest.trim_end_matches(" (deleted)").to_string();
                // the memory file's owner is whoever made it (its fsuid then)
                let owner = std::fs::metadata(fd.path()).map(|m| m.uid());
                // one table, however many processes hold it open: the lowest pid
                // (the coordinator; its children do not inherit the descriptor)
                let ino = std::fs::metadata(fd.path()).map(|m| m.ino()).ok();
                if name != "test" && owner.is_ok_and(|u| u == me || u == 0) && !seen.contains(&ino)
                {
                    seen.push(ino);
                    out.push(Found {
                        name,
                        pid,
                        path: fd.path(),
                    });
                }
            }
        }
    }
    out.sort_by_key(|f| f.pid);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A governed program can open the table read-write (it must, to count its
    /// writes) but cannot resize it: a shrunk table would kill the coordinator with
    /// SIGBUS on its next pass.
    #[test]
    fn a_governed_program_cannot_truncate_the_table_under_the_coordinator() {
        let g = Governor::start(
            "test",
            Options {
                policy: Policy::WcallFair,
                block_ns: crate::coordinator::WCALL_BLOCK_NS,
                interval: Duration::from_millis(5),
                fifo_priority: None,
                cgroups: false,
                cgroup_limits: Default::default(),
                tuning: Default::default(),
                kernel_monitor: false,
            },
        )
        .unwrap();
        // as the interposer opens it
        let f = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open(g.path())
            .unwrap();
        let len = f.metadata().unwrap().len();
        for to in [0, len / 2, len * 2] {
            let e = f.set_len(to).unwrap_err();
            assert_eq!(e.raw_os_error(), Some(libc::EPERM), "to {to} bytes");
        }
        assert_eq!(f.metadata().unwrap().len(), len);
        let before = g.snapshot().passes;
        let start = std::time::Instant::now();
        while g.snapshot().passes < before + 3 {
            assert!(
                start.elapsed() < Duration::from_secs(10),
                "the coordinator stopped passing"
            );
            std::thread::sleep(Duration::from_millis(5));
        }
        assert!(g.snapshot().coordinator_alive);
        let last = g.finish();
        assert!(last.passes >= before + 3);
    }
}
