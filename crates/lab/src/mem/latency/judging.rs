//! What judging a latency sweep reads (the plan, the raw data, the curve and
//! sysfs' levels together), and the words its findings and claim share.

use oslab_units::human_bytes;

use super::curve::{Edge, Reading};
use super::{Plan, Raw};
use crate::mem::common::sweep::SysfsLevel;

/// Everything the judging reads, derived once.
pub struct Judging<'a> {
    pub plan: &'a Plan,
    pub raw: &'a Raw,
    pub sysfs: Vec<SysfsLevel>,
    pub reading: Reading,
    /// The clock cycles are counted at: the TSC's rate when the kernel knows it.
    pub mhz: Option<f64>,
    /// The hypervisor, when the machine is a guest.
    pub hypervisor: Option<String>,
}

pub(super) fn bytes(v: f64) -> String {
    human_bytes(v.max(0.0) as u64)
}

/// Where an edge is, in words: "about 34.9 KiB" or "between 724 KiB and 1.19 MiB".
pub fn edge_words(e: &Edge) -> String {
    if e.range {
        format!(
            "between {} and {}",
            bytes(e.below.bytes),
            bytes(e.above.bytes)
        )
    } else {
        format!("about {}", bytes(e.bytes))
    }
}

/// Why the last level can be smaller than sysfs says, from the machine's facts.
pub fn shared_why(hypervisor: Option<&str>) -> String {
    match hypervisor {
        Some(h) => format!(
            "under {h} the guest is told the host CPU's cache, which the host shares with its other guests or partitions"
        ),
        None => "the cache is shared with the other cores and processes, or partitioned (resctrl)"
            .into(),
    }
}
