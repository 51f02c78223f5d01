//! Runs read back from the results database, as `oslab export` writes them: the
//! document its JSON and CSV exporters take.

use oslab_model::ExperimentResult;

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
