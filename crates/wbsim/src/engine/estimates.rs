//! When the kernel refreshes the device's estimates (mm/page-writeback.c
//! `__wb_update_bandwidth` and its callers): a throttled task after
//! BANDWIDTH_INTERVAL (with the rate limit and the domain's dirty limit), writepages
//! after the same interval, and a delayed work one interval after an inode's write
//! back ended (bandwidth only). A refresh measures what completed since the last
//! one, so under light load the estimate follows the dirtying rate, not the device.

use super::{Ev, Sim};
use crate::config::SEC;
use crate::kernel::PAGE;
use crate::kernel::bandwidth_interval;
use crate::kernel::estimate::{RateInputs, update_dirty_limit};
use crate::outcome::RatelimitRecord;

/// The domain's limit update a throttled task brings along: its own hard limit and
/// the global dirty + writeback pages.
pub(super) struct DomainInputs {
    pub thresh: u64,
    pub dirty: u64,
}

impl<'a> Sim<'a> {
    fn interval_ticks(&self) -> i64 {
        bandwidth_interval(self.hz) as i64
    }

    /// __wb_update_bandwidth: with `rate` (a throttled task's view) the domain's
    /// dirty limit and the device's dirty_ratelimit too; then the write bandwidth.
    pub(super) fn update_bandwidth(&mut self, rate: Option<(DomainInputs, RateInputs)>) {
        let now = self.ticks();
        let elapsed = (now - self.wb.est.bw_time_stamp).max(1) as u64;
        if let Some((dom, mut r)) = rate {
            if now >= self.wb.dirty_limit_tstamp + self.interval_ticks() {
                self.wb.dirty_limit =
                    update_dirty_limit(self.wb.dirty_limit, dom.thresh, dom.dirty);
                self.wb.dirty_limit_tstamp = now;
            }
            r.limit = r.thresh.max(self.wb.dirty_limit);
            let u = self
                .wb
                .est
                .update_dirty_ratelimit(self.hz, &r, self.wb.dirtied, elapsed);
            let e = &self.wb.est;
            let b = |pages: u64| (pages * PAGE) as f64;
            let record = RatelimitRecord {
                t_s: self.now as f64 / SEC as f64,
                dirty_ratelimit: b(e.dirty_ratelimit),
                balanced_dirty_ratelimit: b(u.balanced),
                task_ratelimit: b(u.task_ratelimit),
                dirty_rate: b(u.dirty_rate),
                // the tracepoint shows the bandwidth before this refresh's update
                write_bw: b(e.write_bandwidth),
                avg_write_bw: b(e.avg_write_bandwidth),
            };
            self.out.ratelimits.push(record);
        }
        self.wb
            .est
            .update_write_bandwidth(self.hz, elapsed, self.wb.written);
        self.wb.est.dirtied_stamp = self.wb.dirtied;
        self.wb.est.written_stamp = self.wb.written;
        self.wb.est.bw_time_stamp = now;
    }

    /// wb_bandwidth_estimate_start: after more than a second with nothing under
    /// write back, the next estimate starts now rather than counting the idle time.
    pub(super) fn bandwidth_estimate_start(&mut self) {
        let now = self.ticks();
        if now - self.wb.est.bw_time_stamp > self.hz as i64 && self.wb.writeback_inodes == 0 {
            self.wb.est.dirtied_stamp = self.wb.dirtied;
            self.wb.est.written_stamp = self.wb.written;
            self.wb.est.bw_time_stamp = now;
        }
    }

    /// The end of do_writepages: a refresh when an interval has passed.
    pub(super) fn bandwidth_after_writepages(&mut self) {
        if self.ticks() > self.wb.est.bw_time_stamp + self.interval_ticks() {
            self.update_bandwidth(None);
        }
    }

    /// wb_inode_writeback_end: the refresh is queued one interval later (batching
    /// inodes that finish together).
    pub(super) fn inode_writeback_ended(&mut self) {
        if self.cfg.rules == crate::config::RuleSet::Linux6 && !self.wb.bw_work_pending {
            self.wb.bw_work_pending = true;
            let at = self.now + bandwidth_interval(self.hz) * self.tick_ns;
            self.push(at, Ev::BandwidthWork);
        }
    }

    pub(super) fn bandwidth_work(&mut self) {
        self.wb.bw_work_pending = false;
        self.update_bandwidth(None);
    }

    /// The flusher's chunk per inode (writeback_chunk_size): min(avg_write_bw / 2,
    /// the domain's dirty limit / 8) + 4 MiB, rounded down to 4 MiB, in bytes.
    pub(super) fn chunk_linux6(&self) -> u64 {
        let min = super::MIN_CHUNK / PAGE;
        let pages = (self.wb.est.avg_write_bandwidth / 2).min(self.wb.dirty_limit / 8);
        (pages + min) / min * min * PAGE
    }
}
