//! `oslab wcall attach PID`: why a running process cannot be governed.

use clap::Args;

use crate::failure::{CmdResult, Failure};
use oslab_arg_values::whole;

#[derive(Debug, Args)]
pub struct WcallAttachArgs {
    /// The running process
    #[arg(value_name = "PID", allow_negative_numbers = true, value_parser = whole(1, u32::MAX as u64))]
    pub pid: u64,
    #[command(flatten)]
    pub no_table: crate::args::NoTable,
}

pub fn run(a: WcallAttachArgs) -> CmdResult {
    if !oslab_sys::fsread::Root::live().exists(&format!("/proc/{}", a.pid)) {
        return Err(Failure::usage(format!("there is no process {}", a.pid)));
    }
    Err(Failure::runtime(format!(
        "cannot govern running process {}: the governor enforces through an LD_PRELOAD interposer, \
which a program loads only when it starts (oslab does not inject code with ptrace). \
Restart it as `oslab wcall run [--name NAME] -- CMD`",
        a.pid
    )))
}
