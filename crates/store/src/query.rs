//! Read queries over the history.

use rusqlite::{Connection, OptionalExtension, params};
use serde::Serialize;

/// Which runs or results a query returns.
#[derive(Debug, Clone, Default)]
pub struct RunFilter {
    pub experiment: Option<String>,
    pub machine: Option<String>,
    pub limit: Option<usize>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RunRow {
    pub id: i64,
    /// What was known when it started; flattened in JSON.
    #[serde(flatten)]
    pub meta: crate::RunMeta,
    pub finished_at: Option<String>,
    /// `running` (still running, or killed before it finished) or `complete`.
    pub state: String,
    /// (experiment, completed | skipped | failed), in the order they ran.
    pub results: Vec<(String, String)>,
}

/// One stored result with the first measurement as its headline figure.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ExperimentRow {
    pub run_id: i64,
    pub started_at: String,
    pub machine: String,
    pub kernel: String,
    pub experiment: String,
    pub mode: String,
    pub status: String,
    pub headline: Option<Headline>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Headline {
    pub name: String,
    pub unit: String,
    pub median: Option<f64>,
    pub ci95: Option<[f64; 2]>,
}

fn limit(f: &RunFilter) -> i64 {
    f.limit.map_or(-1, |n| n as i64)
}

const RUN_COLUMNS: &str =
    "id, started_at, finished_at, state, machine, kernel, cpu_model, oslab_version, command, label";

fn run_from(r: &rusqlite::Row) -> rusqlite::Result<RunRow> {
    Ok(RunRow {
        id: r.get(0)?,
        meta: crate::RunMeta {
            started_at: r.get(1)?,
            machine: r.get(4)?,
            kernel: r.get(5)?,
            cpu_model: r.get(6)?,
            oslab_version: r.get(7)?,
            command: r.get(8)?,
            label: r.get(9)?,
        },
        finished_at: r.get(2)?,
        state: r.get(3)?,
        results: Vec::new(),
    })
}

fn with_results(conn: &Connection, mut row: RunRow) -> rusqlite::Result<RunRow> {
    row.results = conn
        .prepare_cached(
            "SELECT experiment, status FROM results WHERE run_id = ?1 ORDER BY position",
        )?
        .query_map([row.id], |r| Ok((r.get(0)?, r.get(1)?)))?
        .collect::<Result<_, _>>()?;
    Ok(row)
}

pub(crate) fn runs(conn: &Connection, f: &RunFilter) -> rusqlite::Result<Vec<RunRow>> {
    let sql = format!(
        "SELECT {RUN_COLUMNS} FROM runs u
         WHERE (?1 IS NULL OR machine = ?1)
           AND (?2 IS NULL OR EXISTS (SELECT 1 FROM results r WHERE r.run_id = u.id AND r.experiment = ?2))
         ORDER BY id DESC LIMIT ?3"
    );
    let rows: Vec<RunRow> = conn
        .prepare(&sql)?
        .query_map(params![f.machine, f.experiment, limit(f)], run_from)?
        .collect::<Result<_, _>>()?;
    rows.into_iter().map(|r| with_results(conn, r)).collect()
}

pub(crate) fn run_row(conn: &Connection, id: i64) -> rusqlite::Result<Option<RunRow>> {
    let row = conn
        .query_row(
            &format!("SELECT {RUN_COLUMNS} FROM runs WHERE id = ?1"),
            [id],
            run_from,
        )
        .optional()?;
    row.map(|r| with_results(conn, r)).transpose()
}

pub(crate) fn experiment_rows(
    conn: &Connection,
    f: &RunFilter,
) -> rusqlite::Result<Vec<ExperimentRow>> {
    conn.prepare(
        "SELECT r.run_id, r.started_at, u.machine, u.kernel, r.experiment, r.mode, r.status,
                m.name, m.unit, m.median, m.ci_low, m.ci_high
         FROM results r JOIN runs u ON u.id = r.run_id
         LEFT JOIN measurements m
           ON m.rowid = (SELECT min(rowid) FROM measurements WHERE result_id = r.id)
         WHERE (?1 IS NULL OR u.machine = ?1) AND (?2 IS NULL OR r.experiment = ?2)
         ORDER BY r.id DESC LIMIT ?3",
    )?
    .query_map(params![f.machine, f.experiment, limit(f)], |r| {
        let name: Option<String> = r.get(7)?;
        let (lo, hi): (Option<f64>, Option<f64>) = (r.get(10)?, r.get(11)?);
        Ok(ExperimentRow {
            run_id: r.get(0)?,
            started_at: r.get(1)?,
            machine: r.get(2)?,
            kernel: r.get(3)?,
            experiment: r.get(4)?,
            mode: r.get(5)?,
            status: r.get(6)?,
            headline: match name {
                Some(name) => Some(Headline {
                    name,
                    unit: r.get(8)?,
                    median: r.get(9)?,
                    ci95: lo.zip(hi).map(|(l, h)| [l, h]),
                }),
                None => None,
            },
        })
    })?
    .collect()
}

/// (result id, JSON) oldest first, optionally for one run, machine or status.
pub(crate) fn results_json(
    conn: &Connection,
    run_id: Option<i64>,
    machine: Option<&str>,
    status: Option<&str>,
) -> rusqlite::Result<Vec<(i64, String)>> {
    conn.prepare_cached(
        "SELECT r.id, r.result_json FROM results r JOIN runs u ON u.id = r.run_id
         WHERE (?1 IS NULL OR r.run_id = ?1) AND (?2 IS NULL OR u.machine = ?2)
           AND (?3 IS NULL OR r.status = ?3)
         ORDER BY r.id",
    )?
    .query_map(params![run_id, machine, status], |r| {
        Ok((r.get(0)?, r.get(1)?))
    })?
    .collect()
}

pub(crate) fn machines(conn: &Connection) -> rusqlite::Result<Vec<String>> {
    conn.prepare("SELECT DISTINCT machine FROM runs ORDER BY machine")?
        .query_map([], |r| r.get(0))?
        .collect()
}
