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
use crate::output::{check_dir_target, check_file_target, make_dir, print, write_file};
use crate::progress::Bar;

pub enum JsonTarget {
    Stdout,
    File(PathBuf),
}

fn write_outputs(
    results: &[ExperimentResult],
    json: Option<&JsonTarget>,
    outputs: &Outputs,
) -> Result<(), Failure> {
    if let Some(JsonTarget::File(path)) = json {
        write_file(
            path,
            oslab_report::json::to_json(&result_set(results)).as_bytes(),
        )?;
    }
    if let Some(path) = &outputs.html {
        let page = oslab_report::html::report(results, &command_line());
        write_file(path, page.as_bytes())?;
    }
    let (csv, plots) = (outputs.csv.as_ref(), outputs.plots.as_ref());
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

fn command_line() -> String {
    std::env::args().collect::<Vec<_>>().join(" ")
}

fn result_set(results: &[ExperimentResult]) -> ResultSet {
    ResultSet {
        schema_version: SCHEMA_VERSION,
        oslab_version: runner::OSLAB_VERSION.to_string(),
        command: command_line(),
        results: results.to_vec(),
    }
}

/// Parses each `--set` once against the declaration of every selected experiment
/// that has the setting; a value of the wrong kind or out of range is a usage error.
pub fn check_sets(
    raw: &[String],
    experiments: &[&dyn oslab_lab::Experiment],
) -> Result<oslab_lab::experiment::Sets, Failure> {
    let mut out = oslab_lab::experiment::Sets::new();
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

/// Whether and where results are kept in the database.
pub enum DbTarget {
    Off,
    /// Named with --db: a database that cannot be used stops the run before it starts.
    Chosen(PathBuf),
    /// The default: a database that cannot be used is reported and the run goes on.
    Default(PathBuf),
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
    let default_db = crate::db::default_path();
    if !a.no_db
        && let Some(p) = a.db.as_ref().or(default_db.as_ref())
    {
        crate::db::check_not_url(p)?;
    }
    let db = match (a.no_db, a.db, default_db) {
        (true, _, _) => DbTarget::Off,
        (false, Some(p), _) => DbTarget::Chosen(p),
        (false, None, Some(p)) => DbTarget::Default(p),
        (false, None, None) => DbTarget::Off,
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
    experiments: &[&dyn oslab_lab::Experiment],
    outputs: &Outputs,
    cfg: &RunConfig,
) -> CmdResult {
    let json = check_targets(outputs)?;
    let machine = machine::collect(&Root::live(), &LiveProbes::live(&cfg.scratch_dir));
    let record = Recorder::start(&outputs.db, &machine, outputs.label.clone())?;
    let n = experiments.len();
    let runs = experiments.iter().enumerate().map(|(i, exp)| {
        let bar = Bar::new(exp.meta().id, i + 1, n);
        let ran = runner::run(*exp, cfg, &machine, &bar);
        bar.finish();
        ran
    });
    deliver(runs, json, outputs, record)
}

/// Checks every output target before anything runs or is made; the JSON target.
pub fn check_targets(outputs: &Outputs) -> Result<Option<JsonTarget>, Failure> {
    let json = match &outputs.json {
        Some(p) if p.as_os_str() == "-" => Some(JsonTarget::Stdout),
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

/// Prints, keeps and writes results as they come; the exit code.
pub fn deliver(
    runs: impl Iterator<Item = runner::Ran>,
    json: Option<JsonTarget>,
    outputs: &Outputs,
    mut record: Recorder,
) -> CmdResult {
    let tables = !matches!(json, Some(JsonTarget::Stdout));
    let mut results: Vec<ExperimentResult> = Vec::new();
    for ran in runs {
        let r = ran.result;
        if tables {
            print(&oslab_report::table::render_result(&r));
            print("\n");
        }
        if let (Some(dir), Some(raw)) = (&outputs.save_raw, &ran.raw) {
            match raw.write_into(dir) {
                Ok(p) => eprintln!(
                    "oslab: raw data of {} written: {}",
                    r.experiment,
                    p.display()
                ),
                Err(e) => {
                    return Err(Failure::runtime(format!(
                        "cannot write the raw data of {} into {}: {e}",
                        r.experiment,
                        dir.display()
                    )));
                }
            }
        }
        record.add(results.len(), &r);
        results.push(r);
        // Written after every experiment, so an interrupted run keeps what it finished.
        write_outputs(&results, json.as_ref(), outputs)?;
    }
    record.finish();
    if let Some(JsonTarget::Stdout) = json {
        print(&oslab_report::json::to_json(&result_set(&results)));
    }
    if tables && results.iter().any(|r| !r.claims.is_empty()) {
        print("Claims\n");
        print(&oslab_report::table::render_verdicts(&results));
        print("\n");
    }
    Ok(exit_code(&results))
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

/// Keeps a run's results in the database as they come; a database that fails midway
/// is reported once and the run goes on without it.
pub struct Recorder {
    store: Option<(oslab_store::Store, i64)>,
}

impl Recorder {
    /// Keeps nothing.
    pub fn off() -> Recorder {
        Recorder { store: None }
    }

    fn start(
        target: &DbTarget,
        machine: &oslab_sys::machine::MachineInfo,
        label: Option<String>,
    ) -> Result<Recorder, Failure> {
        let (path, chosen) = match target {
            DbTarget::Off => return Ok(Recorder { store: None }),
            DbTarget::Chosen(p) => (p, true),
            DbTarget::Default(p) => (p, false),
        };
        let meta = oslab_store::RunMeta {
            started_at: crate::db::now_rfc3339(),
            machine: machine.hostname.clone(),
            kernel: machine.kernel.release.clone(),
            cpu_model: machine.cpu.model.clone(),
            oslab_version: runner::OSLAB_VERSION.to_string(),
            command: command_line(),
            label,
        };
        let opened = oslab_store::Store::open_or_create(path).and_then(|mut s| {
            let id = s.begin_run(&meta)?;
            Ok((s, id))
        });
        match opened {
            Ok(s) => Ok(Recorder { store: Some(s) }),
            Err(e) if chosen => Err(Failure::usage(e.to_string())),
            Err(e) => {
                eprintln!("oslab: results are not kept: {e} (--no-db silences this)");
                Ok(Recorder { store: None })
            }
        }
    }

    fn add(&mut self, position: usize, r: &ExperimentResult) {
        if let Some((s, run)) = &mut self.store
            && let Err(e) = s.add_result(*run, position, r)
        {
            eprintln!("oslab: results are no longer kept: {e}");
            self.store = None;
        }
    }

    fn finish(&mut self) {
        if let Some((s, run)) = &mut self.store {
            match s.finish_run(*run, &crate::db::now_rfc3339()) {
                Ok(()) => eprintln!(
                    "oslab: kept as run {run} in {} (`oslab history`, `oslab report {run} --html FILE`)",
                    s.path().display()
                ),
                Err(e) => eprintln!("oslab: the run could not be marked complete: {e}"),
            }
        }
    }
}
