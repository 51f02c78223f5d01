//! The WCALL paper's kernel, 2.6.26: a write dirties its pages at once; over the
//! hard limit the writer writes back 1.5 x ratelimit_pages itself (waiting while
//! the request queue is full) and waits congestion_wait(HZ/10) when it could not.

use super::{CONGESTION_WAIT_NS, Ev, Sim};

impl<'a> Sim<'a> {
    pub(super) fn issue_2626(&mut self, w: usize) {
        let bytes = self.dirtied_bytes_of(w);
        let per_page = 4096.0 / self.cfg.copy_bytes_s * 1e9 + self.ws[w].alloc_ns;
        let copy = (bytes as f64 / 4096.0 * per_page) as u64;
        self.dirty_bytes(w, bytes);
        self.ws[w].dirtied = true;
        self.ws[w].accum += bytes;
        self.start_background();
        self.push(self.now + copy, Ev::Resume(w));
    }

    pub(super) fn resume(&mut self, w: usize) {
        if self.ws[w].dirtied {
            self.balance_2626(w);
        } else {
            self.finish_write(w);
        }
    }

    /// balance_dirty_pages() after the copy.
    fn balance_2626(&mut self, w: usize) {
        let lim = self.limits_of(w);
        if self.dirty + self.writeback <= lim.hard {
            return self.finish_write(w);
        }
        let ratelimit = (self.cfg.dirtyable_bytes / (self.cfg.cpus.max(1) as u64 * 32))
            .clamp(16 * 4096, 4 * crate::config::MIB);
        let want = ratelimit * 3 / 2;
        let mut done = 0;
        while done < want {
            let Some(i) = self.oldest_dirty_inode(None) else {
                break;
            };
            let before = self.inodes[i].dirty;
            self.submit(i, want - done);
            done += before - self.inodes[i].dirty;
        }
        // submission blocks while the request queue is full
        let blocked = self.queue_wait();
        let next = if done >= want {
            blocked
        } else {
            blocked + CONGESTION_WAIT_NS
        };
        // wrote its chunk: return after the queue wait
        self.ws[w].dirtied = done < want;
        self.push(self.now + next.max(1), Ev::Resume(w));
    }
}
