//! /proc/PID/schedstat: a task's time on the CPU, its time waiting on a run queue,
//! and its timeslices (Documentation/scheduler/sched-stats.rst), read by the
//! procfs-core parser.

use procfs_core::FromRead;
use procfs_core::process::Schedstat;
use serde::{Deserialize, Serialize};

/// The three fields of /proc/PID/schedstat.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct SchedStat {
    /// Time spent on the CPU, ns.
    pub run_ns: u64,
    /// Time spent waiting on a run queue, ns.
    pub wait_ns: u64,
    /// Timeslices run on this CPU (times it was put on the CPU).
    pub timeslices: u64,
}

impl SchedStat {
    /// The difference `self - earlier`, field by field (never negative).
    pub fn since(&self, e: &SchedStat) -> SchedStat {
        SchedStat {
            run_ns: self.run_ns.saturating_sub(e.run_ns),
            wait_ns: self.wait_ns.saturating_sub(e.wait_ns),
            timeslices: self.timeslices.saturating_sub(e.timeslices),
        }
    }
}

/// Parses /proc/PID/schedstat text; `None` unless it starts with three numbers.
pub fn parse_schedstat(text: &str) -> Option<SchedStat> {
    let s = Schedstat::from_read(text.as_bytes()).ok()?;
    Some(SchedStat {
        run_ns: s.sum_exec_runtime,
        wait_ns: s.run_delay,
        timeslices: s.pcount,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_captured_line() {
        // a spinning worker on a 2-vCPU KVM guest (6.18)
        let s = parse_schedstat("742107538 738517229 184\n").unwrap();
        assert_eq!(
            s,
            SchedStat {
                run_ns: 742107538,
                wait_ns: 738517229,
                timeslices: 184
            }
        );
        let later = parse_schedstat("842107538 838517229 209\n").unwrap();
        assert_eq!(later.since(&s).timeslices, 25);
        assert_eq!(s.since(&later).run_ns, 0);
        assert_eq!(parse_schedstat("123 456 7\n").unwrap().wait_ns, 456);
        assert_eq!(parse_schedstat("1 2"), None);
        assert_eq!(parse_schedstat(""), None);
    }
}

/// Property tests (moved from lab's scheduler analysis): any text gives the fields
/// or nothing, never a panic; the kernel's line reads back. A fuzz-like run:
/// `PROPTEST_CASES=100000 cargo test -p oslab-sys --lib -- parse::schedstat`
#[cfg(test)]
mod props {
    use super::*;
    use crate::testing::proptest_config as config;
    use proptest::prelude::*;

    proptest! {
        #![proptest_config(config(512))]

        #[test]
        fn any_text_never_panics(text in "(?s).{0,160}") {
            let _ = parse_schedstat(&text);
        }

        #[test]
        fn schedstat_reads_the_kernels_line(
            v in any::<(u64, u64, u64)>(),
            sep in "[ \t]{1,3}",
            end in "\n?",
        ) {
            let text = format!("{}{sep}{}{sep}{}{end}", v.0, v.1, v.2);
            prop_assert_eq!(
                parse_schedstat(&text).map(|s| (s.run_ns, s.wait_ns, s.timeslices)),
                Some(v)
            );
        }

        #[test]
        fn schedstat_needs_three_numbers(
            v in proptest::collection::vec(any::<u64>(), 0..3),
            junk in "[^0-9\\s]{1,5}",
        ) {
            let few = v.iter().map(u64::to_string).collect::<Vec<_>>().join(" ");
            prop_assert_eq!(parse_schedstat(&few), None);
            prop_assert_eq!(parse_schedstat(&format!("{junk} {few} 1 2 3")), None);
        }
    }
}
