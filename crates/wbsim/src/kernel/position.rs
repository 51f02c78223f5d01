//! Where the dirty pages stand against the setpoint: `pos_ratio_polynom` and
//! `wb_position_ratio` (mm/page-writeback.c). The result scales the device's
//! `dirty_ratelimit` into a task's rate: 1 << 10 at the setpoint, 2 << 10 at the
//! free-run ceiling, 0 at the limit, times the device's own line.

use super::{SHIFT, freerun};
use crate::config::Kernel;

/// The global control line: 1 + ((setpoint - dirty) / (limit - setpoint))^3, in
/// 1/1024ths, clamped to [0, 2]. Signed integer steps as the kernel's (division
/// truncates toward zero, the shifts round toward minus infinity).
pub fn pos_ratio_polynom(setpoint: u64, dirty: u64, limit: u64) -> u64 {
    let num = (setpoint as i64 - dirty as i64) << SHIFT;
    let den = (limit.saturating_sub(setpoint) | 1) as i64;
    let x = num / den;
    let mut pos = x;
    pos = (pos * x) >> SHIFT;
    pos = (pos * x) >> SHIFT;
    pos += 1 << SHIFT;
    pos.clamp(0, 2 << SHIFT) as u64
}

/// What `wb_position_ratio` reads from a dirty_throttle_control, in pages.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Dtc {
    /// The task's hard limit (real-time tasks' is higher).
    pub thresh: u64,
    pub bg_thresh: u64,
    /// Global dirty + writeback pages.
    pub dirty: u64,
    /// The device's share of `thresh`.
    pub wb_thresh: u64,
    /// The device's dirty + writeback pages.
    pub wb_dirty: u64,
    /// hard_dirty_limit(): max(thresh, the domain's smoothed dirty_limit).
    pub limit: u64,
    /// The device's avg_write_bandwidth, pages per second.
    pub write_bw: u64,
    /// Where the release lifts an idle device's share (`wb_thresh` is already
    /// lifted on 6.14+; before, only here).
    pub kernel: Kernel,
}

impl Dtc {
    /// The balance point: halfway between the free-run ceiling and the limit.
    pub fn setpoint(&self) -> u64 {
        (freerun(self.thresh, self.bg_thresh) + self.limit) / 2
    }
}

/// pos_ratio for a device that is not strictlimit: the global cubic scaled by the
/// device's line through (wb_setpoint, 1) with slope -1 / span (span = 8 x
/// write_bw for a device that has the whole limit), never below 1/4 of it, and
/// lifted where the device holds under half its threshold (its reserve area).
pub fn wb_position_ratio(d: &Dtc) -> u64 {
    if d.dirty >= d.limit {
        return 0;
    }
    let setpoint = d.setpoint();
    let mut pos = pos_ratio_polynom(setpoint, d.dirty, d.limit);
    let mut wb_thresh = d.wb_thresh.min(d.thresh);
    // a device idle for long has a tiny share: give it room to ramp up (6.14
    // moved this into __wb_calc_thresh, against thresh, which Dtc's caller does)
    if d.kernel == Kernel::Before614 {
        wb_thresh = wb_thresh.max((d.limit - d.dirty) / 8);
    }
    let x = (wb_thresh << 16) / (d.thresh | 1);
    let wb_setpoint = (setpoint * x) >> 16;
    let span = ((d.thresh.saturating_sub(wb_thresh) + 8 * d.write_bw) * x) >> 16;
    let x_intercept = wb_setpoint + span;
    if d.wb_dirty < x_intercept - span / 4 {
        pos = pos * (x_intercept - d.wb_dirty) / ((x_intercept - wb_setpoint) | 1);
    } else {
        pos /= 4;
    }
    let reserve = wb_thresh / 2;
    if d.wb_dirty < reserve {
        if d.wb_dirty > reserve / 8 {
            pos = pos * reserve / d.wb_dirty;
        } else {
            pos *= 8;
        }
    }
    pos
}

#[cfg(test)]
mod tests {
    use super::*;

    /// dirty_bytes 64 MiB, background 32 MiB: thresh 16384 pages, bg 8192.
    fn testbed(dirty: u64, wb_thresh: u64, wb_dirty: u64) -> Dtc {
        Dtc {
            thresh: 16384,
            bg_thresh: 8192,
            dirty,
            wb_thresh,
            wb_dirty,
            limit: 16384,
            write_bw: 10240, // 40 MiB/s
            kernel: Kernel::Since614,
        }
    }

    #[test]
    fn the_cubic_by_hand() {
        // freerun 12288, setpoint 14336, limit - setpoint = 2048 (| 1 = 2049)
        assert_eq!(pos_ratio_polynom(14336, 14336, 16384), 1024);
        // dirty 15000: x = -664 x 1024 / 2049 = -331 (toward zero);
        // -331 x -331 >> 10 = 106; 106 x -331 >> 10 = -35 (floor); 1024 - 35
        assert_eq!(pos_ratio_polynom(14336, 15000, 16384), 989);
        // at the free-run ceiling: x = 2048 x 1024 / 2049 = 1023;
        // 1023 x 1023 >> 10 = 1022; 1022 x 1023 >> 10 = 1021
        assert_eq!(pos_ratio_polynom(14336, 12288, 16384), 1024 + 1021);
        // at the limit the | 1 leaves a trace: x = -2048 x 1024 / 2049 = -1023;
        // 1023^2 >> 10 = 1022; 1022 x -1023 >> 10 = -1022 (floor): 2
        assert_eq!(pos_ratio_polynom(14336, 16384, 16384), 2);
        // far below: clamped at 2, far above: clamped at 0
        assert_eq!(pos_ratio_polynom(14336, 0, 16384), 2048);
        assert_eq!(pos_ratio_polynom(14336, 20000, 16384), 0);
    }

    #[test]
    fn one_device_with_the_whole_limit() {
        // x = (16384 << 16) / 16385 = 65532; wb_setpoint = 14336 x 65532 >> 16 = 14335;
        // span = 81920 x 65532 >> 16 = 81915; x_intercept = 96250;
        // pos = 989 x (96250 - 15000) / 81915 = 980
        assert_eq!(wb_position_ratio(&testbed(15000, 16384, 15000)), 980);
        // at or over the limit the task must stop
        assert_eq!(wb_position_ratio(&testbed(16384, 16384, 16384)), 0);
    }

    #[test]
    fn a_device_with_a_smaller_share_is_pushed_down() {
        // wb_thresh 6554 (40 %): x = 6554 << 16 / 16385 = 26214; wb_setpoint =
        // 14336 x 26214 >> 16 = 5734; span = (16384 - 6554 + 81920) x 26214 >> 16 = 36699;
        // x_intercept = 42433; wb_dirty 14000 < 42433 - 9174, so
        // pos = 989 x (42433 - 14000) / (36699 | 1) = 766
        assert_eq!(wb_position_ratio(&testbed(15000, 6554, 14000)), 766);
        // wb_dirty beyond x_intercept - span / 4: a quarter of the global figure
        assert_eq!(wb_position_ratio(&testbed(15000, 6554, 40000)), 989 / 4);
    }

    #[test]
    fn before_614_an_idle_device_is_lifted_against_the_hard_limit() {
        // a device with 100 pages of share and 1000 dirty while the smoothed
        // limit stands at 20000 (over thresh 16384), 15000 dirty in all: 6.1-6.13
        // lift the share here to (20000 - 15000) / 8 = 625; 6.14+ take it lifted
        // against thresh by the caller, (16384 - 15000) / 8 = 173, and add nothing
        let d = |wb_thresh, kernel| Dtc {
            limit: 20000,
            kernel,
            ..testbed(15000, wb_thresh, 1000)
        };
        let before = wb_position_ratio(&d(100, Kernel::Before614));
        assert_eq!(before, wb_position_ratio(&d(625, Kernel::Since614)));
        // by hand: setpoint (12288 + 20000) / 2 = 16144; x = 1144 << 10 / 3857 =
        // 303, 303^2 >> 10 = 89, 89 x 303 >> 10 = 26: pos 1050.
        // 625: x = 625 << 16 / 16385 = 2499, wb_setpoint 16144 x 2499 >> 16 = 615,
        // span (15759 + 81920) x 2499 >> 16 = 3724, x_intercept 4339; 1000 is
        // under 4339 - 931: 1050 x (4339 - 1000) / 3725 = 941
        assert_eq!(before, 941);
        // 173: x = 691, wb_setpoint 170, span 1034, x_intercept 1204; 1000 is
        // past 1204 - 258: a quarter, 262
        assert_eq!(wb_position_ratio(&d(173, Kernel::Since614)), 1050 / 4);
    }

    #[test]
    fn the_reserve_area_lifts_a_nearly_clean_device() {
        // wb_dirty 2000 under wb_thresh / 2 = 8192 (and above 8192 / 8): x 8192 / 2000
        let base = testbed(15000, 16384, 2000);
        let line = 989 * (96250 - 2000) / 81915; // 1137
        assert_eq!(wb_position_ratio(&base), line * 8192 / 2000);
        // under an eighth of the reserve: x 8
        let line = 989 * (96250 - 500) / 81915;
        assert_eq!(wb_position_ratio(&testbed(15000, 16384, 500)), line * 8);
    }
}
