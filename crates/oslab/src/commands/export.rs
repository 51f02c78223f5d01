//! `oslab export`

use crate::args::DbArg;
use clap::Args;
use oslab_arg_values::whole;
use std::path::PathBuf;

use oslab_report::csv_out::CsvTable;
use oslab_report::export::{RunColumns, Stored, StoredRun};
use oslab_report::exporter::Stage;
use oslab_report::json::Json;
use oslab_store::RunFilter;

use crate::db;
use crate::failure::CmdResult;
use crate::failure::Failure;
use crate::output::{Destination, Output, check_file_target};

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ExportFormat {
    Csv,
    Json,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ExportTable {
    Samples,
    Summary,
    Findings,
    Claims,
    /// The points of every plot (run, experiment, plot, series, x, y, units)
    Series,
}

#[derive(Debug, Args)]
pub struct ExportArgs {
    /// csv: one table (see --table) over every matching result; json: whole runs
    #[arg(long, value_enum, default_value_t = ExportFormat::Json)]
    pub format: ExportFormat,
    /// Which table to write with --format csv
    #[arg(long, value_enum, default_value_t = ExportTable::Samples)]
    pub table: ExportTable,
    /// Only this experiment
    #[arg(long, value_name = "ID")]
    pub experiment: Option<String>,
    /// Only runs on this machine
    #[arg(long, value_name = "NAME")]
    pub machine: Option<String>,
    /// Only this run
    #[arg(long, value_name = "ID", allow_negative_numbers = true, value_parser = whole(1, i64::MAX as u64))]
    pub run: Option<u64>,
    /// Write to FILE instead of standard output
    #[arg(long, short = 'o', value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Write whole runs as JSON to FILE (`-` for standard output), as every
    /// command's --json does: the same as --format json -o FILE
    #[arg(long, value_name = "FILE", conflicts_with_all = ["output", "format"])]
    pub json: Option<PathBuf>,
    #[command(flatten)]
    pub db: DbArg,
}

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

pub fn run(mut a: ExportArgs) -> CmdResult {
    if let Some(p) = a.json.take() {
        a.format = ExportFormat::Json;
        a.output = (!crate::output::is_stdout(&p)).then_some(p);
    }
    if let Some(p) = &a.output {
        check_file_target(p, "--output")?;
    }
    let mut store = db::open_existing(a.db.db.as_deref())?;
    let fail = |e: oslab_store::StoreError| Failure::runtime(e.to_string());
    let filter = RunFilter {
        experiment: a.experiment.clone(),
        machine: a.machine.clone(),
        limit: None,
        headline: None,
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
