//! Load and steal around a run, from /proc/loadavg and /proc/stat (read under the
//! monitor's `Root`).
//!
//! "Other work" is what the CPUs did that was neither oslab nor the kernel's own
//! threads and interrupts (write back, loop devices, softirqs, which mostly serve
//! oslab's I/O), so only other programs trigger the warning. oslab's share is its
//! own threads and the children it waited for (getrusage RUSAGE_SELF +
//! RUSAGE_CHILDREN) plus what its live descendants gained (/proc/PID/stat fields
//! 14-17, found by their parent pids), each as the difference between the window's
//! start and end; see [`own_ticks`] for why a child is counted once. Runs shorter
//! than 0.2 s are not warned about, and fewer than 20 ticks over all CPUs keep no
//! share of others' work: /proc/stat counts in 10 ms ticks. Others' I/O is counted the same way:
//! what the disks moved (/proc/diskstats, disks with a device behind them, so a
//! loop device's I/O counts once, on its backing disk) less oslab's own storage
//! I/O and its live descendants' (/proc/PID/io, which holds the children it
//! waited for).

use oslab_model::LoadRecord;
use oslab_sys::fsread::Root;
use oslab_sys::parse::loadavg;
use oslab_sys::parse::pidstat::{self, PidStat};
use oslab_sys::parse::procstat::{CpuTimes, cpu_times};
use oslab_sys::process::own_and_children_cpu_ns;

/// Shorter windows are not warned about: under 40 ticks on two CPUs.
const MIN_JUDGED_NS: u64 = 200_000_000;
/// Fewer ticks over all CPUs keep no share of other programs' time: 20 ticks
/// tell a CPU taken half the time (cpu.syscall's quick 0.15 s on two CPUs) from
/// an idle one.
const MIN_SHARE_TICKS: u64 = 20;
/// /proc/diskstats counts 512-byte sectors whatever the device's own.
const SECTOR: u64 = 512;
/// /proc/stat and /proc/PID/stat count in USER_HZ ticks, 100 per second on Linux.
const NS_PER_TICK: f64 = 1e7;

/// Steal above this share of CPU time makes a run's figures suspect.
pub const STEAL_WARN: f64 = 0.05;

/// Starts at construction; [`LoadMonitor::finish`] gives the record.
pub struct LoadMonitor {
    root: Root,
    loadavg: [f64; 3],
    cpu: Option<CpuTimes>,
    counts: Counts,
    io: Option<IoCounts>,
    started_ns: u64,
}

/// Bytes moved by the disks and by oslab, read at one end of a window.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct IoCounts {
    /// Read and written by every disk with a device behind it.
    pub disks: u64,
    /// Read from and written to storage by oslab, the children it waited for and
    /// its live descendants.
    pub own: u64,
}

impl IoCounts {
    fn now(root: &Root) -> Option<IoCounts> {
        let stats = oslab_sys::sar::parse_diskstats(&root.read("/proc/diskstats").ok()?);
        let disks = root
            .list("/sys/block")
            .iter()
            .filter(|d| root.exists(&format!("/sys/block/{d}/device")))
            .filter_map(|d| stats.get(d.as_str()))
            .map(|c| (c.sectors_read + c.sectors_written) * SECTOR)
            .sum();
        let me = std::process::id();
        let all = pidstat::read_all(root);
        let descendants = pidstat::descendants(&all, me);
        let own = std::iter::once(me)
            .chain(descendants.iter().map(|(p, _)| *p))
            .filter_map(|p| root.read(&format!("/proc/{p}/io")).ok())
            .map(|t| storage_bytes(&t))
            .sum();
        Some(IoCounts { disks, own })
    }
}

/// read_bytes + write_bytes of a /proc/PID/io text.
pub fn storage_bytes(io: &str) -> u64 {
    io.lines()
        .filter_map(|l| l.split_once(':'))
        .filter(|(k, _)| matches!(k.trim(), "read_bytes" | "write_bytes"))
        .filter_map(|(_, v)| v.trim().parse::<u64>().ok())
        .sum()
}

/// What the disks moved beyond oslab's own I/O between `start` and `end`.
pub fn others_io(start: &IoCounts, end: &IoCounts) -> u64 {
    let disks = end.disks.saturating_sub(start.disks);
    disks.saturating_sub(end.own.saturating_sub(start.own))
}

/// The CPU time counters read at one end of a window.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Counts {
    /// oslab and the children it waited for (getrusage), ns.
    pub rusage_ns: u64,
    /// oslab's live descendants, their own and their waited-for children's, ticks.
    pub descendant_ticks: u64,
    /// The kernel's own threads, ticks.
    pub kernel_thread_ticks: u64,
}

impl Counts {
    /// The counters of a /proc snapshot `all` for the process `me`.
    pub fn of(all: &[(u32, PidStat)], me: u32, rusage_ns: u64) -> Counts {
        Counts {
            rusage_ns,
            descendant_ticks: pidstat::descendant_ticks(all, me),
            kernel_thread_ticks: all
                .iter()
                .filter(|(_, s)| s.is_kernel_thread())
                .map(|(_, s)| s.cpu_ticks())
                .sum(),
        }
    }

    fn now(root: &Root) -> Counts {
        let rusage_ns = own_and_children_cpu_ns();
        Counts::of(&pidstat::read_all(root), std::process::id(), rusage_ns)
    }
}

/// oslab's CPU ticks between `start` and `end`: the getrusage difference plus the
/// live descendants' difference. A child alive at the start and waited for before
/// the end is in the end's getrusage with its whole life and in the start's live
/// sum with its life until then, so the two differences together count only its
/// time inside the window; one alive at both ends counts its gain, one born inside
/// the window all of its time. (A descendant orphaned and reaped by init is lost.)
pub fn own_ticks(start: &Counts, end: &Counts) -> f64 {
    let rusage = (end.rusage_ns as f64 - start.rusage_ns as f64) / NS_PER_TICK;
    let live = end.descendant_ticks as f64 - start.descendant_ticks as f64;
    (rusage + live).max(0.0)
}

/// What a window's CPU time was spent on, in ticks summed over all CPUs.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Shares {
    pub cpu: CpuTimes,
    pub own_ticks: f64,
    pub kernel_thread_ticks: f64,
}

impl Shares {
    /// Busy time that was neither oslab's, nor the kernel's threads', nor interrupts.
    pub fn other_fraction(&self) -> f64 {
        let total = self.cpu.total() as f64;
        if total <= 0.0 {
            return 0.0;
        }
        let others = self.cpu.user as f64 + self.cpu.nice as f64 + self.cpu.system as f64
            - self.own_ticks
            - self.kernel_thread_ticks;
        (others / total).clamp(0.0, 1.0)
    }
}

/// The warnings for a window of `wall_ns`.
pub fn warnings(shares: &Shares, wall_ns: u64) -> Vec<String> {
    if wall_ns < MIN_JUDGED_NS {
        return Vec::new();
    }
    let mut warn = Vec::new();
    let steal = shares.cpu.steal_fraction();
    if steal > STEAL_WARN {
        warn.push(format!(
            "the hypervisor stole {:.1} % of CPU time during the run",
            steal * 100.0
        ));
    }
    let other = shares.other_fraction();
    if other > 0.25 {
        warn.push(format!(
            "other programs kept about {:.0} % of the CPUs busy",
            other * 100.0
        ));
    }
    warn
}

impl LoadMonitor {
    pub fn start(root: Root) -> LoadMonitor {
        LoadMonitor {
            loadavg: loadavg::read(&root),
            cpu: root.read("/proc/stat").ok().and_then(|s| cpu_times(&s)),
            counts: Counts::now(&root),
            io: IoCounts::now(&root),
            started_ns: oslab_sys::clock::monotonic_ns(),
            root,
        }
    }

    /// The record from start to now.
    pub fn finish(&self) -> LoadRecord {
        let after = loadavg::read(&self.root);
        let now = self
            .root
            .read("/proc/stat")
            .ok()
            .and_then(|s| cpu_times(&s));
        let delta = match (&self.cpu, &now) {
            (Some(a), Some(b)) => b.since(a),
            _ => CpuTimes::default(),
        };
        let end = Counts::now(&self.root);
        let shares = Shares {
            cpu: delta,
            own_ticks: own_ticks(&self.counts, &end),
            kernel_thread_ticks: end
                .kernel_thread_ticks
                .saturating_sub(self.counts.kernel_thread_ticks)
                as f64,
        };
        let wall_ns = oslab_sys::clock::monotonic_ns().saturating_sub(self.started_ns);
        let warn = warnings(&shares, wall_ns);
        let io = self
            .io
            .zip(IoCounts::now(&self.root))
            .map(|(a, b)| others_io(&a, &b));
        LoadRecord {
            loadavg_before: self.loadavg,
            loadavg_after: after,
            cpu_busy_fraction: delta.busy_fraction(),
            steal_fraction: delta.steal_fraction(),
            warning: (!warn.is_empty()).then(|| warn.join("; ")),
            others_cpu_fraction: (delta.total() >= MIN_SHARE_TICKS)
                .then(|| shares.other_fraction()),
            others_io_bytes: io,
            attempts: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn window(user: u64, system: u64, idle: u64, steal: u64) -> CpuTimes {
        CpuTimes {
            user,
            system,
            idle,
            steal,
            ..Default::default()
        }
    }

    /// Regression: oslab's own CPU counted as other work, so every two-CPU
    /// experiment warned that "other work kept about 50 % busy".
    #[test]
    fn oslab_own_cpu_is_not_other_work() {
        // 2 CPUs for 2 s: 400 ticks; oslab busy on one CPU (200 ticks)
        let s = Shares {
            cpu: window(190, 10, 200, 0),
            own_ticks: 200.0,
            kernel_thread_ticks: 0.0,
        };
        assert_eq!(s.other_fraction(), 0.0);
        assert!(warnings(&s, 2_000_000_000).is_empty());
        // another program on the other CPU
        let busy = Shares {
            cpu: window(390, 10, 0, 0),
            ..s
        };
        assert!((busy.other_fraction() - 0.5).abs() < 1e-9);
        let w = warnings(&busy, 2_000_000_000);
        assert_eq!(w, vec!["other programs kept about 50 % of the CPUs busy"]);
        // the kernel's write-back threads working for us are not other programs
        let kernel = Shares {
            kernel_thread_ticks: 190.0,
            ..busy
        };
        assert!(warnings(&kernel, 2_000_000_000).is_empty());
    }

    /// Regression: `oslab sim run` warned about load over a 0.0 s computation.
    #[test]
    fn a_short_window_is_not_judged() {
        let s = Shares {
            cpu: window(2, 0, 0, 2),
            own_ticks: 0.0,
            kernel_thread_ticks: 0.0,
        };
        assert!(warnings(&s, 10_000_000).is_empty());
        assert_eq!(warnings(&s, 2_000_000_000).len(), 2, "steal and other");
        // Regression: cpu.syscall's 0.3 s beside a busy loop on both CPUs went
        // without a warning (only a second or more was judged)
        assert_eq!(warnings(&s, 300_000_000).len(), 2);
    }

    fn stat(ppid: u32, ticks: u64, children_ticks: u64) -> PidStat {
        PidStat {
            state: 'R',
            ppid,
            flags: 0,
            utime_ticks: ticks,
            stime_ticks: 0,
            children_utime_ticks: 0,
            children_stime_ticks: children_ticks,
            start_time_ticks: 0,
        }
    }

    /// Regression: CPU of children still running during the window (spinners,
    /// ping-pong peers, writers) counted as other programs' work.
    #[test]
    fn live_descendants_count_once_as_oslab() {
        let me = 100;
        let kthread = PidStat {
            flags: pidstat::PF_KTHREAD,
            ..stat(2, 5, 0)
        };
        // child 200 runs at the start (50 ticks) and is waited for before the end
        // (80 ticks in all); 300 runs throughout and waits for a grandchild born
        // in the window (20 ticks); 500, its child, is born in the window; 900 is
        // another program
        let start = [
            (2, kthread),
            (200, stat(me, 50, 0)),
            (300, stat(me, 10, 0)),
            (900, stat(1, 1000, 0)),
        ];
        let end = [
            (
                2,
                PidStat {
                    utime_ticks: 8,
                    ..kthread
                },
            ),
            (300, stat(me, 40, 20)),
            (500, stat(300, 7, 0)),
            (900, stat(1, 1400, 0)),
        ];
        // oslab itself: 0.5 s; RUSAGE_CHILDREN gains child 200's whole 0.8 s
        let a = Counts::of(&start, me, 1_000_000_000);
        let b = Counts::of(&end, me, 2_300_000_000);
        assert_eq!((a.descendant_ticks, b.descendant_ticks), (60, 67));
        // 50 own + 30 of 200 in the window + 30 of 300 + 20 grandchild + 7
        assert_eq!(own_ticks(&a, &b), 137.0);
        assert_eq!(b.kernel_thread_ticks - a.kernel_thread_ticks, 3);
        // two CPUs for 3 s: 600 ticks, 400 of them the other program's
        let shares = Shares {
            cpu: window(137 + 400 + 3, 0, 60, 0),
            own_ticks: own_ticks(&a, &b),
            kernel_thread_ticks: 3.0,
        };
        assert!((shares.other_fraction() - 400.0 / 600.0).abs() < 1e-9);
        // without the live descendants, 67 more ticks would look like other work
        let rusage_only = Shares {
            own_ticks: 130.0,
            ..shares
        };
        assert!(rusage_only.other_fraction() > shares.other_fraction());
    }

    #[test]
    fn others_io_is_what_the_disks_moved_beyond_oslabs_own() {
        let io = "rchar: 9\nwchar: 9\nsyscr: 1\nsyscw: 1\nread_bytes: 4096\nwrite_bytes: 8192\ncancelled_write_bytes: 4096\n";
        assert_eq!(storage_bytes(io), 12288);
        let a = IoCounts {
            disks: 1000,
            own: 100,
        };
        let b = IoCounts {
            disks: 5000,
            own: 1100,
        };
        assert_eq!(others_io(&a, &b), 3000);
        // oslab's own bytes still on their way to the disk never make it negative
        let c = IoCounts {
            disks: 1500,
            own: 9000,
        };
        assert_eq!(others_io(&a, &c), 0);
    }

    #[test]
    fn a_descendant_lost_to_init_never_makes_oslab_negative() {
        let start = Counts::of(&[(200, stat(100, 50, 0))], 100, 0);
        let end = Counts::of(&[], 100, 0);
        assert_eq!(own_ticks(&start, &end), 0.0);
    }
}
