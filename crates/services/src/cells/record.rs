//! What one cell (policy x scenario x run) of writers on the testbed gave: every
//! writer's timed writes, the poller's readings, the governor's table and
//! account, the kernel's trace. wb.wcall records its cells so, and sim.validate
//! records its real cells the same way.

use oslab_wbsim::policy::Policy;
use serde::{Deserialize, Serialize};

use crate::timed_writer::{Poll, WriterTrace};

pub const SCENARIO_NAMES: &[&str] = &["alone", "rt45x2", "bulkx2", "fig7-nice4"];
pub const POLICY_NAMES: &[&str] = &["vanilla", "wcall", "wcall-fair"];
pub const START_NAMES: &[&str] = &["late", "together"];

/// Bytes per write() of every writer.
pub const CHUNK: u64 = 512 << 10;
/// The periodic writers' period.
pub const PERIOD_MS: f64 = 20.0;
pub const POLICIES: [Policy; 3] = [Policy::Vanilla, Policy::Wcall, Policy::WcallFair];

/// Who writes beside the RT-55 writer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Scenario {
    #[serde(rename = "alone")]
    Alone,
    #[serde(rename = "rt45x2")]
    RtLow,
    #[serde(rename = "bulkx2")]
    Bulk,
    /// The paper's Fig. 7: one nice-4 writer, no competition.
    #[serde(rename = "fig7-nice4")]
    Fig7,
}

impl Scenario {
    pub const ALL: [Scenario; 4] = [
        Scenario::Alone,
        Scenario::RtLow,
        Scenario::Bulk,
        Scenario::Fig7,
    ];
    /// The scenarios with competitors beside the RT-55 writer.
    pub const CONTESTED: [Scenario; 2] = [Scenario::RtLow, Scenario::Bulk];

    pub fn name(self) -> &'static str {
        match self {
            Scenario::Alone => SCENARIO_NAMES[0],
            Scenario::RtLow => SCENARIO_NAMES[1],
            Scenario::Bulk => SCENARIO_NAMES[2],
            Scenario::Fig7 => SCENARIO_NAMES[3],
        }
    }

    pub fn parse(name: &str) -> Option<Scenario> {
        Scenario::ALL.into_iter().find(|s| s.name() == name)
    }
}

/// When the competitors start.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Start {
    /// `head_start` seconds before the high writer: it arrives into a full cache.
    Late,
    #[default]
    Together,
}

impl Start {
    pub fn name(self) -> &'static str {
        match self {
            Start::Late => START_NAMES[0],
            Start::Together => START_NAMES[1],
        }
    }

    pub fn parse(name: &str) -> Option<Start> {
        [Start::Late, Start::Together]
            .into_iter()
            .find(|s| s.name() == name)
    }
}

/// One writer, named as its process was (`rt55`, `rt45-a`, `bulk-b`, ...): its
/// writes where it timed them (or the kernel's trace did), what of its file reached
/// the device while the first writer wrote, and whether every byte arrived.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct WriterRaw {
    pub name: String,
    pub trace: WriterTrace,
    /// Bytes of its file written back to the device over the first writer's span.
    #[serde(default)]
    pub device_bytes: Option<u64>,
    #[serde(default)]
    pub content: Content,
}

/// The check of a writer's file after the cell.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "state", content = "detail")]
pub enum Content {
    /// Every byte it wrote is there, as written.
    Intact,
    Wrong(String),
    #[default]
    NotChecked,
}

/// A group's dirty + writeback bytes and its limit (None: no limit) at one poll.
pub type GroupPoint = (u64, Option<u64>);

/// The governor's table at one poll: time, and per group (rt-high, rt-low,
/// normal) dirty + writeback and limit.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct GroupPoll {
    pub t_s: f64,
    pub groups: Vec<GroupPoint>,
}

/// What the governor counted for one group over a cell.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct GroupCount {
    pub group: String,
    pub writes: u64,
    pub delayed_writes: u64,
    pub held_ms: f64,
}

/// The governor's own account of a cell, read when it finished.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct GovernorRaw {
    pub passes: u64,
    pub pass_mean_us: f64,
    pub pass_max_us: f64,
    /// The coordinator thread's CPU time over its life, percent of one CPU.
    #[serde(default)]
    pub cpu_percent: f64,
    pub groups: Vec<GroupCount>,
}

/// What one cell (policy x scenario x run) gave. The first writer is the one the
/// claims are about (RT-55, or the nice-4 writer of Fig. 7).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Cell {
    pub policy: Policy,
    pub scenario: Scenario,
    pub run: usize,
    #[serde(default)]
    pub start: Start,
    pub writers: Vec<WriterRaw>,
    pub polls: Vec<Poll>,
    /// Empty under vanilla (no governor).
    pub groups: Vec<GroupPoll>,
    pub governor: Option<GovernorRaw>,
    /// The kernel's account of the cell: the first writer's write() calls split
    /// by cause, every writer's throttling decisions, the bandwidth estimates.
    #[serde(default)]
    pub kernel: oslab_trace::TraceOutcome,
    /// When the governor's daemon was SIGKILLed on purpose (kill_coordinator).
    #[serde(default)]
    pub coordinator_killed_at_s: Option<f64>,
}

impl Cell {
    pub fn first(&self) -> &WriterTrace {
        static NONE: WriterTrace = WriterTrace {
            start_s: Vec::new(),
            latency_ms: Vec::new(),
            bytes: 0,
            error: None,
            tid: 0,
            tgid: 0,
        };
        self.writers.first().map_or(&NONE, |w| &w.trace)
    }

    /// The first writer's span, seconds: from its first write to one period after
    /// its last.
    pub fn span_s(&self) -> f64 {
        let t = &self.first().start_s;
        match (t.first(), t.last()) {
            (Some(a), Some(b)) => b - a + PERIOD_MS / 1000.0,
            _ => 0.0,
        }
    }

    /// When the cell's last write (of any writer) ended, s from the writers' start.
    pub fn last_write_end_s(&self) -> f64 {
        self.writers
            .iter()
            .filter_map(|w| {
                let i = w.trace.start_s.len().checked_sub(1)?;
                Some(w.trace.start_s[i] + w.trace.latency_ms[i] / 1e3)
            })
            .fold(0.0, f64::max)
    }

    /// Bytes per second of the competitors' files that reached the device while
    /// the first writer wrote (measured at the device: each file's size less its
    /// dirty and writeback pages). None when that was not measured.
    pub fn competitors_bytes_s(&self) -> Option<f64> {
        let span = self.span_s();
        let bytes: Option<u64> = self.writers.iter().skip(1).map(|w| w.device_bytes).sum();
        (span > 0.0).then_some(bytes? as f64 / span)
    }

    /// What the device leaves the competitors, bytes per second: its measured
    /// bandwidth less what reached it of the first writer's file over its span
    /// (else the first writer's rate, 512 KiB every 20 ms).
    pub fn left_for_competitors(&self, device_bytes_s: f64) -> f64 {
        let span = self.span_s();
        let high = match self.writers.first().and_then(|w| w.device_bytes) {
            Some(b) if span > 0.0 => b as f64 / span,
            _ => CHUNK as f64 / (PERIOD_MS / 1000.0),
        };
        (device_bytes_s - high).max(0.0)
    }

    /// The highest Dirty + Writeback the poller saw.
    pub fn peak_dirty_writeback(&self) -> u64 {
        self.polls
            .iter()
            .map(|p| p.dirty_bytes + p.writeback_bytes)
            .max()
            .unwrap_or(0)
    }
}
