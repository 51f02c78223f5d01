//! `oslab history`

use crate::args::DbArg;
use clap::Args;
use oslab_arg_values::whole;

use oslab_report::num::fmt;
use oslab_report::table::fit;
use oslab_store::{ExperimentRow, RunFilter, RunRow};

use crate::db;
use crate::failure::CmdResult;
use crate::failure::Failure;
use crate::output::print;

#[derive(Debug, Args)]
pub struct HistoryArgs {
    /// Only runs of this experiment, one line per result with its first figure
    #[arg(long, value_name = "ID")]
    pub experiment: Option<String>,
    /// Only runs on this machine (its host name as stored)
    #[arg(long, value_name = "NAME")]
    pub machine: Option<String>,
    /// At most N lines
    #[arg(long, value_name = "N", default_value_t = 20, allow_negative_numbers = true, value_parser = whole(1, 1_000_000_000))]
    pub limit: u64,
    #[command(flatten)]
    pub json: crate::args::JsonArg,
    #[command(flatten)]
    pub db: DbArg,
}

fn state(s: &str) -> &str {
    // A run that never reached its end: killed, or still running elsewhere.
    if s == "running" { "unfinished" } else { s }
}

/// Writes `rows` as JSON where asked; nothing found (no rows) is the `empty`
/// sentence and exit 1. Ok(false) when a table is still to be printed.
fn json_or_empty(
    json: &crate::args::JsonArg,
    rows: serde_json::Value,
    empty: impl FnOnce() -> String,
) -> Result<bool, Failure> {
    if rows.as_array().is_none_or(Vec::is_empty) {
        return Err(Failure::nothing_found(empty()));
    }
    json.write(&rows)
}

fn on_machine(machine: Option<&str>) -> String {
    machine.map_or_else(String::new, |m| format!(" on machine {m}"))
}

/// One line of an experiment's history.
fn experiment_row(r: &ExperimentRow) -> Vec<String> {
    let (figure, median, ci) = match &r.headline {
        Some(h) => (
            format!("{} ({})", h.name, h.unit),
            h.median.map_or_else(|| "-".into(), fmt),
            h.ci95
                .map_or_else(String::new, |[l, h]| format!("{} - {}", fmt(l), fmt(h))),
        ),
        None => ("-".into(), "-".into(), String::new()),
    };
    vec![
        r.run_id.to_string(),
        r.started_at.clone(),
        r.machine.clone(),
        r.kernel.clone(),
        r.mode.clone(),
        r.status.clone(),
        figure,
        median,
        ci,
    ]
}

/// One line of the runs' list.
fn run_row(r: &RunRow) -> Vec<String> {
    let count = |w: &str| r.results.iter().filter(|(_, s)| s == w).count();
    let mut names: Vec<String> = r.results.iter().map(|(e, _)| e.clone()).collect();
    if names.len() > 4 {
        let more = names.len() - 3;
        names.truncate(3);
        names.push(format!("+{more} more"));
    }
    vec![
        r.id.to_string(),
        r.meta.started_at.clone(),
        r.meta.machine.clone(),
        r.meta.kernel.clone(),
        state(&r.state).to_string(),
        format!(
            "{} done, {} skipped, {} failed",
            count("completed"),
            count("skipped"),
            count("failed")
        ),
        names.join(", "),
        r.meta.label.clone().unwrap_or_default(),
    ]
}

pub fn run(a: HistoryArgs) -> CmdResult {
    a.json.check()?;
    let mut store = db::open_existing(a.db.db.as_deref())?;
    let filter = RunFilter {
        experiment: a.experiment.clone(),
        machine: a.machine.clone(),
        limit: Some(a.limit as usize),
    };
    let fail = |e: oslab_store::StoreError| Failure::runtime(e.to_string());
    if a.experiment.is_some() {
        let rows = store.experiment_history(&filter).map_err(fail)?;
        let empty = || {
            format!(
                "no stored result of {}{} in {}",
                a.experiment.as_deref().unwrap_or(""),
                on_machine(a.machine.as_deref()),
                store.location()
            )
        };
        if json_or_empty(&a.json, serde_json::json!(rows), empty)? {
            return Ok(0);
        }
        let table: Vec<Vec<String>> = rows.iter().map(experiment_row).collect();
        print(&fit(
            &[
                "run",
                "started",
                "machine",
                "kernel",
                "mode",
                "status",
                "first figure",
                "median",
                "95% CI",
            ],
            &table,
            &[0, 7, 8],
            crate::term::width(),
        ));
        print("\n");
        return Ok(0);
    }
    let runs = store.runs(&filter).map_err(fail)?;
    if json_or_empty(&a.json, serde_json::json!(runs), || {
        format!(
            "no stored runs{} in {}",
            on_machine(a.machine.as_deref()),
            store.location()
        )
    })? {
        return Ok(0);
    }
    let table: Vec<Vec<String>> = runs.iter().map(run_row).collect();
    print(&fit(
        &[
            "run",
            "started",
            "machine",
            "kernel",
            "state",
            "results",
            "experiments",
            "label",
        ],
        &table,
        &[0],
        crate::term::width(),
    ));
    print(&format!(
        "\n{} run(s) from {}; `oslab report RUN --html F` or `oslab compare RUN RUN` for one.\n",
        runs.len(),
        store.location()
    ));
    Ok(0)
}
