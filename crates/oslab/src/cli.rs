//! The command-line grammar.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

use crate::cli_values::{duration, number, seconds, size, whole};

mod writeback;
pub use writeback::*;

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
    Info(InfoArgs),
    /// List every experiment with what it reproduces, whether it needs root, and how long it takes
    List(ListArgs),
    /// Run experiments by id, family (e.g. `cpu`) or `all`
    Run(RunArgs),
    /// Live sar-like view of memory, dirty pages, paging, devices, CPU and context
    /// switches; optionally served in OpenMetrics format for Prometheus
    Watch(WatchArgs),
    /// Slow writes explained by the kernel (eBPF, root): for every write, pwrite or
    /// fsync over the threshold, how long it was throttled, waited for write back,
    /// blocked elsewhere (with the kernel stack) or waited for a CPU; who dirtied
    /// the pages, what the flusher did and the device's bandwidth estimate
    Stalls(StallsArgs),
    /// Dirty-page write back: the limits the kernel applies, and tuning advice
    #[command(subcommand)]
    Dirty(DirtyCommand),
    /// The write-back simulator: the kernel's rules and the WCALL policies, fast
    #[command(subcommand)]
    Sim(SimCommand),
    /// A slow, throttled block device for write-back experiments (root)
    #[command(subcommand)]
    Testbed(TestbedCommand),
    /// WCALL, the priority-aware write-cache governor: run programs under it, run
    /// it as a daemon, watch it
    #[command(subcommand)]
    Wcall(WcallCommand),
    /// Undo every system change that an interrupted oslab run left behind
    Restore(RestoreArgs),
    /// Set sysctls for a while, through the journal: for --for SECONDS, for the life of
    /// a command given after `--`, or until Ctrl-C; then put them back
    Tweak(TweakArgs),
    /// One self-contained HTML page (or terminal tables) from results: JSON files or
    /// run ids of the results database
    Report(ReportArgs),
    /// Past runs kept in the results database, newest first
    History(HistoryArgs),
    /// Two runs, two result files or two machines side by side: every figure, the
    /// ratio, and whether the difference is beyond noise
    Compare(CompareArgs),
    /// Results from the database as CSV or JSON, for notebooks
    Export(ExportArgs),
    /// Store results kept elsewhere in the database: result files (`oslab run
    /// --json`, or the file a run left when its database was unreachable), or every
    /// run of an oslab SQLite database (to move a history to PostgreSQL)
    Import(ImportArgs),
    /// Judge raw data saved by `oslab run --save-raw` with this oslab's analysis:
    /// the same tables, JSON and report as the run
    Judge(JudgeArgs),
    /// Shell completions on standard output: `oslab completions bash >
    /// /etc/bash_completion.d/oslab` (zsh: a file `_oslab` on $fpath; fish:
    /// ~/.config/fish/completions/oslab.fish)
    Completions(CompletionsArgs),
    /// The manual page oslab(1) on standard output, or with --dir one page per
    /// command (oslab-run.1, ...) into a folder such as /usr/local/share/man/man1
    Man(ManArgs),
}

#[derive(Debug, Args)]
pub struct CompletionsArgs {
    /// The shell to complete for
    #[arg(value_enum)]
    pub shell: clap_complete::Shell,
}

#[derive(Debug, Args)]
pub struct ManArgs {
    /// Write a page for oslab and each of its commands into DIR (made if missing)
    #[arg(long, value_name = "DIR")]
    pub dir: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct JudgeArgs {
    /// Raw files written by `oslab run --save-raw DIR` (.raw.json or .raw.json.gz;
    /// `-` for standard input)
    #[arg(required = true, value_name = "RAWFILE")]
    pub files: Vec<PathBuf>,
    /// Write all results as JSON to FILE (`-` for standard output, which then holds only JSON)
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// Write CSV files of every result into DIR
    #[arg(long, value_name = "DIR")]
    pub csv: Option<PathBuf>,
    /// Write every plot as an SVG file into DIR
    #[arg(long, value_name = "DIR")]
    pub plots: Option<PathBuf>,
    /// Also write one self-contained HTML report to FILE
    #[arg(long, value_name = "FILE")]
    pub html: Option<PathBuf>,
    #[command(flatten)]
    pub input: MaxInputArg,
}

/// The limit on every file a command reads (`oslab_sys::infile`).
#[derive(Debug, Clone, Copy, Args)]
pub struct MaxInputArg {
    /// Refuse an input file (or standard input) that holds, or decompresses to,
    /// more than SIZE, e.g. 4GiB
    #[arg(long = "max-input", value_name = "SIZE", default_value = "1GiB", value_parser = size(1, 1 << 50))]
    pub max_input: u64,
}

#[derive(Debug, Args)]
pub struct DbArg {
    /// The results database: an SQLite file or postgres://USER@HOST/DBNAME
    /// [default: $OSLAB_DB, else $XDG_DATA_HOME/oslab/results.db, else
    /// ~/.local/share/oslab/results.db]
    #[arg(long, value_name = "FILE|URL")]
    pub db: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct ReportArgs {
    /// Result files written by `oslab run --json`, or run ids from `oslab history`
    /// (`latest` for the newest run)
    #[arg(required = true, value_name = "RESULTS")]
    pub sources: Vec<String>,
    /// Write the report as one self-contained HTML page to FILE (else tables on stdout)
    #[arg(long, value_name = "FILE")]
    pub html: Option<PathBuf>,
    #[command(flatten)]
    pub db: DbArg,
    #[command(flatten)]
    pub input: MaxInputArg,
}

#[derive(Debug, Args)]
pub struct HistoryArgs {
    /// Only runs of this experiment, one line per result with its first figure
    #[arg(long, value_name = "ID")]
    pub experiment: Option<String>,
    /// Only runs on this machine (its host name as stored)
    #[arg(long, value_name = "NAME")]
    pub machine: Option<String>,
    /// At most N lines
    #[arg(long, value_name = "N", default_value_t = 20, allow_negative_numbers = true, value_parser = whole(1, 1_000_000_000))]
    pub limit: u64,
    /// Print JSON instead of a table
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub db: DbArg,
}

#[derive(Debug, Args)]
pub struct CompareArgs {
    /// Two run ids (see `oslab history`; `latest` for the newest) or result files
    /// (`oslab run --json`)
    #[arg(value_name = "A B", num_args = 0..=2)]
    pub sides: Vec<String>,
    /// Compare the newest results of two machines instead (give it twice)
    #[arg(long = "machine", value_name = "NAME")]
    pub machines: Vec<String>,
    /// Also write the comparison as a self-contained HTML page to FILE
    #[arg(long, value_name = "FILE")]
    pub html: Option<PathBuf>,
    /// Also write the comparison as JSON to FILE (`-` for standard output only)
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// Seed of the permutation tests' shuffles
    #[arg(long, value_name = "N", default_value_t = 1, allow_negative_numbers = true, value_parser = whole(0, u64::MAX))]
    pub seed: u64,
    #[command(flatten)]
    pub db: DbArg,
    #[command(flatten)]
    pub input: MaxInputArg,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ExportFormat {
    Csv,
    Json,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ExportTable {
    Samples,
    Summary,
    Findings,
    Claims,
    /// The points of every plot (run, experiment, plot, series, x, y, units)
    Series,
}

#[derive(Debug, Args)]
pub struct ImportArgs {
    /// Result files written by `oslab run --json`, or oslab SQLite databases
    #[arg(required = true, value_name = "SOURCE")]
    pub sources: Vec<PathBuf>,
    /// A note stored with each run imported from a result file
    #[arg(long, value_name = "TEXT")]
    pub label: Option<String>,
    #[command(flatten)]
    pub db: DbArg,
    #[command(flatten)]
    pub input: MaxInputArg,
}

#[derive(Debug, Args)]
pub struct ExportArgs {
    /// csv: one table (see --table) over every matching result; json: whole runs
    #[arg(long, value_enum, default_value_t = ExportFormat::Json)]
    pub format: ExportFormat,
    /// Which table to write with --format csv
    #[arg(long, value_enum, default_value_t = ExportTable::Samples)]
    pub table: ExportTable,
    /// Only this experiment
    #[arg(long, value_name = "ID")]
    pub experiment: Option<String>,
    /// Only runs on this machine
    #[arg(long, value_name = "NAME")]
    pub machine: Option<String>,
    /// Only this run
    #[arg(long, value_name = "ID", allow_negative_numbers = true, value_parser = whole(1, i64::MAX as u64))]
    pub run: Option<u64>,
    /// Write to FILE instead of standard output
    #[arg(long, short = 'o', value_name = "FILE")]
    pub output: Option<PathBuf>,
    #[command(flatten)]
    pub db: DbArg,
}

#[derive(Debug, Args)]
pub struct InfoArgs {
    /// Print JSON instead of the readable layout
    #[arg(long)]
    pub json: bool,
    /// Scratch directory whose device and free space to report [default: $TMPDIR]
    #[arg(long, value_name = "DIR")]
    pub scratch: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct ListArgs {
    /// Print JSON instead of a table
    #[arg(long)]
    pub json: bool,
    /// Also list each experiment's settings (for `oslab run --set`)
    #[arg(long)]
    pub settings: bool,
}

#[derive(Debug, Args)]
pub struct RunArgs {
    /// Experiment ids (see `oslab list`), families such as `cpu`, or `all`
    #[arg(required = true, value_name = "ID")]
    pub ids: Vec<String>,
    /// Smaller, faster settings (coarser figures)
    #[arg(long)]
    pub quick: bool,
    /// Write all results as JSON to FILE (`-` for standard output, which then holds only JSON)
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// Write CSV files (samples, summary, findings, claims) of every result into DIR
    #[arg(long, value_name = "DIR")]
    pub csv: Option<PathBuf>,
    /// Write every plot as an SVG file into DIR
    #[arg(long, value_name = "DIR")]
    pub plots: Option<PathBuf>,
    /// Samples per measurement, instead of each experiment's own count
    #[arg(long, value_name = "N", allow_negative_numbers = true, value_parser = whole(1, 1_000_000))]
    pub repeat: Option<u64>,
    /// Seed for everything random (bootstrap resampling, shuffles)
    #[arg(long, value_name = "N", default_value_t = 1, allow_negative_numbers = true, value_parser = whole(0, u64::MAX))]
    pub seed: u64,
    /// Scratch directory for experiment files [default: $TMPDIR]
    #[arg(long, value_name = "DIR")]
    pub scratch: Option<PathBuf>,
    /// Change an experiment setting, e.g. --set size=512MiB (see `oslab list --settings`)
    #[arg(long = "set", value_name = "NAME=VALUE")]
    pub sets: Vec<String>,
    /// Also write one self-contained HTML report of every result to FILE
    #[arg(long, value_name = "FILE")]
    pub html: Option<PathBuf>,
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

#[derive(Debug, Args)]
pub struct RestoreArgs {
    /// Also undo journals of oslab processes that are still running
    #[arg(long)]
    pub all: bool,
}

#[derive(Debug, Args)]
pub struct TweakArgs {
    /// Settings as NAME=VALUE, e.g. vm.dirty_background_bytes=33554432
    #[arg(required = true, value_name = "NAME=VALUE")]
    pub settings: Vec<String>,
    /// Restore after this many seconds (default: when the command ends, or on Ctrl-C)
    #[arg(long = "for", value_name = "SECONDS", allow_negative_numbers = true, value_parser = seconds(0.0, 31_536_000.0))]
    pub duration: Option<f64>,
    /// A command to run with the settings in force
    #[arg(last = true, value_name = "CMD")]
    pub command: Vec<String>,
}

#[derive(Debug, Args)]
pub struct WatchArgs {
    /// Seconds between samples (0.01 to 3600)
    #[arg(long, value_name = "SECONDS", default_value_t = 1.0, allow_negative_numbers = true, value_parser = seconds(0.01, 3600.0))]
    pub interval: f64,
    /// Print one interval and exit
    #[arg(long, conflicts_with = "count")]
    pub once: bool,
    /// Stop after N intervals
    #[arg(long, value_name = "N", allow_negative_numbers = true, value_parser = whole(1, u64::MAX))]
    pub count: Option<u64>,
    /// One JSON object per line instead of the table
    #[arg(long)]
    pub json: bool,
    /// Only these devices (repeatable); default: every device that moved data
    #[arg(long = "device", value_name = "NAME")]
    pub devices: Vec<String>,
    /// Serve the latest values at http://ADDR/metrics in OpenMetrics text, e.g. 127.0.0.1:9464
    #[arg(long, value_name = "ADDR")]
    pub prometheus: Option<String>,
    /// With --prometheus: print nothing, only serve
    #[arg(long)]
    pub quiet: bool,
}

#[derive(Debug, Args)]
pub struct StallsArgs {
    /// Watch only this process (repeatable; its children forked later too)
    #[arg(long = "pid", value_name = "PID", allow_negative_numbers = true, value_parser = whole(1, u32::MAX as u64))]
    pub pids: Vec<u64>,
    /// Report calls at least this long, e.g. 10ms, 1.5s (a bare number is ms)
    #[arg(long, value_name = "DURATION", default_value = "10ms", allow_negative_numbers = true, value_parser = duration(0.000_01, 60.0))]
    pub threshold: u64,
    /// Seconds between summaries (0.1 to 3600)
    #[arg(long, value_name = "SECONDS", default_value_t = 1.0, allow_negative_numbers = true, value_parser = seconds(0.1, 3600.0))]
    pub interval: f64,
    /// Stop after N intervals
    #[arg(long, value_name = "N", allow_negative_numbers = true, value_parser = whole(1, u64::MAX))]
    pub count: Option<u64>,
    /// Write JSON lines (each slow call, then each interval) to FILE, or `-` for
    /// standard output instead of the tables
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// Write a Chrome/Perfetto trace (real pids and tids, CLOCK_MONOTONIC time) to FILE
    #[arg(long, value_name = "FILE")]
    pub trace: Option<PathBuf>,
    /// Rows per table (dirtiers, blocking places)
    #[arg(long, value_name = "N", default_value_t = 5, allow_negative_numbers = true, value_parser = whole(1, 1000))]
    pub top: u64,
    /// Run this command and watch it (and its children) until it ends
    #[arg(last = true, value_name = "CMD")]
    pub command: Vec<String>,
}

#[derive(Debug, Subcommand)]
pub enum WcallCommand {
    /// Run CMD (and its children) under the governor: a running daemon's, or one of
    /// its own for as long as CMD runs
    Run(WcallRunArgs),
    /// Run a governor until Ctrl-C; programs join it with `oslab wcall run --name NAME`
    Daemon(WcallDaemonArgs),
    /// The governors running on this machine: groups, tasks, dirty and writeback
    /// bytes, shares, limits, time held back, writes delayed
    Status(WcallStatusArgs),
    /// Govern a process that is already running (explains why this mechanism cannot)
    Attach(WcallAttachArgs),
    /// One writer process for `sim validate`'s real cells (prints its trace as JSON)
    #[command(hide = true)]
    Writer(WcallWriterArgs),
    /// Times small pwrite() calls for wb.wcall-overhead (prints ns per call per batch)
    #[command(hide = true)]
    BenchWrites(WcallBenchArgs),
}

#[derive(Debug, Args)]
pub struct WcallWriterArgs {
    #[arg(long)]
    pub file: PathBuf,
    #[arg(long, default_value = "512KiB")]
    pub chunk: String,
    /// Milliseconds between writes (0: back to back)
    #[arg(long, default_value_t = 20.0)]
    pub period_ms: f64,
    #[arg(long)]
    pub count: Option<u64>,
    /// Stop after this many seconds
    #[arg(long)]
    pub duration: Option<f64>,
    #[arg(long)]
    pub fifo: Option<i32>,
    #[arg(long)]
    pub nice: Option<i32>,
    /// Common start time (CLOCK_MONOTONIC ns) shared by the writers of one run
    #[arg(long)]
    pub start_at: Option<u64>,
}

#[derive(Debug, Args)]
pub struct WcallBenchArgs {
    #[arg(long)]
    pub file: PathBuf,
    #[arg(long, default_value_t = 15)]
    pub batches: usize,
    #[arg(long, default_value_t = 20_000)]
    pub per_batch: u64,
}

/// How a governor is set up. Each is optional so that `wcall run` can tell an
/// option given for a governor it joins (which it refuses) from the defaults.
#[derive(Debug, Args)]
pub struct WcallPolicyArgs {
    /// Allocation policy: wcall (the paper's Algorithm 1) or wcall-fair (shares of
    /// the free-run ceiling, groups nearing their share pushed to the device)
    /// [default: wcall-fair]
    #[arg(long, value_name = "POLICY")]
    pub policy: Option<String>,
    /// How long a held writer waits before it looks again under wcall (the paper's
    /// HZ/10) [default: 100]
    #[arg(long, value_name = "MS", allow_negative_numbers = true, value_parser = number(1.0, 10_000.0, "ms"))]
    pub block_ms: Option<f64>,
    /// Milliseconds between the coordinator's passes [default: 10]
    #[arg(long, value_name = "MS", allow_negative_numbers = true, value_parser = number(1.0, 10_000.0, "ms"))]
    pub interval_ms: Option<f64>,
    /// wcall-fair: room kept free under the free-run ceiling for rt-high writers,
    /// e.g. 8MiB [default: an eighth of the free-run ceiling]
    #[arg(long, value_name = "SIZE")]
    pub headroom: Option<String>,
    /// Drop governed files' pages from the page cache once written back, so new
    /// writes reuse memory the machine already backs: on, off, or auto (on where the
    /// machine hands free memory back to its hypervisor) [default: auto]
    #[arg(long, value_name = "on|off|auto")]
    pub recycle: Option<String>,
    /// Do not place governed processes in per-group memory cgroups (as root they are,
    /// where a memory controller is available, to show the kernel's own dirty counts)
    #[arg(long)]
    pub no_cgroups: bool,
    /// cgroup v2: cap a group's memory with memory.high, e.g. normal=2GiB (repeat for
    /// each group); the kernel also scales the group's dirty limit with its memory
    /// headroom. Groups also get io.weight 400/200/100 (rt-high/rt-low/normal)
    #[arg(long, value_name = "GROUP=SIZE")]
    pub memory_high: Vec<String>,
}

impl WcallPolicyArgs {
    /// The options given, by name (`--policy`, ...): what a joined governor
    /// cannot take.
    pub fn given(&self) -> Vec<&'static str> {
        let mut v = Vec::new();
        for (set, name) in [
            (self.policy.is_some(), "--policy"),
            (self.block_ms.is_some(), "--block-ms"),
            (self.interval_ms.is_some(), "--interval-ms"),
            (self.headroom.is_some(), "--headroom"),
            (self.recycle.is_some(), "--recycle"),
            (self.no_cgroups, "--no-cgroups"),
            (!self.memory_high.is_empty(), "--memory-high"),
        ] {
            if set {
                v.push(name);
            }
        }
        v
    }
}

#[derive(Debug, Args)]
pub struct WcallRunArgs {
    /// The group of CMD's processes: rt-high (high), rt-low (low), normal (non-rt),
    /// or auto (from each process's scheduling class: real-time priority above 50,
    /// 1-50, not real-time)
    #[arg(long, value_name = "GROUP", default_value = "auto")]
    pub group: String,
    /// Join the running governor of this name (default: the one governor daemon
    /// running, if there is exactly one)
    #[arg(long, value_name = "NAME", conflicts_with = "private")]
    pub name: Option<String>,
    /// Start a governor of its own for CMD even if a daemon runs (it sees only
    /// CMD's writers)
    #[arg(long)]
    pub private: bool,
    #[command(flatten)]
    pub policy: WcallPolicyArgs,
    /// The program and its arguments
    #[arg(last = true, required = true, value_name = "CMD")]
    pub command: Vec<String>,
}

#[derive(Debug, Args)]
pub struct WcallDaemonArgs {
    /// The governor's name, for `oslab wcall run --name` and `status`
    #[arg(long, value_name = "NAME", default_value = "default")]
    pub name: String,
    #[command(flatten)]
    pub policy: WcallPolicyArgs,
    /// Stop after this many seconds (default: on Ctrl-C)
    #[arg(long = "for", value_name = "SECONDS", allow_negative_numbers = true, value_parser = seconds(0.0, 31_536_000.0))]
    pub duration: Option<f64>,
    /// Print a status line every this many seconds (0: never)
    #[arg(long, value_name = "SECONDS", default_value_t = 1.0, allow_negative_numbers = true, value_parser = seconds(0.0, 3600.0))]
    pub every: f64,
}

#[derive(Debug, Args)]
pub struct WcallStatusArgs {
    /// Only the governor of this name
    #[arg(long, value_name = "NAME")]
    pub name: Option<String>,
    /// Print JSON
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct WcallAttachArgs {
    /// The running process
    #[arg(value_name = "PID", allow_negative_numbers = true, value_parser = whole(1, u32::MAX as u64))]
    pub pid: u64,
}
