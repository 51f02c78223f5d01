//! The medians of the rounds that the findings, the notes and the claims read.

use oslab_model::Environment;

use super::{Plan, Raw, Round};
use oslab_services::disk_probe::{implausible_for_a_disk, mb_s};

pub(super) const MIB: f64 = (1u64 << 20) as f64;

pub(super) fn med(v: &[f64]) -> f64 {
    oslab_stats::median(v).unwrap_or(f64::NAN)
}

/// One figure of every round.
pub(super) fn col(raw: &Raw, f: impl Fn(&Round) -> f64) -> Vec<f64> {
    raw.rounds.iter().map(f).collect()
}

/// The medians the findings and claims use.
pub(super) struct Figures {
    pub(super) size: u64,
    pub(super) cold_s: f64,
    pub(super) warm_s: f64,
    pub(super) cold_dev: f64,
    pub(super) warm_dev: f64,
    pub(super) speedup: f64,
    pub(super) cold_dev_rate: f64,
    pub(super) grow_cold: f64,
    pub(super) grow_warm: f64,
    /// Shares of the file's pages cached in the last round (NaN: not read).
    pub(super) before_cold: f64,
    pub(super) after_cold: f64,
    pub(super) after_warm: f64,
    /// The hypervisor's name, when the environment shows one.
    pub(super) hypervisor: Option<String>,
}

pub(super) fn figures(plan: &Plan, raw: &Raw, env: &Environment) -> Figures {
    let size = plan.size_bytes;
    let (cold_s, warm_s) = (
        med(&col(raw, |r| r.cold.secs)),
        med(&col(raw, |r| r.warm.secs)),
    );
    let cold_dev = med(&col(raw, |r| r.cold.dev_read_bytes as f64));
    let pages = size.div_ceil(raw.page_bytes.max(1)).max(1) as f64;
    let share = |f: fn(&Round) -> Option<u64>| {
        raw.rounds
            .last()
            .and_then(f)
            .map_or(f64::NAN, |n| n as f64 / pages)
    };
    Figures {
        size,
        cold_s,
        warm_s,
        cold_dev,
        warm_dev: med(&col(raw, |r| r.warm.dev_read_bytes as f64)),
        speedup: cold_s / warm_s,
        cold_dev_rate: if cold_dev.is_finite() {
            mb_s(cold_dev as u64, cold_s)
        } else {
            f64::NAN
        },
        grow_cold: med(&col(raw, |r| r.cold.cache_delta_bytes as f64)),
        grow_warm: med(&col(raw, |r| r.warm.cache_delta_bytes as f64)),
        before_cold: share(|r| r.cached_before_cold),
        after_cold: share(|r| r.cached_after_cold),
        after_warm: share(|r| r.cached_after_warm),
        hypervisor: env.machine.hypervisor.name.clone(),
    }
}

impl Figures {
    /// The cold read was faster than a disk could serve it under a hypervisor.
    pub(super) fn host_cached(&self) -> bool {
        implausible_for_a_disk(self.cold_dev_rate, self.hypervisor.is_some())
    }
}
