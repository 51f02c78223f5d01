//! A writer's write() on linux-6 (generic_perform_write): the policy's gate, then
//! folio by folio a copy into new page-cache pages and the dirty accounting, and
//! after each folio balance_dirty_pages_ratelimited: once the task has dirtied its
//! nr_dirtied_pause pages (8 while the device is over its limit) it balances, and
//! may sleep. The write's latency is the gate's wait, the copies and the pauses.

use super::{Ev, Sim};
use crate::config::{Kind, MS, RuleSet, SEC};
use crate::kernel::pause::{Rates, decide, dirty_poll_interval};
use crate::kernel::position::{Dtc, wb_position_ratio};
use crate::kernel::{EXCEEDED_RATELIMIT, PAGE, estimate::RateInputs, freerun, wb_stat_error};
use crate::outcome::PauseRecord;

use super::estimates::DomainInputs;

impl<'a> Sim<'a> {
    fn next_issue_time(&self, w: usize) -> Option<u64> {
        let c = &self.cfg.writers[w];
        let start = (c.start_ms * MS as f64) as u64;
        let k = self.ws[w].k;
        match c.kind {
            Kind::Periodic {
                period_ms, count, ..
            } => (k < count)
                .then(|| (start + (k as f64 * period_ms * MS as f64) as u64).max(self.now)),
            Kind::Rate { bytes_per_s, chunk } => {
                Some((start + (k as f64 * chunk as f64 / bytes_per_s * 1e9) as u64).max(self.now))
            }
            Kind::Bulk { .. } => Some(self.now),
        }
    }

    pub(super) fn issue(&mut self, w: usize) {
        if self.ws[w].finished {
            return;
        }
        self.ws[w].started = true;
        self.ws[w].last_write = Some(self.now);
        if self.ws[w].op_start.is_none() {
            self.ws[w].op_start = Some(self.now);
        }
        if let Some(wait) = self.gate_wait(w) {
            self.ws[w].held_ns += wait;
            self.out.writers[w].policy_wait_ms += wait as f64 / MS as f64;
            self.push(self.now + wait, Ev::Issue(w));
            return;
        }
        self.ws[w].alloc_ns = self.alloc_sample(w);
        match self.cfg.rules {
            RuleSet::Linux6 => {
                self.ws[w].pages_left = self.dirtied_bytes_of(w) / PAGE;
                self.next_step(w);
            }
            RuleSet::Linux2626 => self.issue_2626(w),
        }
    }

    /// The page allocation cost of writer `w`'s next write: the samples taken in a
    /// golden-ratio order, so every stretch of writes sees them in their proportions.
    fn alloc_sample(&self, w: usize) -> f64 {
        let s = &self.cfg.page_alloc_ns;
        if s.is_empty() {
            return 0.0;
        }
        let u =
            ((self.ws[w].k + 1) as f64 * 0.618_033_988_749_895 + w as f64 * 0.414_213_562).fract();
        s[((u * s.len() as f64) as usize).min(s.len() - 1)]
    }

    /// The pages a task may dirty before the kernel looks at the limits again.
    fn ratelimit(&self, w: usize) -> u64 {
        let r = self.ws[w].task.nr_dirtied_pause;
        if self.wb.dirty_exceeded {
            r.min(EXCEEDED_RATELIMIT)
        } else {
            r
        }
    }

    /// Copies folios up to the next point where balance_dirty_pages is due (or the
    /// end of the write), in one event.
    fn next_step(&mut self, w: usize) {
        let folio = (self.cfg.folio_bytes / PAGE).max(1);
        let need = self
            .ratelimit(w)
            .saturating_sub(self.ws[w].task.nr_dirtied)
            .max(1);
        let n = self.ws[w].pages_left.min(need.div_ceil(folio) * folio);
        self.ws[w].step_pages = n;
        let per_page = PAGE as f64 / self.cfg.copy_bytes_s * 1e9 + self.ws[w].alloc_ns;
        let cost = (n as f64 * per_page) as u64;
        self.push(self.now + cost, Ev::Step(w));
    }

    pub(super) fn step(&mut self, w: usize) {
        let n = self.ws[w].step_pages;
        self.dirty_bytes(w, n * PAGE);
        self.ws[w].pages_left -= n;
        self.ws[w].task.nr_dirtied += n;
        if self.ws[w].task.nr_dirtied >= self.ratelimit(w) {
            self.ws[w].balance_pages = self.ws[w].task.nr_dirtied;
            if let Some(until) = self.balance(w) {
                self.ws[w].sleep_start = self.now;
                self.push(until, Ev::Wake(w));
                return;
            }
        }
        self.go_on(w);
    }

    fn go_on(&mut self, w: usize) {
        if self.ws[w].pages_left > 0 {
            self.next_step(w);
        } else {
            self.finish_write(w);
        }
    }

    pub(super) fn wake(&mut self, w: usize) {
        self.ws[w].throttled_ns += self.now - self.ws[w].sleep_start;
        if self.ws[w].balance_again {
            self.ws[w].balance_again = false;
            let wb_dirty = (self.dirty + self.writeback) / PAGE;
            if wb_dirty > wb_stat_error(self.cfg.cpus as u64)
                && let Some(until) = self.balance(w)
            {
                self.ws[w].sleep_start = self.now;
                self.push(until, Ev::Wake(w));
                return;
            }
        }
        self.go_on(w);
    }

    /// The task's hard and background limits, pages: real-time tasks get a quarter
    /// more plus 1/32 of the domain's smoothed limit (domain_dirty_limits).
    fn task_limits(&self, w: usize) -> (u64, u64) {
        let thresh = self.normal.hard / PAGE;
        let bg = self.normal.bg / PAGE;
        if self.cfg.writers[w].class.is_rt() {
            let boost = self.wb.dirty_limit / 32;
            (thresh + thresh / 4 + boost, bg + bg / 4 + boost)
        } else {
            (thresh, bg)
        }
    }

    /// One pass of balance_dirty_pages for `balance_pages` dirtied pages; when the
    /// task is to sleep, the time it wakes.
    fn balance(&mut self, w: usize) -> Option<u64> {
        let pages = self.ws[w].balance_pages;
        let now = self.ticks();
        let (thresh, bg) = self.task_limits(w);
        let dirty = (self.dirty + self.writeback) / PAGE;
        if self.dirty / PAGE > bg {
            self.start_background();
        }
        if dirty <= freerun(thresh, bg) {
            let t = &mut self.ws[w].task;
            t.paused_when = Some(now);
            t.nr_dirtied = 0;
            t.nr_dirtied_pause = dirty_poll_interval(dirty, thresh);
            return None;
        }
        self.start_background();
        let wb_thresh = self
            .cfg
            .kernel
            .wb_thresh(self.wb.share.of(now, thresh), thresh, dirty);
        // one device holds every dirty page the simulation has
        let wb_dirty = dirty;
        self.wb.dirty_exceeded = wb_dirty > wb_thresh && dirty > thresh;
        let dtc = Dtc {
            thresh,
            bg_thresh: bg,
            dirty,
            wb_thresh,
            wb_dirty,
            limit: thresh.max(self.wb.dirty_limit),
            write_bw: self.wb.est.avg_write_bandwidth,
            kernel: self.cfg.kernel,
        };
        let pos_ratio = wb_position_ratio(&dtc);
        if now > self.wb.est.bw_time_stamp + crate::kernel::bandwidth_interval(self.hz) as i64 {
            let r = RateInputs {
                dirty,
                thresh,
                bg_thresh: bg,
                limit: dtc.limit,
                pos_ratio,
            };
            self.update_bandwidth(Some((DomainInputs { thresh, dirty }, r)));
        }
        let rates = Rates {
            dirty_ratelimit: self.wb.est.dirty_ratelimit,
            avg_write_bw: self.wb.est.avg_write_bandwidth,
            pos_ratio,
            wb_dirty,
        };
        let d = decide(self.hz, pages, now, &mut self.ws[w].task, &rates);
        if !d.sleeps {
            return None;
        }
        let pause = d.pause as u64;
        self.out.pauses.push(PauseRecord {
            t_s: self.now as f64 / SEC as f64,
            writer: w,
            pause_ticks: pause,
            pause_ms: (pause * self.tick_ns) as f64 / MS as f64,
            period_ticks: d.period,
            pages,
        });
        self.ws[w].balance_again = d.again;
        // the timer fires on the tick after `pause` full ticks from this one
        Some((now as u64 + pause + 1) * self.tick_ns)
    }

    /// An fsync waiting on a file may be done.
    pub(super) fn fsync_progress(&mut self) {
        for w in 0..self.ws.len() {
            if self.ws[w].fsync_wait && self.inodes[w].writeback == 0 && self.inodes[w].dirty == 0 {
                self.ws[w].fsync_wait = false;
                self.finish_write(w);
            }
        }
    }

    pub(super) fn finish_write(&mut self, w: usize) {
        let c = &self.cfg.writers[w];
        let k = self.ws[w].k + 1;
        if let Some(n) = c.fsync_every
            && n > 0
            && k % n == 0
            && !self.ws[w].fsync_wait
            && (self.inodes[w].dirty > 0 || self.inodes[w].writeback > 0)
        {
            self.ws[w].fsync_wait = true;
            let d = self.inodes[w].dirty;
            self.writepages(w, d);
            return;
        }
        let start = self.ws[w].op_start.take().unwrap_or(self.now);
        let bytes = self.bytes_of(w);
        let (throttled, held) = (self.ws[w].throttled_ns, self.ws[w].held_ns);
        self.ws[w].throttled_ns = 0;
        self.ws[w].held_ns = 0;
        let r = &mut self.out.writers[w];
        r.issue_s.push(start as f64 / SEC as f64);
        r.latency_ms.push((self.now - start) as f64 / MS as f64);
        r.throttled_ms.push(throttled as f64 / MS as f64);
        r.held_ms.push(held as f64 / MS as f64);
        r.bytes += bytes;
        self.ws[w].k = k;
        self.ws[w].dirtied = false;
        self.wrote(w, bytes);
        let stop = c
            .stop_ms
            .map_or(self.end, |s| ((s * MS as f64) as u64).min(self.end));
        match self.next_issue_time(w) {
            Some(t) if t < stop => self.push(t, Ev::Issue(w)),
            _ => self.ws[w].finished = true,
        }
    }
}
