//! The claim a scenario's runs judge: WCALL removes the high-priority writer's
//! spikes that vanilla lets through.

use oslab_model::Claim;

use oslab_harness::check::{Check, Condition, Rule};
use oslab_services::write_latency::LatencyStats;

const PROTECTS: Check = Check {
    id: "wcall-protects-high-priority",
    tolerates: &oslab_harness::interference::ANY,
    text: "With lower-priority writers competing, vanilla lets the high-priority writer's write() exceed 200 ms; WCALL largely removes those spikes",
    source: "Kim and Park, \"A Dynamic Allocation of Write Cache to Improve I/O Real-Time Responsiveness in Linux\" (2009), Fig. 2, 4, 5",
};

/// Vanilla stalls the first writer past 200 ms; wcall at least halves such writes
/// ("largely removes": a drop from 66 to 54 is not that).
pub fn protects_claim(writer: &str, v: &LatencyStats, w: &LatencyStats) -> Claim {
    let left = if v.over_200 > 0 {
        w.over_200 as f64 / v.over_200 as f64 * 100.0
    } else {
        0.0
    };
    PROTECTS.judge(
        &[
            Condition::new(
                format!("{writer}'s writes over 200 ms under vanilla"),
                "",
                Rule::Above(0.0),
                v.over_200 as f64,
            ),
            Condition::new(
                format!("{writer}'s writes over 200 ms under wcall, as a share of vanilla's"),
                "%",
                Rule::AtMost(50.0),
                left,
            ),
        ],
        &format!("p99 vanilla {:.0} ms, wcall {:.0} ms", v.p99, w.p99),
        |o| {
            if o.holds() {
                "in the simulation the group shares held the competitors back".into()
            } else if o.failed(0) {
                "vanilla shows no spike in this scenario, so there is nothing to remove".into()
            } else {
                "WCALL's shares follow dirty pages, so a group that has few dirty pages gets little room; see wcall-fair".into()
            }
        },
    )
}
