//! Running experiments and delivering their results: the shared back end of `oslab
//! run`, `judge`, `sim run` and `sim validate`.

use std::path::{Path, PathBuf};

use oslab_harness::RunConfig;
use oslab_harness::runner;
use oslab_model::{ExperimentResult, Status};
use oslab_report::exporter::{Results, Stage};
use oslab_sys::fsread::Root;
use oslab_sys::machine::{self, LiveProbes};

use crate::db::{Database, DbTarget};
use crate::exports::{Exports, OutputArgs};
use crate::failure::{CmdResult, EXIT_PRIVILEGE, EXIT_RUNTIME, Failure};
use crate::output::{Output, write_all};
use crate::progress::{self, Bar};

/// The command line as it is recorded (results, database): a database URL's
/// password hidden.
fn command_line() -> String {
    oslab_store::target::redact(&std::env::args().collect::<Vec<_>>().join(" "))
}

/// Parses each `--set` once against the declaration of every selected experiment
/// that has the setting; a value of the wrong kind or out of range is a usage error.
pub fn check_sets(
    raw: &[String],
    experiments: &[&dyn oslab_harness::AnyExperiment],
) -> Result<oslab_harness::Sets, Failure> {
    oslab_harness::sets::parse(raw, experiments).map_err(|e| Failure::usage(format!("--set {e}")))
}

/// Where a run's results go.
pub struct Delivery {
    pub outputs: OutputArgs,
    /// Where each experiment's raw data goes (`--save-raw`).
    pub save_raw: Option<PathBuf>,
    pub db: DbTarget,
    pub label: Option<String>,
}

impl Delivery {
    /// Results written only where `outputs` says: no raw data, no database.
    pub fn outputs_only(outputs: OutputArgs) -> Delivery {
        Delivery {
            outputs,
            save_raw: None,
            db: DbTarget::Off,
            label: None,
        }
    }
}

/// Runs experiments, printing tables and writing every requested output.
pub fn execute(
    experiments: &[&dyn oslab_harness::AnyExperiment],
    delivery: &Delivery,
    cfg: &RunConfig,
) -> CmdResult {
    let save_raw = delivery.save_raw.as_deref().map(|d| (d, "--save-raw"));
    let exports = Exports::from_args(&delivery.outputs, save_raw.as_slice())?;
    let machine = machine::collect(&Root::live(), &LiveProbes::live(&cfg.scratch_dir));
    let db = Database::open(
        &delivery.db,
        &machine,
        &command_line(),
        delivery.label.clone(),
        delivery.outputs.json_file(),
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
    deliver(runs, delivery.save_raw.as_deref(), exports.into_outputs(db))
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
    let mut lacked_root = 0;
    for ran in runs {
        lacked_root += usize::from(ran.unmet == Some(runner::Unmet::Root));
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
    Ok(exit_code(&doc.all, lacked_root))
}

/// 1 when an experiment failed; 3 when every one (`lacked_root` of them) was
/// skipped for lacking root.
fn exit_code(results: &[ExperimentResult], lacked_root: usize) -> i32 {
    let failed = results
        .iter()
        .filter(|r| matches!(r.status, Status::Failed { .. }))
        .count();
    if failed > 0 {
        EXIT_RUNTIME
    } else if lacked_root == results.len() {
        EXIT_PRIVILEGE
    } else {
        0
    }
}
