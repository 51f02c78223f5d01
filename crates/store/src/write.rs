//! Writing runs: a run's row first (state `running`), each result with its derived
//! rows in one transaction, the run marked `complete` last. A reader therefore sees
//! a run as complete only with every result in it, and a result only whole.

use oslab_model::{ExperimentResult, Mode, Status};

use crate::RunMeta;
use crate::backend::{Backend, Sql, Value};

fn status_word(s: &Status) -> &'static str {
    match s {
        Status::Completed => "completed",
        Status::Skipped { .. } => "skipped",
        Status::Failed { .. } => "failed",
    }
}

fn mode_word(m: &Mode) -> &'static str {
    match m {
        Mode::Quick => "quick",
        Mode::Full => "full",
    }
}

fn new_id(db: &mut dyn Backend, sql: &str, params: &[Value]) -> Sql<i64> {
    let row = db
        .one(sql, params)?
        .ok_or_else(|| crate::backend::Fault::Decode("an insert returned no id".into()))?;
    row.int(0)
}

pub(crate) fn begin_run(
    db: &mut dyn Backend,
    meta: &RunMeta,
    state: &str,
    finished_at: Option<&str>,
) -> Sql<i64> {
    new_id(
        db,
        "INSERT INTO runs (started_at, finished_at, state, machine, kernel, cpu_model,
                           oslab_version, command, label)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) RETURNING id",
        &[
            (&meta.started_at).into(),
            finished_at.into(),
            state.into(),
            (&meta.machine).into(),
            (&meta.kernel).into(),
            (&meta.cpu_model).into(),
            (&meta.oslab_version).into(),
            (&meta.command).into(),
            meta.label.as_ref().into(),
        ],
    )
}

/// Stores one result and its measurement and finding rows; call inside a
/// transaction.
pub(crate) fn add_result(
    db: &mut dyn Backend,
    run_id: i64,
    position: usize,
    r: &ExperimentResult,
    json: &str,
) -> Sql<i64> {
    let id = new_id(
        db,
        "INSERT INTO results (run_id, position, experiment, mode, status, started_at, result_json)
         VALUES ($1, $2, $3, $4, $5, $6, $7) RETURNING id",
        &[
            run_id.into(),
            position.into(),
            (&r.experiment).into(),
            mode_word(&r.mode).into(),
            status_word(&r.status).into(),
            (&r.started_at).into(),
            json.into(),
        ],
    )?;
    insert_measurements(db, id, r)?;
    insert_findings(db, id, r)?;
    Ok(id)
}

/// A measurement's row figures: n, median and the CI's ends.
pub(crate) fn figures(m: &oslab_model::Measurement) -> [Value; 4] {
    let s = m.summary.as_ref();
    [
        m.samples.len().into(),
        s.map(|s| s.median).into(),
        s.and_then(|s| s.ci95.map(|c| c.low)).into(),
        s.and_then(|s| s.ci95.map(|c| c.high)).into(),
    ]
}

fn insert_measurements(db: &mut dyn Backend, result_id: i64, r: &ExperimentResult) -> Sql<()> {
    for (position, m) in r.measurements.iter().enumerate() {
        // A name given twice keeps its last figures, as the result's reader would.
        db.run(
            "INSERT INTO measurements (result_id, position, name, unit, n, median, ci_low, ci_high)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
             ON CONFLICT (result_id, name) DO UPDATE SET position = excluded.position,
                 unit = excluded.unit, n = excluded.n, median = excluded.median,
                 ci_low = excluded.ci_low, ci_high = excluded.ci_high",
            &[
                vec![
                    result_id.into(),
                    position.into(),
                    (&m.name).into(),
                    (&m.unit).into(),
                ],
                figures(m).to_vec(),
            ]
            .concat(),
        )?;
    }
    Ok(())
}

/// The finding rows of one result.
fn insert_findings(db: &mut dyn Backend, result_id: i64, r: &ExperimentResult) -> Sql<()> {
    for (position, f) in r.findings.iter().enumerate() {
        let [low, high] = f
            .range
            .map_or([Value::Null, Value::Null], |[l, h]| [l.into(), h.into()]);
        db.run(
            "INSERT INTO findings (result_id, position, name, value, unit, detail,
                                   range_low, range_high)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8)",
            &[
                result_id.into(),
                position.into(),
                (&f.name).into(),
                f.value.into(),
                (&f.unit).into(),
                (&f.detail).into(),
                low,
                high,
            ],
        )?;
    }
    Ok(())
}

pub(crate) fn finish_run(db: &mut dyn Backend, run_id: i64, finished_at: &str) -> Sql<()> {
    db.run(
        "UPDATE runs SET state = 'complete', finished_at = $1 WHERE id = $2",
        &[finished_at.into(), run_id.into()],
    )?;
    Ok(())
}

/// The run already stored with this start, machine and command, if any: what makes
/// an import of the same results twice keep one copy.
pub(crate) fn same_run(db: &mut dyn Backend, meta: &RunMeta) -> Sql<Option<i64>> {
    db.one(
        "SELECT min(id) FROM runs WHERE started_at = $1 AND machine = $2 AND command = $3",
        &[
            (&meta.started_at).into(),
            (&meta.machine).into(),
            (&meta.command).into(),
        ],
    )?
    .map_or(Ok(None), |r| r.opt_int(0))
}
