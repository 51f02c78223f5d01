//! Results of many runs as one CSV table, for notebooks: each row of the per-result
//! tables (see [`crate::csv_out`]) prefixed with the run and experiment it belongs to.

use oslab_model::ExperimentResult;

use crate::csv_out::{CsvTable, encode};

/// What identifies a run in an export.
#[derive(Debug, Clone)]
pub struct RunColumns {
    pub run_id: i64,
    pub machine: String,
    pub kernel: String,
    pub label: Option<String>,
}

/// Runs read back from the results database, for `oslab export` (JSON:
/// [`crate::json::Json`], CSV: [`crate::csv_out::CsvTable`]).
#[derive(Debug, Clone)]
pub struct Stored {
    /// The database's file, as the JSON export names it.
    pub database: String,
    /// Oldest first.
    pub runs: Vec<StoredRun>,
}

/// One stored run and its results.
#[derive(Debug, Clone)]
pub struct StoredRun {
    /// The run as the database describes it (id, metadata, state), written as is
    /// into the JSON export; the database's crate owns its shape.
    pub row: serde_json::Value,
    /// The run's columns in a CSV export.
    pub columns: RunColumns,
    pub results: Vec<ExperimentResult>,
}

const PREFIX: [&str; 8] = [
    "run_id",
    "machine",
    "machine_id",
    "kernel",
    "label",
    "experiment",
    "mode",
    "started_at",
];

/// One CSV table over every result of every run.
pub fn csv(table: CsvTable, runs: &[StoredRun]) -> Vec<u8> {
    let header: Vec<&str> = PREFIX.iter().chain(table.header()).copied().collect();
    let mut rows = Vec::new();
    for StoredRun {
        columns: run,
        results,
        ..
    } in runs
    {
        for r in results {
            let prefix = [
                run.run_id.to_string(),
                run.machine.clone(),
                r.environment.machine.machine_id.clone().unwrap_or_default(),
                run.kernel.clone(),
                run.label.clone().unwrap_or_default(),
                r.experiment.clone(),
                match r.mode {
                    oslab_model::Mode::Quick => "quick".to_string(),
                    oslab_model::Mode::Full => "full".to_string(),
                },
                r.started_at.clone(),
            ];
            for row in table.rows(r) {
                rows.push(prefix.iter().cloned().chain(row).collect());
            }
        }
    }
    encode(&header, rows)
}
