//! How long a throttled task sleeps, and how many pages it may dirty before it
//! looks again (mm/page-writeback.c: `dirty_poll_interval`, `wb_max_pause`,
//! `wb_min_pause` and the pause part of `balance_dirty_pages`).

use super::{DIRTY_POLL_THRESH, SHIFT, ilog2, max_pause_ticks, roundup_pow2};

/// Pages a free-running task may dirty before it checks again: about the square
/// root of the room left under the limit, 2^(ilog2(thresh - dirty) / 2).
pub fn dirty_poll_interval(dirty: u64, thresh: u64) -> u64 {
    if thresh > dirty {
        1 << (ilog2(thresh - dirty) >> 1)
    } else {
        1
    }
}

/// The longest pause, ticks: the time the device needs for an eighth of the
/// device's dirty pages, wb_dirty / (1 + bw / roundup_pow_of_two(1 + HZ / 8)) + 1,
/// at most MAX_PAUSE (200 ms), so a small pool does not run dry while tasks sleep.
pub fn wb_max_pause(hz: u64, avg_write_bw: u64, wb_dirty: u64) -> u64 {
    let t = wb_dirty / (1 + avg_write_bw / roundup_pow2(1 + hz / 8)) + 1;
    t.min(max_pause_ticks(hz))
}

/// The shortest pause worth sleeping and the pages to dirty before the next check
/// (`wb_min_pause`): a 10 ms target, plus 10 ms per doubling of the number of
/// dirtiers (ilog2 of write bandwidth over dirty_ratelimit), at most half the max
/// pause; at least DIRTY_POLL_THRESH pages when the rate allows, fewer when the
/// task's own rate would make the next pause longer than the max pause.
/// Returns (min_pause ticks, nr_dirtied_pause pages).
pub fn wb_min_pause(
    hz: u64,
    max_pause: u64,
    avg_write_bw: u64,
    dirty_ratelimit: u64,
    task_ratelimit: u64,
) -> (u64, u64) {
    let hi = ilog2(avg_write_bw.max(1));
    let lo = ilog2(dirty_ratelimit.max(1));
    let per_second = roundup_pow2(hz);
    let mut t = (hz / 100).max(1);
    if hi > lo {
        t += (hi - lo) * (10 * hz) / 1024;
    }
    t = t.min(1 + max_pause / 2);
    let mut pages = dirty_ratelimit * t / per_second;
    if pages < DIRTY_POLL_THRESH {
        t = max_pause;
        pages = dirty_ratelimit * t / per_second;
        if pages > DIRTY_POLL_THRESH {
            pages = DIRTY_POLL_THRESH;
            t = hz * DIRTY_POLL_THRESH / dirty_ratelimit.max(1);
        }
    }
    let pause = hz * pages / (task_ratelimit + 1);
    if pause > max_pause {
        t = max_pause;
        pages = task_ratelimit * t / per_second;
    }
    let min_pause = if pages >= DIRTY_POLL_THRESH {
        1 + t / 2
    } else {
        t
    };
    (min_pause, pages)
}

/// A task's throttling state (task_struct's nr_dirtied, nr_dirtied_pause,
/// dirty_paused_when).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TaskState {
    pub nr_dirtied: u64,
    pub nr_dirtied_pause: u64,
    /// When its last pause ended, ticks; None before the first.
    pub paused_when: Option<i64>,
}

impl Default for TaskState {
    /// A new task: it checks after 32 pages (INIT of nr_dirtied_pause).
    fn default() -> Self {
        TaskState {
            nr_dirtied: 0,
            nr_dirtied_pause: 128 >> 2,
            paused_when: None,
        }
    }
}

/// The device's figures one throttled pass reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rates {
    pub dirty_ratelimit: u64,
    pub avg_write_bw: u64,
    pub pos_ratio: u64,
    pub wb_dirty: u64,
}

/// What one throttled pass of balance_dirty_pages decided.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Decision {
    pub task_ratelimit: u64,
    /// The time the pages dirtied are worth at the task's rate, ticks.
    pub period: u64,
    /// period less the think time, bounded (may be negative when no sleep).
    pub pause: i64,
    /// The task sleeps `pause` ticks.
    pub sleeps: bool,
    /// The task's rate was 0 (at the limit): after the sleep it balances again.
    pub again: bool,
    /// Ticks since the task's previous pause ended.
    pub think: i64,
}

/// The pause of a throttled task that has dirtied `pages` since its last check, at
/// tick `now` (the part of `balance_dirty_pages` after the position ratio): period
/// = HZ x pages / task_ratelimit, less the time since its previous pause ended
/// (think time, so a task that sleeps between writes is not paused for that time
/// again); no sleep below the min pause (the unused period is credited for next
/// time, or forgotten after more than a second); at most the max pause, the
/// excess carried into the next period by moving `now` forward.
pub fn decide(hz: u64, pages: u64, now: i64, task: &mut TaskState, r: &Rates) -> Decision {
    let task_ratelimit = (r.dirty_ratelimit * r.pos_ratio) >> SHIFT;
    let max_pause = wb_max_pause(hz, r.avg_write_bw, r.wb_dirty);
    let (min_pause, nr_dirtied_pause) = wb_min_pause(
        hz,
        max_pause,
        r.avg_write_bw,
        r.dirty_ratelimit,
        task_ratelimit,
    );
    let think = task.paused_when.map_or(0, |w| now - w);
    let mut now = now;
    // at the limit (no rate) the task sleeps the max pause and looks again
    let (period, pause) = match (hz * pages).checked_div(task_ratelimit) {
        None => (max_pause, max_pause as i64),
        Some(period) => {
            let mut pause = period as i64 - think;
            if pause < min_pause as i64 {
                if pause < -(hz as i64) {
                    task.paused_when = Some(now);
                    task.nr_dirtied = 0;
                } else if period > 0 {
                    task.paused_when = Some(task.paused_when.unwrap_or(0) + period as i64);
                    task.nr_dirtied = 0;
                } else if task.nr_dirtied_pause <= pages {
                    task.nr_dirtied_pause += pages;
                }
                return Decision {
                    task_ratelimit,
                    period,
                    pause,
                    sleeps: false,
                    again: false,
                    think,
                };
            }
            if pause > max_pause as i64 {
                // an occasional low rate: the excess counts against the next period
                now += (pause - max_pause as i64).min(max_pause as i64);
                pause = max_pause as i64;
            }
            (period, pause)
        }
    };
    task.paused_when = Some(now + pause);
    task.nr_dirtied = 0;
    task.nr_dirtied_pause = nr_dirtied_pause;
    Decision {
        task_ratelimit,
        period,
        pause,
        sleeps: true,
        again: task_ratelimit == 0,
        think,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn poll_interval_is_near_the_square_root_of_the_room() {
        // 16384 - 0: ilog2 14 -> 2^7; 16384 - 8000 = 8384: ilog2 13 -> 2^6
        assert_eq!(dirty_poll_interval(0, 16384), 128);
        assert_eq!(dirty_poll_interval(8000, 16384), 64);
        assert_eq!(dirty_poll_interval(16384, 16384), 1);
    }

    #[test]
    fn max_pause_bounds() {
        // HZ 250: 1 + 250 / 8 = 32; 40 MiB/s = 10240 pages/s -> 1 + 320 = 321;
        // 14336 / 321 = 44, + 1 = 45 ticks (180 ms)
        assert_eq!(wb_max_pause(250, 10240, 14336), 45);
        // a slow device: 1 MiB/s = 256 pages/s -> 1 + 8 = 9; 14336 / 9 = 1592 -> 50
        assert_eq!(wb_max_pause(250, 256, 14336), 50);
        // a nearly clean device: 1 tick
        assert_eq!(wb_max_pause(250, 10240, 100), 1);
    }

    #[test]
    fn min_pause_as_traced_here() {
        // a RT writer among two bulk ones (traced on this machine, HZ 250):
        // avg_write_bw 10100 (ilog2 13), dirty_ratelimit 3441 (ilog2 11):
        // t = 2 + 2 x 2500 / 1024 = 6; pages = 3441 x 6 / 256 = 80;
        // next pause 250 x 80 / 3669 = 5 <= max pause; min pause 1 + 6 / 2
        let max = wb_max_pause(250, 10100, 15000);
        assert_eq!(max, 48);
        assert_eq!(wb_min_pause(250, max, 10100, 3441, 3668), (4, 80));
        // a task rate so low that 80 pages would need more than the max pause:
        // pages = 100 x 48 / 256 = 18, under 32 pages: min pause is t itself
        assert_eq!(wb_min_pause(250, max, 10100, 3441, 100), (48, 18));
        // a rate so low that 32 pages take longer than the max pause (dirty_ratelimit
        // 100): t = max pause, pages = 100 x 48 / 256 = 18
        assert_eq!(wb_min_pause(250, max, 10100, 100, 100), (48, 18));
    }

    fn rates(pos_ratio: u64) -> Rates {
        Rates {
            dirty_ratelimit: 3441,
            avg_write_bw: 10100,
            pos_ratio,
            wb_dirty: 15000,
        }
    }

    #[test]
    fn a_pause_less_the_think_time() {
        // task_ratelimit 3441 x 1091 >> 10 = 3666; period 250 x 128 / 3666 = 8;
        // the previous pause ended 1 tick ago: sleep 7 ticks
        let mut t = TaskState {
            nr_dirtied: 128,
            nr_dirtied_pause: 80,
            paused_when: Some(999),
        };
        let d = decide(250, 128, 1000, &mut t, &rates(1091));
        assert_eq!(
            (d.task_ratelimit, d.period, d.pause, d.think),
            (3666, 8, 7, 1)
        );
        assert!(d.sleeps && !d.again);
        assert_eq!(t.paused_when, Some(1007));
        assert_eq!((t.nr_dirtied, t.nr_dirtied_pause), (0, 80));
    }

    #[test]
    fn think_time_beyond_the_period_is_credited_not_slept() {
        // it thought 6 ticks of an 8-tick period: 2 < min pause 4, no sleep; the
        // period is added to the virtual time instead
        let mut t = TaskState {
            nr_dirtied: 128,
            nr_dirtied_pause: 80,
            paused_when: Some(994),
        };
        let d = decide(250, 128, 1000, &mut t, &rates(1091));
        assert_eq!((d.pause, d.sleeps), (2, false));
        assert_eq!(t.paused_when, Some(1002));
        assert_eq!(t.nr_dirtied, 0);
        // more than a second of think time: the credit is reset to now
        let mut idle = TaskState {
            nr_dirtied: 128,
            nr_dirtied_pause: 80,
            paused_when: Some(500),
        };
        decide(250, 128, 1000, &mut idle, &rates(1091));
        assert_eq!(idle.paused_when, Some(1000));
    }

    #[test]
    fn a_long_period_is_cut_at_the_max_pause_and_carried() {
        // pos_ratio 64 (1/16): rate 3441 x 64 >> 10 = 215; period 250 x 128 / 215 = 148;
        // no think time; pause 148 > max 48: sleep 48, now moves 48 (min of the
        // excess 100 and the max pause) further
        let mut t = TaskState {
            nr_dirtied: 128,
            nr_dirtied_pause: 80,
            paused_when: Some(1000),
        };
        let d = decide(250, 128, 1000, &mut t, &rates(64));
        assert_eq!((d.period, d.pause), (148, 48));
        assert_eq!(t.paused_when, Some(1000 + 48 + 48));
    }

    #[test]
    fn at_the_limit_the_task_sleeps_the_max_pause_and_looks_again() {
        let mut t = TaskState::default();
        let d = decide(250, 128, 1000, &mut t, &rates(0));
        assert_eq!((d.task_ratelimit, d.pause), (0, 48));
        assert!(d.sleeps && d.again);
    }
}
