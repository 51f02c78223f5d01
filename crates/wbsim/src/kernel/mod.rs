//! Linux 6 dirty throttling as mm/page-writeback.c computes it, in the kernel's own
//! units and integer arithmetic: pages, pages per second, jiffies (ticks of
//! CONFIG_HZ), and ratios scaled by 1 << 10 (RATELIMIT_CALC_SHIFT). Each function
//! names the kernel function it follows; the engine only feeds them its state.
//!
//! - [`position`]: `pos_ratio_polynom`, `wb_position_ratio` (the global cubic and
//!   the per-device line);
//! - [`pause`]: `dirty_poll_interval`, `wb_max_pause`, `wb_min_pause` and the pause
//!   decision of `balance_dirty_pages` with its think-time credit;
//! - [`estimate`]: `wb_update_write_bandwidth`, `wb_update_dirty_ratelimit`,
//!   `update_dirty_limit` (the 200 ms estimates);
//! - [`share`]: the device's share of write-back completions (`__wb_calc_thresh`
//!   through the `fprop` proportions, aged every 3 s).

pub mod estimate;
pub mod pause;
pub mod position;
pub mod share;

/// Bytes per page (x86-64).
pub const PAGE: u64 = 4096;

/// RATELIMIT_CALC_SHIFT: pos_ratio is a fraction of 1 << 10.
pub const SHIFT: u32 = 10;

/// MAX_PAUSE and BANDWIDTH_INTERVAL: max(HZ / 5, 1) ticks (200 ms).
pub fn max_pause_ticks(hz: u64) -> u64 {
    (hz / 5).max(1)
}

/// BANDWIDTH_INTERVAL, the estimator's period: max(HZ / 5, 1) ticks.
pub fn bandwidth_interval(hz: u64) -> u64 {
    (hz / 5).max(1)
}

/// DIRTY_POLL_THRESH: 128 KiB in pages.
pub const DIRTY_POLL_THRESH: u64 = 128 * 1024 / PAGE;

/// The ratelimit of a task while its device is over its limit (dirty_exceeded):
/// 32 KiB in pages (balance_dirty_pages_ratelimited_flags).
pub const EXCEEDED_RATELIMIT: u64 = 32 * 1024 / PAGE;

/// The kernel's freerun ceiling: (thresh + bg_thresh) / 2.
pub fn freerun(thresh: u64, bg_thresh: u64) -> u64 {
    (thresh + bg_thresh) / 2
}

/// ilog2 of a positive number (0 for 0, which the kernel never passes).
pub fn ilog2(x: u64) -> u64 {
    if x == 0 {
        0
    } else {
        63 - x.leading_zeros() as u64
    }
}

/// roundup_pow_of_two.
pub fn roundup_pow2(x: u64) -> u64 {
    x.max(1).next_power_of_two()
}

/// wb_stat_error(): the per-CPU counters' slack, WB_STAT_BATCH x nr_cpu_ids with
/// WB_STAT_BATCH = 8 x (1 + ilog2(nr_cpu_ids)).
pub fn wb_stat_error(cpus: u64) -> u64 {
    let cpus = cpus.max(1);
    8 * (1 + ilog2(cpus)) * cpus
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn constants_at_hz_250() {
        assert_eq!(max_pause_ticks(250), 50);
        assert_eq!(bandwidth_interval(1000), 200);
        assert_eq!(DIRTY_POLL_THRESH, 32);
        assert_eq!(EXCEEDED_RATELIMIT, 8);
        // two CPUs: batch 8 x (1 + 1) = 16 per CPU
        assert_eq!(wb_stat_error(2), 32);
        assert_eq!((ilog2(1), ilog2(1024), ilog2(1025)), (0, 10, 10));
        assert_eq!((roundup_pow2(250), roundup_pow2(750)), (256, 1024));
    }
}
