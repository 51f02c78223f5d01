//! What the kernel recorded of one real cell, in the terms the simulator uses: its
//! estimates for the testbed device when the cell began, every pause it gave the
//! cell's writers, its dirty_ratelimit over the cell, and the other devices'
//! write back (which shrinks the testbed's share of the limit).

use oslab_trace::analysis::Captured;
use oslab_wbsim::config::Kernel;

use crate::cells::record::Cell;

/// The kernel's figures for one cell, times in seconds from the writers' start.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Traced {
    /// The testbed's estimates before the cell dirtied anything, bytes per second.
    pub avg_write_bw: Option<f64>,
    pub write_bw: Option<f64>,
    /// dirty_ratelimit at the first throttling decision, bytes per second.
    pub dirty_ratelimit: Option<f64>,
    /// The domain's smoothed hard limit then, bytes.
    pub dirty_limit: Option<u64>,
    /// The testbed's share of the limit then (wb_thresh / thresh).
    pub wb_share: Option<f64>,
    /// Every balance_dirty_pages sleep on the testbed over the cell, ms.
    pub pauses_ms: Vec<f64>,
    /// (time, dirty_ratelimit bytes/s) at each refresh of the estimates.
    pub ratelimit: Vec<(f64, f64)>,
    /// Pages the flusher wrote to other devices over the cell, per second.
    pub others_bytes_s: Option<f64>,
}

/// The bdi id the kernel gave the device `dev` ("7:0"), from its records.
fn bdi_id(c: &Captured, dev: &str) -> Option<u64> {
    c.flushes
        .iter()
        .find(|f| f.bdi == dev)
        .map(|f| f.bdi_id)
        .or_else(|| c.bandwidth.iter().find(|b| b.bdi == dev).map(|b| b.bdi_id))
}

/// CLOCK_MONOTONIC ns of the writers' common start: the first writer's first
/// write() as the kernel saw it, less its start as the writer timed it.
fn start_ns(cell: &Cell, c: &Captured) -> Option<u64> {
    let first = cell.first();
    let call = c.writes.first()?;
    let s = *first.start_s.first()?;
    Some(call.start_ns.saturating_sub((s * 1e9) as u64))
}

/// The domain's dirty_limit from one decision of a task (pages): a normal task's
/// limit is max(thresh, dirty_limit); a real-time task's thresh holds
/// dirty_limit / 32 over 1.25 x the normal one.
pub fn dirty_limit_pages(p: &oslab_trace::records::Pause, normal_thresh: u64) -> u64 {
    if p.prio < 100 {
        let base = normal_thresh + normal_thresh / 4;
        p.thresh.saturating_sub(base) * 32
    } else {
        p.limit.max(p.thresh)
    }
}

/// What the kernel recorded of `cell` on the testbed `dev`, with the normal hard
/// limit `normal_thresh` (pages), under `kernel`'s rules; None without a trace.
pub fn traced(cell: &Cell, dev: &str, normal_thresh: u64, kernel: Kernel) -> Option<Traced> {
    let c = cell.kernel.captured()?;
    let page = c.page_size.max(1) as f64;
    let hz = c.hz.max(1) as f64;
    let id = bdi_id(c, dev);
    let t0 = start_ns(cell, c).unwrap_or(0);
    let secs = |ns: u64| (ns as f64 - t0 as f64) / 1e9;
    let end = cell.last_write_end_s();
    // only the cell's writers write to the testbed, outside programs included
    // (whose thread ids the cell may not know); competitors still stopping after
    // the last recorded write are not part of it
    let ours: Vec<&oslab_trace::records::Pause> = c
        .pauses
        .iter()
        .filter(|p| Some(p.bdi_id) == id && (0.0..=end).contains(&secs(p.ts_ns)))
        .collect();
    let first_flush = c.flushes.iter().find(|f| f.bdi == dev);
    let others: u64 = c
        .flushes
        .iter()
        .filter(|f| f.bdi != dev && secs(f.start_ns) >= 0.0 && secs(f.start_ns) <= end)
        .map(|f| f.pages)
        .sum();
    Some(Traced {
        avg_write_bw: first_flush.map(|f| f.avg_write_bw as f64 * page),
        write_bw: first_flush.map(|f| f.write_bw as f64 * page),
        dirty_ratelimit: ours.first().map(|p| p.dirty_ratelimit as f64 * page),
        dirty_limit: ours
            .first()
            .map(|p| dirty_limit_pages(p, normal_thresh) * page as u64),
        wb_share: ours
            .first()
            .filter(|p| p.thresh > 0 && !lifted(kernel, p))
            .map(|p| p.wb_thresh as f64 / p.thresh as f64),
        pauses_ms: ours
            .iter()
            .filter(|p| p.pause_jiffies > 0)
            .map(|p| p.pause_jiffies as f64 * 1e3 / hz)
            .collect(),
        ratelimit: c
            .bandwidth
            .iter()
            .filter(|b| b.bdi == dev)
            .map(|b| (secs(b.ts_ns), b.dirty_ratelimit as f64 * page))
            .collect(),
        others_bytes_s: (end > 0.0).then(|| others as f64 * page / end),
    })
}

/// Whether the device's threshold in decision `p` is the floor 6.14+ lift an
/// idle device's share to, (thresh - dirty) / 8, rather than its share of
/// completions: the share itself is then unknown (somewhere under it).
pub fn lifted(kernel: Kernel, p: &oslab_trace::records::Pause) -> bool {
    let floor = kernel.wb_thresh(0, p.thresh, p.dirty);
    floor > 0 && p.wb_thresh <= floor
}

/// The device the flusher wrote the most pages to over a trace: in a cell on the
/// testbed, the testbed (its bdi name, "7:0").
pub fn busiest_bdi(c: &Captured) -> Option<String> {
    let mut pages: Vec<(&str, u64)> = Vec::new();
    for f in &c.flushes {
        match pages.iter_mut().find(|(b, _)| *b == f.bdi) {
            Some(p) => p.1 += f.pages,
            None => pages.push((&f.bdi, f.pages)),
        }
    }
    pages
        .into_iter()
        .max_by_key(|(_, n)| *n)
        .map(|(b, _)| b.to_string())
}
