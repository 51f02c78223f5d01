//! `oslab export`

use oslab_report::csv_out::CsvTable;
use oslab_report::export::RunColumns;
use oslab_store::RunFilter;

use crate::CmdResult;
use crate::cli::{ExportArgs, ExportFormat, ExportTable};
use crate::db;
use crate::failure::Failure;
use crate::output::{check_file_target, print, write_file};

pub fn run(a: ExportArgs) -> CmdResult {
    if let Some(p) = &a.output {
        check_file_target(p, "--output")?;
    }
    let store = db::open_existing(a.db.db.as_deref())?;
    let fail = |e: oslab_store::StoreError| Failure::runtime(e.to_string());
    let filter = RunFilter {
        experiment: a.experiment.clone(),
        machine: a.machine.clone(),
        limit: None,
    };
    let mut runs = store.export(&filter).map_err(fail)?;
    if let Some(id) = a.run {
        runs.retain(|(r, _)| r.id == id as i64);
        if runs.is_empty() {
            return Err(Failure::usage(format!(
                "there is no run {id} matching the filters in {}",
                store.path().display()
            )));
        }
    }
    let bytes = match a.format {
        ExportFormat::Json => {
            let runs: Vec<serde_json::Value> = runs
                .into_iter()
                .map(|(row, results)| {
                    let mut v = serde_json::to_value(&row).expect("plain data");
                    v["results"] = serde_json::to_value(&results).expect("plain data");
                    v
                })
                .collect();
            let doc = serde_json::json!({
                "schema_version": oslab_model::SCHEMA_VERSION,
                "database": store.path().display().to_string(),
                "runs": runs,
            });
            (serde_json::to_string_pretty(&doc).expect("plain data") + "\n").into_bytes()
        }
        ExportFormat::Csv => {
            let table = match a.table {
                ExportTable::Samples => CsvTable::Samples,
                ExportTable::Summary => CsvTable::Summary,
                ExportTable::Findings => CsvTable::Findings,
                ExportTable::Claims => CsvTable::Claims,
            };
            let runs: Vec<(RunColumns, Vec<oslab_model::ExperimentResult>)> = runs
                .into_iter()
                .map(|(row, results)| {
                    (
                        RunColumns {
                            run_id: row.id,
                            machine: row.meta.machine,
                            kernel: row.meta.kernel,
                            label: row.meta.label,
                        },
                        results,
                    )
                })
                .collect();
            oslab_report::export::csv(table, &runs)
        }
    };
    match &a.output {
        Some(p) => write_file(p, &bytes)?,
        None => print(&String::from_utf8_lossy(&bytes)),
    }
    Ok(0)
}
