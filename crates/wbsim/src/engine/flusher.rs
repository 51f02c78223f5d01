//! The flusher (fs/fs-writeback.c): the periodic pass writes back inodes dirtied
//! more than dirty_expire_centisecs ago, and background write back runs while the
//! device's dirty pages are over the background limit. Either writes a chunk of
//! each inode in turn (oldest first; an inode still dirty goes round again), the
//! chunk sized from the kernel's bandwidth estimate, and background work looks at
//! the limit again after each round (wb_writeback, writeback_sb_inodes).

use super::{Ev, MIN_CHUNK, Sim};
use crate::config::{MS, RuleSet, SEC};
use crate::kernel::PAGE;
use crate::outcome::{FlushKind, FlushRecord};

impl<'a> Sim<'a> {
    /// Dirty inodes, oldest first; only those dirtied at or before `expired_before`
    /// when given.
    fn dirty_inodes(&self, expired_before: Option<u64>) -> Vec<usize> {
        let mut v: Vec<(u64, usize)> = self
            .inodes
            .iter()
            .enumerate()
            .filter(|(_, i)| i.dirty > 0)
            .filter_map(|(n, i)| {
                let when = i.dirtied_when.unwrap_or(u64::MAX);
                match expired_before {
                    Some(limit) if when > limit => None,
                    _ => Some((when, n)),
                }
            })
            .collect();
        v.sort_unstable();
        v.into_iter().map(|(_, n)| n).collect()
    }

    pub(super) fn oldest_dirty_inode(&self, expired_before: Option<u64>) -> Option<usize> {
        self.dirty_inodes(expired_before).first().copied()
    }

    fn chunk(&self) -> u64 {
        match self.cfg.rules {
            RuleSet::Linux6 => self.chunk_linux6(),
            RuleSet::Linux2626 => MIN_CHUNK,
        }
    }

    /// wb_over_bg_thresh: global dirty pages over the background limit, or the
    /// device's over its share of it (write back in flight does not count).
    fn over_background(&mut self) -> bool {
        if self.dirty > self.normal.bg {
            return true;
        }
        if self.cfg.rules == RuleSet::Linux2626 {
            return false;
        }
        let now = self.ticks();
        let (bg, dirty) = (self.normal.bg / PAGE, self.dirty / PAGE);
        let wb_bg = self
            .cfg
            .kernel
            .wb_thresh(self.wb.share.of(now, bg), bg, dirty);
        self.dirty > wb_bg * PAGE
    }

    /// One round: a chunk of each inode in `inodes`, in order; false when the
    /// device's queue filled first.
    fn write_round(&mut self, inodes: &[usize], whole_inode: bool) -> bool {
        for &i in inodes {
            if self.queue_full() {
                self.fl.blocked = true;
                return false;
            }
            let c = if whole_inode {
                self.chunk().max(self.inodes[i].dirty)
            } else {
                self.chunk()
            };
            self.writepages(i, c);
        }
        true
    }

    /// wakeup_flusher_threads(WB_REASON_PERIODIC) (fs/fs-writeback.c, as a write
    /// of a new non-zero dirty_writeback_centisecs does): a start-all work for as
    /// many pages as are dirty now, written a chunk per inode round after round
    /// like background work, whatever the limits.
    pub(super) fn flush_all(&mut self) {
        self.out.flusher_wakeups += 1;
        self.fl.start_all_left = self.dirty / PAGE;
        self.fl.start_all_before = self.now;
        if !self.fl.blocked {
            self.flusher_run();
        }
    }

    /// The start-all work's rounds until its pages are written or no inode
    /// dirtied before it began is dirty (wb_writeback takes those only); false
    /// when blocked on the device queue.
    fn start_all_rounds(&mut self) -> bool {
        while self.fl.start_all_left > 0 {
            let all = self.dirty_inodes(Some(self.fl.start_all_before));
            if all.is_empty() {
                break;
            }
            let before = self.dirty;
            let finished = self.write_round(&all, false);
            let written = before.saturating_sub(self.dirty) / PAGE;
            self.fl.start_all_left = self.fl.start_all_left.saturating_sub(written);
            if !finished {
                return false;
            }
        }
        self.fl.start_all_left = 0;
        true
    }

    /// Runs the flusher's work until it is done or blocked on the device queue;
    /// each reason's part is recorded as a pass.
    pub(super) fn flusher_run(&mut self) {
        if self.fl.start_all_left > 0 {
            let (before, bw) = (self.dirty, self.avg_write_bw_bytes());
            let finished = self.start_all_rounds();
            self.record_pass(FlushKind::Periodic, before, bw);
            if !finished {
                return;
            }
        }
        if self.fl.kupdate_active {
            let (before, bw) = (self.dirty, self.avg_write_bw_bytes());
            let finished = self.expired_rounds();
            self.record_pass(FlushKind::Periodic, before, bw);
            if !finished {
                return;
            }
        }
        let (before, bw) = (self.dirty, self.avg_write_bw_bytes());
        let finished = self.background_rounds();
        self.record_pass(FlushKind::Background, before, bw);
        if finished {
            // the worker's run is over: wb_workfn queues its next look one interval on
            self.arm_kupdate_after_run();
        }
    }

    /// Expired inodes, round after round, until none is left; false when blocked
    /// on the device queue.
    fn expired_rounds(&mut self) -> bool {
        loop {
            // nothing can have expired before one expire interval has passed
            let expired = self
                .now
                .checked_sub(self.cfg.sysctls.dirty_expire_centisecs * 10 * MS)
                .map(|limit| self.dirty_inodes(Some(limit)))
                .unwrap_or_default();
            if expired.is_empty() {
                self.fl.kupdate_active = false;
                return true;
            }
            if !self.write_round(&expired, true) {
                return false;
            }
        }
    }

    /// Every dirty inode, round after round, while over the background limit;
    /// false when blocked on the device queue.
    fn background_rounds(&mut self) -> bool {
        while self.over_background() {
            let all = self.dirty_inodes(None);
            if all.is_empty() {
                break;
            }
            if !self.write_round(&all, false) {
                return false;
            }
        }
        true
    }

    fn avg_write_bw_bytes(&self) -> f64 {
        (self.wb.est.avg_write_bandwidth * PAGE) as f64
    }

    /// Records a pass of `kind` that took the dirty bytes from `before` to what is
    /// dirty now (the flusher runs within one instant of simulated time, so
    /// nothing else dirtied or cleaned pages in between), with the device's
    /// estimate when it began, bytes per second.
    fn record_pass(&mut self, kind: FlushKind, before: u64, avg_write_bw: f64) {
        let pages = before.saturating_sub(self.dirty) / PAGE;
        if pages > 0 {
            self.out.flushes.push(FlushRecord {
                t_s: self.now as f64 / SEC as f64,
                kind,
                pages,
                avg_write_bw,
            });
        }
    }

    /// wb_check_old_data_flush (linux-6): every run of the worker, whatever woke
    /// it, first writes back expired inodes when a writeback interval has passed
    /// since it last looked; the 2.6 timer looks each time it fires.
    fn periodic_due(&mut self) -> bool {
        let interval = self.interval();
        if self.cfg.rules == RuleSet::Linux2626 {
            return true;
        }
        if interval == 0 {
            return false;
        }
        match self.fl.last_old_flush {
            Some(last) if self.now < last + interval => false,
            _ => {
                self.fl.last_old_flush = Some(self.now);
                true
            }
        }
    }

    /// wb_start_background_writeback from a writer: the flusher runs now, unless it
    /// is already running (here: waiting for queue space); on linux-6 the run
    /// takes the periodic pass first when one is due, and pushes the next timer
    /// one interval past its end (mod_delayed_work, then wb_wakeup_delayed).
    pub(super) fn start_background(&mut self) {
        if !self.fl.blocked && self.over_background() {
            self.out.background_runs += 1;
            self.out.flusher_wakeups += 1;
            if self.cfg.rules == RuleSet::Linux6 {
                // wb_wakeup: mod_delayed_work(.., 0) uses up the pending timer; the
                // run's end sets the next one (or the next dirtying does)
                self.fl.kupdate_gen += 1;
                self.fl.kupdate_armed = false;
                if self.periodic_due() {
                    self.fl.kupdate_active = true;
                }
            }
            self.flusher_run();
        }
    }

    pub(super) fn arm_kupdate(&mut self, at: u64) {
        if self.fl.kupdate_armed && at >= self.fl.kupdate_queued_at {
            self.fl.kupdate_at = at;
            return;
        }
        self.fl.kupdate_gen += 1;
        self.fl.kupdate_armed = true;
        self.fl.kupdate_at = at;
        self.fl.kupdate_queued_at = at;
        let g = self.fl.kupdate_gen;
        self.push(at, Ev::Kupdate(g));
    }

    /// wb_wakeup_delayed when an inode turns dirty (linux-6): the flusher looks one
    /// interval later, unless it is already due.
    pub(super) fn wake_flusher_delayed(&mut self) {
        if self.cfg.rules == RuleSet::Linux6
            && self.interval() > 0
            && !self.fl.kupdate_armed
            && !self.fl.kupdate_active
        {
            let at = self.now + self.interval();
            self.arm_kupdate(at);
        }
    }

    /// linux-6 re-arms one interval after a run of the worker that left dirty
    /// data behind.
    fn arm_kupdate_after_run(&mut self) {
        if self.cfg.rules == RuleSet::Linux6 && self.interval() > 0 && self.dirty > 0 {
            let at = self.now + self.interval();
            self.arm_kupdate(at);
        }
    }

    pub(super) fn kupdate(&mut self, generation: u64) {
        if generation != self.fl.kupdate_gen {
            return;
        }
        if self.now < self.fl.kupdate_at {
            // moved later since it was queued
            self.fl.kupdate_queued_at = self.fl.kupdate_at;
            self.push(self.fl.kupdate_at, Ev::Kupdate(generation));
            return;
        }
        self.fl.kupdate_armed = false;
        self.out.flusher_wakeups += 1;
        if self.cfg.rules == RuleSet::Linux2626 && self.interval() > 0 {
            // the 2.6 timer fires on a fixed grid whatever it found
            let at = self.now + self.interval();
            self.arm_kupdate(at);
        }
        if self.periodic_due() {
            self.fl.kupdate_active = true;
        }
        if !self.fl.blocked {
            self.flusher_run();
        }
    }
}
