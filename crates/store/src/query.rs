//! Read queries over the history.

use crate::backend::{Backend, Row, Sql, Value};
use serde::Serialize;

/// Which runs or results a query returns.
#[derive(Debug, Clone, Default)]
pub struct RunFilter {
    pub experiment: Option<String>,
    pub machine: Option<String>,
    pub limit: Option<usize>,
    /// The figure that heads each row of `experiment_history`: a measurement's
    /// or a finding's name (None: the first measurement).
    pub headline: Option<String>,
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

/// One stored result with its headline figure (the filter's, else the first
/// measurement).
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

/// PostgreSQL must know a parameter's type where it first meets it: a filter that
/// may be NULL is cast to text for `IS NULL`.
fn limit(f: &RunFilter) -> Value {
    // Both dialects take a LIMIT this large as none; SQLite refuses NULL there.
    f.limit.map_or(i64::MAX, |n| n as i64).into()
}

/// A filter's parameters in the order the queries take them: $1 the machine, $2
/// the experiment, $3 the limit.
fn filter_params(f: &RunFilter) -> [Value; 3] {
    [
        f.machine.as_ref().into(),
        f.experiment.as_ref().into(),
        limit(f),
    ]
}

const RUN_COLUMNS: &str =
    "id, started_at, finished_at, state, machine, kernel, cpu_model, oslab_version, command, label";

fn run_from(r: &Row) -> Sql<RunRow> {
    Ok(RunRow {
        id: r.int(0)?,
        meta: crate::RunMeta {
            started_at: r.text(1)?,
            machine: r.text(4)?,
            kernel: r.text(5)?,
            cpu_model: r.text(6)?,
            oslab_version: r.text(7)?,
            command: r.text(8)?,
            label: r.opt_text(9)?,
        },
        finished_at: r.opt_text(2)?,
        state: r.text(3)?,
        results: Vec::new(),
    })
}

fn with_results(db: &mut dyn Backend, mut row: RunRow) -> Sql<RunRow> {
    row.results = db
        .rows(
            "SELECT experiment, status FROM results WHERE run_id = $1 ORDER BY position",
            &[row.id.into()],
        )?
        .iter()
        .map(|r| Ok((r.text(0)?, r.text(1)?)))
        .collect::<Sql<_>>()?;
    Ok(row)
}

pub(crate) fn runs(db: &mut dyn Backend, f: &RunFilter) -> Sql<Vec<RunRow>> {
    let sql = format!(
        "SELECT {RUN_COLUMNS} FROM runs u
         WHERE (CAST($1 AS TEXT) IS NULL OR machine = $1)
           AND (CAST($2 AS TEXT) IS NULL OR EXISTS (SELECT 1 FROM results r WHERE r.run_id = u.id AND r.experiment = $2))
         ORDER BY id DESC LIMIT $3"
    );
    let rows = db.rows(&sql, &filter_params(f))?;
    rows.iter()
        .map(|r| with_results(db, run_from(r)?))
        .collect()
}

pub(crate) fn run_row(db: &mut dyn Backend, id: i64) -> Sql<Option<RunRow>> {
    let sql = format!("SELECT {RUN_COLUMNS} FROM runs WHERE id = $1");
    match db.one(&sql, &[id.into()])? {
        Some(r) => Ok(Some(with_results(db, run_from(&r)?)?)),
        None => Ok(None),
    }
}

pub(crate) fn experiment_rows(db: &mut dyn Backend, f: &RunFilter) -> Sql<Vec<ExperimentRow>> {
    let [machine, experiment, limit] = filter_params(f);
    // the named measurement, else the named finding (value, and its range where
    // the experiment knows one); with no name, the first measurement
    db.rows(
        "SELECT r.run_id, r.started_at, u.machine, u.kernel, r.experiment, r.mode, r.status,
                COALESCE(m.name, f.name), COALESCE(m.unit, f.unit),
                COALESCE(m.median, f.value), COALESCE(m.ci_low, f.range_low),
                COALESCE(m.ci_high, f.range_high)
         FROM results r JOIN runs u ON u.id = r.run_id
         LEFT JOIN measurements m ON m.result_id = r.id
           AND m.position = (SELECT min(position) FROM measurements
                             WHERE result_id = r.id
                               AND (CAST($4 AS TEXT) IS NULL OR name = CAST($4 AS TEXT)))
         LEFT JOIN findings f ON f.result_id = r.id AND m.name IS NULL
           AND f.position = (SELECT min(position) FROM findings
                             WHERE result_id = r.id AND name = CAST($4 AS TEXT))
         WHERE (CAST($1 AS TEXT) IS NULL OR u.machine = $1)
           AND (CAST($2 AS TEXT) IS NULL OR r.experiment = $2)
         ORDER BY r.id DESC LIMIT $3",
        &[machine, experiment, limit, f.headline.as_ref().into()],
    )?
    .iter()
    .map(|r| {
        let (lo, hi) = (r.opt_real(10)?, r.opt_real(11)?);
        Ok(ExperimentRow {
            run_id: r.int(0)?,
            started_at: r.text(1)?,
            machine: r.text(2)?,
            kernel: r.text(3)?,
            experiment: r.text(4)?,
            mode: r.text(5)?,
            status: r.text(6)?,
            headline: match r.opt_text(7)? {
                Some(name) => Some(Headline {
                    name,
                    unit: r.text(8)?,
                    median: r.opt_real(9)?,
                    ci95: lo.zip(hi).map(|(l, h)| [l, h]),
                }),
                None => None,
            },
        })
    })
    .collect()
}

fn json_of(rows: Vec<Row>) -> Sql<Vec<String>> {
    rows.iter().map(|r| r.text(0)).collect()
}

/// The JSON of one run's results, in the order they ran.
pub(crate) fn run_results_json(db: &mut dyn Backend, run_id: i64) -> Sql<Vec<String>> {
    json_of(db.rows(
        "SELECT result_json FROM results WHERE run_id = $1 ORDER BY position",
        &[run_id.into()],
    )?)
}

/// The JSON of the newest completed result of each experiment on `machine`, by
/// experiment. Only the chosen results are read, not every one the machine kept.
pub(crate) fn latest_json_on_machine(db: &mut dyn Backend, machine: &str) -> Sql<Vec<String>> {
    json_of(db.rows(
        "SELECT result_json FROM results WHERE id IN (
             SELECT max(r.id) FROM results r JOIN runs u ON u.id = r.run_id
             WHERE u.machine = $1 AND r.status = 'completed'
             GROUP BY r.experiment)
         ORDER BY experiment",
        &[machine.into()],
    )?)
}

pub(crate) fn machines(db: &mut dyn Backend) -> Sql<Vec<String>> {
    db.rows("SELECT DISTINCT machine FROM runs ORDER BY machine", &[])?
        .iter()
        .map(|r| r.text(0))
        .collect()
}
