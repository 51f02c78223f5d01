//! Every command of the binary: one module each, holding its arguments and its
//! `run`; the grammar's root ([`Cli`]) and the one dispatch ([`dispatch`]).
//! Commands use the shared modules beside this folder, never each other.

mod compare;
mod dirty;
mod docs;
mod export;
mod history;
mod import;
mod info;
mod judge;
mod list;
mod report;
mod restore;
mod run;
mod sim;
mod stalls;
mod testbed;
mod tweak;
mod watch;
mod wcall;

use clap::{CommandFactory, Parser, Subcommand};

use crate::failure::CmdResult;

#[derive(Debug, Parser)]
#[command(
    name = "oslab",
    version,
    about = "A lab bench for Linux: measures, explains and simulates what the kernel does on this machine",
    long_about = "A lab bench for Linux: measures, explains and simulates what the kernel does on \
this machine, puts the figures beside the textbook's and says which textbook claims hold here.\n\n\
Every change to the system goes through a journal and is undone on exit, on Ctrl-C, and by \
'oslab restore' after a crash."
)]
pub struct Cli {
    /// Print every table row on one line, however wide (by default tables fit the
    /// terminal, wrapping their text columns)
    #[arg(long, global = true)]
    pub wide: bool,
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Show this machine: CPUs, caches, memory, kernel and scheduler, hypervisor,
    /// write-back settings, block devices
    Info(info::InfoArgs),
    /// List every experiment with what it reproduces, whether it needs root, and how long it takes
    List(list::ListArgs),
    /// Run experiments by id, family (e.g. `cpu`) or `all`
    Run(run::RunArgs),
    /// Live sar-like view of memory, dirty pages, paging, devices, CPU and context
    /// switches; optionally served in OpenMetrics format for Prometheus
    Watch(watch::WatchArgs),
    /// Slow file calls explained by the kernel (eBPF, root): for every read, write,
    /// sync or page fault on a file over the threshold, its file and cgroup, how
    /// long it was throttled, waited for write back, blocked elsewhere (with the
    /// kernel stack and, for reads, the writes queued at the device) or waited for
    /// a CPU; who dirtied the pages, what the flusher did and the device's
    /// bandwidth estimate
    Stalls(stalls::StallsArgs),
    /// Dirty-page write back: the limits the kernel applies, and tuning advice
    #[command(subcommand)]
    Dirty(dirty::DirtyCommand),
    /// The write-back simulator: the kernel's rules and the WCALL policies, fast
    #[command(subcommand)]
    Sim(sim::SimCommand),
    /// A slow, throttled block device for write-back experiments (root)
    #[command(subcommand)]
    Testbed(testbed::TestbedCommand),
    /// WCALL, the priority-aware write-cache governor: run programs under it, run
    /// it as a daemon, watch it
    #[command(subcommand)]
    Wcall(wcall::WcallCommand),
    /// Undo every system change that an interrupted oslab run left behind
    Restore(restore::RestoreArgs),
    /// Set sysctls for a while, through the journal: for --for SECONDS, for the life of
    /// a command given after `--`, or until Ctrl-C; then put them back
    Tweak(tweak::TweakArgs),
    /// One self-contained HTML page (or terminal tables) from results: JSON files or
    /// run ids of the results database
    Report(report::ReportArgs),
    /// Past runs kept in the results database, newest first
    History(history::HistoryArgs),
    /// Two runs, two result files or two machines side by side: every figure, the
    /// ratio, and whether the difference is beyond noise
    Compare(compare::CompareArgs),
    /// Results from the database as CSV or JSON, for notebooks
    Export(export::ExportArgs),
    /// Store results kept elsewhere in the database: result files (`oslab run
    /// --json`, or the file a run left when its database was unreachable), or every
    /// run of an oslab SQLite database (to move a history to PostgreSQL)
    Import(import::ImportArgs),
    /// Judge raw data saved by `oslab run --save-raw` with this oslab's analysis:
    /// the same tables, JSON and report as the run
    Judge(judge::JudgeArgs),
    /// Shell completions on standard output: `oslab completions bash >
    /// /etc/bash_completion.d/oslab` (zsh: a file `_oslab` on $fpath; fish:
    /// ~/.config/fish/completions/oslab.fish)
    Completions(docs::CompletionsArgs),
    /// The manual page oslab(1) on standard output, or with --dir one page per
    /// command (oslab-run.1, ...) into a folder such as /usr/local/share/man/man1
    Man(docs::ManArgs),
}

/// Runs the command `cli` names; its exit code or failure.
pub fn dispatch(command: Command) -> CmdResult {
    match command {
        Command::Info(a) => info::run(a),
        Command::List(a) => list::run(a),
        Command::Run(a) => run::run(a),
        Command::Restore(a) => restore::run(a),
        Command::Sim(c) => sim::run(c),
        Command::Testbed(c) => testbed::run(c),
        Command::Stalls(a) => stalls::run(a),
        Command::Dirty(c) => dirty::run(c),
        Command::Watch(a) => watch::run(a),
        Command::Tweak(a) => tweak::run(a),
        Command::Wcall(c) => wcall::run(c),
        Command::Report(a) => report::run(a),
        Command::History(a) => history::run(a),
        Command::Compare(a) => compare::run(a),
        Command::Export(a) => export::run(a),
        Command::Import(a) => import::run(a),
        Command::Judge(a) => judge::run(a),
        Command::Completions(a) => docs::completions(a),
        Command::Man(a) => docs::man(a, Cli::command()),
    }
}

/// The command lines lab builds (`oslab_wcall::cli::Launch`) against the real
/// grammar.
#[cfg(test)]
mod launch_tests {
    use std::ffi::OsString;

    use clap::Parser;
    use oslab_wcall::cli::{GovernorPolicy, Launch, Recycle, RunGroup, WcallPolicyArgs};
    use oslab_wcall::guard::GuardSetting;

    use oslab_wcall::cli::{WcallBenchArgs, WcallDaemonArgs, WcallRunArgs, WcallWriterArgs};

    use super::wcall::WcallCommand;
    use super::{Cli, Command};

    fn parsed(launch: &Launch) -> WcallCommand {
        let argv = std::iter::once(OsString::from("oslab")).chain(launch.argv());
        match Cli::try_parse_from(argv).expect("parses").command {
            Command::Wcall(c) => c,
            other => panic!("not a wcall command: {other:?}"),
        }
    }

    fn every_policy_option() -> WcallPolicyArgs {
        WcallPolicyArgs {
            policy: Some(GovernorPolicy::Wcall),
            block_ms: Some(0.1 + 0.2 + 50.0),
            interval_ms: Some(7.5),
            headroom: Some((8 << 20) + 1),
            recycle: Some(Recycle::Off),
            sync_guard: Some(GuardSetting::Fixed(8 << 20)),
            sync_guard_quiet: Some(2.5),
            no_cgroups: true,
            memory_high: vec![
                "normal=2GiB".parse().unwrap(),
                "low=1.5GiB".parse().unwrap(),
            ],
        }
    }

    /// The values of each typed option that `every_policy_option` leaves out.
    fn the_other_values() -> [WcallPolicyArgs; 2] {
        let other = WcallPolicyArgs {
            policy: Some(GovernorPolicy::WcallFair),
            headroom: Some(0),
            recycle: Some(Recycle::On),
            sync_guard: Some(GuardSetting::Auto),
            ..Default::default()
        };
        let off = WcallPolicyArgs {
            recycle: Some(Recycle::Auto),
            sync_guard: Some(GuardSetting::Off),
            ..other.clone()
        };
        [other, off]
    }

    #[test]
    fn every_launch_parses_back_to_the_value_it_was_built_from() {
        let run = WcallRunArgs {
            group: RunGroup::RtHigh,
            name: Some("g.one_1-A".parse().unwrap()),
            private: false,
            shared_socket: false,
            policy: WcallPolicyArgs::default(),
            command: vec!["sh".into(), "-c".into(), "--not-ours x".into()],
        };
        let private = WcallRunArgs {
            name: None,
            private: true,
            shared_socket: true,
            policy: every_policy_option(),
            ..run.clone()
        };
        let daemon = WcallDaemonArgs {
            name: "wb-wcall-1-a".parse().unwrap(),
            policy: every_policy_option(),
            service: vec![
                "postgresql@*.service=rt-high".parse().unwrap(),
                "b.service=low".parse().unwrap(),
                "c.service=non-rt".parse().unwrap(),
            ],
            duration: Some(2.5),
            every: 0.0,
        };
        let writer = WcallWriterArgs {
            file: "/tmp/a file".into(),
            chunk: (512 << 10) + 1,
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
        let [other, off] = the_other_values().map(|policy| WcallRunArgs {
            policy,
            ..private.clone()
        });
        let groups =
            [RunGroup::RtLow, RunGroup::Normal, RunGroup::Auto].map(|group| WcallRunArgs {
                group,
                ..run.clone()
            });
        for a in [run, private, other, off].into_iter().chain(groups) {
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
