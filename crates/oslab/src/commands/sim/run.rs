//! `oslab sim run`

use clap::Args;
use oslab_lab::sim::scenario::SimScenario;
use oslab_wbsim::Policy;

use super::inputs::SIM_OUTPUT_HELP;
use super::inputs::{config, configured, load, policy};
use crate::args::MaxInputArg;
use crate::exports::{OutputArgs, worded};
use crate::failure::CmdResult;
use crate::results::{Delivery, execute};

#[derive(Debug, Args)]
#[command(mut_args(worded(SIM_OUTPUT_HELP)))]
pub struct SimRunArgs {
    /// A built-in scenario (`oslab sim list`) or a scenario file (.toml)
    #[arg(value_name = "SCENARIO", add = crate::completion::scenario_names())]
    pub scenario: String,
    /// Policies to compare (repeatable): vanilla, wcall, wcall-fair [default: all three]
    #[arg(long = "policy", value_name = "POLICY", value_parser = policy)]
    pub policies: Vec<Policy>,
    /// Change a setting, e.g. --set bandwidth=20MiB/s (repeatable; see `oslab sim
    /// list --settings`)
    #[arg(long = "set", value_name = "KEY=VALUE", add = crate::completion::sim_settings())]
    pub sets: Vec<String>,
    #[command(flatten)]
    pub out: OutputArgs,
    #[command(flatten)]
    pub start: super::inputs::StartArg,
    #[command(flatten)]
    pub input: MaxInputArg,
}

pub fn run(a: SimRunArgs) -> CmdResult {
    let s = load(&a.scenario, a.input.max_input)?;
    let (c, machine) = configured(&s, &a.sets, &a.start)?;
    let policies: Vec<Policy> = if a.policies.is_empty() {
        vec![Policy::Vanilla, Policy::Wcall, Policy::WcallFair]
    } else {
        a.policies
    };
    let exp = SimScenario::new(&s, c, policies, machine);
    // simulated figures describe no machine: they are not kept in the database
    execute(&[&exp], &Delivery::outputs_only(a.out), &config())
}
