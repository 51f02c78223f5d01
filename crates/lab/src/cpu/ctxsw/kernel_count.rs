//! The switches of one pinned ping-pong counted by the scheduler itself
//! (sched_switch, crates/trace) beside getrusage(): run after the timed cells,
//! never during them, so the tracing's cost does not touch the timings.

use oslab_model::machine::MachineInfo;
use oslab_probe::pingpong::{self, Mechanism, Tasks};
use oslab_trace::analysis::switches_between;
use serde::{Deserialize, Serialize};

use oslab_harness::kernel_trace::KernelTrace;
use oslab_harness::{Output, finding};

/// One side's switches over its measured window: (voluntary, involuntary).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Side {
    pub rusage: (u64, u64),
    pub kernel: (u64, u64),
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "status")]
pub enum KernelCount {
    Counted {
        round_trips: u64,
        own: Side,
        peer: Side,
        lost: u64,
    },
    NotAvailable {
        reason: String,
    },
}

impl Default for KernelCount {
    fn default() -> Self {
        KernelCount::NotAvailable {
            reason: "not recorded".into(),
        }
    }
}

/// Processes, futex, both on `cpu`: `round_trips` counted.
pub fn count(machine: &MachineInfo, cpu: Option<u32>, round_trips: u64) -> KernelCount {
    let kernel = KernelTrace::sched(machine, vec![std::process::id()], true);
    let run = pingpong::run(
        Tasks::Processes,
        Mechanism::Futex,
        cpu,
        cpu,
        round_trips,
        1,
        100,
        0,
    );
    let outcome = kernel.finish();
    let (r, c) = match (run, outcome.captured()) {
        (Ok(r), Some(c)) => (r, c),
        (Err(e), _) => {
            return KernelCount::NotAvailable {
                reason: format!("the counted ping-pong failed: {e}"),
            };
        }
        (_, None) => {
            return KernelCount::NotAvailable {
                reason: outcome
                    .note()
                    .trim_start_matches("kernel tracing: ")
                    .to_string(),
            };
        }
    };
    KernelCount::Counted {
        round_trips,
        own: Side {
            rusage: (r.own_voluntary, r.own_involuntary),
            kernel: switches_between(&c.switches, r.own_tid, r.own_window_ns.0, r.own_window_ns.1),
        },
        peer: Side {
            rusage: (r.peer_voluntary, r.peer_involuntary),
            kernel: switches_between(
                &c.switches,
                r.peer_tid,
                r.peer_window_ns.0,
                r.peer_window_ns.1,
            ),
        },
        lost: c.lost,
    }
}

/// Findings: switches per round trip by the kernel's count beside getrusage's.
pub fn judge(k: &KernelCount, out: &mut Output) {
    match k {
        KernelCount::Counted {
            round_trips,
            own,
            peer,
            lost,
        } => {
            let per = |x: (u64, u64)| (x.0 + x.1) as f64 / (*round_trips).max(1) as f64;
            for (side, s) in [("own", own), ("peer", peer)] {
                out.findings.push(finding(
                    &format!("kernel.switches_per_round_trip.{side}"),
                    per(s.kernel),
                    "switches",
                    format!(
                        "same CPU, processes, futex, {round_trips} round trips: sched_switch counted {} voluntary + {} involuntary, getrusage {} + {}{}",
                        s.kernel.0,
                        s.kernel.1,
                        s.rusage.0,
                        s.rusage.1,
                        if s.kernel == s.rusage { " (equal)" } else { " (they differ)" }
                    ),
                ));
            }
            out.notes.push(if *lost > 0 {
                format!("kernel tracing: on, but {lost} switch records were lost")
            } else {
                "kernel tracing: on (eBPF); the switches of one extra same-CPU ping-pong counted by sched_switch, after the timed cells".into()
            });
        }
        KernelCount::NotAvailable { reason } => {
            out.notes
                .push(format!("kernel tracing: not available ({reason})"));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_read_per_round_trip_and_say_whether_they_agree() {
        let k = KernelCount::Counted {
            round_trips: 1000,
            own: Side {
                rusage: (600, 400),
                kernel: (600, 400),
            },
            peer: Side {
                rusage: (1000, 0),
                kernel: (999, 1),
            },
            lost: 0,
        };
        let mut out = Output::default();
        judge(&k, &mut out);
        let own = &out.findings[0];
        assert_eq!(own.value, 1.0);
        assert!(own.detail.ends_with("(equal)"), "{}", own.detail);
        assert!(out.findings[1].detail.ends_with("(they differ)"));
        let mut out = Output::default();
        judge(&KernelCount::default(), &mut out);
        assert_eq!(
            out.notes,
            vec!["kernel tracing: not available (not recorded)"]
        );
    }
}
