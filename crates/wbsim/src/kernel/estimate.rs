//! The device's estimates, refreshed at most every BANDWIDTH_INTERVAL (200 ms):
//! its write bandwidth from completions (`wb_update_write_bandwidth`), the base
//! throttle rate `dirty_ratelimit` (`wb_update_dirty_ratelimit`) and the domain's
//! smoothed hard limit (`update_dirty_limit`). Pages, pages per second, ticks.

use super::{SHIFT, freerun, ilog2, roundup_pow2};

/// What the kernel knows of one device (struct bdi_writeback's estimates).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Estimator {
    pub write_bandwidth: u64,
    pub avg_write_bandwidth: u64,
    pub dirty_ratelimit: u64,
    pub balanced_dirty_ratelimit: u64,
    /// When the estimates were last refreshed, ticks.
    pub bw_time_stamp: i64,
    /// Pages dirtied and written (completed) on the device when they were.
    pub dirtied_stamp: u64,
    pub written_stamp: u64,
}

impl Estimator {
    /// Every estimate at `bw` pages per second (a device the kernel has seen
    /// write at that rate), stamped at tick `now`.
    pub fn at(bw: u64, dirty_ratelimit: u64, now: i64) -> Estimator {
        Estimator {
            write_bandwidth: bw.max(1),
            avg_write_bandwidth: bw.max(1),
            dirty_ratelimit: dirty_ratelimit.max(1),
            balanced_dirty_ratelimit: dirty_ratelimit.max(1),
            bw_time_stamp: now,
            dirtied_stamp: 0,
            written_stamp: 0,
        }
    }

    /// The write bandwidth over the last `elapsed` ticks, blended into a 3 s
    /// (roundup_pow_of_two(3 HZ) ticks) moving estimate; avg_write_bandwidth then
    /// follows it by an eighth of the gap, only when the new estimate does not
    /// cross back over the old one (filtering spikes). Over a longer gap the new
    /// rate is taken as it is.
    pub fn update_write_bandwidth(&mut self, hz: u64, elapsed: u64, written: u64) {
        let period = roundup_pow2(3 * hz);
        let old = self.write_bandwidth;
        let mut avg = self.avg_write_bandwidth;
        let mut bw = written.saturating_sub(self.written_stamp) * hz;
        if elapsed > period {
            bw /= elapsed.max(1);
            avg = bw;
        } else {
            bw += old * (period - elapsed);
            bw >>= ilog2(period);
            if avg > old && old >= bw {
                avg -= (avg - old) >> 3;
            }
            if avg < old && old <= bw {
                avg += (old - avg) >> 3;
            }
        }
        self.write_bandwidth = bw;
        self.avg_write_bandwidth = avg.max(1);
    }

    /// The base rate every throttled task of the device is scaled from. The
    /// balanced rate is task_ratelimit x write_bw / dirty_rate (the rate that would
    /// make N tasks dirty exactly what the device writes); dirty_ratelimit moves
    /// toward it only when task_ratelimit agrees on the direction, by a step that
    /// shrinks as it comes close (an eighth of the distance to the nearest of the
    /// three, shifted down by dirty_ratelimit / (2 step + 1)).
    pub fn update_dirty_ratelimit(
        &mut self,
        hz: u64,
        r: &RateInputs,
        dirtied: u64,
        elapsed: u64,
    ) -> RatelimitUpdate {
        let dirty_rate = dirtied.saturating_sub(self.dirtied_stamp) * hz / elapsed.max(1);
        let setpoint = (freerun(r.thresh, r.bg_thresh) + r.limit) / 2;
        let write_bw = self.avg_write_bandwidth;
        let drl = self.dirty_ratelimit;
        let task_ratelimit = ((drl * r.pos_ratio) >> SHIFT) + 1;
        let balanced = (task_ratelimit * write_bw / (dirty_rate | 1)).min(write_bw);
        let mut step = 0;
        if r.dirty < setpoint {
            let x = self
                .balanced_dirty_ratelimit
                .min(balanced)
                .min(task_ratelimit);
            if drl < x {
                step = x - drl;
            }
        } else {
            let x = self
                .balanced_dirty_ratelimit
                .max(balanced)
                .max(task_ratelimit);
            if drl > x {
                step = drl - x;
            }
        }
        let shift = drl / (2 * step + 1);
        step = if shift < 64 {
            (step >> shift).div_ceil(8)
        } else {
            0
        };
        let next = if drl < balanced {
            drl + step
        } else {
            drl.saturating_sub(step)
        };
        self.dirty_ratelimit = next.max(1);
        self.balanced_dirty_ratelimit = balanced;
        RatelimitUpdate {
            dirty_rate,
            task_ratelimit,
            balanced,
        }
    }
}

/// The throttled task's view that `wb_update_dirty_ratelimit` reads (pages).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RateInputs {
    pub dirty: u64,
    pub thresh: u64,
    pub bg_thresh: u64,
    /// hard_dirty_limit() after the domain's update.
    pub limit: u64,
    pub pos_ratio: u64,
}

/// What one ratelimit update computed (the bdi_dirty_ratelimit tracepoint).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RatelimitUpdate {
    pub dirty_rate: u64,
    pub task_ratelimit: u64,
    pub balanced: u64,
}

/// The global domain's smoothed hard limit: it follows a higher thresh at once and
/// a lower one by 1/32 of the gap per update (never below the dirty pages), so a
/// limit that drops does not stop everyone at once.
pub fn update_dirty_limit(limit: u64, thresh: u64, dirty: u64) -> u64 {
    if limit < thresh {
        return thresh;
    }
    let floor = thresh.max(dirty);
    if limit > floor {
        limit - ((limit - floor) >> 5)
    } else {
        limit
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn write_bandwidth_blends_over_three_seconds() {
        // HZ 250: period 1024 ticks. 200 ms (50 ticks) at 10240 pages/s = 2048 pages
        // written; old estimate 5120: (2048 x 250 + 5120 x 974) >> 10 = 5370
        let mut e = Estimator::at(5120, 5120, 0);
        e.update_write_bandwidth(250, 50, 2048);
        assert_eq!(e.write_bandwidth, 5370);
        // avg == old: neither smoothing branch applies
        assert_eq!(e.avg_write_bandwidth, 5120);
        // next: avg (5120) < old (5370) <= bw: avg += (5370 - 5120) >> 3 = 31
        e.written_stamp = 2048;
        e.update_write_bandwidth(250, 50, 4096);
        assert_eq!(e.write_bandwidth, (2048 * 250 + 5370 * 974) >> 10);
        assert_eq!(e.avg_write_bandwidth, 5120 + 31);
        // a gap longer than the period: the rate over it, taken as it is
        let mut idle = Estimator::at(5120, 5120, 0);
        idle.update_write_bandwidth(250, 2000, 1000);
        assert_eq!((idle.write_bandwidth, idle.avg_write_bandwidth), (125, 125));
    }

    fn inputs(dirty: u64, pos_ratio: u64) -> RateInputs {
        // 64/32 MiB: setpoint (12288 + 16384) / 2 = 14336
        RateInputs {
            dirty,
            thresh: 16384,
            bg_thresh: 8192,
            limit: 16384,
            pos_ratio,
        }
    }

    #[test]
    fn ratelimit_steps_toward_the_balanced_rate() {
        // three tasks at 2000 pages/s each on a 10240 pages/s device, at the
        // setpoint (pos 1024): task_ratelimit 2001; they dirtied 6000 pages/s:
        // balanced = 2001 x 10240 / 6001 = 3414 (6000 | 1 = 6001)
        let mut e = Estimator::at(10240, 2000, 0);
        e.balanced_dirty_ratelimit = 3000;
        let u = e.update_dirty_ratelimit(250, &inputs(14400, 1024), 1200, 50);
        assert_eq!(
            (u.dirty_rate, u.task_ratelimit, u.balanced),
            (6000, 2001, 3414)
        );
        // dirty above the setpoint: x = max(3000, 3414, 2001) = 3414 > 2000, no
        // step: the position says down, the rate says up
        assert_eq!(e.dirty_ratelimit, 2000);
        assert_eq!(e.balanced_dirty_ratelimit, 3414);
        // below the setpoint with pos 1.5: task_ratelimit 3001, balanced 3001 x 10240 /
        // 6001 = 5120; x = min(3414, 5120, 3001) = 3001; step 1001; shift = 2000 /
        // 2003 = 0; step = ceil(1001 / 8) = 126
        let u = e.update_dirty_ratelimit(250, &inputs(14000, 1536), 1200, 50);
        assert_eq!(u.task_ratelimit, 3001);
        assert_eq!(e.dirty_ratelimit, 2126);
    }

    #[test]
    fn a_small_step_is_shifted_away() {
        // step 10 against a rate of 2000: shift = 2000 / 21 = 95 >= 64: no step
        let mut e = Estimator::at(10240, 2000, 0);
        e.balanced_dirty_ratelimit = 2010;
        // pos 1034 -> task_ratelimit 2000 x 1034 >> 10 = 2019, + 1 = 2020;
        // dirtied 10240 pages/s: balanced 2020 x 10240 / 10241 = 2019;
        // x = min(2010, 2019, 2020) = 2010: step 10
        e.update_dirty_ratelimit(250, &inputs(14000, 1034), 2048, 50);
        assert_eq!(e.dirty_ratelimit, 2000);
    }

    #[test]
    fn the_domain_limit_follows_up_at_once_and_down_slowly() {
        assert_eq!(update_dirty_limit(16384, 21140, 0), 21140);
        // (21140 - 16384) >> 5 = 148
        assert_eq!(update_dirty_limit(21140, 16384, 10000), 21140 - 148);
        // never below the dirty pages
        assert_eq!(update_dirty_limit(21140, 16384, 21000), 21140 - (140 >> 5));
    }
}
