//! Load and steal around a run, from /proc/loadavg and /proc/stat.
//!
//! "Other work" is what the CPUs did that was neither oslab (its own threads and
//! the children it waited for: getrusage RUSAGE_SELF + RUSAGE_CHILDREN), nor the
//! kernel's own threads and interrupts (write back, loop devices, softirqs, which
//! mostly serve oslab's I/O), so only other programs trigger the warning. Runs
//! shorter than a second are not judged: /proc/stat counts in 10 ms ticks.

use oslab_model::LoadRecord;
use oslab_sys::fsread::Root;
use oslab_sys::parse::procstat::{CpuTimes, cpu_times};
use oslab_sys::process::{all_pid_stats, own_and_children_cpu_ns};

/// Shorter windows are not judged for load.
const MIN_JUDGED_NS: u64 = 1_000_000_000;
/// /proc/stat and /proc/PID/stat count in USER_HZ ticks, 100 per second on Linux.
const NS_PER_TICK: f64 = 1e7;

/// Steal above this share of CPU time makes a run's figures suspect.
pub const STEAL_WARN: f64 = 0.05;

/// Starts at construction; [`LoadMonitor::finish`] gives the record.
pub struct LoadMonitor {
    root: Root,
    loadavg: [f64; 3],
    cpu: Option<CpuTimes>,
    own_ns: u64,
    kernel_ticks: u64,
    started_ns: u64,
}

/// CPU time of the kernel's own threads, ticks.
fn kernel_thread_ticks(root: &Root) -> u64 {
    all_pid_stats(root)
        .iter()
        .filter(|(_, s)| s.is_kernel_thread())
        .map(|(_, s)| s.cpu_ticks())
        .sum()
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

/// The three load averages from /proc/loadavg text.
pub fn parse_loadavg(text: &str) -> [f64; 3] {
    let mut it = text.split_whitespace().map(|x| x.parse().unwrap_or(0.0));
    [
        it.next().unwrap_or(0.0),
        it.next().unwrap_or(0.0),
        it.next().unwrap_or(0.0),
    ]
}

impl LoadMonitor {
    pub fn start(root: Root) -> LoadMonitor {
        LoadMonitor {
            loadavg: parse_loadavg(&root.read("/proc/loadavg").unwrap_or_default()),
            cpu: root.read("/proc/stat").ok().and_then(|s| cpu_times(&s)),
            own_ns: own_and_children_cpu_ns(),
            kernel_ticks: kernel_thread_ticks(&root),
            started_ns: oslab_sys::clock::monotonic_ns(),
            root,
        }
    }

    /// The record from start to now.
    pub fn finish(&self) -> LoadRecord {
        let after = parse_loadavg(&self.root.read("/proc/loadavg").unwrap_or_default());
        let now = self
            .root
            .read("/proc/stat")
            .ok()
            .and_then(|s| cpu_times(&s));
        let delta = match (&self.cpu, &now) {
            (Some(a), Some(b)) => b.since(a),
            _ => CpuTimes::default(),
        };
        let shares = Shares {
            cpu: delta,
            own_ticks: own_and_children_cpu_ns().saturating_sub(self.own_ns) as f64 / NS_PER_TICK,
            kernel_thread_ticks: kernel_thread_ticks(&self.root).saturating_sub(self.kernel_ticks)
                as f64,
        };
        let warn = warnings(
            &shares,
            oslab_sys::clock::monotonic_ns().saturating_sub(self.started_ns),
        );
        LoadRecord {
            loadavg_before: self.loadavg,
            loadavg_after: after,
            cpu_busy_fraction: delta.busy_fraction(),
            steal_fraction: delta.steal_fraction(),
            warning: (!warn.is_empty()).then(|| warn.join("; ")),
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
    }

    #[test]
    fn loadavg_fields() {
        assert_eq!(
            parse_loadavg("0.52 0.58 0.59 2/389 12345\n"),
            [0.52, 0.58, 0.59]
        );
        assert_eq!(parse_loadavg(""), [0.0, 0.0, 0.0]);
    }
}
