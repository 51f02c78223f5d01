//! `wb.database`: a real database's commits beside a bulk copy on the same disk,
//! alone, beside the copy with no governor, and under `oslab wcall daemon` with
//! its defaults (PostgreSQL as rt-high, the copy as normal: the sync guard acts
//! on PostgreSQL's own fdatasyncs).
//!
//! What: PostgreSQL from the distribution, as shipped (its own user, started with
//! pg_ctl, its data and WAL on the testbed's file system, no setting changed),
//! `pgbench -N -c 2 -j 2` at scale 10 with `--log`, and `dd if=/dev/zero bs=1M`
//! to the same file system for the whole run, on the testbed (a loop device
//! throttled to 40 MiB/s, dirty_bytes 64 MiB, background 32 MiB). Latencies are
//! pgbench's own, from its log; the copy's bytes are its file's size after a final
//! sync; the device's bytes are its diskstats. After each cell the data is
//! checked: a history row per transaction, the balances against the history,
//! amcheck's bt_index_check on every pgbench index, and every byte of the copy.
//!
//! Method: per run five cells, each with the server restarted (under the
//! governor for the governed cells, started by root through `oslab wcall run
//! --group rt-high -- runuser -u postgres -- ... pg_ctl start`, as a service would
//! be), the copy (in the vanilla and governed cells) started with pgbench and
//! stopped when it ends, then a sync. After the governed cell the server is
//! restarted with no governor and no copy ("restarted": right after a cell with
//! the copy, as the governed cell is, so its slow first commits are the server's
//! own start-up, which the governed cell is not blamed for), then once more under
//! the governor with no copy ("governed-alone": what the governor costs). No
//! warm-up and no cache drop: the database keeps its state from cell to cell, as a
//! server does. It is not in a quick run of `all` (minutes of a real database);
//! `--quick` when named runs one run of 20 s cells.
//!
//! Pitfalls: pgbench empties pgbench_history before each run, so the balances are
//! checked against the change of sum(abalance) over the cell. The database's own
//! write back (backends evicting dirty buffers, checkpoints) goes through the
//! flusher unguarded, and under the guard out on the governor's unpaced lane; a
//! new WAL segment (16 MiB written and fsynced under the WAL write lock) stalls
//! its commits either way, alone too (commits of 300-700 ms seen here with no copy
//! at all): the claims compare with the same run's alone cell. blk-throttle, the testbed's device, holds a request
//! that finds its budget spent to the end of a 100 ms slice, which a real disk does
//! not. The copy is of /dev/zero: its check also requires no hole in the file.
//!
//! References: docs/wcall.md ("The sync guard"); issue 31; PostgreSQL's pgbench
//! documentation (the per-transaction log's third field is the latency in µs).

mod account;
pub mod guard_log;
mod judge;
mod measure;
mod server;

use oslab_model::Environment;
use serde::{Deserialize, Serialize};

use crate::settings::{AnySetting, Count, Declared, Seconds, Setting, SizeOrAuto};
use oslab_harness::{Context, LabError, Meta, Needs, Output};
use oslab_harness::{Experiment, Measured, Planner};
use oslab_services::cells::settings::BANDWIDTH;

pub struct Database;

pub(crate) static META: Meta = Meta {
    id: "wb.database",
    title: "A database's commits beside a bulk copy, with and without the sync guard",
    section: "7",
    summary: "PostgreSQL pgbench commits alone, beside dd, and under oslab wcall daemon's defaults: p99, max, the copy's share, no byte lost",
    needs: Needs {
        root: true,
        min_cpus: 1,
        free_disk_bytes: 0,
    },
    quick_s: 120.0,
    full_s: 1200.0,
    internal: false,
    full_lab_only: true,
};

static DURATION: Setting<Seconds> = Setting {
    name: "duration",
    help: "seconds of pgbench per cell",
    quick: 20.0,
    full: 60.0,
    bounds: Some((5.0, 3600.0)),
    names: &[],
};
static RUNS: Setting<Count> = Setting {
    name: "runs",
    help: "repetitions of the five cells (alone, vanilla, governed, restarted, governed-alone)",
    quick: 1,
    full: 5,
    bounds: Some((1, 20)),
    names: &[],
};
static SCALE: Setting<Count> = Setting {
    name: "scale",
    help: "pgbench's scale factor (100,000 accounts each)",
    quick: 10,
    full: 10,
    bounds: Some((1, 1000)),
    names: &[],
};
static SYNC_GUARD: Setting<SizeOrAuto> = Setting {
    name: "sync_guard",
    help: "the governor's sync guard in the governed cells: auto (its default) or a fixed size, to compare",
    quick: 0,
    full: 0,
    bounds: Some((0, 256 << 20)),
    names: &[],
};
static SETTINGS: [&dyn AnySetting; 5] = [&DURATION, &RUNS, &SCALE, &BANDWIDTH, &SYNC_GUARD];

/// dirty_bytes and dirty_background_bytes during the run.
pub const DIRTY: u64 = 64 << 20;
pub const BACKGROUND: u64 = 32 << 20;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Plan {
    pub duration: f64,
    pub runs: u64,
    /// The sync guard's size given to the governor (`--sync-guard SIZE`), as
    /// runs before the guard was on by default did; None: the governor's
    /// defaults, the guard `auto`.
    #[serde(default)]
    pub guard: Option<u64>,
    pub scale: u64,
    pub bandwidth: u64,
}

/// The cells of a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Mode {
    /// PostgreSQL alone.
    Alone,
    /// Beside the copy, no governor.
    Vanilla,
    /// Beside the copy, under the governor with its defaults.
    Governed,
    /// Alone again, restarted with no governor right after a cell with the copy,
    /// as the governed cell is: the server's own first seconds after a restart.
    Restarted,
    /// Alone, under the governor: what the governor costs with no copy beside.
    GovernedAlone,
}

impl Mode {
    /// In the order a run measures them (runs recorded before the restarted and
    /// governed-alone cells have the first three).
    pub const ALL: [Mode; 5] = [
        Mode::Alone,
        Mode::Vanilla,
        Mode::Governed,
        Mode::Restarted,
        Mode::GovernedAlone,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Mode::Alone => "alone",
            Mode::Vanilla => "vanilla",
            Mode::Governed => "governed",
            Mode::Restarted => "restarted",
            Mode::GovernedAlone => "governed-alone",
        }
    }

    /// The cell runs the copy beside the database.
    pub fn with_copy(self) -> bool {
        matches!(self, Mode::Vanilla | Mode::Governed)
    }

    /// The server runs under the governor.
    pub fn governed(self) -> bool {
        matches!(self, Mode::Governed | Mode::GovernedAlone)
    }
}

/// What the data looked like after a cell.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DataCheck {
    /// Rows of pgbench_history (pgbench empties it before each run).
    pub history_rows: u64,
    /// sum(abalance) moved by exactly sum(delta) of the history.
    pub balances_match: bool,
    /// pgbench indexes bt_index_check went through without an error.
    pub indexes_checked: u64,
    /// The copy's bytes all read back as written (None: no copy in this cell).
    pub copy_intact: Option<bool>,
}

/// One cell, raw.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CellRaw {
    pub run: u64,
    pub mode: Mode,
    /// Each commit latency pgbench logged (µs) with how many had it, ascending.
    pub latency_counts: Vec<(u64, u64)>,
    /// pgbench's "number of transactions actually processed".
    pub transactions: u64,
    /// From the copy's start (the cell's start) to the end of the final sync, s.
    pub span_s: f64,
    /// Bytes written to the testbed's device over the span (diskstats).
    pub device_bytes: u64,
    /// The copy's file size after the final sync.
    pub copy_bytes: u64,
    pub data: DataCheck,
    /// CPU time the hypervisor stole over the cell, percent.
    pub steal_pct: f64,
    /// The kernel's account of the server's slowest calls over the cell (None in
    /// runs recorded before it was kept).
    #[serde(default)]
    pub kernel: Option<account::Account>,
    /// The sync guard as the governor chose it while pgbench ran (governed
    /// cells; empty in the others and in runs recorded before it was kept).
    #[serde(default)]
    pub guard: Vec<guard_log::GuardChange>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Raw {
    pub postgres: String,
    pub testbed_device: String,
    /// How the testbed's bandwidth was capped (v1 blkio in runs recorded before v2).
    #[serde(default)]
    pub testbed_cap: oslab_services::testbed::Cap,
    pub testbed_measured_bytes_s: f64,
    pub cells: Vec<CellRaw>,
    pub teardown_errors: Vec<String>,
}

impl Experiment for Database {
    type Plan = Plan;
    type Raw = Raw;

    fn meta(&self) -> &Meta {
        &META
    }

    fn settings(&self) -> Declared {
        &SETTINGS
    }

    fn plan(&self, p: &mut Planner) -> Plan {
        Plan {
            duration: p.get(&DURATION),
            runs: p.get(&RUNS),
            guard: Some(p.get(&SYNC_GUARD)).filter(|b| *b > 0),
            scale: p.get(&SCALE),
            bandwidth: p.get(&BANDWIDTH),
        }
    }

    fn measure(&self, plan: &Plan, ctx: &mut Context) -> Result<Measured<Raw>, LabError> {
        measure::measure(plan, ctx)
    }

    fn judge(&self, plan: &Plan, raw: &Raw, _env: &Environment) -> Output {
        judge::judge(plan, raw)
    }
}

#[cfg(test)]
mod tests;
