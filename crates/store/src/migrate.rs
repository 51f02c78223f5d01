//! The schema, one migration per version, the same for SQLite and PostgreSQL
//! (written once; `{slot}`s name the column types that differ, see
//! [`crate::backend::Dialect`]), applied in order from whatever version a
//! database has, one transaction each.
//!
//! A backfill is frozen with its migration: it writes with the SQL of its own
//! version, never with the current writer's, which may expect later columns.

use crate::backend::{Backend, Sql};
use crate::write;

pub use crate::sqlite::APPLICATION_ID;

pub struct Migration {
    pub version: u32,
    pub what: &'static str,
    pub sql: &'static str,
    /// Data moved or derived after the SQL ran.
    pub(crate) backfill: Option<fn(&mut dyn Backend) -> Sql<()>>,
}

pub const MIGRATIONS: &[Migration] = &[
    Migration {
        version: 1,
        what: "runs and their results as JSON",
        sql: "
            CREATE TABLE runs (
                id            {id},
                started_at    TEXT NOT NULL,
                finished_at   TEXT,
                state         TEXT NOT NULL CHECK (state IN ('running', 'complete')),
                machine       TEXT NOT NULL,
                kernel        TEXT NOT NULL,
                oslab_version TEXT NOT NULL,
                command       TEXT NOT NULL,
                label         TEXT
            );
            CREATE TABLE results (
                id          {id},
                run_id      {int} NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
                position    {int} NOT NULL,
                experiment  TEXT NOT NULL,
                mode        TEXT NOT NULL,
                status      TEXT NOT NULL,
                started_at  TEXT NOT NULL,
                result_json TEXT NOT NULL,
                UNIQUE (run_id, position)
            );
            CREATE INDEX results_by_experiment ON results (experiment);
            CREATE INDEX runs_by_machine ON runs (machine);
        ",
        backfill: None,
    },
    Migration {
        version: 2,
        what: "the CPU model per run, and one row per measurement for fast history queries",
        sql: "
            ALTER TABLE runs ADD COLUMN cpu_model TEXT NOT NULL DEFAULT '';
            CREATE TABLE measurements (
                result_id {int} NOT NULL REFERENCES results(id) ON DELETE CASCADE,
                name      TEXT NOT NULL,
                unit      TEXT NOT NULL,
                n         {int} NOT NULL,
                median    {real},
                ci_low    {real},
                ci_high   {real},
                PRIMARY KEY (result_id, name)
            );
        ",
        backfill: Some(backfill_v2),
    },
    Migration {
        version: 3,
        what: "measurements in their order, findings as rows, an index for many runs, \
               and views for dashboards",
        sql: "
            ALTER TABLE measurements ADD COLUMN position {int} NOT NULL DEFAULT 0;
            CREATE TABLE findings (
                result_id {int} NOT NULL REFERENCES results(id) ON DELETE CASCADE,
                position  {int} NOT NULL,
                name      TEXT NOT NULL,
                value     {real},
                unit      TEXT NOT NULL,
                detail    TEXT NOT NULL,
                PRIMARY KEY (result_id, position)
            );
            CREATE INDEX results_by_run ON results (run_id, status, experiment);
            CREATE VIEW run_measurements AS
                SELECT u.id AS run_id, CAST(r.started_at AS {time}) AS time, u.machine,
                       u.kernel, u.cpu_model, u.label, u.state AS run_state,
                       r.experiment, r.mode, r.status, m.position,
                       m.name AS measurement, m.unit, m.n, m.median, m.ci_low, m.ci_high
                FROM runs u
                JOIN results r ON r.run_id = u.id
                JOIN measurements m ON m.result_id = r.id;
            CREATE VIEW run_findings AS
                SELECT u.id AS run_id, CAST(r.started_at AS {time}) AS time, u.machine,
                       u.kernel, u.cpu_model, u.label, u.state AS run_state,
                       r.experiment, r.mode, r.status, f.position,
                       f.name AS finding, f.value, f.unit, f.detail
                FROM runs u
                JOIN results r ON r.run_id = u.id
                JOIN findings f ON f.result_id = r.id;
        ",
        backfill: Some(backfill_v3),
    },
    Migration {
        version: 4,
        what: "the interval a finding is known in (an edge's sampled sizes around it)",
        sql: "
            ALTER TABLE findings ADD COLUMN range_low {real};
            ALTER TABLE findings ADD COLUMN range_high {real};
            {replace view run_findings} AS
                SELECT u.id AS run_id, CAST(r.started_at AS {time}) AS time, u.machine,
                       u.kernel, u.cpu_model, u.label, u.state AS run_state,
                       r.experiment, r.mode, r.status, f.position,
                       f.name AS finding, f.value, f.unit, f.detail,
                       f.range_low, f.range_high
                FROM runs u
                JOIN results r ON r.run_id = u.id
                JOIN findings f ON f.result_id = r.id;
        ",
        backfill: Some(backfill_v4),
    },
];

/// The newest schema this build knows.
pub fn latest() -> u32 {
    MIGRATIONS.last().map_or(0, |m| m.version)
}

/// Every stored result whose JSON this build reads, with its id and run; one it
/// cannot read keeps its JSON and just gets no derived rows.
fn readable_results(db: &mut dyn Backend) -> Sql<Vec<(i64, i64, oslab_model::ExperimentResult)>> {
    let rows = db.rows(
        "SELECT id, run_id, result_json FROM results ORDER BY id",
        &[],
    )?;
    let mut out = Vec::new();
    for row in rows {
        if let Ok(r) = serde_json::from_str(&row.text(2)?) {
            out.push((row.int(0)?, row.int(1)?, r));
        }
    }
    Ok(out)
}

fn backfill_v2(db: &mut dyn Backend) -> Sql<()> {
    for (id, run_id, r) in readable_results(db)? {
        for m in &r.measurements {
            db.run(
                "INSERT INTO measurements (result_id, name, unit, n, median, ci_low, ci_high)
                 VALUES ($1, $2, $3, $4, $5, $6, $7)
                 ON CONFLICT (result_id, name) DO UPDATE SET unit = excluded.unit,
                     n = excluded.n, median = excluded.median,
                     ci_low = excluded.ci_low, ci_high = excluded.ci_high",
                &[
                    vec![id.into(), (&m.name).into(), (&m.unit).into()],
                    write::figures(m).to_vec(),
                ]
                .concat(),
            )?;
        }
        db.run(
            "UPDATE runs SET cpu_model = $1 WHERE id = $2 AND cpu_model = ''",
            &[(&r.environment.machine.cpu.model).into(), run_id.into()],
        )?;
    }
    Ok(())
}

fn backfill_v3(db: &mut dyn Backend) -> Sql<()> {
    for (id, _, r) in readable_results(db)? {
        for (position, m) in r.measurements.iter().enumerate() {
            db.run(
                "UPDATE measurements SET position = $1 WHERE result_id = $2 AND name = $3",
                &[position.into(), id.into(), (&m.name).into()],
            )?;
        }
        for (position, f) in r.findings.iter().enumerate() {
            db.run(
                "INSERT INTO findings (result_id, position, name, value, unit, detail)
                 VALUES ($1, $2, $3, $4, $5, $6)",
                &[
                    id.into(),
                    position.into(),
                    (&f.name).into(),
                    f.value.into(),
                    (&f.unit).into(),
                    (&f.detail).into(),
                ],
            )?;
        }
    }
    Ok(())
}

fn backfill_v4(db: &mut dyn Backend) -> Sql<()> {
    for (id, _, r) in readable_results(db)? {
        for (position, f) in r.findings.iter().enumerate() {
            if let Some([low, high]) = f.range {
                db.run(
                    "UPDATE findings SET range_low = $1, range_high = $2
                     WHERE result_id = $3 AND position = $4",
                    &[low.into(), high.into(), id.into(), position.into()],
                )?;
            }
        }
    }
    Ok(())
}

/// Brings the database from its version up to `target`, one transaction per
/// migration, so an interrupted upgrade leaves it at a consistent earlier version.
/// Many processes may meet a new database at once: each migration re-reads the
/// version under the schema lock, so each is applied once.
pub(crate) fn migrate_to(db: &mut dyn Backend, target: u32) -> Sql<u32> {
    if db.schema_version()? >= target {
        return db.schema_version();
    }
    loop {
        let applied = db.transaction(|db| {
            db.exclusive()?;
            let version = db.schema_version()?;
            let Some(m) = MIGRATIONS
                .iter()
                .find(|m| m.version == version + 1 && m.version <= target)
            else {
                return Ok(false);
            };
            db.statements(m.sql)?;
            if let Some(backfill) = m.backfill {
                backfill(db)?;
            }
            db.set_schema_version(m.version)?;
            Ok(true)
        })?;
        if !applied {
            return db.schema_version();
        }
    }
}
