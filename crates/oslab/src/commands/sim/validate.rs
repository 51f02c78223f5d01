//! `oslab sim validate`

use std::path::PathBuf;

use clap::Args;
use oslab_harness::RunConfig;
use oslab_lab::registry::SIM_SAWTOOTH;
use oslab_lab::sim::validate::SimValidate;
use oslab_model::Mode;

use super::inputs::SIM_OUTPUT_HELP;
use crate::db::DbTarget;
use crate::exports::{OutputArgs, worded};
use crate::failure::CmdResult;
use crate::results::{Delivery, check_sets, execute};
use crate::scratch::scratch_base;

#[derive(Debug, Args)]
#[command(mut_args(worded(SIM_OUTPUT_HELP)))]
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
    pub out: OutputArgs,
}

/// `oslab sim validate`: real runs beside the simulator, kept in the results
/// database (they describe this machine).
pub fn run(a: SimValidateArgs) -> CmdResult {
    crate::pending::warn_if_pending();
    let exp: &dyn oslab_harness::AnyExperiment = if a.sawtooth {
        &SIM_SAWTOOTH
    } else {
        &SimValidate
    };
    let sets = check_sets(&a.sets, &[exp])?;
    let cfg = RunConfig {
        mode: if a.quick || a.sawtooth {
            Mode::Quick
        } else {
            Mode::Full
        },
        repeat: None,
        seed: 1,
        scratch_dir: scratch_base(a.scratch.as_deref())?,
        sets,
        oslab_exe: oslab_sys::program::own_exe(),
    };
    let delivery = Delivery {
        outputs: a.out,
        save_raw: a.save_raw,
        db: crate::db::default_target()?.map_or(DbTarget::Off, DbTarget::Default),
        label: None,
    };
    execute(&[exp], &delivery, &cfg)
}
