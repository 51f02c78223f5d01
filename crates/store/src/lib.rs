//! The results history: every `oslab run` kept in one SQLite file, or in a
//! PostgreSQL database that many machines write to.
//!
//! A run is a row in `runs`; each experiment's result is stored whole as JSON in
//! `results` (so nothing measured is lost and any later oslab can re-read it), plus
//! one row per measurement and per finding (`measurements`, `findings`) for quick
//! history queries and dashboards (the views `run_measurements`, `run_findings`).
//! Each result is written in its own transaction as soon as its experiment
//! finishes: a run killed at any point leaves every earlier result, and the runs
//! before it, intact.
//!
//! Both databases are reached through one trait ([`backend`]): the schema,
//! its migrations ([`migrate`]) and every query are written once.
#![forbid(unsafe_code)]

mod backend;
pub mod migrate;
mod postgres;
mod query;
mod sqlite;
pub mod target;
pub mod testing;
mod write;

use oslab_model::ExperimentResult;

use crate::backend::{Backend, Fault};
pub use query::{ExperimentRow, Headline, RunFilter, RunRow};
pub use target::Target;

/// Why a results database cannot be used, in one sentence for the user.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("{0} does not exist: run an experiment first, or name another database with --db")]
    Missing(String),
    #[error("{0} holds no oslab results yet: run an experiment with --db first")]
    Empty(String),
    #[error("{0} is not an SQLite database, so not an oslab results database")]
    NotSqlite(String),
    #[error("{0} holds tables of another program, so it is not an oslab results database")]
    Foreign(String),
    #[error("{location} is damaged ({detail}); move it aside and oslab will start a new one")]
    Damaged { location: String, detail: String },
    #[error(
        "{location} was written by a newer oslab (schema version {found}; this one knows up to {known})"
    )]
    Newer {
        location: String,
        found: u32,
        known: u32,
    },
    #[error("{location} holds a result this oslab cannot read ({detail})")]
    Unreadable { location: String, detail: String },
    #[error("cannot reach the results database {location}: {detail}")]
    Unreachable { location: String, detail: String },
    #[error("{location} is not a database URL oslab can use: {detail}")]
    BadUrl { location: String, detail: String },
    #[error("cannot use the results database {location}: {detail}")]
    Other { location: String, detail: String },
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

/// What an import did with one run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Imported {
    Added(i64),
    /// The same run (start, machine, command) was stored before, under this id.
    AlreadyThere(i64),
}

pub struct Store {
    db: Box<dyn Backend>,
    location: String,
}

impl Store {
    /// Opens the database, creating it (an SQLite file and its folder, or the
    /// tables in a PostgreSQL database) when missing.
    pub fn open_or_create(target: &Target) -> Result<Store> {
        Store::open(target, true)
    }

    /// Opens an existing database; a missing file or a database without oslab's
    /// tables is an error, not a new history.
    pub fn open_existing(target: &Target) -> Result<Store> {
        Store::open(target, false)
    }

    fn open(target: &Target, create: bool) -> Result<Store> {
        let location = target.to_string();
        let db: Box<dyn Backend> = match target {
            Target::File(path) => Box::new(sqlite::open(path, create)?),
            Target::Postgres(url) => Box::new(postgres::connect(url, &location)?),
        };
        let mut store = Store { db, location };
        let version = store.sql(|db| db.schema_version())?;
        if store.sql(|db| db.holds_foreign_tables())? {
            return Err(StoreError::Foreign(store.location));
        }
        if version > migrate::latest() {
            return Err(StoreError::Newer {
                location: store.location,
                found: version,
                known: migrate::latest(),
            });
        }
        if version == 0 && !create && matches!(target, Target::Postgres(_)) {
            return Err(StoreError::Empty(store.location));
        }
        store.sql(|db| migrate::migrate_to(db, migrate::latest()))?;
        Ok(store)
    }

    /// The database as the user named it (a file, or a URL without its password).
    pub fn location(&self) -> &str {
        &self.location
    }

    fn sql<T>(&mut self, f: impl FnOnce(&mut dyn Backend) -> backend::Sql<T>) -> Result<T> {
        f(self.db.as_mut()).map_err(|e| describe(&self.location, e))
    }

    /// The schema version of the open database.
    pub fn schema_version(&mut self) -> Result<u32> {
        self.sql(|db| db.schema_version())
    }

    /// Records the start of a run; its results follow with [`Store::add_result`].
    pub fn begin_run(&mut self, meta: &RunMeta) -> Result<i64> {
        self.sql(|db| write::begin_run(db, meta, "running", None))
    }

    /// Stores one finished experiment of a run, atomically.
    pub fn add_result(
        &mut self,
        run_id: i64,
        position: usize,
        r: &ExperimentResult,
    ) -> Result<i64> {
        let json = self.encode(r)?;
        self.sql(|db| db.transaction(|db| write::add_result(db, run_id, position, r, &json)))
    }

    /// Marks a run complete.
    pub fn finish_run(&mut self, run_id: i64, finished_at: &str) -> Result<()> {
        self.sql(|db| write::finish_run(db, run_id, finished_at))
    }

    /// Stores a whole run recorded elsewhere (a results file, another database) in
    /// one transaction, with its state and end time; a run stored before (same
    /// start, machine and command) is not stored twice.
    pub fn import_run(
        &mut self,
        meta: &RunMeta,
        state: &str,
        finished_at: Option<&str>,
        results: &[ExperimentResult],
    ) -> Result<Imported> {
        let json = results
            .iter()
            .map(|r| self.encode(r))
            .collect::<Result<Vec<_>>>()?;
        self.sql(|db| {
            db.transaction(|db| {
                db.exclusive()?;
                if let Some(id) = write::same_run(db, meta)? {
                    return Ok(Imported::AlreadyThere(id));
                }
                let run = write::begin_run(db, meta, state, finished_at)?;
                for (i, (r, json)) in results.iter().zip(&json).enumerate() {
                    write::add_result(db, run, i, r, json)?;
                }
                Ok(Imported::Added(run))
            })
        })
    }

    /// Runs, newest first.
    pub fn runs(&mut self, filter: &RunFilter) -> Result<Vec<RunRow>> {
        self.sql(|db| query::runs(db, filter))
    }

    /// Results of one experiment, newest first, with their headline figure.
    pub fn experiment_history(&mut self, filter: &RunFilter) -> Result<Vec<ExperimentRow>> {
        self.sql(|db| query::experiment_rows(db, filter))
    }

    /// One run and every result it stored, in the order they ran.
    pub fn run(&mut self, id: i64) -> Result<Option<(RunRow, Vec<ExperimentResult>)>> {
        let Some(row) = self.sql(|db| query::run_row(db, id))? else {
            return Ok(None);
        };
        let results = self.results_of(id)?;
        Ok(Some((row, results)))
    }

    fn results_of(&mut self, run_id: i64) -> Result<Vec<ExperimentResult>> {
        let json = self.sql(|db| query::run_results_json(db, run_id))?;
        json.iter().map(|j| self.decode(j)).collect()
    }

    /// The newest completed result of each experiment measured on `machine`.
    pub fn latest_on_machine(&mut self, machine: &str) -> Result<Vec<ExperimentResult>> {
        let json = self.sql(|db| query::latest_json_on_machine(db, machine))?;
        json.iter().map(|j| self.decode(j)).collect()
    }

    /// Every stored result matching `filter`, oldest first, with its run.
    pub fn export(&mut self, filter: &RunFilter) -> Result<Vec<(RunRow, Vec<ExperimentResult>)>> {
        let mut runs = self.runs(filter)?;
        runs.reverse();
        let mut out = Vec::new();
        for run in runs {
            let results = self
                .results_of(run.id)?
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
    pub fn machines(&mut self) -> Result<Vec<String>> {
        self.sql(query::machines)
    }

    fn encode(&self, r: &ExperimentResult) -> Result<String> {
        serde_json::to_string(r).map_err(|e| StoreError::Other {
            location: self.location.clone(),
            detail: format!("cannot encode the result: {e}"),
        })
    }

    fn decode(&self, json: &str) -> Result<ExperimentResult> {
        serde_json::from_str(json).map_err(|e| StoreError::Unreadable {
            location: self.location.clone(),
            detail: e.to_string(),
        })
    }
}

/// A failed statement in the sentence a user needs.
fn describe(location: &str, e: Fault) -> StoreError {
    match e {
        Fault::Sqlite(e) => sqlite::classify(location, e),
        Fault::Postgres(e) => postgres::classify(location, e),
        Fault::Decode(detail) => StoreError::Other {
            location: location.to_string(),
            detail: format!("a stored row is not as oslab writes it ({detail})"),
        },
    }
}

#[cfg(test)]
mod tests;
