//! `oslab sim ...`

use std::path::Path;

use oslab_lab::RunConfig;
use oslab_lab::services::sim_sweep::sweep;
use oslab_lab::sim::{sawtooth::SimSawtooth, scenario::SimScenario, validate::SimValidate};
use oslab_model::Mode;
use oslab_sys::infile;
use oslab_wbsim::scenario::{self, Scenario, parse_bytes};
use oslab_wbsim::{Config, Policy, simulate};
use oslab_wbsim::{bounds, settings};

use crate::CmdResult;
use crate::cli::{SimCommand, SimOutArgs, SimRunArgs, SimSweepArgs, SimValidateArgs};
use crate::cmd_run::{Outputs, execute};
use crate::db::DbTarget;
use crate::failure::Failure;
use crate::output::print;

/// A built-in scenario by name, or a scenario file (`-`: standard input) of at
/// most `max_input` bytes.
pub fn load(name: &str, max_input: u64) -> Result<Scenario, Failure> {
    let path = Path::new(name);
    if infile::is_stdin(path) || name.ends_with(".toml") || path.symlink_metadata().is_ok() {
        let text = infile::read_text(path, max_input)?;
        return scenario::from_toml(&infile::display_name(path), &text).map_err(Failure::usage);
    }
    scenario::find(name).ok_or_else(|| {
        let names: Vec<String> = scenario::builtin().into_iter().map(|s| s.name).collect();
        Failure::usage(format!(
            "unknown scenario '{name}' (built in: {}; or give a .toml file)",
            names.join(", ")
        ))
    })
}

/// The scenario's configuration with `--set NAME=VALUE` applied, each value
/// parsed against the simulator's declared settings (`oslab_wbsim::settings`).
pub fn configured(s: &Scenario, raw: &[String]) -> Result<Config, Failure> {
    settings::parse_sets(raw)
        .and_then(|sets| settings::configure(&s.config, &sets))
        .map_err(|e| Failure::usage(format!("--set {e}")))
}

fn policy(s: &str) -> Result<Policy, Failure> {
    Policy::parse(s).ok_or_else(|| {
        Failure::usage(format!(
            "unknown policy '{s}' (use vanilla, wcall or wcall-fair)"
        ))
    })
}

fn config() -> RunConfig {
    RunConfig {
        mode: Mode::Full,
        repeat: None,
        seed: 1,
        scratch_dir: std::env::temp_dir(),
        sets: Default::default(),
    }
}

fn outputs(o: SimOutArgs) -> Outputs {
    // Simulated figures describe no machine: they are not kept in the results database.
    Outputs {
        json: o.json,
        csv: o.csv,
        plots: o.plots,
        html: o.html,
        save_raw: None,
        db: DbTarget::Off,
        label: None,
    }
}

/// `oslab sim validate`: real runs beside the simulator, kept in the results
/// database (they describe this machine).
fn validate(a: SimValidateArgs) -> CmdResult {
    crate::cmd_restore::warn_if_pending();
    let exp: &dyn oslab_lab::AnyExperiment = if a.sawtooth {
        &SimSawtooth
    } else {
        &SimValidate
    };
    let sets = crate::cmd_run::check_sets(&a.sets, &[exp])?;
    let cfg = RunConfig {
        mode: if a.quick || a.sawtooth {
            Mode::Quick
        } else {
            Mode::Full
        },
        repeat: None,
        seed: 1,
        scratch_dir: crate::cmd_info::scratch_base(a.scratch.as_deref())?,
        sets,
    };
    let mut out = outputs(a.out);
    out.save_raw = a.save_raw;
    out.db = crate::db::default_target()?.map_or(DbTarget::Off, DbTarget::Default);
    execute(&[exp], &out, &cfg)
}

fn run_one(a: SimRunArgs) -> CmdResult {
    let s = load(&a.scenario, a.input.max_input)?;
    let c = configured(&s, &a.sets)?;
    let policies: Vec<Policy> = if a.policies.is_empty() {
        vec![Policy::Vanilla, Policy::Wcall, Policy::WcallFair]
    } else {
        a.policies
            .iter()
            .map(|p| policy(p))
            .collect::<Result<_, _>>()?
    };
    let exp = SimScenario::new(&s, c, policies);
    execute(&[&exp], &outputs(a.out), &config())
}

/// The values of `--vary`: a list, or a range split into `steps` points.
fn values(vary: &str, steps: u64) -> Result<(String, Vec<String>), Failure> {
    let (key, spec) = vary.split_once('=').ok_or_else(|| {
        Failure::usage(format!("--vary {vary}: expected KEY=V1,V2 or KEY=FROM..TO"))
    })?;
    if let Some((a, b)) = spec.split_once("..") {
        let (lo, hi) = match (parse_bytes(a), parse_bytes(b)) {
            (Some(lo), Some(hi)) if hi > lo => (lo as f64, hi as f64),
            _ => {
                return Err(Failure::usage(format!(
                    "--vary {vary}: FROM..TO must be two numbers, FROM below TO"
                )));
            }
        };
        let v = (0..steps)
            .map(|i| {
                format!(
                    "{}",
                    (lo + (hi - lo) * i as f64 / (steps - 1) as f64).round() as u64
                )
            })
            .collect();
        Ok((key.to_string(), v))
    } else {
        Ok((
            key.to_string(),
            spec.split(',').map(|x| x.trim().to_string()).collect(),
        ))
    }
}

fn run_sweep(a: SimSweepArgs) -> CmdResult {
    let s = load(&a.scenario, a.input.max_input)?;
    let mut c = configured(&s, &a.sets)?;
    c.policy = policy(&a.policy)?;
    let (key, vals) = values(&a.vary, a.steps)?;
    let t0 = std::time::Instant::now();
    let points = sweep(&c, &key, &vals).map_err(|e| Failure::usage(format!("--vary {e}")))?;
    let secs = t0.elapsed().as_secs_f64();
    if a.json {
        print(&(serde_json::to_string_pretty(&points).expect("serialises") + "\n"));
        return Ok(0);
    }
    let rows: Vec<Vec<String>> = points
        .iter()
        .map(|p| {
            vec![
                p.value.clone(),
                format!("{:.1}", p.p99_ms),
                format!("{:.1}", p.max_ms),
                p.over_200.to_string(),
                format!("{:.1}", p.peak_dirty_mib),
            ]
        })
        .collect();
    print(&format!(
        "{} ({}), {key} varied, first writer's write() latency:\n",
        s.name,
        c.policy.name()
    ));
    print(&oslab_report::table::simple(
        &[
            key.as_str(),
            "p99 ms",
            "max ms",
            "over 200 ms",
            "peak dirty+wb MiB",
        ],
        &rows,
        &[1, 2, 3, 4],
    ));
    print(&format!(
        "\n{} settings simulated in {secs:.2} s on {} threads\n",
        points.len(),
        std::thread::available_parallelism().map_or(1, |n| n.get())
    ));
    Ok(0)
}

fn bench() -> CmdResult {
    let mut text = String::new();
    let c = scenario::find("paper-fig2").expect("built in").config;
    for p in [Policy::Vanilla, Policy::Wcall, Policy::WcallFair] {
        let mut c = c.clone();
        c.policy = p;
        let mut times = Vec::new();
        let mut events = 0;
        for _ in 0..30 {
            let t = std::time::Instant::now();
            events = simulate(&c).events;
            times.push(t.elapsed().as_secs_f64());
        }
        let m = oslab_stats::median(&times).unwrap_or(0.0);
        text.push_str(&format!(
            "paper-fig2 ({}): {:.3} ms per run (median of 30), {events} events, {:.1} M events/s on one core\n",
            p.name(),
            m * 1e3,
            events as f64 / m / 1e6
        ));
    }
    let (k, v) = values("dirty_bytes=16MiB..512MiB", 1000)?;
    let mut sc = scenario::find("testbed-fig2").expect("built in").config;
    sc.duration_s = 15.0;
    let t = std::time::Instant::now();
    let n = sweep(&sc, &k, &v).map_err(Failure::runtime)?.len();
    text.push_str(&format!(
        "sweep of {n} settings (testbed-fig2, 15 s each): {:.2} s on {} threads\n",
        t.elapsed().as_secs_f64(),
        std::thread::available_parallelism().map_or(1, |n| n.get())
    ));
    print(&text);
    Ok(0)
}

/// `oslab sim list --settings`: every `--set` key, from its declaration.
fn list_settings() -> CmdResult {
    let rows: Vec<Vec<String>> = settings::KEYS
        .iter()
        .map(|k| {
            let s = k.setting;
            vec![
                s.name().to_string(),
                s.kind_label(),
                if k.required {
                    "required".into()
                } else {
                    s.defaults().1
                },
                s.range().unwrap_or_else(|| "-".into()),
                k.field.to_string(),
                s.help().to_string(),
            ]
        })
        .collect();
    print(
        "Settings (oslab sim run|sweep SCENARIO --set KEY=VALUE; otherwise the scenario's own)\n",
    );
    print(&oslab_report::table::simple(
        &[
            "setting",
            "kind",
            "file default",
            "range",
            "scenario field",
            "meaning",
        ],
        &rows,
        &[],
    ));
    print(
        "\n\nFields only a scenario file sets, checked against these ranges as the settings are\n",
    );
    let bounded = |path: String, s: &dyn oslab_lab::settings::AnySetting| {
        vec![
            path,
            s.kind_label(),
            s.range().unwrap_or_else(|| "-".into()),
        ]
    };
    let rows: Vec<Vec<String>> = bounds::FIELDS
        .iter()
        .map(|f| bounded(f.path.to_string(), f.setting))
        .chain(
            bounds::WRITER_FIELDS
                .iter()
                .map(|f| bounded(format!("writers[].{}", f.path), f.setting)),
        )
        .collect();
    print(&oslab_report::table::simple(
        &["scenario field", "kind", "range"],
        &rows,
        &[],
    ));
    print("\n");
    Ok(0)
}

pub fn run(c: SimCommand) -> CmdResult {
    match c {
        SimCommand::List(a) if a.settings => list_settings(),
        SimCommand::List(_) => {
            let rows: Vec<Vec<String>> = scenario::builtin()
                .into_iter()
                .map(|s| vec![s.name, s.title, s.description])
                .collect();
            print(&oslab_report::table::simple(
                &["scenario", "title", "what"],
                &rows,
                &[],
            ));
            print(
                "\n'oslab sim run NAME' compares vanilla, wcall and wcall-fair; a .toml file works too (docs/sim-scenarios.md)\n",
            );
            Ok(0)
        }
        SimCommand::Run(a) => run_one(a),
        SimCommand::Sweep(a) => run_sweep(a),
        SimCommand::Validate(a) => validate(a),
        SimCommand::Advise(a) => crate::cmd_sim_advise::run(a),
        SimCommand::Bench => bench(),
    }
}
