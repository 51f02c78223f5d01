//! System statistics sampled during a run, the way `sar` reports them: what a result
//! carries as `system` (one [`SarRecord`] per interval).
//!
//! These are the schema's types; `oslab_sys::sar::derive` computes them from /proc
//! snapshots (the definitions of every field are there). A field renamed here changes
//! the JSON and the stored rows: `tests/schema.rs` lists every key.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// sar -B
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
pub struct Paging {
    pub pgpgin_kb_s: f64,
    pub pgpgout_kb_s: f64,
    pub fault_s: f64,
    pub majflt_s: f64,
    pub pgfree_s: f64,
    pub pgscank_s: f64,
    pub pgscand_s: f64,
    pub pgsteal_s: f64,
    /// pgsteal / (pgscank + pgscand) in percent; 0 when nothing was scanned.
    pub vmeff_pct: f64,
    /// sar -W: pages swapped in and out per second.
    #[serde(default)]
    pub pswpin_s: f64,
    #[serde(default)]
    pub pswpout_s: f64,
}

/// sar -d, one device
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
pub struct DeviceRates {
    pub tps: f64,
    pub rkb_s: f64,
    pub wkb_s: f64,
    pub dkb_s: f64,
    /// Average request size, KiB.
    pub areq_kb: f64,
    /// Average queue size.
    pub aqu_sz: f64,
    /// Average time per request (queue + service), ms.
    pub await_ms: f64,
    pub util_pct: f64,
}

/// sar -r (levels in KiB) plus Writeback.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
pub struct Memory {
    pub kbmemfree: u64,
    pub kbavail: u64,
    pub kbbuffers: u64,
    pub kbcached: u64,
    pub kbdirty: u64,
    pub kbwriteback: u64,
    /// Swap in use (SwapTotal - SwapFree).
    #[serde(default)]
    pub kbswpused: u64,
    /// Committed_AS (sar kbcommit).
    #[serde(default)]
    pub kbcommit: u64,
}

/// sar -u (all CPUs), in percent.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
pub struct CpuPct {
    pub user: f64,
    pub nice: f64,
    pub system: f64,
    pub iowait: f64,
    pub steal: f64,
    pub idle: f64,
}

/// One interval, as sar would print it.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct SarRecord {
    /// End of the interval, seconds since the first snapshot of the series.
    pub t_s: f64,
    pub interval_s: f64,
    pub paging: Paging,
    pub devices: BTreeMap<String, DeviceRates>,
    pub memory: Memory,
    pub cpu: CpuPct,
    pub cswch_s: f64,
    /// sar -w proc/s: tasks created per second.
    #[serde(default)]
    pub proc_s: f64,
    /// Interrupts per second, all of them (sar -I SUM).
    #[serde(default)]
    pub intr_s: f64,
    /// Runnable tasks besides the reader of /proc/stat (sar runq-sz).
    pub runq_sz: u64,
    pub blocked: u64,
    pub plist_sz: u64,
    pub ldavg_1: f64,
    #[serde(default)]
    pub ldavg_5: f64,
    #[serde(default)]
    pub ldavg_15: f64,
}
