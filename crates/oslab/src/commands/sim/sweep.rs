//! `oslab sim sweep`

use clap::Args;
use oslab_services::sim_sweep::sweep;
use oslab_wbsim::Policy;

use super::inputs::{configured, load, policy, values};
use crate::args::MaxInputArg;
use crate::failure::{CmdResult, Failure};
use crate::output::print;
use oslab_arg_values::whole;

#[derive(Debug, Args)]
pub struct SimSweepArgs {
    /// A built-in scenario (`oslab sim list`) or a scenario file (.toml)
    #[arg(value_name = "SCENARIO", add = crate::completion::scenario_names())]
    pub scenario: String,
    /// The setting and its values: KEY=V1,V2,... or KEY=FROM..TO (with --steps)
    #[arg(long, value_name = "KEY=VALUES", add = crate::completion::sim_settings())]
    pub vary: String,
    /// Points between FROM and TO
    #[arg(long, value_name = "N", default_value_t = 10, allow_negative_numbers = true, value_parser = whole(2, 100_000))]
    pub steps: u64,
    /// The policy to sweep under
    #[arg(long, value_name = "POLICY", default_value = "vanilla", value_parser = policy)]
    pub policy: Policy,
    /// Other settings (repeatable)
    #[arg(long = "set", value_name = "KEY=VALUE", add = crate::completion::sim_settings())]
    pub sets: Vec<String>,
    #[command(flatten)]
    pub json: crate::args::JsonArg,
    #[command(flatten)]
    pub start: super::inputs::StartArg,
    #[command(flatten)]
    pub input: MaxInputArg,
}

pub fn run(a: SimSweepArgs) -> CmdResult {
    a.json.check()?;
    let s = load(&a.scenario, a.input.max_input)?;
    let (mut c, machine) = configured(&s, &a.sets, &a.start)?;
    c.policy = a.policy;
    let (key, vals) = values(&a.vary, a.steps)?;
    let t0 = std::time::Instant::now();
    let points = sweep(&c, &key, &vals).map_err(|e| Failure::usage(format!("--vary {e}")))?;
    let secs = t0.elapsed().as_secs_f64();
    if a.json.write(&points)? {
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
    let start = match c.start {
        oslab_wbsim::config::Start::Steady => "each point from the steady state of its writers",
        oslab_wbsim::config::Start::Given => {
            "each point from the scenario's given estimates (--from-boot)"
        }
        oslab_wbsim::config::Start::Live => "each point from the device's live state (--live)",
    };
    print(&format!(
        "{} ({}), {key} varied, first writer's write() latency; simulated on {machine}; {start}:\n",
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
