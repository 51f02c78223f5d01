//! The schema, one migration per version, applied in order from whatever version a
//! database file has. `PRAGMA user_version` holds the version; `PRAGMA
//! application_id` marks the file as oslab's, so a foreign SQLite file is refused
//! instead of being written into.

use rusqlite::{Connection, Transaction};

/// "OSLB": written into the SQLite header of every results database.
pub const APPLICATION_ID: i32 = 0x4f53_4c42;

pub struct Migration {
    pub version: u32,
    pub what: &'static str,
    pub sql: &'static str,
    /// Data moved or derived after the SQL ran.
    pub backfill: Option<fn(&Transaction) -> rusqlite::Result<()>>,
}

pub const MIGRATIONS: &[Migration] = &[
    Migration {
        version: 1,
        what: "runs and their results as JSON",
        sql: "
            CREATE TABLE runs (
                id            INTEGER PRIMARY KEY,
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
                id          INTEGER PRIMARY KEY,
                run_id      INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
                position    INTEGER NOT NULL,
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
                result_id INTEGER NOT NULL REFERENCES results(id) ON DELETE CASCADE,
                name      TEXT NOT NULL,
                unit      TEXT NOT NULL,
                n         INTEGER NOT NULL,
                median    REAL,
                ci_low    REAL,
                ci_high   REAL,
                PRIMARY KEY (result_id, name)
            );
        ",
        backfill: Some(backfill_v2),
    },
];

/// The newest schema this build knows.
pub fn latest() -> u32 {
    MIGRATIONS.last().map_or(0, |m| m.version)
}

/// Rows of `measurements` for one stored result.
pub fn insert_measurements(
    tx: &Transaction,
    result_id: i64,
    r: &oslab_model::ExperimentResult,
) -> rusqlite::Result<()> {
    let mut stmt = tx.prepare_cached(
        "INSERT OR REPLACE INTO measurements (result_id, name, unit, n, median, ci_low, ci_high)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
    )?;
    for m in &r.measurements {
        let s = m.summary.as_ref();
        stmt.execute(rusqlite::params![
            result_id,
            m.name,
            m.unit,
            m.samples.len() as i64,
            s.map(|s| s.median),
            s.and_then(|s| s.ci95.map(|c| c.low)),
            s.and_then(|s| s.ci95.map(|c| c.high)),
        ])?;
    }
    Ok(())
}

fn backfill_v2(tx: &Transaction) -> rusqlite::Result<()> {
    let rows: Vec<(i64, i64, String)> = tx
        .prepare("SELECT id, run_id, result_json FROM results ORDER BY id")?
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?
        .collect::<Result<_, _>>()?;
    for (id, run_id, json) in rows {
        // A result this build cannot read keeps its JSON; it just gets no rows.
        let Ok(r) = serde_json::from_str::<oslab_model::ExperimentResult>(&json) else {
            continue;
        };
        insert_measurements(tx, id, &r)?;
        tx.execute(
            "UPDATE runs SET cpu_model = ?1 WHERE id = ?2 AND cpu_model = ''",
            rusqlite::params![r.environment.machine.cpu.model, run_id],
        )?;
    }
    Ok(())
}

/// Brings `conn` from its version up to `target`, one transaction per migration, so
/// an interrupted upgrade leaves a database at a consistent earlier version.
pub fn migrate_to(conn: &mut Connection, target: u32) -> rusqlite::Result<u32> {
    let start: u32 = conn.query_row("PRAGMA user_version", [], |r| r.get(0))?;
    let mut version = start;
    for m in MIGRATIONS
        .iter()
        .filter(|m| m.version > start && m.version <= target)
    {
        let tx = conn.transaction()?;
        tx.execute_batch(m.sql)?;
        if let Some(f) = m.backfill {
            f(&tx)?;
        }
        tx.pragma_update(None, "user_version", m.version)?;
        tx.pragma_update(None, "application_id", APPLICATION_ID)?;
        tx.commit()?;
        version = m.version;
    }
    Ok(version)
}
