//! The event loop and the state it moves: the page cache (dirty and writeback
//! bytes per inode, one inode per writer, charged to the writer's group), the
//! device's queue, the flusher, the kernel's estimates for the device, the
//! governor and the writers.
//!
//! Its parts: [`device`] (the queue, a disk's or blk-throttle's), [`flusher`]
//! (background and periodic write back in per-inode chunks), [`estimates`] (when
//! the kernel refreshes its bandwidth and rate estimates), [`writer`] (a linux-6
//! write: the copy folio by folio, balance_dirty_pages, the pauses), [`old`] (the
//! 2.6.26 rules), [`governor`] (the policies as the governor runs them).

mod device;
mod estimates;
mod flusher;
mod governor;
mod old;
mod steady;
mod writer;

use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};

use crate::config::{Config, MS, RuleSet, SEC};
use crate::kernel::PAGE;
use crate::kernel::estimate::Estimator;
use crate::kernel::pause::TaskState;
use crate::kernel::share::Share;
use crate::outcome::{Outcome, Sample, WriterResult};
use crate::rules::{Thresholds, thresholds};

pub use crate::outcome::{PauseRecord, RatelimitRecord};
pub use steady::given_from_live;

/// Longest single pause of balance_dirty_pages() (MAX_PAUSE, HZ/5).
pub const MAX_PAUSE_NS: u64 = 200 * MS;
/// 2.6.26's congestion_wait(WRITE, HZ/10).
pub const CONGESTION_WAIT_NS: u64 = 100 * MS;
/// MIN_WRITEBACK_PAGES (linux-6) and MAX_WRITEBACK_PAGES (2.6.26): 4 MiB.
pub const MIN_CHUNK: u64 = 4 * crate::config::MIB;

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Ev {
    /// A writer issues (or retries) a write.
    Issue(usize),
    /// A writer has copied the folios of its current step (linux-6).
    Step(usize),
    /// A writer's throttle pause is over (linux-6).
    Wake(usize),
    /// A writer's pause or copy is over (2.6.26).
    Resume(usize),
    /// The periodic flusher's timer, with its generation (stale ones are ignored).
    Kupdate(u64),
    /// The device finished its current request.
    DeviceDone,
    /// The flusher may submit again (queue space freed).
    FlusherContinue,
    /// The delayed bandwidth update after an inode's write back ended.
    BandwidthWork,
    /// The governor's coordinator pass.
    GovernorPass,
    /// wakeup_flusher_threads: write back everything dirty now.
    FlushAll,
    Sample,
}

#[derive(Debug, Default, Clone)]
struct Inode {
    dirty: u64,
    writeback: u64,
    dirtied_when: Option<u64>,
    group: usize,
}

#[derive(Debug, Default)]
struct WriterState {
    started: bool,
    finished: bool,
    k: u64,
    /// When the write in progress was issued.
    op_start: Option<u64>,
    /// Pages of the write in progress not yet dirtied, and those of the current step.
    pages_left: u64,
    step_pages: u64,
    /// The throttling state the kernel keeps in task_struct.
    task: TaskState,
    /// The pages balance_dirty_pages was called with, while it loops.
    balance_pages: u64,
    balance_again: bool,
    sleep_start: u64,
    /// The page allocation cost of the write in progress, ns per page.
    alloc_ns: f64,
    throttled_ns: u64,
    held_ns: u64,
    /// 2.6.26: the bytes of the write in progress have been dirtied.
    dirtied: bool,
    /// 2.6.26: bytes dirtied since its last pause.
    accum: u64,
    /// Waiting for its fsync to drain.
    fsync_wait: bool,
    /// When it last tried to write (the governor counts it active from this).
    last_write: Option<u64>,
}

/// The device's write-back state as the kernel keeps it (struct bdi_writeback).
struct Wb {
    est: Estimator,
    /// The global domain's smoothed hard limit, pages, and when it was updated.
    dirty_limit: u64,
    dirty_limit_tstamp: i64,
    share: Share,
    /// Pages dirtied on and written by the device (WB_DIRTIED, WB_WRITTEN).
    dirtied: u64,
    written: u64,
    dirty_exceeded: bool,
    /// Inodes with pages under write back.
    writeback_inodes: usize,
    bw_work_pending: bool,
}

#[derive(Debug, Clone, Copy)]
struct Req {
    inode: usize,
    bytes: u64,
    arrival: u64,
}

#[derive(Default)]
struct Device {
    queue: VecDeque<Req>,
    queued_bytes: u64,
    busy: bool,
    /// When the request in service ends, exactly (completions may be released later).
    clock: u64,
}

#[derive(Default)]
struct FlusherState {
    kupdate_active: bool,
    blocked: bool,
    kupdate_gen: u64,
    kupdate_armed: bool,
    /// When the worker last looked for expired inodes (wb->last_old_flush); None:
    /// not in this run, so the first look is due.
    last_old_flush: Option<u64>,
    /// When the armed timer is due, and when its queued event fires (a timer
    /// moved later re-queues itself then, so a busy flusher does not fill the
    /// event queue).
    kupdate_at: u64,
    kupdate_queued_at: u64,
    /// Pages a start-all work (wakeup_flusher_threads) has still to write, and
    /// when it began (it writes inodes dirtied before then).
    start_all_left: u64,
    start_all_before: u64,
}

struct Sim<'a> {
    cfg: &'a Config,
    hz: u64,
    tick_ns: u64,
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
    dev: Device,
    fl: FlusherState,
    wb: Wb,
    gov: governor::Governor,
    /// The groups' states, reused by the per-write policy check.
    states_buf: Vec<crate::policy::GroupState>,
    ws: Vec<WriterState>,
    out: Outcome,
    end: u64,
}

impl<'a> Sim<'a> {
    fn push(&mut self, t: u64, ev: Ev) {
        self.seq += 1;
        self.heap.push(Reverse((t, self.seq, ev)));
    }

    /// The kernel's jiffies now.
    fn ticks(&self) -> i64 {
        (self.now / self.tick_ns) as i64
    }

    fn limits_of(&self, w: usize) -> Thresholds {
        if self.cfg.writers[w].class.is_rt() {
            self.rt
        } else {
            self.normal
        }
    }

    fn interval(&self) -> u64 {
        self.cfg.sysctls.dirty_writeback_centisecs * 10 * MS
    }

    fn bytes_of(&self, w: usize) -> u64 {
        use crate::config::Kind;
        match self.cfg.writers[w].kind {
            Kind::Periodic { bytes, .. } => bytes,
            Kind::Rate { chunk, .. } | Kind::Bulk { chunk } => chunk,
        }
    }

    /// Bytes a write of the writer dirties: whole pages.
    fn dirtied_bytes_of(&self, w: usize) -> u64 {
        self.bytes_of(w).div_ceil(PAGE) * PAGE
    }

    /// `bytes` of writer `w`'s inode become dirty.
    fn dirty_bytes(&mut self, w: usize, bytes: u64) {
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
        self.wb.dirtied += bytes / PAGE;
        if was_clean {
            self.wake_flusher_delayed();
        }
    }
}

fn group_map(cfg: &Config) -> (Vec<String>, Vec<usize>) {
    let mut groups: Vec<String> = Vec::new();
    let of_writer = cfg
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
    (groups, of_writer)
}

/// INIT_BW (mm/backing-dev.c): what the kernel assumes of a device it has not
/// seen write yet, for its bandwidth and its dirty_ratelimit: 100 MiB/s in pages.
pub const INIT_BW_PAGES: u64 = (100 << 20) / PAGE;

/// The device's state at the start: the configured estimates, else the kernel's
/// for a device it has just registered (INIT_BW). Every start passes here, so an
/// estimate out of its bound (a raw file's, a machine's) is dropped here once
/// for all paths (`bounds::initial_within_bounds`).
fn initial_wb(cfg: &Config, normal: Thresholds) -> Wb {
    let page_rate = |b: f64| (b / PAGE as f64).round().max(1.0) as u64;
    let i = &crate::bounds::initial_within_bounds(cfg.initial);
    let avg = i.avg_write_bw_bytes_s.map_or(INIT_BW_PAGES, page_rate);
    let mut est = Estimator::at(
        avg,
        i.dirty_ratelimit_bytes_s.map_or(INIT_BW_PAGES, page_rate),
        0,
    );
    est.write_bandwidth = i.write_bw_bytes_s.map_or(avg, page_rate);
    let hz = cfg.hz.max(1);
    Wb {
        est,
        dirty_limit: i
            .dirty_limit_bytes
            .map_or(normal.hard, |b| b.max(normal.hard))
            / PAGE,
        dirty_limit_tstamp: 0,
        share: {
            let s = Share::steady(hz, 0, avg as f64, cfg.other_writeback_bytes_s / PAGE as f64);
            match i.wb_share {
                Some(x) => s.with_share(x),
                None => s,
            }
        },
        dirtied: 0,
        written: 0,
        dirty_exceeded: false,
        writeback_inodes: 0,
        bw_work_pending: false,
    }
}

/// A simulation at time 0: nothing dirty, every writer's result empty.
fn start(cfg: &Config) -> Sim<'_> {
    let (groups, group_of_writer) = group_map(cfg);
    let (normal, rt) = thresholds(cfg.rules, &cfg.sysctls, cfg.dirtyable_bytes);
    let end = (cfg.duration_s * SEC as f64) as u64;
    let hz = cfg.hz.max(1);
    Sim {
        cfg,
        hz,
        tick_ns: SEC / hz,
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
        dev: Device::default(),
        fl: FlusherState::default(),
        wb: initial_wb(cfg, normal),
        gov: governor::Governor::new(groups.len()),
        states_buf: Vec::new(),
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
    }
}

/// Runs one simulation, from the start its configuration asks for.
pub fn simulate(cfg: &Config) -> Outcome {
    match cfg.start {
        crate::config::Start::Given => run_from_given(cfg),
        crate::config::Start::Steady => steady::run_from_steady_state(cfg),
        crate::config::Start::Live => steady::run_from_live_state(cfg),
    }
}

/// The estimates as the simulator keeps them, in bytes per second (and bytes for
/// the domain's limit).
fn estimates_of(wb: &Wb) -> crate::config::Initial {
    let rate = |pages: u64| Some((pages * PAGE) as f64);
    crate::config::Initial {
        write_bw_bytes_s: rate(wb.est.write_bandwidth),
        avg_write_bw_bytes_s: rate(wb.est.avg_write_bandwidth),
        dirty_ratelimit_bytes_s: rate(wb.est.dirty_ratelimit),
        dirty_limit_bytes: Some(wb.dirty_limit * PAGE),
        wb_share: None,
    }
}

/// Runs one simulation from the estimates `cfg.initial` gives.
fn run_from_given(cfg: &Config) -> Outcome {
    run_given_with(cfg, None)
}

/// A run of `cfg` from the estimates `cfg.initial` gives (whatever `cfg.start`
/// says), with the flushers woken to write back everything dirty at `at_s`
/// (wakeup_flusher_threads, as a write of a new non-zero
/// vm.dirty_writeback_centisecs does): what happens to a device when a run that
/// had periodic write back off puts the setting back. The caller stops the
/// writers before then: at the same instant the wake-up comes before anything
/// else due then.
pub fn simulate_flush_all_at(cfg: &Config, at_s: f64) -> Outcome {
    run_given_with(cfg, Some((at_s.max(0.0) * SEC as f64) as u64))
}

fn run_given_with(cfg: &Config, flush_all_at: Option<u64>) -> Outcome {
    let mut sim = start(cfg);
    let at_start = estimates_of(&sim.wb);
    sim.out.start = crate::outcome::StartRecord {
        start: crate::config::Start::Given,
        warm_up_s: 0.0,
        settled: false,
        warm_up_events: 0,
        write_bw: at_start.write_bw_bytes_s.unwrap_or(0.0),
        avg_write_bw: at_start.avg_write_bw_bytes_s.unwrap_or(0.0),
        dirty_ratelimit: at_start.dirty_ratelimit_bytes_s.unwrap_or(0.0),
        steady_after_s: None,
    };
    let end = sim.end;
    for (i, w) in cfg.writers.iter().enumerate() {
        sim.push((w.start_ms * MS as f64) as u64, Ev::Issue(i));
    }
    if cfg.rules == RuleSet::Linux2626 && sim.interval() > 0 {
        let at = sim.interval();
        sim.arm_kupdate(at);
    }
    sim.start_governor();
    let sample = ((cfg.sample_ms * MS as f64) as u64).max(MS);
    sim.push(0, Ev::Sample);
    if let Some(at) = flush_all_at {
        sim.push(at, Ev::FlushAll);
    }
    while let Some(Reverse((t, _, ev))) = sim.heap.pop() {
        if t > end {
            break;
        }
        sim.now = t;
        sim.out.events += 1;
        match ev {
            Ev::Issue(w) => sim.issue(w),
            Ev::Step(w) => sim.step(w),
            Ev::Wake(w) => sim.wake(w),
            Ev::Resume(w) => sim.resume(w),
            Ev::Kupdate(g) => sim.kupdate(g),
            Ev::DeviceDone => sim.device_done(),
            Ev::FlusherContinue => sim.flusher_run(),
            Ev::BandwidthWork => sim.bandwidth_work(),
            Ev::GovernorPass => sim.governor_pass(),
            Ev::FlushAll => sim.flush_all(),
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
    sim.out.end_estimates = estimates_of(&sim.wb);
    sim.out.end_dirty = sim.dirty;
    sim.out.end_writeback = sim.writeback;
    sim.out.end_ns = sim.now;
    sim.out
}
