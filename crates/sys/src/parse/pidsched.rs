//! /proc/PID/sched: the fair scheduler's view of one task (kernel/sched/debug.c,
//! `proc_sched_show_task`), reduced to what oslab reads.
//!
//! Each line is `name : value`. Times are printed either in ns (`se.slice`) or in ms
//! with a fraction (`se.exec_start`); `se.load.weight` is the weight of the task's
//! nice value, scaled by 1024 on 64-bit kernels (1048576 for nice 0).

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct PidSched {
    /// `se.slice`: the slice the task requests, ns (EEVDF kernels).
    pub slice_ns: Option<u64>,
    /// `se.load.weight`, as printed.
    pub load_weight: Option<u64>,
    /// `prio`: 120 + nice for a normal task.
    pub prio: Option<i64>,
}

/// The value text of field `key`, trimmed.
pub fn field<'a>(text: &'a str, key: &str) -> Option<&'a str> {
    text.lines().find_map(|l| {
        let (a, b) = l.split_once(':')?;
        (a.trim() == key).then(|| b.trim())
    })
}

/// The whole-number part of field `key` (`1400000`, or `5539701` of `5539701.880447`).
fn whole(text: &str, key: &str) -> Option<u64> {
    field(text, key)?.split('.').next()?.parse().ok()
}

/// Parses /proc/PID/sched text; a field that is absent or unreadable is `None`.
pub fn parse_pid_sched(text: &str) -> PidSched {
    PidSched {
        slice_ns: whole(text, "se.slice"),
        load_weight: whole(text, "se.load.weight"),
        prio: field(text, "prio").and_then(|v| v.parse().ok()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The head of /proc/self/sched on a 2-vCPU KVM guest (6.18).
    const CAPTURED: &str = "cat (16634, #threads: 1)
-------------------------------------------------------------------
se.exec_start                                :       5539701.880447
se.vruntime                                  :           334.339277
se.sum_exec_runtime                          :             0.733004
se.nr_migrations                             :                    0
nr_switches                                  :                    0
nr_voluntary_switches                        :                    0
nr_involuntary_switches                      :                    0
se.load.weight                               :              1048576
se.avg.load_sum                              :                47205
policy                                       :                    0
prio                                         :                  120
se.slice                                     :              1400000
clock-delta                                  :                   80
current_node=0, numa_group_id=0
";

    #[test]
    fn a_captured_file() {
        let s = parse_pid_sched(CAPTURED);
        assert_eq!(s.slice_ns, Some(1_400_000));
        assert_eq!(s.load_weight, Some(1_048_576));
        assert_eq!(s.prio, Some(120));
        assert_eq!(field(CAPTURED, "se.exec_start"), Some("5539701.880447"));
        assert_eq!(whole(CAPTURED, "se.exec_start"), Some(5539701));
        // a CFS kernel prints no se.slice
        let cfs = "se.load.weight                               :              1024\n";
        assert_eq!(
            parse_pid_sched(cfs),
            PidSched {
                slice_ns: None,
                load_weight: Some(1024),
                prio: None
            }
        );
        assert_eq!(parse_pid_sched(""), PidSched::default());
    }
}

/// Property tests (moved from lab's scheduler analysis): any text gives fields or
/// nothing, never a panic; the kernel's lines read back among others. A fuzz-like
/// run: `PROPTEST_CASES=100000 cargo test -p oslab-sys --lib -- parse::pidsched`
#[cfg(test)]
mod props {
    use super::*;
    use crate::testing::proptest_config as config;
    use proptest::prelude::*;

    proptest! {
        #![proptest_config(config(512))]

        #[test]
        fn any_text_never_panics(text in "(?s).{0,160}") {
            let _ = parse_pid_sched(&text);
        }

        #[test]
        fn sched_fields_read_the_kernels_lines(
            slice in any::<u64>(),
            frac in "[0-9]{0,6}",
            weight in any::<u64>(),
            others in proptest::collection::vec("[a-z_.]{1,20} {1,30}: {1,4}[0-9.]{1,12}", 0..6),
        ) {
            let mut lines: Vec<String> = others
                .into_iter()
                .filter(|l| !matches!(l.split(':').next().map(str::trim), Some("se.slice" | "se.load.weight")))
                .collect();
            lines.insert(lines.len() / 2, format!("se.slice                                     :          {slice}.{frac}"));
            lines.push(format!("se.load.weight                               :              {weight}"));
            let s = parse_pid_sched(&lines.join("\n"));
            prop_assert_eq!((s.slice_ns, s.load_weight), (Some(slice), Some(weight)));
        }
    }
}
