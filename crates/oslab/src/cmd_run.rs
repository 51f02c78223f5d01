//! `oslab run`

use std::path::PathBuf;

use oslab_lab::{Registry, RunConfig, runner};
use oslab_model::{ExperimentResult, Mode, ResultSet, SCHEMA_VERSION, Status};
use oslab_sys::fsread::Root;
use oslab_sys::machine::{self, LiveProbes};

use crate::CmdResult;
use crate::cli::RunArgs;
use crate::cmd_info::scratch_base;
use crate::failure::{EXIT_PRIVILEGE, EXIT_RUNTIME, Failure};
use crate::output::{check_file_target, ensure_dir, print, write_file};
use crate::progress::Bar;

enum JsonTarget {
    Stdout,
    File(PathBuf),
}

fn write_outputs(
    results: &[ExperimentResult],
    json: Option<&JsonTarget>,
    csv: Option<&PathBuf>,
    plots: Option<&PathBuf>,
) -> Result<(), Failure> {
    if let Some(JsonTarget::File(path)) = json {
        write_file(
            path,
            oslab_report::json::to_json(&result_set(results)).as_bytes(),
        )?;
    }
    if let Some(r) = results.last() {
        if let Some(dir) = csv {
            for (name, bytes) in oslab_report::csv_out::files(r) {
                write_file(&dir.join(name), &bytes)?;
            }
        }
        if let Some(dir) = plots {
            for p in &r.plots {
                let name = format!("{}-{}.svg", r.experiment, p.id);
                write_file(&dir.join(name), oslab_report::svg::render(p).as_bytes())?;
            }
        }
    }
    Ok(())
}

fn result_set(results: &[ExperimentResult]) -> ResultSet {
    ResultSet {
        schema_version: SCHEMA_VERSION,
        oslab_version: runner::OSLAB_VERSION.to_string(),
        command: std::env::args().collect::<Vec<_>>().join(" "),
        results: results.to_vec(),
    }
}

/// Parses `--set` values and checks each against the selected experiments' settings.
fn check_sets(
    raw: &[String],
    experiments: &[&dyn oslab_lab::Experiment],
) -> Result<std::collections::BTreeMap<String, String>, Failure> {
    let mut out = std::collections::BTreeMap::new();
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
                    .find(|st| st.name == name)
                    .map(|st| (e, st))
            })
            .collect();
        if owners.is_empty() {
            let known: Vec<String> = experiments
                .iter()
                .flat_map(|e| e.settings().iter().map(|st| st.name.to_string()))
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
        for (_, st) in owners {
            oslab_lab::settings::parse(name, st.kind, value)
                .map_err(|e| Failure::usage(format!("--set {e}")))?;
        }
        out.insert(name.to_string(), value.trim().to_string());
    }
    Ok(out)
}

/// Where results go.
pub struct Outputs {
    pub json: Option<PathBuf>,
    pub csv: Option<PathBuf>,
    pub plots: Option<PathBuf>,
}

pub fn run(a: RunArgs) -> CmdResult {
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
    let outputs = Outputs {
        json: a.json,
        csv: a.csv,
        plots: a.plots,
    };
    execute(&experiments, &outputs, &cfg)
}

/// Runs experiments, printing tables and writing every requested output.
pub fn execute(
    experiments: &[&dyn oslab_lab::Experiment],
    outputs: &Outputs,
    cfg: &RunConfig,
) -> CmdResult {
    let json = match &outputs.json {
        Some(p) if p.as_os_str() == "-" => Some(JsonTarget::Stdout),
        Some(p) => {
            check_file_target(p, "--json")?;
            Some(JsonTarget::File(p.clone()))
        }
        None => None,
    };
    if let Some(d) = &outputs.csv {
        ensure_dir(d, "--csv")?;
    }
    if let Some(d) = &outputs.plots {
        ensure_dir(d, "--plots")?;
    }
    let machine = machine::collect(&Root::live(), &LiveProbes::live(&cfg.scratch_dir));
    let tables = !matches!(json, Some(JsonTarget::Stdout));

    let mut results: Vec<ExperimentResult> = Vec::new();
    for exp in experiments {
        let bar = Bar::new(exp.meta().id);
        let r = runner::run(*exp, cfg, &machine, &bar);
        bar.finish();
        if tables {
            print(&oslab_report::table::render_result(&r));
            print("\n");
        }
        results.push(r);
        // Written after every experiment, so an interrupted run keeps what it finished.
        write_outputs(
            &results,
            json.as_ref(),
            outputs.csv.as_ref(),
            outputs.plots.as_ref(),
        )?;
    }
    if let Some(JsonTarget::Stdout) = json {
        print(&oslab_report::json::to_json(&result_set(&results)));
    }
    if tables && results.iter().any(|r| !r.claims.is_empty()) {
        print("Claims\n");
        print(&oslab_report::table::render_verdicts(&results));
        print("\n");
    }

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
    Ok(if failed > 0 {
        EXIT_RUNTIME
    } else if skipped_for_root == results.len() {
        EXIT_PRIVILEGE
    } else {
        0
    })
}
