//! `oslab sim advise SCENARIO --p99 50ms`: the dirty limits and policy that keep the
//! scenario's first writer under the target, predicted by the simulator, with how
//! far the simulator was from the real kernel in the last `oslab sim validate`.

use std::path::PathBuf;

use clap::Args;
use oslab_lab::services::sim_advice::{Candidate, advise};
use oslab_model::ExperimentResult;
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
    /// scenario file (.toml); its first writer is the one to protect
    #[arg(value_name = "SCENARIO")]
    pub scenario: String,
    /// The first writer's p99 write() latency to stay under, e.g. 50ms or 0.2s
    #[arg(long, value_name = "DURATION", allow_negative_numbers = true, value_parser = duration(0.000_001, 3600.0))]
    pub p99: u64,
    /// Change a setting of the scenario first, e.g. --set bandwidth=20MiB/s
    /// (repeatable; see `oslab sim list --settings`)
    #[arg(long = "set", value_name = "KEY=VALUE")]
    pub sets: Vec<String>,
    /// The results database to read the last validation from [default: as `oslab run`]
    #[arg(long, value_name = "FILE")]
    pub db: Option<PathBuf>,
    /// Print JSON
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub input: MaxInputArg,
}

/// The newest completed sim.validate result in the database, if there is one.
fn last_validation(db: Option<&std::path::Path>) -> Option<ExperimentResult> {
    let path = crate::db::chosen(db).ok()?;
    let mut store = oslab_store::Store::open_existing(&path).ok()?;
    let filter = RunFilter {
        experiment: Some("sim.validate".into()),
        machine: None,
        limit: None,
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
        if c.meets { "yes" } else { "no" }.to_string(),
    ]
}

pub fn run(a: SimAdviseArgs) -> CmdResult {
    let s = load(&a.scenario, a.input.max_input)?;
    let c = configured(&s, &a.sets)?;
    let target_ms = a.p99 as f64 / 1e6;
    let ranked = advise(&c, target_ms);
    if a.json {
        print(&(serde_json::to_string_pretty(&ranked).expect("serialises") + "\n"));
        return Ok(0);
    }
    let first = c
        .writers
        .first()
        .map_or("the first writer", |w| w.name.as_str());
    print(&format!(
        "{}: dirty limits and policies for {first}'s p99 under {target_ms} ms ({} simulated)\n",
        s.name,
        ranked.len()
    ));
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
            "\nadvice: no candidate keeps {first}'s p99 under {target_ms} ms; the closest is first above\n"
        )),
    }
    print(&format!(
        "{}\n",
        last_validation(a.db.as_deref())
            .and_then(|r| uncertainty(&r))
            .unwrap_or_else(|| "uncertainty: no validation stored for this machine yet; run `oslab sim validate` (root) to measure how far the simulator is from the kernel here".into())
    ));
    Ok(0)
}
