//! The `cpu` lines of /proc/stat: where the CPU time went, steal included, all
//! CPUs together and each.

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
    /// Sum of all states (guest time is already inside user and nice); saturates
    /// rather than overflow on corrupt counters.
    pub fn total(&self) -> u64 {
        [
            self.nice,
            self.system,
            self.idle,
            self.iowait,
            self.irq,
            self.softirq,
            self.steal,
        ]
        .into_iter()
        .fold(self.user, u64::saturating_add)
    }

    /// Busy time: everything but idle, iowait and steal (saturating, as `total`).
    pub fn busy(&self) -> u64 {
        [self.nice, self.system, self.irq, self.softirq]
            .into_iter()
            .fold(self.user, u64::saturating_add)
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
    times_of(stat.lines().find(|l| l.starts_with("cpu "))?)
}

/// Each CPU's times, from the `cpuN` lines, by CPU number (an offline CPU has
/// no line).
pub fn per_cpu_times(stat: &str) -> std::collections::BTreeMap<u32, CpuTimes> {
    stat.lines()
        .filter_map(|l| {
            let (name, _) = l.split_once(' ')?;
            let n = name.strip_prefix("cpu")?.parse().ok()?;
            Some((n, times_of(l)?))
        })
        .collect()
}

fn times_of(line: &str) -> Option<CpuTimes> {
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
    fn each_cpu_has_its_line() {
        let stat = "cpu  10 0 10 80 0 0 0 0 0 0\ncpu0 4 0 6 40 0 0 0 0 0 0\ncpu1 6 0 4 40 0 0 0 1 0 0\nintr 5\n";
        let per = per_cpu_times(stat);
        assert_eq!(per.len(), 2);
        assert_eq!(per[&0].user, 4);
        assert_eq!(per[&1].steal, 1);
        assert_eq!(
            cpu_times(stat).unwrap().user,
            10,
            "the total line is not a CPU"
        );
    }

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

/// Property tests: any text gives CPU times or nothing, never a panic, and what is
/// read can be used (sums, differences, fractions) without a panic either. A
/// fuzz-like run with many cases (PROPTEST_CASES wins over the default here;
/// failures are printed, not saved to proptest-regressions/):
/// `PROPTEST_CASES=100000 cargo test -p oslab-sys --lib -- parse::procstat::props`
#[cfg(test)]
mod props {
    use super::*;
    use crate::testing::proptest_config as config;
    use proptest::prelude::*;

    fn use_all(t: &CpuTimes, earlier: &CpuTimes) {
        let d = t.since(earlier);
        let _ = (t.total(), t.busy(), d.total(), d.busy());
        for f in [t.steal_fraction(), t.busy_fraction(), d.steal_fraction()] {
            assert!((0.0..=1.0).contains(&f), "fraction {f}");
        }
    }

    proptest! {
        #![proptest_config(config(512))]

        #[test]
        fn any_text_never_panics(text in "(?s).{0,120}") {
            if let Some(t) = cpu_times(&text) {
                use_all(&t, &CpuTimes::default());
            }
        }

        /// The `cpu` line with any counters, as many as a kernel prints or fewer or
        /// more, among other lines: read exactly, missing ones zero.
        #[test]
        fn the_cpu_line_reads_back(
            counters in proptest::collection::vec(any::<u64>(), 0..12),
            before in "(intr|ctxt|cpu0|btime) [0-9 ]{0,20}\n",
            earlier in proptest::collection::vec(any::<u64>(), 8),
        ) {
            let line: String = counters.iter().map(|c| format!(" {c}")).collect();
            let text = format!("{before}cpu {line}\ncpu0 1 2 3\nintr 5\n");
            let t = cpu_times(&text).expect("a cpu line");
            let at = |i: usize| counters.get(i).copied().unwrap_or(0);
            prop_assert_eq!(
                [t.user, t.nice, t.system, t.idle, t.iowait, t.irq, t.softirq, t.steal],
                [at(0), at(1), at(2), at(3), at(4), at(5), at(6), at(7)]
            );
            let e = CpuTimes {
                user: earlier[0], nice: earlier[1], system: earlier[2], idle: earlier[3],
                iowait: earlier[4], irq: earlier[5], softirq: earlier[6], steal: earlier[7],
            };
            use_all(&t, &e);
        }

        #[test]
        fn a_junk_counter_spoils_the_line(n in 0usize..8, junk in "[^0-9\\s]{1,4}") {
            let mut words: Vec<String> = (1..=8).map(|i| i.to_string()).collect();
            words[n] = junk;
            prop_assert_eq!(cpu_times(&format!("cpu  {}\n", words.join(" "))), None);
        }
    }

    /// Regression: counters near u64::MAX (a corrupt or made-up /proc/stat) made
    /// `total()` overflow.
    #[test]
    fn sums_of_huge_counters_saturate() {
        let t = cpu_times(&format!(
            "cpu  {m} {m} {m} {m} {m} {m} {m} {m}\n",
            m = u64::MAX
        ))
        .unwrap();
        assert_eq!(t.total(), u64::MAX);
        assert_eq!(t.busy(), u64::MAX);
        assert!((0.0..=1.0).contains(&t.steal_fraction()));
    }
}
