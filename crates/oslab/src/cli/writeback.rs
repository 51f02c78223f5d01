//! The arguments of the write-back commands: `oslab dirty`, `oslab testbed` and
//! `oslab sim`.

use std::path::PathBuf;

use clap::{Args, Subcommand};

use crate::cli_values::{duration, seconds, whole};

#[derive(Debug, Subcommand)]
pub enum DirtyCommand {
    /// The background and hard dirty limits as the running kernel computes them,
    /// checked against the kernel's own figures, and the material's rules tested
    Explain(ExplainArgs),
    /// Recommend vm.dirty_* settings from the device's bandwidth and the workload's
    /// dirtying rate, with the reasoning and the predicted Dirty curve
    Advise(AdviseArgs),
}

#[derive(Debug, Args)]
pub struct AdviseArgs {
    /// The device's sustained write bandwidth, e.g. 50MiB/s (default: measured by
    /// writing 256 MiB and syncing it in the scratch directory)
    #[arg(
        long,
        value_name = "RATE",
        conflicts_with = "testbed",
        allow_hyphen_values = true
    )]
    pub device_bandwidth: Option<String>,
    /// Advise for the testbed that is up ('oslab testbed up')
    #[arg(long)]
    pub testbed: bool,
    /// The workload's dirtying rate, e.g. 4MiB/s (default: measured from
    /// /proc/vmstat nr_dirtied over --window seconds)
    #[arg(long, value_name = "RATE", allow_hyphen_values = true)]
    pub rate: Option<String>,
    /// Seconds to watch the running system for its dirtying rate
    #[arg(long, value_name = "SECONDS", default_value_t = 5.0, allow_negative_numbers = true, value_parser = seconds(0.5, 600.0))]
    pub window: f64,
    /// The longest a writer should be held back at the hard limit, seconds
    #[arg(long, value_name = "SECONDS", default_value_t = 1.0, allow_negative_numbers = true, value_parser = seconds(0.05, 60.0))]
    pub target_latency: f64,
    /// Apply the settings (root; journaled: 'oslab restore' puts the old ones back)
    #[arg(long)]
    pub apply: bool,
    /// Print JSON
    #[arg(long)]
    pub json: bool,
    /// Where to measure the device [default: $TMPDIR]
    #[arg(long, value_name = "DIR")]
    pub scratch: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct ExplainArgs {
    /// Print JSON
    #[arg(long)]
    pub json: bool,
    /// Do not test the rules live (as root they are tested by changing sysctls
    /// through the journal for a few seconds)
    #[arg(long)]
    pub no_live: bool,
    /// Where rule d writes its 1 MiB test file [default: $TMPDIR]
    #[arg(long, value_name = "DIR")]
    pub scratch: Option<PathBuf>,
}

#[derive(Debug, Subcommand)]
pub enum TestbedCommand {
    /// Build it: loop device over a sparse file, ext4, write bandwidth cap; measures itself
    Up(TestbedUpArgs),
    /// Take it down (also done by `oslab restore`)
    Down,
    /// Show the testbed that is up, if any
    Status,
}

#[derive(Debug, Args)]
pub struct TestbedUpArgs {
    /// Write bandwidth cap, e.g. 10MiB/s
    #[arg(long, value_name = "RATE", allow_hyphen_values = true)]
    pub bandwidth: String,
    /// Size of the sparse image
    #[arg(
        long,
        value_name = "SIZE",
        default_value = "2GiB",
        allow_hyphen_values = true
    )]
    pub size: String,
    /// Where the image and mount point go [default: $TMPDIR]
    #[arg(long, value_name = "DIR")]
    pub scratch: Option<PathBuf>,
}

#[derive(Debug, Subcommand)]
pub enum SimCommand {
    /// List the built-in scenarios, or with --settings what `--set` can change
    List(SimListArgs),
    /// Run a scenario (a built-in name or a TOML file) under one or more policies
    Run(SimRunArgs),
    /// Run a scenario for many values of one setting, on all CPUs
    Sweep(SimSweepArgs),
    /// Run the testbed workloads (RT-55 alone, with two RT-45 writers, with two bulk
    /// writers; vanilla, wcall, wcall-fair) on the real kernel and in the simulator
    /// with the same settings, and compare their figures (root)
    Validate(SimValidateArgs),
    /// The dirty settings and policy that keep a high-priority writer's p99 under a
    /// target, for the writers and device you describe
    Advise(SimAdviseArgs),
    /// Measure the simulator's own speed
    Bench,
}

#[derive(Debug, Args)]
pub struct SimListArgs {
    /// List the settings `oslab sim run|sweep --set KEY=VALUE` can change: kind,
    /// default, range and the scenario field each sets
    #[arg(long)]
    pub settings: bool,
}

#[derive(Debug, Args)]
pub struct SimOutArgs {
    /// Write the results as JSON to FILE (`-` for standard output)
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// Write CSV files into DIR
    #[arg(long, value_name = "DIR")]
    pub csv: Option<PathBuf>,
    /// Write SVG plots into DIR
    #[arg(long, value_name = "DIR")]
    pub plots: Option<PathBuf>,
    /// Write one self-contained HTML report to FILE
    #[arg(long, value_name = "FILE")]
    pub html: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct SimValidateArgs {
    /// Smaller, faster settings: 150 writes per cell, one run, no sweep
    #[arg(long)]
    pub quick: bool,
    /// Change a setting: writes, runs, scenarios, policies, sweep, sweep_writes,
    /// bandwidth (repeatable; see `oslab list --settings`)
    #[arg(long = "set", value_name = "NAME=VALUE")]
    pub sets: Vec<String>,
    /// Compare one writer's Dirty sawtooth instead (wb.background, wb.periodic)
    #[arg(long)]
    pub sawtooth: bool,
    /// Keep the raw data in DIR, to judge again with `oslab judge`
    #[arg(long, value_name = "DIR")]
    pub save_raw: Option<PathBuf>,
    /// Scratch directory for the testbed [default: $TMPDIR]
    #[arg(long, value_name = "DIR")]
    pub scratch: Option<PathBuf>,
    #[command(flatten)]
    pub out: SimOutArgs,
}

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
    pub input: crate::cli::MaxInputArg,
}

#[derive(Debug, Args)]
pub struct SimRunArgs {
    /// A built-in scenario (`oslab sim list`) or a scenario file (.toml)
    #[arg(value_name = "SCENARIO")]
    pub scenario: String,
    /// Policies to compare (repeatable): vanilla, wcall, wcall-fair [default: all three]
    #[arg(long = "policy", value_name = "POLICY")]
    pub policies: Vec<String>,
    /// Change a setting, e.g. --set bandwidth=20MiB/s (repeatable; see `oslab sim
    /// list --settings`)
    #[arg(long = "set", value_name = "KEY=VALUE")]
    pub sets: Vec<String>,
    #[command(flatten)]
    pub out: SimOutArgs,
    #[command(flatten)]
    pub input: crate::cli::MaxInputArg,
}

#[derive(Debug, Args)]
pub struct SimSweepArgs {
    #[arg(value_name = "SCENARIO")]
    pub scenario: String,
    /// The setting and its values: KEY=V1,V2,... or KEY=FROM..TO (with --steps)
    #[arg(long, value_name = "KEY=VALUES")]
    pub vary: String,
    /// Points between FROM and TO
    #[arg(long, value_name = "N", default_value_t = 10, allow_negative_numbers = true, value_parser = whole(2, 100_000))]
    pub steps: u64,
    /// The policy to sweep under
    #[arg(long, value_name = "POLICY", default_value = "vanilla")]
    pub policy: String,
    /// Other settings (repeatable)
    #[arg(long = "set", value_name = "KEY=VALUE")]
    pub sets: Vec<String>,
    /// Print JSON
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub input: crate::cli::MaxInputArg,
}
