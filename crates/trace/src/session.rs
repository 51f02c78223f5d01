//! `oslab stalls`'s session: the write-back tracer read once an interval, each
//! interval's records summarised with their processes named (from /proc), until a
//! number of intervals has passed or the watched command has ended.

use std::collections::HashMap;
use std::time::Duration;

use oslab_sys::clock::monotonic_ns;
use oslab_sys::fsread::Root;
use oslab_sys::pidinfo;

use crate::analysis::{Captured, hz_from_pauses};
use crate::stalls::{Interval, ProcessInfo, dirtied_since, stall_lines, summarize};
use crate::{TraceError, Tracer, WritebackOptions};
use oslab_model::trace::{IntervalSummary, StallLine};

/// What a session traces and how often it reports.
pub struct StallsOptions {
    pub tracing: WritebackOptions,
    /// Nanoseconds between summaries.
    pub interval_ns: u64,
    /// Stop after this many intervals.
    pub count: Option<u64>,
    /// Rows per table (dirtiers, blocking places).
    pub top: usize,
    /// Name the threads of the slow calls (for a trace file).
    pub name_threads: bool,
}

/// One interval: its summary, its slow calls and the records behind them.
pub struct Tick {
    pub summary: IntervalSummary,
    pub lines: Vec<StallLine>,
    pub captured: Captured,
    /// The kernel's tick rate (0 where unknown).
    pub hz: u32,
    pub page_size: u64,
    /// The name of each thread of `lines`, with `name_threads`.
    pub thread_names: HashMap<u32, String>,
}

/// A running session.
pub struct StallsSession {
    tracer: Tracer,
    options: StallsOptions,
    /// This process: its own writes are left out.
    own: u32,
    root: Root,
    known_hz: Option<u32>,
    page_size: u64,
    names: HashMap<u32, ProcessInfo>,
    pages_before: HashMap<u32, u64>,
}

impl StallsSession {
    /// Loads the tracer.
    pub fn start(options: StallsOptions) -> Result<StallsSession, TraceError> {
        let tracer = Tracer::writeback(&options.tracing)?;
        let root = Root::live();
        let release = root
            .read_trim("/proc/sys/kernel/osrelease")
            .unwrap_or_default();
        let known_hz = oslab_sys::machine::kernel_hz(&root, &release)
            .value()
            .map(|h| h.hz);
        Ok(StallsSession {
            tracer,
            options,
            own: std::process::id(),
            root,
            known_hz,
            page_size: oslab_sys::machine::page_size(),
            names: HashMap::new(),
            pages_before: HashMap::new(),
        })
    }

    /// Hands `each` every interval until the count is reached or `ended` gives
    /// the watched command's exit code (asked every 20 ms); that code, if so.
    pub fn run(
        &mut self,
        mut ended: impl FnMut() -> Option<i32>,
        mut each: impl FnMut(&Tick),
    ) -> Option<i32> {
        let step = self.options.interval_ns;
        let origin = monotonic_ns();
        let mut n = 0u64;
        loop {
            let code = wait_until(origin + (n + 1) * step, &mut ended);
            each(&self.tick(step));
            n += 1;
            if code.is_some() {
                return code;
            }
            if self.options.count.is_some_and(|c| n >= c) {
                return None;
            }
        }
    }

    /// Stops the tracer; how many kernel records were lost in all.
    pub fn stop(self) -> u64 {
        self.tracer.stop().1.lost
    }

    /// The interval that ends now.
    fn tick(&mut self, step: u64) -> Tick {
        let mut cap = Captured::default();
        self.tracer.collect(&mut cap);
        let snap = self.tracer.snapshot();
        cap.writes.retain(|w| w.tgid != self.own);
        cap.offcpu.retain(|o| o.tgid != self.own);
        let hz = self
            .known_hz
            .or_else(|| hz_from_pauses(&cap.pauses))
            .unwrap_or(0);
        let tgids: Vec<u32> = cap
            .writes
            .iter()
            .map(|w| w.tgid)
            .chain(snap.dirtiers.iter().map(|d| d.tgid))
            .collect();
        for tgid in tgids {
            let root = &self.root;
            self.names.entry(tgid).or_insert_with(|| ProcessInfo {
                comm: pidinfo::comm(root, tgid).unwrap_or_default(),
                cgroup: pidinfo::cgroup(root, tgid).unwrap_or_else(|| "?".into()),
            });
        }
        let info =
            |tgid: u32| -> ProcessInfo { self.names.get(&tgid).cloned().unwrap_or_default() };
        let dirtied = dirtied_since(&self.pages_before, &snap.dirtiers);
        let now = monotonic_ns();
        let iv = Interval {
            start_ns: now.saturating_sub(step),
            end_ns: now,
            writes: &cap.writes,
            offcpu: &cap.offcpu,
            pauses: &cap.pauses,
            bandwidth: &cap.bandwidth,
            flushes: &cap.flushes,
            lost: snap.lost,
            hz,
            page_size: self.page_size,
        };
        let summary = summarize(&iv, &dirtied, &info, self.options.top);
        let lines = stall_lines(&cap.writes, &cap.offcpu, &info);
        self.pages_before = snap.dirtiers.iter().map(|d| (d.tgid, d.pages)).collect();
        let thread_names = if self.options.name_threads {
            self.thread_names(&lines)
        } else {
            HashMap::new()
        };
        Tick {
            summary,
            lines,
            captured: cap,
            hz,
            page_size: self.page_size,
            thread_names,
        }
    }

    /// Each slow call's thread by its name now (its process's where it is gone).
    fn thread_names(&self, lines: &[StallLine]) -> HashMap<u32, String> {
        lines
            .iter()
            .map(|l| {
                let name = pidinfo::comm(&self.root, l.pid).unwrap_or_else(|| l.comm.clone());
                (l.pid, name)
            })
            .collect()
    }
}

/// Sleeps until `target` (CLOCK_MONOTONIC ns), looking at `ended` every 20 ms;
/// the exit code it gave, if it gave one first.
fn wait_until(target: u64, ended: &mut impl FnMut() -> Option<i32>) -> Option<i32> {
    while monotonic_ns() < target {
        if let Some(code) = ended() {
            return Some(code);
        }
        let left = Duration::from_nanos(target.saturating_sub(monotonic_ns()).max(1));
        std::thread::sleep(Duration::from_millis(20).min(left));
    }
    None
}
