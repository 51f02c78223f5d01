//! `oslab wcall`: the WCALL governor from the command line.

mod attach;
mod bench_writes;
mod daemon;
mod governor;
mod interposer;
mod run;
mod status;
mod writer;

use clap::Subcommand;
use oslab_wcall::cli::{WcallBenchArgs, WcallDaemonArgs, WcallRunArgs, WcallWriterArgs};

use crate::failure::CmdResult;

#[derive(Debug, Subcommand)]
pub enum WcallCommand {
    /// Run CMD (and its children) under the governor: a running daemon's, or one of
    /// its own for as long as CMD runs
    Run(WcallRunArgs),
    /// Run a governor until Ctrl-C; programs join it with `oslab wcall run --name NAME`
    Daemon(WcallDaemonArgs),
    /// The governors running on this machine: groups, tasks, dirty and writeback
    /// bytes, shares, limits, time held back, writes delayed
    Status(status::WcallStatusArgs),
    /// Govern a process that is already running (explains why this mechanism cannot)
    Attach(attach::WcallAttachArgs),
    /// Install the interposer this binary carries (liboslab_wcall.so), for
    /// services that preload it by path (dist/systemd)
    Interposer(interposer::WcallInterposerArgs),
    /// One writer process for `sim validate`'s real cells (prints its trace as JSON)
    #[command(hide = true)]
    Writer(WcallWriterArgs),
    /// Times small pwrite() calls for wb.wcall-overhead (prints ns per call per batch)
    #[command(hide = true)]
    BenchWrites(WcallBenchArgs),
}

pub fn run(c: WcallCommand) -> CmdResult {
    match c {
        WcallCommand::Run(a) => run::run(a),
        WcallCommand::Daemon(a) => daemon::run(a),
        WcallCommand::Status(a) => status::run(a),
        WcallCommand::Attach(a) => attach::run(a),
        WcallCommand::Interposer(a) => interposer::run(a),
        WcallCommand::Writer(a) => writer::run(a),
        WcallCommand::BenchWrites(a) => bench_writes::run(a),
    }
}
