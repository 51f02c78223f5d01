//! The aggregate `cpu` line of /proc/stat: where the CPU time went, steal included.

use serde::{Deserialize, Serialize};

/// Jiffies per state from the `cpu ` line (all CPUs together).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct CpuTimes {
    pub user: u64,
    pub nice: u64,
    pub system: u64,
    pub idle: u64,
    pub iowait: u64,
    pub irq: u64,
    pub softirq: u64,
    pub steal: u64,
}

impl CpuTimes {
    /// Sum of all states (guest time is already inside user and nice).
    pub fn total(&self) -> u64 {
        self.user
            + self.nice
            + self.system
            + self.idle
            + self.iowait
            + self.irq
            + self.softirq
            + self.steal
    }

    /// Busy time: everything but idle, iowait and steal.
    pub fn busy(&self) -> u64 {
        self.user + self.nice + self.system + self.irq + self.softirq
    }

    /// The difference `self - earlier`, counter by counter (never negative).
    pub fn since(&self, e: &CpuTimes) -> CpuTimes {
        CpuTimes {
            user: self.user.saturating_sub(e.user),
            nice: self.nice.saturating_sub(e.nice),
            system: self.system.saturating_sub(e.system),
            idle: self.idle.saturating_sub(e.idle),
            iowait: self.iowait.saturating_sub(e.iowait),
            irq: self.irq.saturating_sub(e.irq),
            softirq: self.softirq.saturating_sub(e.softirq),
            steal: self.steal.saturating_sub(e.steal),
        }
    }

    /// Fraction of the interval the hypervisor gave to others (0 when no time passed).
    pub fn steal_fraction(&self) -> f64 {
        let t = self.total();
        if t == 0 {
            0.0
        } else {
            self.steal as f64 / t as f64
        }
    }

    /// Fraction of the interval the CPUs were busy.
    pub fn busy_fraction(&self) -> f64 {
        let t = self.total();
        if t == 0 {
            0.0
        } else {
            self.busy() as f64 / t as f64
        }
    }
}

/// Parses the aggregate `cpu` line of /proc/stat.
pub fn cpu_times(stat: &str) -> Option<CpuTimes> {
    let line = stat.lines().find(|l| l.starts_with("cpu "))?;
    let v: Vec<u64> = line
        .split_whitespace()
        .skip(1)
        .map(|x| x.parse().ok())
        .collect::<Option<_>>()?;
    let at = |i: usize| v.get(i).copied().unwrap_or(0);
    Some(CpuTimes {
        user: at(0),
        nice: at(1),
        system: at(2),
        idle: at(3),
        iowait: at(4),
        irq: at(5),
        softirq: at(6),
        steal: at(7),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_subtracts() {
        let a = cpu_times("cpu  100 0 50 800 10 0 5 35 0 0\ncpu0 1 2 3\n").unwrap();
        let b = cpu_times("cpu  200 0 100 1500 10 0 10 135 0 0\n").unwrap();
        let d = b.since(&a);
        assert_eq!(d.total(), 100 + 50 + 700 + 5 + 100);
        assert!((d.steal_fraction() - 100.0 / 955.0).abs() < 1e-12);
        assert_eq!(cpu_times("intr 1 2"), None);
    }
}
