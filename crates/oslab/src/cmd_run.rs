//! `oslab run`

use std::path::{Path, PathBuf};

use oslab_lab::harness::runner;
use oslab_lab::{Registry, RunConfig};
use oslab_model::{ExperimentResult, Mode, Status};
use oslab_report::csv_out::Csv;
use oslab_report::exporter::{Results, Stage};
use oslab_report::html::Html;
use oslab_report::json::Json;
use oslab_report::svg::Svg;
use oslab_report::terminal::Terminal;
use oslab_sys::fsread::Root;
use oslab_sys::machine::{self, LiveProbes};

use crate::CmdResult;
use crate::cli::RunArgs;
use crate::cmd_info::scratch_base;
use crate::db::{Database, DbTarget};
use crate::failure::{EXIT_PRIVILEGE, EXIT_RUNTIME, Failure};
use crate::output::{
    Destination, Output, check_dir_target, check_file_target, is_stdout, make_dir, write_all,
};
use crate::progress::{self, Bar};

pub enum JsonTarget {
    Stdout,
    File(PathBuf),
}

/// The command line as it is recorded (results, database): a database URL's
/// password hidden.
fn command_line() -> String {
    oslab_store::target::redact(&std::env::args().collect::<Vec<_>>().join(" "))
}

/// Parses each `--set` once against the declaration of every selected experiment
/// that has the setting; a value of the wrong kind or out of range is a usage error.
pub fn check_sets(
    raw: &[String],
    experiments: &[&dyn oslab_lab::AnyExperiment],
) -> Result<oslab_lab::Sets, Failure> {
    let mut out = oslab_lab::Sets::new();
    for s in raw {
        let (name, value) = s
            .split_once('=')
            .ok_or_else(|| Failure::usage(format!("--set {s}: expected NAME=VALUE")))?;
        let name = name.trim();
        let owners: Vec<_> = experiments
            .iter()
            .filter_map(|e| {
                e.settings()
                    .iter()
                    .find(|st| st.name() == name)
                    .map(|st| (e.meta().id, *st))
            })
            .collect();
        if owners.is_empty() {
            let known: Vec<&str> = experiments
                .iter()
                .flat_map(|e| e.settings().iter().map(|st| st.name()))
                .collect();
            return Err(Failure::usage(if known.is_empty() {
                format!("--set {name}: the selected experiments have no settings")
            } else {
                format!(
                    "--set {name}: no selected experiment has that setting (known: {})",
                    known.join(", ")
                )
            }));
        }
        for (id, st) in owners {
            let v = st
                .parse_value(value)
                .map_err(|e| Failure::usage(format!("--set {e}")))?;
            out.insert((id.to_string(), name.to_string()), v);
        }
    }
    Ok(out)
}

/// Where results go.
pub struct Outputs {
    pub json: Option<PathBuf>,
    pub csv: Option<PathBuf>,
    pub plots: Option<PathBuf>,
    pub html: Option<PathBuf>,
    /// Where each experiment's raw data goes (`--save-raw`).
    pub save_raw: Option<PathBuf>,
    pub db: DbTarget,
    pub label: Option<String>,
}

pub fn run(a: RunArgs) -> CmdResult {
    crate::cmd_restore::warn_if_pending();
    let registry = Registry::default();
    let experiments = registry
        .resolve(&a.ids)
        .map_err(|e| Failure::usage(e.to_string()))?;
    let scratch = scratch_base(a.scratch.as_deref())?;
    let sets = check_sets(&a.sets, &experiments)?;
    let cfg = RunConfig {
        sets,
        mode: if a.quick { Mode::Quick } else { Mode::Full },
        repeat: a.repeat.map(|n| n as usize),
        seed: a.seed,
        scratch_dir: scratch,
    };
    let db = match (a.no_db, a.db) {
        (true, _) => DbTarget::Off,
        (false, Some(p)) => DbTarget::Chosen(crate::db::chosen(Some(&p))?),
        (false, None) => crate::db::default_target()?.map_or(DbTarget::Off, DbTarget::Default),
    };
    let outputs = Outputs {
        json: a.json,
        csv: a.csv,
        plots: a.plots,
        html: a.html,
        save_raw: a.save_raw,
        db,
        label: a.label,
    };
    execute(&experiments, &outputs, &cfg)
}

/// Runs experiments, printing tables and writing every requested output.
pub fn execute(
    experiments: &[&dyn oslab_lab::AnyExperiment],
    outputs: &Outputs,
    cfg: &RunConfig,
) -> CmdResult {
    let json = check_targets(outputs)?;
    let machine = machine::collect(&Root::live(), &LiveProbes::live(&cfg.scratch_dir));
    let db = Database::open(
        &outputs.db,
        &machine,
        &command_line(),
        outputs.label.clone(),
        outputs.json.as_deref(),
    )?;
    let expected: Vec<f64> = experiments
        .iter()
        .map(|e| {
            if cfg.quick() {
                e.meta().quick_s
            } else {
                e.meta().full_s
            }
        })
        .collect();
    let places = progress::places(&expected);
    let runs = experiments.iter().zip(places).map(|(exp, place)| {
        let bar = Bar::new(exp.meta().id, place);
        let ran = runner::run(*exp, cfg, &machine, &bar);
        bar.finish();
        ran
    });
    deliver(
        runs,
        outputs.save_raw.as_deref(),
        exporters(outputs, json, db),
    )
}

/// The exporters a run's flags choose, in the order they write: the database, the
/// tables (unless the JSON goes to standard output), JSON, HTML, CSV, SVG plots.
pub fn exporters(
    outputs: &Outputs,
    json: Option<JsonTarget>,
    db: Option<Database>,
) -> Vec<Output<Results>> {
    let mut out = Vec::new();
    if let Some(db) = db {
        out.push(Output::new(db, Destination::Kept));
    }
    if !matches!(json, Some(JsonTarget::Stdout)) {
        out.push(Output::new(
            Terminal {
                width: crate::term::width(),
            },
            Destination::Stdout,
        ));
    }
    match json {
        Some(JsonTarget::Stdout) => out.push(Output::new(Json, Destination::Stdout)),
        Some(JsonTarget::File(p)) => out.push(Output::new(Json, Destination::file_per_result(&p))),
        None => {}
    }
    if let Some(p) = &outputs.html {
        out.push(Output::new(Html, Destination::file_per_result(p)));
    }
    if let Some(d) = &outputs.csv {
        out.push(Output::new(Csv, Destination::Folder(d.clone())));
    }
    if let Some(d) = &outputs.plots {
        out.push(Output::new(Svg, Destination::Folder(d.clone())));
    }
    out
}

/// Checks every output target before anything runs or is made; the JSON target.
pub fn check_targets(outputs: &Outputs) -> Result<Option<JsonTarget>, Failure> {
    let json = match &outputs.json {
        Some(p) if is_stdout(p) => Some(JsonTarget::Stdout),
        Some(p) => {
            check_file_target(p, "--json")?;
            Some(JsonTarget::File(p.clone()))
        }
        None => None,
    };
    if let Some(p) = &outputs.html {
        check_file_target(p, "--html")?;
    }
    let dirs = [
        (&outputs.csv, "--csv"),
        (&outputs.plots, "--plots"),
        (&outputs.save_raw, "--save-raw"),
    ];
    for (d, flag) in dirs {
        if let Some(d) = d {
            check_dir_target(d, flag)?;
        }
    }
    for (d, flag) in dirs {
        if let Some(d) = d {
            make_dir(d, flag)?;
        }
    }
    Ok(json)
}

/// Hands results to every output as they come (and keeps each one's raw data with
/// `--save-raw`); the exit code.
pub fn deliver(
    runs: impl Iterator<Item = runner::Ran>,
    save_raw: Option<&Path>,
    mut outputs: Vec<Output<Results>>,
) -> CmdResult {
    let mut doc = Results {
        all: Vec::new(),
        source: command_line(),
        oslab_version: runner::OSLAB_VERSION.to_string(),
    };
    for ran in runs {
        let experiment = ran.result.experiment.clone();
        doc.all.push(ran.result);
        write_all(&mut outputs, &doc, Stage::Added)?;
        if let (Some(dir), Some(raw)) = (save_raw, &ran.raw) {
            match raw.write_into(dir) {
                Ok(p) => eprintln!("oslab: raw data of {experiment} written: {}", p.display()),
                Err(e) => {
                    return Err(Failure::runtime(format!(
                        "cannot write the raw data of {experiment} into {}: {e}",
                        dir.display()
                    )));
                }
            }
        }
    }
    write_all(&mut outputs, &doc, Stage::Done)?;
    Ok(exit_code(&doc.all))
}

fn exit_code(results: &[ExperimentResult]) -> i32 {
    let failed = results
        .iter()
        .filter(|r| matches!(r.status, Status::Failed { .. }))
        .count();
    let skipped_for_root = results
        .iter()
        .filter(
            |r| matches!(&r.status, Status::Skipped { reason } if reason.starts_with("needs root")),
        )
        .count();
    if failed > 0 {
        EXIT_RUNTIME
    } else if skipped_for_root == results.len() {
        EXIT_PRIVILEGE
    } else {
        0
    }
}
