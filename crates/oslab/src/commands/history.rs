//! `oslab history`

use crate::args::DbArg;
use clap::Args;
use oslab_arg_values::whole;

use oslab_model::usual;
use oslab_report::num::fmt;
use oslab_report::table::fit;
use oslab_store::{ExperimentRow, RunFilter, RunRow};

use crate::db;
use crate::failure::CmdResult;
use crate::failure::Failure;
use crate::output::print;

#[derive(Debug, Args)]
pub struct HistoryArgs {
    /// Only runs of this experiment, one line per result with its headline figure
    /// and how far it lies from what this machine usually measures
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

/// One line of an experiment's history: its headline figure first, and how far it
/// lies from what the machine usually measured before it (`far`).
fn experiment_row(r: &ExperimentRow, far: Option<&str>) -> Vec<String> {
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
        figure,
        median,
        ci,
        far.unwrap_or_default().to_string(),
        r.started_at.clone(),
        r.machine.clone(),
        r.kernel.clone(),
        r.mode.clone(),
        r.status.clone(),
    ]
}

/// For each of the first `shown` rows (newest first), how far its headline lies
/// from the machine's usual value: the same figure in the completed results of
/// the same machine and mode before it.
fn far_from_usual(rows: &[ExperimentRow], shown: usize) -> Vec<Option<String>> {
    let value = |r: &ExperimentRow| r.headline.as_ref().and_then(|h| h.median);
    (0..rows.len().min(shown))
        .map(|i| {
            let r = &rows[i];
            let h = r.headline.as_ref()?;
            let earlier: Vec<f64> = rows[i + 1..]
                .iter()
                .filter(|e| e.machine == r.machine && e.mode == r.mode)
                .filter(|e| e.status == "completed")
                .filter_map(value)
                .collect();
            let u = usual::usual(&earlier)?;
            usual::beyond(h.median?, h.ci95, &u, &h.unit)
        })
        .collect()
}

fn experiment_history(a: &HistoryArgs, store: &mut oslab_store::Store, id: &str) -> CmdResult {
    let headline = oslab_lab::Registry::default()
        .get(id)
        .map(|e| e.headline())
        .filter(|h| !h.is_empty());
    let filter = RunFilter {
        experiment: Some(id.to_string()),
        machine: a.machine.clone(),
        // the rows shown and the results before them that make the usual value
        limit: Some(a.limit as usize + usual::RUNS),
        headline: headline.map(str::to_string),
    };
    let rows = store
        .experiment_history(&filter)
        .map_err(|e| Failure::runtime(e.to_string()))?;
    let far = far_from_usual(&rows, a.limit as usize);
    let shown = &rows[..far.len()];
    let json: Vec<serde_json::Value> = shown
        .iter()
        .zip(&far)
        .map(|(r, f)| {
            let mut v = serde_json::json!(r);
            v["far_from_usual"] = serde_json::json!(f);
            v
        })
        .collect();
    let empty = || {
        format!(
            "no stored result of {id}{} in {}",
            on_machine(a.machine.as_deref()),
            store.location()
        )
    };
    if json_or_empty(&a.json, serde_json::json!(json), empty)? {
        return Ok(0);
    }
    let table: Vec<Vec<String>> = shown
        .iter()
        .zip(&far)
        .map(|(r, f)| experiment_row(r, f.as_deref()))
        .collect();
    print(&fit(
        &[
            "run",
            "headline figure",
            "median",
            "95% CI",
            "vs this machine's usual",
            "started",
            "machine",
            "kernel",
            "mode",
            "status",
        ],
        &table,
        &[0, 2, 3],
        crate::term::width(),
    ));
    print("\n");
    Ok(0)
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
        experiment: None,
        machine: a.machine.clone(),
        limit: Some(a.limit as usize),
        headline: None,
    };
    let fail = |e: oslab_store::StoreError| Failure::runtime(e.to_string());
    if let Some(id) = &a.experiment {
        return experiment_history(&a, &mut store, id);
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
