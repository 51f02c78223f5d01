//! `oslab export`

use oslab_report::csv_out::CsvTable;
use oslab_report::export::{RunColumns, Stored, StoredRun};
use oslab_report::exporter::Stage;
use oslab_report::json::Json;
use oslab_store::RunFilter;

use crate::CmdResult;
use crate::cli::{ExportArgs, ExportFormat, ExportTable};
use crate::db;
use crate::failure::Failure;
use crate::output::{Destination, Output, check_file_target};

/// What was asked for, for the sentence when nothing matches: " 99 of null on m1".
fn asked(a: &ExportArgs) -> String {
    let mut s = String::new();
    if let Some(id) = a.run {
        s += &format!(" {id}");
    }
    if let Some(e) = &a.experiment {
        s += &format!(" of {e}");
    }
    if let Some(m) = &a.machine {
        s += &format!(" on machine {m}");
    }
    s
}

pub fn run(a: ExportArgs) -> CmdResult {
    if let Some(p) = &a.output {
        check_file_target(p, "--output")?;
    }
    let mut store = db::open_existing(a.db.db.as_deref())?;
    let fail = |e: oslab_store::StoreError| Failure::runtime(e.to_string());
    let filter = RunFilter {
        experiment: a.experiment.clone(),
        machine: a.machine.clone(),
        limit: None,
    };
    let mut runs = store.export(&filter).map_err(fail)?;
    if let Some(id) = a.run {
        runs.retain(|(r, _)| r.id == id as i64);
    }
    if runs.is_empty() {
        return Err(Failure::nothing_found(format!(
            "no stored run{} in {}",
            asked(&a),
            store.location()
        )));
    }
    let stored = Stored {
        database: store.location().to_string(),
        runs: runs
            .into_iter()
            .map(|(row, results)| StoredRun {
                row: serde_json::to_value(&row).expect("plain data"),
                columns: RunColumns {
                    run_id: row.id,
                    machine: row.meta.machine,
                    kernel: row.meta.kernel,
                    label: row.meta.label,
                },
                results,
            })
            .collect(),
    };
    let to = match &a.output {
        Some(p) => Destination::file(p),
        None => Destination::Stdout,
    };
    let mut out: Output<Stored> = match a.format {
        ExportFormat::Json => Output::new(Json, to),
        ExportFormat::Csv => Output::new(
            match a.table {
                ExportTable::Samples => CsvTable::Samples,
                ExportTable::Summary => CsvTable::Summary,
                ExportTable::Findings => CsvTable::Findings,
                ExportTable::Claims => CsvTable::Claims,
                ExportTable::Series => CsvTable::Series,
            },
            to,
        ),
    };
    out.write(&stored, Stage::Done)?;
    Ok(0)
}
