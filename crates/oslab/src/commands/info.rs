//! `oslab info`

use clap::Args;
use std::path::PathBuf;

use oslab_sys::fsread::Root;
use oslab_sys::machine::{self, LiveProbes};

use crate::failure::CmdResult;
use crate::output::print;

#[derive(Debug, Args)]
pub struct InfoArgs {
    #[command(flatten)]
    pub json: crate::args::JsonArg,
    /// Scratch directory whose device and free space to report [default: $TMPDIR]
    #[arg(long, value_name = "DIR")]
    pub scratch: Option<PathBuf>,
}

pub fn run(a: InfoArgs) -> CmdResult {
    a.json.check()?;
    crate::pending::warn_if_pending();
    let scratch = crate::scratch::scratch_base(a.scratch.as_deref())?;
    let m = machine::collect(&Root::live(), &LiveProbes::live(&scratch));
    if !a.json.write(&m)? {
        print(&oslab_report::info::render(&m));
    }
    Ok(0)
}
