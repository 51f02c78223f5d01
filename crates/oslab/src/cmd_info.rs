//! `oslab info`

use oslab_sys::fsread::Root;
use oslab_sys::machine::{self, LiveProbes};

use crate::CmdResult;
use crate::cli::InfoArgs;
use crate::failure::Failure;
use crate::output::print;

pub fn scratch_base(arg: Option<&std::path::Path>) -> Result<std::path::PathBuf, Failure> {
    let dir = arg
        .map(|p| p.to_path_buf())
        .unwrap_or_else(std::env::temp_dir);
    if !dir.is_dir() {
        return Err(Failure::usage(format!(
            "scratch directory {} does not exist",
            dir.display()
        )));
    }
    Ok(dir)
}

pub fn run(a: InfoArgs) -> CmdResult {
    crate::cmd_restore::warn_if_pending();
    let scratch = scratch_base(a.scratch.as_deref())?;
    let m = machine::collect(&Root::live(), &LiveProbes::live(&scratch));
    if a.json {
        print(&(serde_json::to_string_pretty(&m).expect("machine info serialises") + "\n"));
    } else {
        print(&oslab_report::info::render(&m));
    }
    Ok(0)
}
