//! `oslab sim ...`: the write-back simulator's commands.

mod advise;
mod bench;
mod calibrate;
mod inputs;
mod list;
mod run;
mod sweep;
mod validate;

use clap::Subcommand;

use crate::failure::CmdResult;

#[derive(Debug, Subcommand)]
pub enum SimCommand {
    /// List the built-in scenarios, or with --settings what `--set` can change
    List(list::SimListArgs),
    /// Run a scenario (a built-in name or a TOML file) under one or more policies
    Run(run::SimRunArgs),
    /// Run a scenario for many values of one setting, on all CPUs
    Sweep(sweep::SimSweepArgs),
    /// Run the testbed workloads (RT-55 alone, with two RT-45 writers, with two bulk
    /// writers; vanilla, wcall, wcall-fair) on the real kernel and in the simulator
    /// with the same settings, and compare their figures (root)
    Validate(validate::SimValidateArgs),
    /// The dirty settings and policy that keep a high-priority writer's p99 under a
    /// target, for the writers and device you describe
    Advise(advise::SimAdviseArgs),
    /// Measure this machine's profile for the simulator (the device's sustained
    /// write bandwidth, the page cache's copy and new-page costs) and store it
    Calibrate(calibrate::SimCalibrateArgs),
    /// Measure the simulator's own speed
    Bench,
}

pub fn run(c: SimCommand) -> CmdResult {
    match c {
        SimCommand::List(a) => list::run(a),
        SimCommand::Run(a) => run::run(a),
        SimCommand::Sweep(a) => sweep::run(a),
        SimCommand::Validate(a) => validate::run(a),
        SimCommand::Advise(a) => advise::run(a),
        SimCommand::Calibrate(a) => calibrate::run(a),
        SimCommand::Bench => bench::run(),
    }
}
