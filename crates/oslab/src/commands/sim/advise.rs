//! `oslab sim advise SCENARIO --p99 50ms`: the dirty limits and policy that meet
//! the user's objective (the protected writers' bounds, a floor for the others,
//! a preference), predicted by the simulator, with why the first beats the
//! runner-up and how far the simulator was from the real kernel in the last
//! `oslab sim validate`.

use std::path::PathBuf;

use clap::Args;
use oslab_model::ExperimentResult;
use oslab_services::sim_advice::{Candidate, Objective, Prefer, advise, why_first};
use oslab_store::RunFilter;
use oslab_units::human_bytes;

use super::inputs::{configured, load};
use crate::args::MaxInputArg;
use crate::failure::CmdResult;
use crate::output::print;
use oslab_arg_values::duration;

#[derive(Debug, Args)]
pub struct SimAdviseArgs {
    /// The writers and the device: a built-in scenario (`oslab sim list`) or a
    /// scenario file (.toml)
    #[arg(value_name = "SCENARIO", add = crate::completion::scenario_names())]
    pub scenario: String,
    /// The writer, or the group of writers (rt-high, rt-low, normal or a scenario's
    /// own), whose latency the bounds are for [default: the first writer]
    #[arg(long, value_name = "WRITER|GROUP")]
    pub protect: Option<String>,
    /// The protected writers' p99 write() latency to stay under, e.g. 50ms or 0.2s
    #[arg(long, value_name = "DURATION", allow_negative_numbers = true, value_parser = duration(0.000_001, 3600.0))]
    pub p99: u64,
    /// At most this many protected writes over 200 ms
    #[arg(long, value_name = "N", value_parser = oslab_arg_values::whole(0, u32::MAX as u64))]
    pub max_over_200: Option<u64>,
    /// The other writers together get at least this much, e.g. 20MiB/s
    #[arg(long, value_name = "RATE", allow_hyphen_values = true, value_parser = oslab_arg_values::rate)]
    pub others_at_least: Option<f64>,
    /// What decides among the candidates that meet the bounds: throughput (the
    /// other writers'), latency (the protected writers' p99) or memory (the
    /// smallest dirty limit)
    #[arg(long, value_name = "WHAT", default_value = "throughput", value_parser = preference())]
    pub prefer: Prefer,
    /// Change a setting of the scenario first, e.g. --set bandwidth=20MiB/s
    /// (repeatable; see `oslab sim list --settings`)
    #[arg(long = "set", value_name = "KEY=VALUE", add = crate::completion::sim_settings())]
    pub sets: Vec<String>,
    /// The results database to read the last validation from [default: as `oslab run`]
    #[arg(long, value_name = "FILE")]
    pub db: Option<PathBuf>,
    #[command(flatten)]
    pub json: crate::args::JsonArg,
    #[command(flatten)]
    pub start: super::inputs::StartArg,
    #[command(flatten)]
    pub input: MaxInputArg,
}

/// `--prefer`: one of the preferences' names, which clap lists in the help and
/// in its refusal.
fn preference() -> impl clap::builder::TypedValueParser<Value = Prefer> {
    use clap::builder::{PossibleValuesParser, TypedValueParser};
    PossibleValuesParser::new(Prefer::NAMES)
        .try_map(|name| Prefer::parse(&name).ok_or("not a preference"))
}

/// The objective in words: "rt55's p99 under 50 ms, ...".
fn objective_words(ob: &Objective, who: &str) -> String {
    let mut parts = vec![format!("{who}'s p99 under {} ms", ob.p99_ms)];
    if let Some(n) = ob.max_over_200 {
        parts.push(format!("at most {n} of its writes over 200 ms"));
    }
    if let Some(f) = ob.others_floor_bytes_s {
        parts.push(format!(
            "the others at least {:.1} MiB/s",
            f / (1u64 << 20) as f64
        ));
    }
    let prefer = match ob.prefer {
        Prefer::Throughput => "the others' throughput",
        Prefer::Latency => "the lowest p99",
        Prefer::Memory => "the smallest dirty limit",
    };
    format!("{}; then preferring {prefer}", parts.join(", "))
}

/// Where each candidate's estimates started.
fn start_words(c: &oslab_wbsim::Config) -> &'static str {
    match c.start {
        oslab_wbsim::config::Start::Steady => "each from the steady state of its writers",
        oslab_wbsim::config::Start::Given => {
            "each from the scenario's given estimates (--from-boot)"
        }
        oslab_wbsim::config::Start::Live => "each from the device's live state (--live)",
    }
}

fn print_table(ranked: &[Candidate]) {
    let rows: Vec<Vec<String>> = ranked.iter().map(row).collect();
    print(&oslab_report::table::simple(
        &[
            "dirty_bytes",
            "background",
            "policy",
            "p50 ms",
            "p90 ms",
            "p99 ms",
            "max ms",
            "over 200 ms",
            "others MiB/s",
            "meets",
        ],
        &rows,
        &[3, 4, 5, 6, 7, 8],
    ));
}

fn print_advice(ranked: &[Candidate], wanted: &str, prefer: Prefer) {
    match ranked.first().filter(|c| c.meets) {
        Some(best) => print(&format!(
            "\nadvice: vm.dirty_bytes={} vm.dirty_background_bytes={} with policy {} (predicted p50 {:.1}, p90 {:.1}, p99 {:.1} ms, {} writes over 200 ms)\n",
            best.dirty_bytes,
            best.dirty_background_bytes,
            best.policy.name(),
            best.p50_ms,
            best.p90_ms,
            best.p99_ms,
            best.over_200
        )),
        None => print(&format!(
            "\nadvice: no candidate meets {wanted}; those above rank by how many bounds they miss, then as preferred\n"
        )),
    }
    if let Some(why) = why_first(ranked, prefer) {
        print(&format!("why first: {why}\n"));
    }
}

/// The newest completed sim.validate result in the database, if there is one.
fn last_validation(db: Option<&std::path::Path>) -> Option<ExperimentResult> {
    let path = crate::db::stable_target(&crate::db::chosen(db).ok()?).ok()?;
    let mut store = oslab_store::Store::open_existing(&path).ok()?;
    let filter = RunFilter {
        experiment: Some("sim.validate".into()),
        machine: None,
        limit: None,
        headline: None,
    };
    store
        .export(&filter)
        .ok()?
        .into_iter()
        .flat_map(|(_, results)| results)
        .rfind(|r| r.experiment == "sim.validate" && r.status == oslab_model::Status::Completed)
}

/// "p99 predictions were within X % ..." from a validation's p99 findings of the
/// contested workloads at the main setting (scenario.policy.p99_ms).
fn uncertainty(r: &ExperimentResult) -> Option<String> {
    let errors: Vec<f64> = r
        .findings
        .iter()
        .filter(|f| {
            let parts: Vec<&str> = f.name.split('.').collect();
            parts.len() == 3 && parts[2] == "p99_ms" && parts[0] != "alone"
        })
        .map(|f| f.value.abs())
        .filter(|v| v.is_finite())
        .collect();
    let worst = errors.iter().copied().fold(f64::NAN, f64::max);
    (!errors.is_empty()).then(|| {
        format!(
            "uncertainty: in the last validation on this machine ({}), the simulator's p99 for contested writers was within {worst:.0} % of the real kernel's (worst of {} workload x policy cells)",
            r.started_at,
            errors.len()
        )
    })
}

fn row(c: &Candidate) -> Vec<String> {
    vec![
        human_bytes(c.dirty_bytes),
        human_bytes(c.dirty_background_bytes),
        c.policy.name().to_string(),
        format!("{:.1}", c.p50_ms),
        format!("{:.1}", c.p90_ms),
        format!("{:.1}", c.p99_ms),
        format!("{:.1}", c.max_ms),
        c.over_200.to_string(),
        c.competitors_bytes_s
            .map_or("-".into(), |b| format!("{:.1}", b / (1u64 << 20) as f64)),
        if c.meets {
            "yes".to_string()
        } else {
            format!("no: {}", c.misses.join(", "))
        },
    ]
}

pub fn run(a: SimAdviseArgs) -> CmdResult {
    a.json.check()?;
    let s = load(&a.scenario, a.input.max_input)?;
    let (c, machine) = configured(&s, &a.sets, &a.start)?;
    let target_ms = a.p99 as f64 / 1e6;
    let prefer = a.prefer;
    let objective = Objective {
        protect: a.protect.clone(),
        p99_ms: target_ms,
        max_over_200: a.max_over_200.map(|n| n as usize),
        others_floor_bytes_s: a.others_at_least,
        prefer,
    };
    let Some(ranked) = advise(&c, &objective) else {
        let names: Vec<String> = c.writers.iter().map(|w| w.name.clone()).collect();
        return Err(crate::failure::Failure::usage(format!(
            "--protect {}: no writer or group of that name in {} (writers: {})",
            a.protect.as_deref().unwrap_or(""),
            s.name,
            names.join(", ")
        )));
    };
    if a.json.write(&ranked)? {
        return Ok(0);
    }
    let who = a.protect.clone().unwrap_or_else(|| {
        c.writers
            .first()
            .map_or("the first writer".into(), |w| w.name.clone())
    });
    let wanted = objective_words(&objective, &who);
    print(&format!(
        "{}: dirty limits and policies for {wanted} ({} simulated on {machine}; {})\n",
        s.name,
        ranked.len(),
        start_words(&c)
    ));
    print_table(&ranked);
    print_advice(&ranked, &wanted, prefer);
    print(&format!(
        "{}\n",
        last_validation(a.db.as_deref())
            .and_then(|r| uncertainty(&r))
            .unwrap_or_else(|| "uncertainty: no validation stored for this machine yet; run `oslab sim validate` (root) to measure how far the simulator is from the kernel here".into())
    ));
    Ok(0)
}
