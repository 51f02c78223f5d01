//! The device: requests of at most `max_request_bytes` served in order at the
//! device's bandwidth. A disk costs `request_latency_ns` more per request and
//! blocks submitters beyond `queue_bytes`; behind blk-throttle a request is held
//! in the throttle (its pages stay under write back, the submitter goes on) and
//! released on the throttle timer's next tick once the cap allows it.

use super::{Ev, Req, Sim};
use crate::config::DeviceKind;
use crate::kernel::PAGE;

impl<'a> Sim<'a> {
    /// Moves up to `bytes` of the inode's dirty bytes under write back and queues
    /// them (what the file system's writepages does).
    pub(super) fn submit(&mut self, inode: usize, bytes: u64) {
        let ino = &mut self.inodes[inode];
        let bytes = bytes.min(ino.dirty);
        if bytes == 0 {
            return;
        }
        if ino.writeback == 0 {
            self.wb.writeback_inodes += 1;
        }
        ino.dirty -= bytes;
        ino.writeback += bytes;
        let g = ino.group;
        if ino.dirty == 0 {
            ino.dirtied_when = None;
        }
        self.group_dirty[g] -= bytes;
        self.group_wb[g] += bytes;
        self.dirty -= bytes;
        self.writeback += bytes;
        let max = self.cfg.device.max_request_bytes.max(PAGE);
        let mut left = bytes;
        while left > 0 {
            let b = left.min(max);
            self.dev.queue.push_back(Req {
                inode,
                bytes: b,
                arrival: self.now,
            });
            self.dev.queued_bytes += b;
            left -= b;
        }
        self.kick_device();
    }

    /// `writepages` as the flusher, fsync or sync_file_range run it: the bandwidth
    /// estimate is restarted after an idle second, and refreshed after the
    /// submission when BANDWIDTH_INTERVAL has passed (do_writepages).
    pub(super) fn writepages(&mut self, inode: usize, bytes: u64) {
        if self.cfg.rules == crate::config::RuleSet::Linux6 {
            self.bandwidth_estimate_start();
            self.submit(inode, bytes);
            self.bandwidth_after_writepages();
        } else {
            self.submit(inode, bytes);
        }
    }

    fn kick_device(&mut self) {
        if self.dev.busy {
            return;
        }
        let Some(r) = self.dev.queue.front() else {
            return;
        };
        let d = &self.cfg.device;
        let mut service = (r.bytes as f64 / d.bandwidth_bytes_s * 1e9) as u64;
        if d.kind == DeviceKind::Disk {
            service += d.request_latency_ns;
        }
        let done = self.dev.clock.max(r.arrival) + service.max(1);
        self.dev.clock = done;
        self.dev.busy = true;
        self.out.device_busy_ns += service;
        let at = match d.kind {
            DeviceKind::Disk => done,
            DeviceKind::Throttled => done.div_ceil(self.tick_ns) * self.tick_ns,
        };
        self.push(at.max(self.now), Ev::DeviceDone);
    }

    pub(super) fn device_done(&mut self) {
        self.dev.busy = false;
        if let Some(r) = self.dev.queue.pop_front() {
            self.dev.queued_bytes -= r.bytes;
            let ino = &mut self.inodes[r.inode];
            ino.writeback -= r.bytes;
            let inode_done = ino.writeback == 0;
            let g = ino.group;
            self.group_wb[g] -= r.bytes;
            self.writeback -= r.bytes;
            self.out.bytes_written += r.bytes;
            let pages = r.bytes / PAGE;
            self.wb.written += pages;
            let now = self.ticks();
            self.wb.share.completed(now, pages);
            if inode_done {
                self.wb.writeback_inodes -= 1;
                self.inode_writeback_ended();
            }
            self.fsync_progress();
        }
        if self.fl.blocked && self.dev.queued_bytes < self.cfg.device.queue_bytes {
            self.fl.blocked = false;
            self.push(self.now, Ev::FlusherContinue);
        }
        self.kick_device();
    }

    /// Whether the flusher must wait for the queue (a disk's request queue is full).
    pub(super) fn queue_full(&self) -> bool {
        self.cfg.device.kind == DeviceKind::Disk
            && self.dev.queued_bytes >= self.cfg.device.queue_bytes
    }

    /// Time until the device's backlog is down to the queue limit.
    pub(super) fn queue_wait(&self) -> u64 {
        let over = self
            .dev
            .queued_bytes
            .saturating_sub(self.cfg.device.queue_bytes);
        (over as f64 / self.cfg.device.bandwidth_bytes_s * 1e9) as u64
    }
}
