//! `oslab wcall`: the WCALL governor from the command line.

mod attach;
mod bench_writes;
mod daemon;
mod governor;
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
        WcallCommand::Writer(a) => writer::run(a),
        WcallCommand::BenchWrites(a) => bench_writes::run(a),
    }
}

#[cfg(test)]
mod tests {
    use std::ffi::OsString;

    use clap::Parser;
    use oslab_wcall::cli::{Launch, WcallPolicyArgs};

    use super::*;
    use crate::commands::{Cli, Command};

    fn parsed(launch: &Launch) -> WcallCommand {
        let argv = std::iter::once(OsString::from("oslab")).chain(launch.argv());
        match Cli::try_parse_from(argv).expect("parses").command {
            Command::Wcall(c) => c,
            other => panic!("not a wcall command: {other:?}"),
        }
    }

    fn every_policy_option() -> WcallPolicyArgs {
        WcallPolicyArgs {
            policy: Some("wcall".into()),
            block_ms: Some(0.1 + 0.2 + 50.0),
            interval_ms: Some(7.5),
            headroom: Some("8MiB".into()),
            recycle: Some("off".into()),
            no_cgroups: true,
            memory_high: vec!["normal=2GiB".into(), "rt-low=1GiB".into()],
        }
    }

    #[test]
    fn every_launch_parses_back_to_the_value_it_was_built_from() {
        let run = WcallRunArgs {
            group: "rt-high".into(),
            name: Some("g one".into()),
            private: false,
            policy: WcallPolicyArgs::default(),
            command: vec!["sh".into(), "-c".into(), "--not-ours x".into()],
        };
        let private = WcallRunArgs {
            name: None,
            private: true,
            policy: every_policy_option(),
            ..run.clone()
        };
        let daemon = WcallDaemonArgs {
            name: "wb-wcall-1-a".into(),
            policy: every_policy_option(),
            duration: Some(2.5),
            every: 0.0,
        };
        let writer = WcallWriterArgs {
            file: "/tmp/a file".into(),
            chunk: "512KiB".into(),
            period_ms: 20.0,
            count: Some(150),
            duration: Some(1.0 / 3.0),
            fifo: Some(55),
            nice: Some(-5),
            start_at: Some(u64::MAX),
        };
        let quiet_writer = WcallWriterArgs {
            count: None,
            duration: None,
            fifo: None,
            nice: None,
            start_at: None,
            ..writer.clone()
        };
        let bench = WcallBenchArgs {
            file: "/tmp/b".into(),
            batches: 3,
            per_batch: 1000,
        };
        for a in [run, private] {
            assert!(matches!(parsed(&Launch::Run(a.clone())), WcallCommand::Run(b) if b == a));
        }
        let d = parsed(&Launch::Daemon(daemon.clone()));
        assert!(matches!(d, WcallCommand::Daemon(b) if b == daemon));
        for a in [writer, quiet_writer] {
            let w = parsed(&Launch::Writer(a.clone()));
            assert!(matches!(w, WcallCommand::Writer(b) if b == a));
        }
        let b = parsed(&Launch::BenchWrites(bench.clone()));
        assert!(matches!(b, WcallCommand::BenchWrites(b) if b == bench));
    }
}
