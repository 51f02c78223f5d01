//! The results history: every `oslab run` kept in one SQLite file.
//!
//! A run is a row in `runs`; each experiment's result is stored whole as JSON in
//! `results` (so nothing measured is lost and any later oslab can re-read it), plus
//! one row per measurement in `measurements` for quick history queries. Each result
//! is written in its own transaction as soon as its experiment finishes, and the file
//! runs in WAL mode: a run killed at any point leaves every earlier result, and the
//! runs before it, intact. The schema is versioned by migrations (see [`migrate`]).
#![forbid(unsafe_code)]

pub mod migrate;
mod query;

use std::path::{Path, PathBuf};

use oslab_model::{ExperimentResult, Status};
use rusqlite::{Connection, ErrorCode, OpenFlags};

pub use query::{ExperimentRow, Headline, RunFilter, RunRow};

/// Why a results database cannot be used, in one sentence for the user.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("{0} does not exist: run an experiment first, or name another database with --db")]
    Missing(PathBuf),
    #[error("{0} is not an SQLite database, so not an oslab results database")]
    NotSqlite(PathBuf),
    #[error("{0} is an SQLite database of another program, not an oslab results database")]
    Foreign(PathBuf),
    #[error("{path} is damaged ({detail}); move it aside and oslab will start a new one")]
    Damaged { path: PathBuf, detail: String },
    #[error(
        "{path} was written by a newer oslab (schema version {found}; this one knows up to {known})"
    )]
    Newer {
        path: PathBuf,
        found: u32,
        known: u32,
    },
    #[error("{path} holds a result this oslab cannot read ({detail})")]
    Unreadable { path: PathBuf, detail: String },
    #[error("cannot use the results database {path}: {detail}")]
    Other { path: PathBuf, detail: String },
}

pub type Result<T> = std::result::Result<T, StoreError>;

/// What is known of a run when it starts.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct RunMeta {
    pub started_at: String,
    pub machine: String,
    pub kernel: String,
    pub cpu_model: String,
    pub oslab_version: String,
    pub command: String,
    pub label: Option<String>,
}

pub struct Store {
    conn: Connection,
    path: PathBuf,
}

fn status_word(s: &Status) -> &'static str {
    match s {
        Status::Completed => "completed",
        Status::Skipped { .. } => "skipped",
        Status::Failed { .. } => "failed",
    }
}

impl Store {
    /// Opens the database at `path`, creating it (and its folder) when missing.
    pub fn open_or_create(path: &Path) -> Result<Store> {
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty())
            && !dir.exists()
        {
            std::fs::create_dir_all(dir).map_err(|e| StoreError::Other {
                path: path.to_path_buf(),
                detail: format!("cannot create its folder: {e}"),
            })?;
        }
        Store::open_with(
            path,
            OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_CREATE,
        )
    }

    /// Opens an existing database; a missing file is an error, not a new database.
    pub fn open_existing(path: &Path) -> Result<Store> {
        if !path.exists() {
            return Err(StoreError::Missing(path.to_path_buf()));
        }
        Store::open_with(path, OpenFlags::SQLITE_OPEN_READ_WRITE)
    }

    fn open_with(path: &Path, flags: OpenFlags) -> Result<Store> {
        if path.is_dir() {
            return Err(StoreError::Other {
                path: path.to_path_buf(),
                detail: "it is a directory; give a file name".into(),
            });
        }
        let mut conn = Connection::open_with_flags(path, flags | OpenFlags::SQLITE_OPEN_NO_MUTEX)
            .map_err(|e| classify(path, e))?;
        let store_err = |e| classify(path, e);
        conn.busy_timeout(std::time::Duration::from_secs(10))
            .map_err(store_err)?;
        let app_id: i32 = conn
            .query_row("PRAGMA application_id", [], |r| r.get(0))
            .map_err(store_err)?;
        let version: u32 = conn
            .query_row("PRAGMA user_version", [], |r| r.get(0))
            .map_err(store_err)?;
        if app_id != migrate::APPLICATION_ID {
            let objects: i64 = conn
                .query_row("SELECT count(*) FROM sqlite_master", [], |r| r.get(0))
                .map_err(store_err)?;
            if app_id != 0 || version != 0 || objects != 0 {
                return Err(StoreError::Foreign(path.to_path_buf()));
            }
        }
        if version > migrate::latest() {
            return Err(StoreError::Newer {
                path: path.to_path_buf(),
                found: version,
                known: migrate::latest(),
            });
        }
        conn.pragma_update(None, "foreign_keys", "ON")
            .map_err(store_err)?;
        conn.query_row("PRAGMA journal_mode = WAL", [], |_| Ok(()))
            .map_err(store_err)?;
        conn.pragma_update(None, "synchronous", "NORMAL")
            .map_err(store_err)?;
        migrate::migrate_to(&mut conn, migrate::latest()).map_err(store_err)?;
        Ok(Store {
            conn,
            path: path.to_path_buf(),
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The schema version of the open database.
    pub fn schema_version(&self) -> Result<u32> {
        self.conn
            .query_row("PRAGMA user_version", [], |r| r.get(0))
            .map_err(|e| classify(&self.path, e))
    }

    fn err(&self, e: rusqlite::Error) -> StoreError {
        classify(&self.path, e)
    }

    /// Records the start of a run; its results follow with [`Store::add_result`].
    pub fn begin_run(&mut self, meta: &RunMeta) -> Result<i64> {
        self.conn
            .execute(
                "INSERT INTO runs (started_at, state, machine, kernel, cpu_model, oslab_version, command, label)
                 VALUES (?1, 'running', ?2, ?3, ?4, ?5, ?6, ?7)",
                rusqlite::params![
                    meta.started_at,
                    meta.machine,
                    meta.kernel,
                    meta.cpu_model,
                    meta.oslab_version,
                    meta.command,
                    meta.label
                ],
            )
            .map_err(|e| self.err(e))?;
        Ok(self.conn.last_insert_rowid())
    }

    /// Stores one finished experiment of a run, atomically.
    pub fn add_result(
        &mut self,
        run_id: i64,
        position: usize,
        r: &ExperimentResult,
    ) -> Result<i64> {
        let json = serde_json::to_string(r).map_err(|e| StoreError::Other {
            path: self.path.clone(),
            detail: format!("cannot encode the result: {e}"),
        })?;
        let path = self.path.clone();
        let mut run = || -> rusqlite::Result<i64> {
            let tx = self.conn.transaction()?;
            tx.execute(
                "INSERT INTO results (run_id, position, experiment, mode, status, started_at, result_json)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
                rusqlite::params![
                    run_id,
                    position as i64,
                    r.experiment,
                    match r.mode {
                        oslab_model::Mode::Quick => "quick",
                        oslab_model::Mode::Full => "full",
                    },
                    status_word(&r.status),
                    r.started_at,
                    json
                ],
            )?;
            let id = tx.last_insert_rowid();
            migrate::insert_measurements(&tx, id, r)?;
            tx.commit()?;
            Ok(id)
        };
        run().map_err(|e| classify(&path, e))
    }

    /// Marks a run complete.
    pub fn finish_run(&mut self, run_id: i64, finished_at: &str) -> Result<()> {
        self.conn
            .execute(
                "UPDATE runs SET state = 'complete', finished_at = ?1 WHERE id = ?2",
                rusqlite::params![finished_at, run_id],
            )
            .map_err(|e| self.err(e))?;
        Ok(())
    }

    /// Runs, newest first.
    pub fn runs(&self, filter: &RunFilter) -> Result<Vec<RunRow>> {
        query::runs(&self.conn, filter).map_err(|e| self.err(e))
    }

    /// Results of one experiment, newest first, with their headline figure.
    pub fn experiment_history(&self, filter: &RunFilter) -> Result<Vec<ExperimentRow>> {
        query::experiment_rows(&self.conn, filter).map_err(|e| self.err(e))
    }

    /// One run and every result it stored, in the order they ran.
    pub fn run(&self, id: i64) -> Result<Option<(RunRow, Vec<ExperimentResult>)>> {
        let Some(row) = query::run_row(&self.conn, id).map_err(|e| self.err(e))? else {
            return Ok(None);
        };
        let results = query::results_json(&self.conn, Some(id), None, None)
            .map_err(|e| self.err(e))?
            .into_iter()
            .map(|(_, json)| self.decode(&json))
            .collect::<Result<Vec<_>>>()?;
        Ok(Some((row, results)))
    }

    /// The newest completed result of each experiment measured on `machine`.
    pub fn latest_on_machine(&self, machine: &str) -> Result<Vec<ExperimentResult>> {
        let rows = query::results_json(&self.conn, None, Some(machine), Some("completed"))
            .map_err(|e| self.err(e))?;
        let mut out: Vec<ExperimentResult> = Vec::new();
        for (_, json) in rows.iter().rev() {
            let r = self.decode(json)?;
            if !out.iter().any(|o| o.experiment == r.experiment) {
                out.push(r);
            }
        }
        out.sort_by(|a, b| a.experiment.cmp(&b.experiment));
        Ok(out)
    }

    /// Every stored result matching `filter`, oldest first, with its run.
    pub fn export(&self, filter: &RunFilter) -> Result<Vec<(RunRow, Vec<ExperimentResult>)>> {
        let mut runs = self.runs(filter)?;
        runs.reverse();
        let mut out = Vec::new();
        for run in runs {
            let results = query::results_json(&self.conn, Some(run.id), None, None)
                .map_err(|e| self.err(e))?
                .into_iter()
                .map(|(_, json)| self.decode(&json))
                .collect::<Result<Vec<_>>>()?
                .into_iter()
                .filter(|r| {
                    filter
                        .experiment
                        .as_ref()
                        .is_none_or(|e| &r.experiment == e)
                })
                .collect();
            out.push((run, results));
        }
        Ok(out)
    }

    /// Machine names with stored runs.
    pub fn machines(&self) -> Result<Vec<String>> {
        query::machines(&self.conn).map_err(|e| self.err(e))
    }

    fn decode(&self, json: &str) -> Result<ExperimentResult> {
        serde_json::from_str(json).map_err(|e| StoreError::Unreadable {
            path: self.path.clone(),
            detail: e.to_string(),
        })
    }
}

/// Turns SQLite's error codes into the sentence a user needs.
fn classify(path: &Path, e: rusqlite::Error) -> StoreError {
    let path = path.to_path_buf();
    match e.sqlite_error_code() {
        Some(ErrorCode::NotADatabase) => StoreError::NotSqlite(path),
        Some(ErrorCode::DatabaseCorrupt) => StoreError::Damaged {
            path,
            detail: "SQLite reports the file as malformed".into(),
        },
        Some(ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked) => StoreError::Other {
            path,
            detail: "another process holds it locked".into(),
        },
        Some(ErrorCode::ReadOnly | ErrorCode::CannotOpen | ErrorCode::PermissionDenied) => {
            StoreError::Other {
                path,
                detail: format!("cannot open it for writing ({e})"),
            }
        }
        _ => StoreError::Other {
            path,
            detail: e.to_string(),
        },
    }
}

#[cfg(test)]
mod tests;
