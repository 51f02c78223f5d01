//! What a run produced.

use serde::{Deserialize, Serialize};

/// What one writer experienced.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct WriterResult {
    pub name: String,
    pub group: String,
    /// Time each write() was issued, s.
    pub issue_s: Vec<f64>,
    /// How long each write() took, ms.
    pub latency_ms: Vec<f64>,
    /// Of that, asleep in the kernel's dirty throttling, ms (linux-6).
    #[serde(default)]
    pub throttled_ms: Vec<f64>,
    /// Of that, held back by the policy before the write, ms.
    #[serde(default)]
    pub held_ms: Vec<f64>,
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

/// One sleep of a writer in balance_dirty_pages (the tracepoint's pause > 0).
#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize)]
pub struct PauseRecord {
    pub t_s: f64,
    pub writer: usize,
    /// The pause the kernel decided, ticks, and what that is in ms.
    pub pause_ticks: u64,
    pub pause_ms: f64,
    pub period_ticks: u64,
    pub pages: u64,
}

/// One refresh of the device's rate estimates (the bdi_dirty_ratelimit
/// tracepoint), bytes per second.
#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize)]
pub struct RatelimitRecord {
    pub t_s: f64,
    pub dirty_ratelimit: f64,
    pub balanced_dirty_ratelimit: f64,
    pub task_ratelimit: f64,
    pub dirty_rate: f64,
    pub write_bw: f64,
    pub avg_write_bw: f64,
}

/// Why the flusher wrote (the writeback_start tracepoint's reason, the two the
/// model has).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FlushKind {
    /// Expired inodes (wb_check_old_data_flush), or everything dirty after a
    /// wake-up of the flushers for that reason (wakeup_flusher_threads).
    Periodic,
    /// Over the background limit (wb_check_background_flush).
    #[default]
    Background,
}

/// One run of the flusher's work for one reason: the pages it put under write
/// back and the device's estimate when it began. The kernel's writeback_written
/// tracepoint fires once per loop of wb_writeback, so one record may stand for
/// several of the kernel's passes within an instant; episodes (passes less than
/// 100 ms apart) compare alike.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct FlushRecord {
    pub t_s: f64,
    pub kind: FlushKind,
    pub pages: u64,
    /// avg_write_bandwidth when the pass began, bytes per second.
    pub avg_write_bw: f64,
}

/// Everything a run produced.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Outcome {
    pub writers: Vec<WriterResult>,
    pub samples: Vec<Sample>,
    #[serde(default)]
    pub pauses: Vec<PauseRecord>,
    #[serde(default)]
    pub ratelimits: Vec<RatelimitRecord>,
    /// The flusher's passes that wrote pages.
    #[serde(default)]
    pub flushes: Vec<FlushRecord>,
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
    /// Where the run's estimates came from.
    #[serde(default)]
    pub start: StartRecord,
    /// The device's estimates when the run ended.
    #[serde(default)]
    pub end_estimates: crate::config::Initial,
}

/// The estimates a run started from, bytes per second, and how they were found.
#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize)]
pub struct StartRecord {
    pub start: crate::config::Start,
    /// Simulated seconds of warm-up before the run (0 for a given start).
    pub warm_up_s: f64,
    /// The estimates stopped moving within the warm-up.
    pub settled: bool,
    /// Events the warm-up simulated (not in the outcome's `events`).
    #[serde(default)]
    pub warm_up_events: u64,
    pub write_bw: f64,
    pub avg_write_bw: f64,
    pub dirty_ratelimit: f64,
    /// A live start: simulated seconds under the writers until the estimates
    /// settle from where the run began (None: not within the warm-up's bound, or
    /// not a live start).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub steady_after_s: Option<f64>,
}

impl Outcome {
    /// The highest Dirty + Writeback of the samples, bytes.
    pub fn peak_dirty_writeback(&self) -> u64 {
        self.samples
            .iter()
            .map(|s| s.dirty + s.writeback)
            .max()
            .unwrap_or(0)
    }
}
