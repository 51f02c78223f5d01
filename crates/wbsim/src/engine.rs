//! The event loop.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};

use serde::{Deserialize, Serialize};

use crate::config::{Config, Kind, MIB, MS, RuleSet, SEC};
use crate::policy::{self, GroupState, Policy};
use crate::rules::{Thresholds, thresholds};

/// Longest single pause of balance_dirty_pages() (MAX_PAUSE, HZ/5).
pub const MAX_PAUSE_NS: u64 = 200 * MS;
/// 2.6.26's congestion_wait(WRITE, HZ/10).
pub const CONGESTION_WAIT_NS: u64 = 100 * MS;
/// MIN_WRITEBACK_PAGES (linux-6) and MAX_WRITEBACK_PAGES (2.6.26): 4 MiB.
pub const MIN_CHUNK: u64 = 4 * MIB;

/// What one writer experienced.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct WriterResult {
    pub name: String,
    pub group: String,
    /// Time each write() was issued, s.
    pub issue_s: Vec<f64>,
    /// How long each write() took, ms.
    pub latency_ms: Vec<f64>,
    pub bytes: u64,
    /// Time spent held back by the policy (WCALL's blocks), ms.
    pub policy_wait_ms: f64,
}

/// Dirty and Writeback at one instant.
#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize)]
pub struct Sample {
    pub t_s: f64,
    pub dirty: u64,
    pub writeback: u64,
}

/// Everything a run produced.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Outcome {
    pub writers: Vec<WriterResult>,
    pub samples: Vec<Sample>,
    pub events: u64,
    pub flusher_wakeups: u64,
    pub background_runs: u64,
    pub device_busy_ns: u64,
    pub bytes_dirtied: u64,
    pub bytes_written: u64,
    pub end_dirty: u64,
    pub end_writeback: u64,
    pub end_ns: u64,
    pub normal_limits: (u64, u64),
    pub rt_limits: (u64, u64),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Ev {
    /// A writer issues (or retries) a write.
    Issue(usize),
    /// A writer's pause is over: balance again (linux-6) or re-check (2.6.26).
    Resume(usize),
    /// The periodic flusher's timer, with its generation (stale ones are ignored).
    Kupdate(u64),
    /// The device finished its current request.
    DeviceDone,
    /// The flusher may submit again (queue space freed).
    FlusherContinue,
    Sample,
}

#[derive(Debug, Default, Clone)]
struct Inode {
    dirty: u64,
    writeback: u64,
    dirtied_when: Option<u64>,
    group: usize,
}

#[derive(Debug, Clone, Copy)]
struct Req {
    inode: usize,
    bytes: u64,
}

#[derive(Debug, Default)]
struct WriterState {
    started: bool,
    finished: bool,
    k: u64,
    /// When the write in progress was issued.
    op_start: Option<u64>,
    /// The bytes of the write in progress have been dirtied.
    dirtied: bool,
    /// Waiting for its fsync to drain.
    fsync_wait: bool,
    /// Bytes dirtied since its last pause (current->nr_dirtied).
    accum: u64,
}

struct Sim<'a> {
    cfg: &'a Config,
    now: u64,
    seq: u64,
    heap: BinaryHeap<Reverse<(u64, u64, Ev)>>,
    inodes: Vec<Inode>,
    groups: Vec<String>,
    group_of_writer: Vec<usize>,
    group_dirty: Vec<u64>,
    group_wb: Vec<u64>,
    dirty: u64,
    writeback: u64,
    normal: Thresholds,
    rt: Thresholds,
    queue: VecDeque<Req>,
    queued_bytes: u64,
    device_busy: bool,
    bg_active: bool,
    kupdate_active: bool,
    flusher_blocked: bool,
    kupdate_gen: u64,
    kupdate_armed: bool,
    ws: Vec<WriterState>,
    out: Outcome,
    end: u64,
}

fn chunk_linux6(cfg: &Config, hard: u64) -> u64 {
    let half_second = (cfg.device.bandwidth_bytes_s / 2.0) as u64;
    (half_second.min(hard / 8) + MIN_CHUNK) / MIN_CHUNK * MIN_CHUNK
}

impl<'a> Sim<'a> {
    fn push(&mut self, t: u64, ev: Ev) {
        self.seq += 1;
        self.heap.push(Reverse((t, self.seq, ev)));
    }

    fn limits_of(&self, w: usize) -> Thresholds {
        if self.cfg.writers[w].class.is_rt() {
            self.rt
        } else {
            self.normal
        }
    }

    fn active_writers(&self) -> u64 {
        self.ws.iter().filter(|w| w.started && !w.finished).count() as u64
    }

    fn group_states(&self) -> Vec<GroupState> {
        (0..self.groups.len())
            .map(|g| GroupState {
                tasks: self
                    .ws
                    .iter()
                    .enumerate()
                    .filter(|(i, w)| self.group_of_writer[*i] == g && w.started && !w.finished)
                    .count() as u64,
                weight: policy::weight(&self.groups[g]),
                dirty: self.group_dirty[g],
                writeback: self.group_wb[g],
            })
            .collect()
    }

    // ---- device ----

    fn submit(&mut self, inode: usize, bytes: u64) {
        if bytes == 0 {
            return;
        }
        let ino = &mut self.inodes[inode];
        let bytes = bytes.min(ino.dirty);
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
        let max = self.cfg.device.max_request_bytes.max(4096);
        let mut left = bytes;
        while left > 0 {
            let b = left.min(max);
            self.queue.push_back(Req { inode, bytes: b });
            self.queued_bytes += b;
            left -= b;
        }
        self.kick_device();
    }

    fn kick_device(&mut self) {
        if self.device_busy {
            return;
        }
        if let Some(r) = self.queue.front() {
            let service = (r.bytes as f64 / self.cfg.device.bandwidth_bytes_s * 1e9) as u64
                + self.cfg.device.request_latency_ns;
            self.device_busy = true;
            self.out.device_busy_ns += service;
            let t = self.now + service.max(1);
            self.push(t, Ev::DeviceDone);
        }
    }

    fn device_done(&mut self) {
        self.device_busy = false;
        if let Some(r) = self.queue.pop_front() {
            self.queued_bytes -= r.bytes;
            self.inodes[r.inode].writeback -= r.bytes;
            let g = self.inodes[r.inode].group;
            self.group_wb[g] -= r.bytes;
            self.writeback -= r.bytes;
            self.out.bytes_written += r.bytes;
            // an fsync waiting on this file may be done
            for w in 0..self.ws.len() {
                if self.ws[w].fsync_wait
                    && self.inodes[w].writeback == 0
                    && self.inodes[w].dirty == 0
                {
                    self.ws[w].fsync_wait = false;
                    self.finish_write(w);
                }
            }
        }
        if self.flusher_blocked && self.queued_bytes < self.cfg.device.queue_bytes {
            self.flusher_blocked = false;
            self.push(self.now, Ev::FlusherContinue);
        }
        self.kick_device();
    }

    /// Time until the device's backlog is down to the queue limit.
    fn queue_wait(&self) -> u64 {
        let over = self
            .queued_bytes
            .saturating_sub(self.cfg.device.queue_bytes);
        (over as f64 / self.cfg.device.bandwidth_bytes_s * 1e9) as u64
    }

    // ---- flusher ----

    fn oldest_dirty_inode(&self, expired_before: Option<u64>) -> Option<usize> {
        self.inodes
            .iter()
            .enumerate()
            .filter(|(_, i)| i.dirty > 0)
            .filter(|(_, i)| match (expired_before, i.dirtied_when) {
                (Some(limit), Some(w)) => w <= limit,
                (Some(_), None) => false,
                (None, _) => true,
            })
            .min_by_key(|(_, i)| i.dirtied_when.unwrap_or(u64::MAX))
            .map(|(n, _)| n)
    }

    fn chunk(&self) -> u64 {
        match self.cfg.rules {
            RuleSet::Linux6 => chunk_linux6(self.cfg, self.normal.hard),
            RuleSet::Linux2626 => MIN_CHUNK,
        }
    }

    /// Runs the flusher's work until it is done or blocked on the device queue.
    fn flusher_run(&mut self) {
        loop {
            if self.queued_bytes >= self.cfg.device.queue_bytes {
                self.flusher_blocked = true;
                return;
            }
            if self.kupdate_active {
                // nothing can have expired before one expire interval has passed
                let expired = self
                    .now
                    .checked_sub(self.cfg.sysctls.dirty_expire_centisecs * 10 * MS)
                    .and_then(|limit| self.oldest_dirty_inode(Some(limit)));
                match expired {
                    Some(i) => {
                        let c = self.chunk().max(self.inodes[i].dirty);
                        self.submit(i, c);
                        continue;
                    }
                    None => {
                        self.kupdate_active = false;
                        self.arm_kupdate_after_run();
                    }
                }
            }
            if self.bg_active {
                if self.dirty > self.normal.bg {
                    if let Some(i) = self.oldest_dirty_inode(None) {
                        let c = self.chunk();
                        self.submit(i, c);
                        continue;
                    }
                }
                self.bg_active = false;
            }
            return;
        }
    }

    fn maybe_start_background(&mut self) {
        if !self.bg_active && self.dirty > self.normal.bg {
            self.bg_active = true;
            self.out.background_runs += 1;
            self.out.flusher_wakeups += 1;
            if !self.flusher_blocked {
                self.flusher_run();
            }
        }
    }

    fn interval(&self) -> u64 {
        self.cfg.sysctls.dirty_writeback_centisecs * 10 * MS
    }

    fn arm_kupdate(&mut self, at: u64) {
        self.kupdate_gen += 1;
        self.kupdate_armed = true;
        let g = self.kupdate_gen;
        self.push(at, Ev::Kupdate(g));
    }

    /// linux-6 re-arms one interval after a run that left dirty data behind.
    fn arm_kupdate_after_run(&mut self) {
        if self.cfg.rules == RuleSet::Linux6 && self.interval() > 0 && self.dirty > 0 {
            let at = self.now + self.interval();
            self.arm_kupdate(at);
        }
    }

    fn kupdate(&mut self, generation: u64) {
        if generation != self.kupdate_gen {
            return;
        }
        self.kupdate_armed = false;
        self.out.flusher_wakeups += 1;
        if self.cfg.rules == RuleSet::Linux2626 && self.interval() > 0 {
            // the 2.6 timer fires on a fixed grid whatever it found
            let at = self.now + self.interval();
            self.arm_kupdate(at);
        }
        self.kupdate_active = true;
        if !self.flusher_blocked {
            self.flusher_run();
        }
    }

    // ---- writers ----

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

    fn bytes_of(&self, w: usize) -> u64 {
        match self.cfg.writers[w].kind {
            Kind::Periodic { bytes, .. } => bytes,
            Kind::Rate { chunk, .. } | Kind::Bulk { chunk } => chunk,
        }
    }

    fn issue(&mut self, w: usize) {
        if self.ws[w].finished {
            return;
        }
        self.ws[w].started = true;
        if self.ws[w].op_start.is_none() {
            self.ws[w].op_start = Some(self.now);
        }
        // The policy's gate, before the write dirties anything.
        if self.cfg.policy != Policy::Vanilla {
            let g = self.group_of_writer[w];
            let states = self.group_states();
            let gate = policy::gates(
                self.cfg.policy,
                &states,
                self.normal.bg,
                self.limits_of(w).hard,
                self.normal.freerun(),
                (self.cfg.wcall_block_ms * MS as f64) as u64,
            )[g];
            if gate.hold {
                if gate.push {
                    // write this group's files back now, then look again shortly
                    for i in 0..self.inodes.len() {
                        if self.inodes[i].group == g && self.inodes[i].dirty > 0 {
                            let d = self.inodes[i].dirty;
                            self.submit(i, d);
                        }
                    }
                }
                let wait = gate.retry_ns;
                self.out.writers[w].policy_wait_ms += wait as f64 / MS as f64;
                self.push(self.now + wait, Ev::Issue(w));
                return;
            }
        }
        let bytes = self.bytes_of(w);
        let copy = (bytes as f64 / self.cfg.copy_bytes_s * 1e9) as u64;
        // dirty the pages
        let ino = &mut self.inodes[w];
        let was_clean = ino.dirty == 0;
        ino.dirty += bytes;
        if ino.dirtied_when.is_none() {
            ino.dirtied_when = Some(self.now);
        }
        let g = ino.group;
        self.group_dirty[g] += bytes;
        self.dirty += bytes;
        self.out.bytes_dirtied += bytes;
        self.ws[w].dirtied = true;
        self.ws[w].accum += bytes;
        if was_clean
            && self.cfg.rules == RuleSet::Linux6
            && self.interval() > 0
            && !self.kupdate_armed
            && !self.kupdate_active
        {
            // wb_wakeup_delayed(): the flusher looks one interval after dirt appears
            let at = self.now + self.interval();
            self.arm_kupdate(at);
        }
        self.maybe_start_background();
        self.push(self.now + copy, Ev::Resume(w));
    }

    /// balance_dirty_pages() after the copy.
    fn balance(&mut self, w: usize) {
        let lim = self.limits_of(w);
        let d = self.dirty + self.writeback;
        match self.cfg.rules {
            RuleSet::Linux6 => {
                if d <= lim.freerun() {
                    self.ws[w].accum = 0;
                    return self.finish_write(w);
                }
                if d >= lim.hard {
                    self.ws[w].accum = 0;
                    self.push(self.now + MAX_PAUSE_NS, Ev::Resume(w));
                    return;
                }
                // A task is polled every nr_dirtied_pause pages, sized so that its
                // pause is near wb_max_pause(): about 0.256 x (dirty / bandwidth),
                // at most MAX_PAUSE. Below that it writes on without pausing.
                let bw = self.cfg.device.bandwidth_bytes_s;
                let max_pause = ((0.256 * d as f64 / bw * 1e9) as u64).clamp(MS, MAX_PAUSE_NS);
                let per_call = linux6_pause(d, lim, SEC / 1000, bw, self.active_writers());
                // per_call is the pause for one millisecond's worth of bytes at the
                // full rate: derive the task's rate from it
                let task_rate = if per_call >= MAX_PAUSE_NS {
                    0.0
                } else {
                    (SEC / 1000) as f64 / per_call.max(1) as f64 * 1e9
                };
                let allowance = task_rate * max_pause as f64 / 1e9;
                if task_rate > 0.0 && (self.ws[w].accum as f64) < allowance {
                    return self.finish_write(w);
                }
                let pause = if task_rate > 0.0 {
                    ((self.ws[w].accum as f64 / task_rate * 1e9) as u64).min(max_pause)
                } else {
                    MAX_PAUSE_NS
                };
                self.ws[w].accum = 0;
                self.ws[w].dirtied = false; // the next Resume finishes the write
                self.push(self.now + pause, Ev::Resume(w));
            }
            RuleSet::Linux2626 => {
                if d <= lim.hard {
                    return self.finish_write(w);
                }
                // the writer writes back a chunk itself: 1.5 x ratelimit_pages
                let ratelimit = (self.cfg.dirtyable_bytes / (self.cfg.cpus.max(1) as u64 * 32))
                    .clamp(16 * 4096, 4 * MIB);
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
                self.ws[w].dirtied = done < want; // wrote its chunk: return after the queue wait
                self.push(self.now + next.max(1), Ev::Resume(w));
            }
        }
    }

    fn resume(&mut self, w: usize) {
        if self.ws[w].dirtied {
            self.balance(w);
        } else {
            self.finish_write(w);
        }
    }

    fn finish_write(&mut self, w: usize) {
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
            self.submit(w, d);
            return;
        }
        let start = self.ws[w].op_start.take().unwrap_or(self.now);
        let bytes = self.bytes_of(w);
        let r = &mut self.out.writers[w];
        r.issue_s.push(start as f64 / SEC as f64);
        r.latency_ms.push((self.now - start) as f64 / MS as f64);
        r.bytes += bytes;
        self.ws[w].k = k;
        self.ws[w].dirtied = false;
        match self.next_issue_time(w) {
            Some(t) if t < self.end => self.push(t, Ev::Issue(w)),
            _ => self.ws[w].finished = true,
        }
    }
}

/// The pause of a linux-6 writer that dirtied `bytes` with `d` bytes dirty or under
/// write back, between the free-run ceiling and the hard limit: the device's
/// bandwidth shared by the writers, scaled by the cubic position ratio around the
/// setpoint (mm/page-writeback.c pos_ratio_polynom), at most MAX_PAUSE.
pub fn linux6_pause(d: u64, lim: Thresholds, bytes: u64, bandwidth: f64, writers: u64) -> u64 {
    let setpoint = (lim.freerun() + lim.hard) / 2;
    let x = (setpoint as f64 - d as f64) / ((lim.hard.saturating_sub(setpoint)).max(1)) as f64;
    let pos = (1.0 + x * x * x).clamp(0.0, 2.0);
    let rate = bandwidth / writers.max(1) as f64 * pos;
    if rate > 0.0 {
        ((bytes as f64 / rate * 1e9) as u64).min(MAX_PAUSE_NS)
    } else {
        MAX_PAUSE_NS
    }
}

/// Runs one simulation.
pub fn simulate(cfg: &Config) -> Outcome {
    let mut groups: Vec<String> = Vec::new();
    let group_of_writer: Vec<usize> = cfg
        .writers
        .iter()
        .map(|w| {
            let g = w.group_name();
            match groups.iter().position(|x| *x == g) {
                Some(i) => i,
                None => {
                    groups.push(g);
                    groups.len() - 1
                }
            }
        })
        .collect();
    let (normal, rt) = thresholds(cfg.rules, &cfg.sysctls, cfg.dirtyable_bytes);
    let end = (cfg.duration_s * SEC as f64) as u64;
    let mut sim = Sim {
        cfg,
        now: 0,
        seq: 0,
        heap: BinaryHeap::new(),
        inodes: group_of_writer
            .iter()
            .map(|g| Inode {
                group: *g,
                ..Default::default()
            })
            .collect(),
        group_dirty: vec![0; groups.len()],
        group_wb: vec![0; groups.len()],
        groups: groups.clone(),
        group_of_writer: group_of_writer.clone(),
        dirty: 0,
        writeback: 0,
        normal,
        rt,
        queue: VecDeque::new(),
        queued_bytes: 0,
        device_busy: false,
        bg_active: false,
        kupdate_active: false,
        flusher_blocked: false,
        kupdate_gen: 0,
        kupdate_armed: false,
        ws: cfg.writers.iter().map(|_| WriterState::default()).collect(),
        out: Outcome {
            writers: cfg
                .writers
                .iter()
                .zip(&group_of_writer)
                .map(|(w, g)| WriterResult {
                    name: w.name.clone(),
                    group: groups[*g].clone(),
                    ..Default::default()
                })
                .collect(),
            normal_limits: (normal.bg, normal.hard),
            rt_limits: (rt.bg, rt.hard),
            ..Default::default()
        },
        end,
    };
    for (i, w) in cfg.writers.iter().enumerate() {
        sim.push((w.start_ms * MS as f64) as u64, Ev::Issue(i));
    }
    if cfg.rules == RuleSet::Linux2626 && sim.interval() > 0 {
        let at = sim.interval();
        sim.arm_kupdate(at);
    }
    let sample = ((cfg.sample_ms * MS as f64) as u64).max(MS);
    sim.push(0, Ev::Sample);
    while let Some(Reverse((t, _, ev))) = sim.heap.pop() {
        if t > end {
            break;
        }
        sim.now = t;
        sim.out.events += 1;
        match ev {
            Ev::Issue(w) => sim.issue(w),
            Ev::Resume(w) => sim.resume(w),
            Ev::Kupdate(g) => sim.kupdate(g),
            Ev::DeviceDone => sim.device_done(),
            Ev::FlusherContinue => sim.flusher_run(),
            Ev::Sample => {
                sim.out.samples.push(Sample {
                    t_s: t as f64 / SEC as f64,
                    dirty: sim.dirty,
                    writeback: sim.writeback,
                });
                sim.push(t + sample, Ev::Sample);
            }
        }
    }
    sim.out.end_dirty = sim.dirty;
    sim.out.end_writeback = sim.writeback;
    sim.out.end_ns = sim.now;
    sim.out
}
