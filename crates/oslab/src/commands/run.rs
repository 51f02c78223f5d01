//! `oslab run`

use std::path::PathBuf;

use clap::Args;
use oslab_harness::RunConfig;
use oslab_lab::Registry;
use oslab_model::Mode;

use crate::db::DbTarget;
use crate::exports::OutputArgs;
use crate::failure::{CmdResult, Failure};
use crate::results::{Delivery, check_sets, execute};
use crate::scratch::scratch_base;
use oslab_arg_values::whole;

// `--html` keeps the place it had before the output flags became one group:
// after `--set`, in the help (display order) and in the completions (the order the
// arguments were added, which `mut_arg` changes by putting the argument last).
#[derive(Debug, Args)]
#[command(
    mut_arg("html", |a| a.display_order(8)),
    mut_arg("save_raw", |a| a),
    mut_arg("db", |a| a),
    mut_arg("no_db", |a| a),
    mut_arg("label", |a| a)
)]
pub struct RunArgs {
    /// Experiment ids (see `oslab list`), families such as `cpu`, or `all`
    #[arg(required = true, value_name = "ID", add = crate::completion::experiment_ids())]
    pub ids: Vec<String>,
    /// Smaller, faster settings (coarser figures)
    #[arg(long)]
    pub quick: bool,
    #[command(flatten)]
    pub outputs: OutputArgs,
    /// Samples per measurement, instead of each experiment's own count
    #[arg(long, value_name = "N", display_order = 4, allow_negative_numbers = true, value_parser = whole(1, 1_000_000))]
    pub repeat: Option<u64>,
    /// Seed for everything random (bootstrap resampling, shuffles)
    #[arg(long, value_name = "N", display_order = 5, default_value_t = 1, allow_negative_numbers = true, value_parser = whole(0, u64::MAX))]
    pub seed: u64,
    /// Scratch directory for experiment files [default: $TMPDIR]
    #[arg(long, value_name = "DIR", display_order = 6)]
    pub scratch: Option<PathBuf>,
    /// Change an experiment setting, e.g. --set size=512MiB (see `oslab list --settings`)
    #[arg(long = "set", value_name = "NAME=VALUE", display_order = 7, add = crate::completion::run_settings())]
    pub sets: Vec<String>,
    /// Keep each experiment's raw data (plan, every sample, the facts read from the
    /// system) in DIR, to judge again later with `oslab judge`
    #[arg(long, value_name = "DIR")]
    pub save_raw: Option<PathBuf>,
    /// Keep the results in this database, an SQLite file or
    /// postgres://USER@HOST/DBNAME [default: $OSLAB_DB, else
    /// $XDG_DATA_HOME/oslab/results.db, else ~/.local/share/oslab/results.db]; the
    /// run is stored under $OSLAB_MACHINE, else the host name
    #[arg(long, value_name = "FILE|URL", conflicts_with = "no_db")]
    pub db: Option<PathBuf>,
    /// Do not keep the results in the database
    #[arg(long)]
    pub no_db: bool,
    /// A note stored with the run, e.g. "before the kernel upgrade"
    #[arg(long, value_name = "TEXT")]
    pub label: Option<String>,
}

pub fn run(a: RunArgs) -> CmdResult {
    crate::pending::warn_if_pending();
    let registry = Registry::default();
    let experiments = registry
        .resolve_for(&a.ids, a.quick)
        .map_err(|e| Failure::usage(e.to_string()))?;
    let scratch = scratch_base(a.scratch.as_deref())?;
    let sets = check_sets(&a.sets, &experiments)?;
    let cfg = RunConfig {
        sets,
        mode: if a.quick { Mode::Quick } else { Mode::Full },
        repeat: a.repeat.map(|n| n as usize),
        seed: a.seed,
        scratch_dir: scratch,
        oslab_exe: oslab_sys::program::own_exe(),
    };
    let db = match (a.no_db, a.db) {
        (true, _) => DbTarget::Off,
        (false, Some(p)) => DbTarget::Chosen(crate::db::chosen(Some(&p))?),
        (false, None) => crate::db::default_target()?.map_or(DbTarget::Off, DbTarget::Default),
    };
    let delivery = Delivery {
        outputs: a.outputs,
        save_raw: a.save_raw,
        db,
        label: a.label,
    };
    execute(&experiments, &delivery, &cfg)
}
