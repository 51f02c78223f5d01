//! The kernel's account of a cell: the database server's slowest calls (a
//! commit's fdatasync, a checkpoint's fsync, a backend's write of an evicted
//! buffer), each split by the write-back tracer into what it waited for, with the
//! kernel function it was blocked in longest. pgbench's log says how long commits
//! took; this says where the server's time went meanwhile.

use std::time::Duration;

use oslab_trace::TraceOutcome;
use oslab_trace::analysis::{blocker, main_cause};
use oslab_trace::records::{OffCpu, WriteCall};
use serde::{Deserialize, Serialize};

/// Calls at least this long are recorded.
pub const TRACED_FROM: Duration = Duration::from_millis(50);
/// A call longer than this is counted as slow (the claim's bound on commits).
pub const SLOW_MS: f64 = 200.0;
/// How many of the slowest calls each cell keeps.
const KEPT: usize = 5;
/// The server's processes, by the name the kernel gives their threads.
const SERVER_COMM: &str = "postgres";

/// One slow call of the server, by the kernel's account.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SlowCall {
    pub call: String,
    /// When it began, in seconds from the start of the cell's pgbench (negative:
    /// while the server started); None in runs recorded before it was kept.
    #[serde(default)]
    pub at_s: Option<f64>,
    /// The file's last path component, where the call named one.
    pub file: String,
    pub ms: f64,
    /// The main cause's label (docs/tracing.md).
    pub cause: String,
    pub throttle_ms: f64,
    pub writeback_wait_ms: f64,
    pub blocked_ms: f64,
    pub run_queue_ms: f64,
    /// Where it was blocked longest ("wait_for_completion_io_timeout <-
    /// submit_bio_wait"), or empty when it never was.
    pub blocked_in: String,
}

/// What the tracer saw of the server in one cell.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Account {
    /// Why there is no account (no eBPF here, not root, ...), or None.
    pub not_traced: Option<String>,
    /// The server's calls over [`SLOW_MS`].
    pub calls_over_slow: u64,
    /// The same calls counted by call and kind of file ("fsync of a new WAL
    /// segment"), most first.
    #[serde(default)]
    pub over_slow_by_kind: Vec<(String, u64)>,
    /// The slowest of them (at least [`TRACED_FROM`]), slowest first.
    pub slowest: Vec<SlowCall>,
    /// Records the tracer lost (its ring buffer was full): the counts above may
    /// be short by as many calls.
    #[serde(default)]
    pub lost: u64,
}

fn ms(ns: u64) -> f64 {
    ns as f64 / 1e6
}

/// Amounts summed by key, the largest first (ties by key).
pub fn tally(items: impl IntoIterator<Item = (String, u64)>) -> Vec<(String, u64)> {
    let mut by = std::collections::BTreeMap::new();
    for (k, n) in items {
        let sum: &mut u64 = by.entry(k).or_insert(0);
        *sum = sum.saturating_add(n);
    }
    let mut v: Vec<(String, u64)> = by.into_iter().collect();
    v.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    v
}

/// Where the call `w` was blocked longest, from the sleeps of its thread inside it.
fn blocked_longest(w: &WriteCall, offcpu: &[OffCpu]) -> String {
    let end = w.start_ns + w.dur_ns;
    let sleeps = offcpu
        .iter()
        .filter(|o| o.pid == w.pid && o.start_ns >= w.start_ns && o.start_ns < end)
        .map(|o| (blocker(&o.stack), o.dur_ns));
    tally(sleeps)
        .into_iter()
        .next()
        .map(|(p, _)| p)
        .unwrap_or_default()
}

/// The server's slow calls in `outcome`; `start_ns` is when the cell's pgbench
/// began on CLOCK_MONOTONIC (the tracer's clock).
pub fn account(outcome: &TraceOutcome, start_ns: u64) -> Account {
    let Some(c) = outcome.captured() else {
        return Account {
            not_traced: Some(outcome.note()),
            calls_over_slow: 0,
            over_slow_by_kind: Vec::new(),
            slowest: Vec::new(),
            lost: 0,
        };
    };
    let mut server: Vec<&WriteCall> = c.writes.iter().filter(|w| w.comm == SERVER_COMM).collect();
    server.sort_by(|a, b| b.dur_ns.cmp(&a.dur_ns).then(a.start_ns.cmp(&b.start_ns)));
    let slow_ns = (SLOW_MS * 1e6) as u64;
    let slow: Vec<&&WriteCall> = server.iter().filter(|w| w.dur_ns > slow_ns).collect();
    Account {
        not_traced: None,
        calls_over_slow: slow.len() as u64,
        lost: c.lost,
        over_slow_by_kind: tally(
            slow.iter()
                .map(|w| (format!("{} of {}", w.call, file_kind(&w.file_name)), 1)),
        ),
        slowest: server
            .iter()
            .take(KEPT)
            .map(|w| SlowCall {
                call: w.call.clone(),
                at_s: Some((w.start_ns as f64 - start_ns as f64) / 1e9),
                file: w.file_name.clone(),
                ms: ms(w.dur_ns),
                cause: main_cause(w).label().to_string(),
                throttle_ms: ms(w.throttle_ns),
                writeback_wait_ms: ms(w.wbwait_ns),
                blocked_ms: ms(w.blocked_ns),
                run_queue_ms: ms(w.runq_ns),
                blocked_in: blocked_longest(w, &c.offcpu),
            })
            .collect(),
    }
}

/// The kind [`file_kind`] gives a WAL segment being made.
pub const NEW_SEGMENT: &str = "a new WAL segment";

/// What a file of a PostgreSQL cluster is, by its name: a WAL segment is 24 hex
/// digits; a new one is filled with zeros and fsynced as `xlogtemp.PID` before it
/// is renamed; a table's or index's file is its number (with `.N`, `_fsm` or
/// `_vm` after it).
pub fn file_kind(name: &str) -> &'static str {
    let digits = name.split(['.', '_']).next().unwrap_or("");
    if name.starts_with("xlogtemp.") {
        NEW_SEGMENT
    } else if name.len() == 24 && name.chars().all(|c| c.is_ascii_hexdigit()) {
        "a WAL segment"
    } else if !digits.is_empty() && digits.chars().all(|c| c.is_ascii_digit()) {
        "a table or index"
    } else if name.is_empty() {
        "no file"
    } else {
        "another file"
    }
}

impl SlowCall {
    /// "fdatasync of 000000010000000000000003, 612 ms at 12.5 s: write-back wait
    /// 410 ms, blocked 190 ms (blocked in wait_for_completion_io_timeout <-
    /// submit_bio_wait)".
    pub fn describe(&self) -> String {
        let mut parts = Vec::new();
        for (label, v) in [
            ("dirty throttle", self.throttle_ms),
            ("write-back wait", self.writeback_wait_ms),
            ("blocked", self.blocked_ms),
            ("run queue", self.run_queue_ms),
        ] {
            if v >= 1.0 {
                parts.push(format!("{label} {v:.0} ms"));
            }
        }
        let mut s = self.call.clone();
        if !self.file.is_empty() {
            s.push_str(&format!(" of {}", self.file));
        }
        s.push_str(&format!(", {:.0} ms", self.ms));
        if let Some(at) = self.at_s {
            s.push_str(&format!(" at {at:.1} s"));
        }
        if !parts.is_empty() {
            s.push_str(&format!(": {}", parts.join(", ")));
        }
        if !self.blocked_in.is_empty() {
            s.push_str(&format!(" (blocked in {})", self.blocked_in));
        }
        s
    }
}
