//! What the records say, computed without I/O: where the time of slow writes
//! went, which kernel paths blocked them, what the flusher did and why, and who
//! dirtied the pages. Experiments judge from these; `oslab stalls` prints them.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use oslab_model::trace::{Bandwidth, BlockerRow, Cause, CauseRow, FlushReason, FlushRow};

use crate::records::{
    DirtiedFile, Dirtier, FlushPass, Limits, OffCpu, Pause, Switch, SwitchCounts, Wakeup, WriteCall,
};

/// What a traced run kept: every record, the kernel-side counters, and how many
/// records were lost (the ring buffer was full) or unreadable.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Captured {
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub writes: Vec<WriteCall>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub pauses: Vec<Pause>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub bandwidth: Vec<Bandwidth>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub flushes: Vec<FlushPass>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub offcpu: Vec<OffCpu>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub limits: Vec<Limits>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub switches: Vec<Switch>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub wakeups: Vec<Wakeup>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub dirtiers: Vec<Dirtier>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub counts: Vec<SwitchCounts>,
    /// Each (process, file) pair the first time the process dirtied the file
    /// (with `per_file`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub files: Vec<DirtiedFile>,
    pub lost: u64,
    pub undecoded: u64,
    /// The kernel's tick rate, to turn jiffies into time.
    pub hz: u32,
    /// Bytes per page, to turn the kernel's page counts into bytes.
    #[serde(default = "default_page_size")]
    pub page_size: u64,
}

fn default_page_size() -> u64 {
    4096
}

impl Default for Captured {
    fn default() -> Self {
        Captured {
            writes: Vec::new(),
            pauses: Vec::new(),
            bandwidth: Vec::new(),
            flushes: Vec::new(),
            offcpu: Vec::new(),
            limits: Vec::new(),
            switches: Vec::new(),
            wakeups: Vec::new(),
            dirtiers: Vec::new(),
            counts: Vec::new(),
            files: Vec::new(),
            lost: 0,
            undecoded: 0,
            hz: 0,
            page_size: default_page_size(),
        }
    }
}

impl Captured {
    /// The device's write-bandwidth estimates during the run, bytes per second:
    /// (median of avg_write_bw, median of write_bw, samples), for the bdi named
    /// `bdi` ("7:0").
    pub fn bandwidth_estimate(&self, bdi: &str) -> Option<(f64, f64, usize)> {
        let of: Vec<&Bandwidth> = self.bandwidth.iter().filter(|b| b.bdi == bdi).collect();
        if of.is_empty() {
            return None;
        }
        let bytes = |f: &dyn Fn(&Bandwidth) -> u64| -> f64 {
            let v: Vec<f64> = of.iter().map(|b| (f(b) * self.page_size) as f64).collect();
            oslab_stats::describe::median(&v).unwrap_or(0.0)
        };
        Some((bytes(&|b| b.avg_write_bw), bytes(&|b| b.write_bw), of.len()))
    }
}

/// A run's kernel trace, or why there is none. Experiments keep this in their raw
/// data so a judge knows whether the kernel's account can be asked.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "status")]
pub enum TraceOutcome {
    Traced(Box<Captured>),
    NotAvailable { reason: String },
}

impl TraceOutcome {
    pub fn captured(&self) -> Option<&Captured> {
        match self {
            TraceOutcome::Traced(c) => Some(c),
            TraceOutcome::NotAvailable { .. } => None,
        }
    }

    /// The line experiments put in their notes.
    pub fn note(&self) -> String {
        match self {
            TraceOutcome::Traced(c) if c.lost > 0 => format!(
                "kernel tracing: on, but {} records were lost (the ring buffer was full): \
                 the kernel's figures below are incomplete",
                c.lost
            ),
            TraceOutcome::Traced(_) => "kernel tracing: on (eBPF), no record lost".to_string(),
            TraceOutcome::NotAvailable { reason } => {
                format!("kernel tracing: not available ({reason})")
            }
        }
    }
}

impl Default for TraceOutcome {
    fn default() -> Self {
        TraceOutcome::NotAvailable {
            reason: "not recorded".to_string(),
        }
    }
}

fn percentile(mut v: Vec<u64>, q: f64) -> u64 {
    if v.is_empty() {
        return 0;
    }
    v.sort_unstable();
    let data: Vec<f64> = v.iter().map(|&x| x as f64).collect();
    oslab_stats::describe::quantile_sorted(&data, q).map_or(0, |x| x.round() as u64)
}

/// Per cause, the writes' time (rows in [`Cause::ALL`] order, every cause listed).
pub fn stall_table(writes: &[&WriteCall]) -> Vec<CauseRow> {
    let all: u64 = writes.iter().map(|w| w.dur_ns).sum();
    Cause::ALL
        .iter()
        .map(|&cause| {
            let per: Vec<u64> = writes
                .iter()
                .map(|w| w.time_in(cause))
                .filter(|&x| x > 0)
                .collect();
            let total: u64 = per.iter().sum();
            CauseRow {
                cause,
                writes: per.len(),
                total_ns: total,
                share: if all > 0 {
                    total as f64 / all as f64
                } else {
                    0.0
                },
                max_ns: per.iter().copied().max().unwrap_or(0),
                p99_ns: percentile(per, 0.99),
            }
        })
        .collect()
}

/// The cause that took most of a write's time.
pub fn main_cause(w: &WriteCall) -> Cause {
    Cause::ALL
        .iter()
        .copied()
        .max_by_key(|c| (w.time_in(*c), std::cmp::Reverse(*c as u8)))
        .unwrap_or(Cause::OnCpu)
}

/// Of the time spent in writes at least `over_ns` long, the share each cause
/// took; None when there is no such write.
pub fn shares_over(writes: &[&WriteCall], over_ns: u64) -> Option<BTreeMap<Cause, f64>> {
    let slow: Vec<&WriteCall> = writes
        .iter()
        .copied()
        .filter(|w| w.dur_ns >= over_ns)
        .collect();
    let all: u64 = slow.iter().map(|w| w.dur_ns).sum();
    if slow.is_empty() || all == 0 {
        return None;
    }
    Some(
        Cause::ALL
            .iter()
            .map(|&c| {
                (
                    c,
                    slow.iter().map(|w| w.time_in(c)).sum::<u64>() as f64 / all as f64,
                )
            })
            .collect(),
    )
}

/// Frames that only say "it slept": the first frame past them says why.
const SLEEP_FRAMES: &[&str] = &[
    "__schedule",
    "schedule",
    "schedule_timeout",
    "schedule_hrtimeout_range",
    "schedule_hrtimeout_range_clock",
    "schedule_preempt_disabled",
    "io_schedule",
    "io_schedule_timeout",
    "bit_wait",
    "bit_wait_io",
    "__wait_on_bit",
    "out_of_line_wait_on_bit",
    "__wait_on_bit_lock",
    "preempt_schedule_common",
    "__cond_resched",
];

/// Where a blocked stretch waited: the first frame past the scheduler's own and
/// its caller ("folio_wait_bit_common <- __filemap_get_folio").
pub fn blocker(stack: &[String]) -> String {
    let base = |s: &str| s.split('+').next().unwrap_or(s).to_string();
    let mut frames = stack
        .iter()
        .map(|f| base(f))
        .skip_while(|f| SLEEP_FRAMES.contains(&f.as_str()));
    match (frames.next(), frames.next()) {
        (Some(a), Some(b)) => format!("{a} <- {b}"),
        (Some(a), None) => a,
        _ => "unknown (no kernel stack)".to_string(),
    }
}

/// What a blocked stretch of a read waited for, from its kernel stack:
/// "readahead" while submitting read-ahead I/O (the request queue full, a
/// throttle), "page-cache miss" while waiting for a page being read in (the
/// device); None for anything else (a lock, memory).
pub fn read_wait(stack: &[String]) -> Option<&'static str> {
    let base = |s: &String| s.split('+').next().unwrap_or(s).to_string();
    let frames: Vec<String> = stack.iter().map(base).collect();
    let has = |names: &[&str]| frames.iter().any(|f| names.contains(&f.as_str()));
    if has(&[
        "page_cache_ra_unbounded",
        "page_cache_ra_order",
        "page_cache_sync_ra",
        "page_cache_async_ra",
        "ondemand_readahead",
        "force_page_cache_ra",
        "read_pages",
    ]) {
        Some("readahead")
    } else if has(&[
        "folio_wait_bit_common",
        "__folio_lock_killable",
        "folio_wait_locked",
    ]) && has(&[
        "filemap_get_pages",
        "filemap_update_page",
        "filemap_read",
        "filemap_fault",
    ]) {
        Some("page-cache miss")
    } else {
        None
    }
}

/// Blocked stretches grouped by where they waited, most time first.
pub fn blockers(offcpu: &[&OffCpu]) -> Vec<BlockerRow> {
    let mut by: BTreeMap<String, BlockerRow> = BTreeMap::new();
    for o in offcpu {
        let place = blocker(&o.stack);
        let row = by.entry(place.clone()).or_insert(BlockerRow {
            place,
            count: 0,
            total_ns: 0,
            max_ns: 0,
        });
        row.count += 1;
        row.total_ns += o.dur_ns;
        row.max_ns = row.max_ns.max(o.dur_ns);
    }
    let mut rows: Vec<BlockerRow> = by.into_values().collect();
    rows.sort_by(|a, b| b.total_ns.cmp(&a.total_ns).then(a.place.cmp(&b.place)));
    rows
}

/// The flusher's passes per device and reason.
pub fn flusher_table(passes: &[&FlushPass]) -> Vec<FlushRow> {
    let mut by: BTreeMap<(String, FlushReason), FlushRow> = BTreeMap::new();
    for p in passes {
        let row = by
            .entry((p.bdi.clone(), p.reason))
            .or_insert_with(|| FlushRow {
                bdi: p.bdi.clone(),
                reason: p.reason,
                passes: 0,
                pages: 0,
                busy_ns: 0,
            });
        row.passes += 1;
        row.pages += p.pages;
        row.busy_ns += p.end_ns.saturating_sub(p.start_ns);
    }
    by.into_values().collect()
}

/// The newest bandwidth estimate of each device.
pub fn latest_bandwidth(bw: &[&Bandwidth]) -> Vec<Bandwidth> {
    let mut by: BTreeMap<String, Bandwidth> = BTreeMap::new();
    for b in bw {
        match by.get(&b.bdi) {
            Some(old) if old.ts_ns > b.ts_ns => {}
            _ => {
                by.insert(b.bdi.clone(), (*b).clone());
            }
        }
    }
    by.into_values().collect()
}

/// Flusher passes that follow each other within `gap_ns` form one episode:
/// (start, end, pages, reason of the first pass).
pub fn episodes(passes: &[&FlushPass], gap_ns: u64) -> Vec<(u64, u64, u64, FlushReason)> {
    let mut sorted: Vec<&FlushPass> = passes.to_vec();
    sorted.sort_by_key(|p| p.start_ns);
    let mut out: Vec<(u64, u64, u64, FlushReason)> = Vec::new();
    for p in sorted {
        if p.pages == 0 {
            continue;
        }
        match out.last_mut() {
            Some(last) if p.start_ns <= last.1.saturating_add(gap_ns) => {
                last.1 = last.1.max(p.end_ns);
                last.2 = last.2.saturating_add(p.pages);
            }
            _ => out.push((p.start_ns, p.end_ns, p.pages, p.reason)),
        }
    }
    out
}

/// A thread's switches out inside (from, to), counted as getrusage counts them:
/// (voluntary, involuntary).
pub fn switches_between(switches: &[Switch], tid: u32, from: u64, to: u64) -> (u64, u64) {
    switches
        .iter()
        .filter(|s| s.prev_pid == tid && s.ts_ns > from && s.ts_ns < to)
        .fold((0, 0), |(v, i), s| {
            if s.prev_runnable {
                (v, i + 1)
            } else {
                (v + 1, i)
            }
        })
}

/// Turns the kernel's jiffies into nanoseconds.
pub fn jiffies_ns(jiffies: i64, hz: u32) -> i64 {
    if hz == 0 {
        return 0;
    }
    jiffies.saturating_mul(1_000_000_000) / hz as i64
}

/// The kernel's tick rate from the pauses' jiffies and clock, when the caller
/// does not know it: the common rate nearest to what two pauses at least 200 ms
/// apart show.
pub fn hz_from_pauses(pauses: &[Pause]) -> Option<u32> {
    let first = pauses.iter().min_by_key(|p| p.ts_ns)?;
    let last = pauses.iter().max_by_key(|p| p.ts_ns)?;
    let dt = last.ts_ns.checked_sub(first.ts_ns)?;
    if dt < 200_000_000 || last.jiffies < first.jiffies {
        return None;
    }
    let rate = (last.jiffies - first.jiffies) as f64 / (dt as f64 / 1e9);
    [100u32, 250, 300, 1000].into_iter().min_by(|a, b| {
        (f64::from(*a) - rate)
            .abs()
            .total_cmp(&(f64::from(*b) - rate).abs())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(dur: u64, throttle: u64, wbwait: u64, blocked: u64, runq: u64) -> WriteCall {
        WriteCall {
            pid: 7,
            tgid: 7,
            call: "write".into(),
            fd: 3,
            count: 524288,
            ret: 524288,
            start_ns: 0,
            dur_ns: dur,
            throttle_ns: throttle,
            wbwait_ns: wbwait,
            blocked_ns: blocked,
            runq_ns: runq,
            pauses: u32::from(throttle > 0),
            prio: 44,

            ..WriteCall::default()
        }
    }

    #[test]
    fn a_reads_wait_is_told_from_its_stack() {
        let stack = |names: &[&str]| names.iter().map(|n| n.to_string()).collect::<Vec<_>>();
        let miss = stack(&[
            "__schedule",
            "io_schedule",
            "folio_wait_bit_common+0x13c",
            "filemap_get_pages",
            "filemap_read",
            "vfs_read",
        ]);
        assert_eq!(read_wait(&miss), Some("page-cache miss"));
        let ra = stack(&[
            "__schedule",
            "io_schedule",
            "blk_mq_get_tag",
            "submit_bio_noacct_nocheck",
            "read_pages",
            "page_cache_ra_unbounded",
            "filemap_get_pages",
        ]);
        assert_eq!(read_wait(&ra), Some("readahead"));
        let lock = stack(&[
            "__schedule",
            "rwsem_down_read_slowpath",
            "ext4_file_read_iter",
        ]);
        assert_eq!(read_wait(&lock), None);
    }

    #[test]
    fn the_stall_table_splits_time_by_cause_and_sums_to_the_whole() {
        let ws = [
            write(40_000_000, 36_000_000, 0, 0, 1_000_000),
            write(30_000_000, 0, 20_000_000, 5_000_000, 0),
            write(200_000, 0, 0, 0, 0),
        ];
        let refs: Vec<&WriteCall> = ws.iter().collect();
        let rows = stall_table(&refs);
        assert_eq!(rows.len(), 5);
        let row = |c: Cause| rows.iter().find(|r| r.cause == c).unwrap();
        assert_eq!(row(Cause::DirtyThrottle).writes, 1);
        assert_eq!(row(Cause::DirtyThrottle).total_ns, 36_000_000);
        assert_eq!(row(Cause::WritebackWait).max_ns, 20_000_000);
        // on CPU: 3 ms + 5 ms + 0.2 ms
        assert_eq!(row(Cause::OnCpu).total_ns, 8_200_000);
        let share: f64 = rows.iter().map(|r| r.share).sum();
        assert!((share - 1.0).abs() < 1e-9);
    }

    #[test]
    fn shares_count_only_slow_writes() {
        let ws = [
            write(40_000_000, 38_000_000, 0, 0, 0),
            write(10_000_000, 0, 0, 9_000_000, 0),
        ];
        let refs: Vec<&WriteCall> = ws.iter().collect();
        let s = shares_over(&refs, 20_000_000).unwrap();
        assert!((s[&Cause::DirtyThrottle] - 0.95).abs() < 1e-9);
        assert_eq!(s[&Cause::Blocked], 0.0);
        assert!(shares_over(&refs, 50_000_000).is_none());
        assert_eq!(main_cause(&ws[0]), Cause::DirtyThrottle);
        assert_eq!(main_cause(&ws[1]), Cause::Blocked);
    }

    #[test]
    fn a_blocker_is_named_past_the_scheduler_frames() {
        let stack: Vec<String> = [
            "__schedule+0x3f0",
            "schedule+0x27",
            "io_schedule+0x46",
            "folio_wait_bit_common+0x13c",
            "__filemap_get_folio+0x1f",
            "ext4_write_begin+0x88",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        assert_eq!(
            blocker(&stack),
            "folio_wait_bit_common <- __filemap_get_folio"
        );
        assert_eq!(blocker(&[]), "unknown (no kernel stack)");
        let o = |d| OffCpu {
            pid: 1,
            tgid: 1,
            call: "write".into(),
            start_ns: 0,
            dur_ns: d,
            stack: stack.clone(),
        };
        let (a, b) = (o(5), o(7));
        let rows = blockers(&[&a, &b]);
        assert_eq!(rows.len(), 1);
        assert_eq!(
            (rows[0].count, rows[0].total_ns, rows[0].max_ns),
            (2, 12, 7)
        );
    }

    #[test]
    fn flusher_passes_close_together_form_one_episode() {
        let p = |s, e, pages| FlushPass {
            start_ns: s,
            end_ns: e,
            bdi_id: 1,
            bdi: "7:0".into(),
            reason: FlushReason::Background,
            pages,
            avg_write_bw: 0,
            write_bw: 0,
            dirty_ratelimit: 0,
        };
        let ps = [
            p(0, 10, 100),
            p(12, 20, 50),
            p(1000, 1010, 25),
            p(1011, 1012, 0),
        ];
        let refs: Vec<&FlushPass> = ps.iter().collect();
        let eps = episodes(&refs, 5);
        assert_eq!(eps.len(), 2);
        assert_eq!((eps[0].0, eps[0].1, eps[0].2), (0, 20, 150));
        assert_eq!(eps[1].2, 25);
        let rows = flusher_table(&refs);
        assert_eq!(rows.len(), 1);
        assert_eq!(
            (rows[0].passes, rows[0].pages, rows[0].busy_ns),
            (4, 175, 29)
        );
    }

    #[test]
    fn the_tick_rate_is_read_off_two_pauses() {
        let p = |ts: u64, jiffies: u64| Pause {
            ts_ns: ts,
            jiffies,
            ..crate::records::tests::pause()
        };
        assert_eq!(
            hz_from_pauses(&[p(0, 1000), p(2_000_000_000, 1501)]),
            Some(250)
        );
        assert_eq!(
            hz_from_pauses(&[p(0, 1000), p(1_000_000_000, 1998)]),
            Some(1000)
        );
        assert_eq!(hz_from_pauses(&[p(0, 1000), p(100_000_000, 1025)]), None);
        assert_eq!(hz_from_pauses(&[]), None);
    }

    #[test]
    fn switches_count_inside_the_window_by_kind() {
        let sw = |ts, pid, runnable| Switch {
            ts_ns: ts,
            cpu: 0,
            prev_pid: pid,
            prev_tgid: pid,
            next_pid: 99,
            next_tgid: 99,
            prev_prio: 120,
            next_prio: 120,
            prev_runnable: runnable,
        };
        let s = [
            sw(5, 1, false),
            sw(10, 1, false),
            sw(20, 1, true),
            sw(30, 2, false),
            sw(40, 1, false),
        ];
        assert_eq!(switches_between(&s, 1, 5, 40), (1, 1));
        assert_eq!(switches_between(&s, 1, 0, 100), (3, 1));
        assert_eq!(switches_between(&s, 2, 0, 100), (1, 0));
    }

    #[test]
    fn jiffies_turn_into_time_at_the_kernels_rate() {
        assert_eq!(jiffies_ns(25, 250), 100_000_000);
        assert_eq!(jiffies_ns(1, 1000), 1_000_000);
        assert_eq!(jiffies_ns(5, 0), 0);
    }

    #[test]
    fn an_outcome_says_in_a_note_whether_the_kernel_was_asked() {
        let off = TraceOutcome::NotAvailable {
            reason: "needs root".into(),
        };
        assert_eq!(off.note(), "kernel tracing: not available (needs root)");
        let lost = TraceOutcome::Traced(Box::new(Captured {
            lost: 3,
            ..Captured::default()
        }));
        assert!(lost.note().contains("3 records were lost"));
        let json = serde_json::to_string(&off).unwrap();
        let back: TraceOutcome = serde_json::from_str(&json).unwrap();
        assert_eq!(back, off);
    }
}
