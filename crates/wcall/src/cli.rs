//! The arguments of the `oslab wcall` subcommands that oslab starts itself
//! (`run`, `daemon`, `writer`, `bench-writes`): the binary parses them, and the
//! experiments build their command lines from the same values ([`Launch`]), so
//! the compiler checks every field and a test checks that each command line
//! parses back to its value.

use std::ffi::OsString;
use std::fmt::Display;
use std::path::{Path, PathBuf};
use std::process::Command;

use clap::Args;
use oslab_arg_values::{millis, seconds, size};

use crate::guard::GuardSetting;
use crate::rendezvous::GovernorName;
use crate::services::ServiceRule;

mod values;
pub use values::{GovernorPolicy, MemoryHigh, Recycle, RunGroup};
use values::{bytes, parsed};

/// How a governor is set up. Each is optional so that `wcall run` can tell an
/// option given for a governor it joins (which it refuses) from the defaults.
#[derive(Debug, Clone, Default, PartialEq, Args)]
pub struct WcallPolicyArgs {
    /// Allocation policy: wcall (the paper's Algorithm 1) or wcall-fair (shares of
    /// the free-run ceiling, groups nearing their share pushed to the device)
    /// [default: wcall-fair]
    #[arg(long, value_name = "POLICY", value_parser = parsed::<GovernorPolicy>)]
    pub policy: Option<GovernorPolicy>,
    /// How long a held writer waits before it looks again under wcall, e.g. 100ms
    /// (the paper's HZ/10) [default: 100ms]
    #[arg(long = "block", value_name = "DURATION", allow_negative_numbers = true, value_parser = millis(1.0, 10_000.0))]
    pub block_ms: Option<f64>,
    /// Time between the coordinator's passes, e.g. 10ms [default: 10ms]
    #[arg(long = "interval", value_name = "DURATION", allow_negative_numbers = true, value_parser = millis(1.0, 10_000.0))]
    pub interval_ms: Option<f64>,
    /// wcall-fair: room kept free under the free-run ceiling for rt-high writers,
    /// e.g. 8MiB [default: an eighth of the free-run ceiling]
    #[arg(long, value_name = "SIZE", value_parser = bytes)]
    pub headroom: Option<u64>,
    /// Drop governed files' pages from the page cache once written back, so new
    /// writes reuse memory the machine already backs: on, off, or auto (on where the
    /// machine hands free memory back to its hypervisor) [default: auto]
    #[arg(long, value_name = "on|off|auto", value_parser = parsed::<Recycle>)]
    pub recycle: Option<Recycle>,
    /// Protects rt-high commits: while the guard acts, every other group's dirty and
    /// write-back memory is held within its size and written back by the governor
    /// one chunk at a time, only as fast as the device has room, and rt-high's own
    /// pages chunk by chunk as they are dirtied, so an rt-high fsync (a database's
    /// commit) never queues behind a long run of write back. auto: it acts while a
    /// governed rt-high process (one whose group root gave) makes durable writes
    /// (fsync, fdatasync, sync_file_range, msync, O_SYNC/O_DSYNC writes) and for
    /// --sync-guard-quiet after the last one, at what the device takes in 50 ms,
    /// measured by the governor; SIZE: at SIZE while an rt-high process is
    /// governed; off [default: auto]
    #[arg(long, value_name = "off|auto|SIZE", value_parser = parsed::<GuardSetting>)]
    pub sync_guard: Option<GuardSetting>,
    /// How long the automatic sync guard stays on after the last durable write of
    /// an rt-high process [default: 30s]
    #[arg(long, value_name = "DURATION", value_parser = seconds(0.1, 3600.0))]
    pub sync_guard_quiet: Option<f64>,
    /// Do not place governed processes in per-group memory cgroups (as root they are,
    /// where a memory controller is available, to show the kernel's own dirty counts)
    #[arg(long)]
    pub no_cgroups: bool,
    /// cgroup v2: cap a group's memory with memory.high, e.g. normal=2GiB (repeat for
    /// each group); the kernel also scales the group's dirty limit with its memory
    /// headroom. Groups also get io.weight 400/200/100 (rt-high/rt-low/normal)
    #[arg(long, value_name = "GROUP=SIZE", value_parser = parsed::<MemoryHigh>)]
    pub memory_high: Vec<MemoryHigh>,
}

impl WcallPolicyArgs {
    /// The options given, by name (`--policy`, ...): what a joined governor
    /// cannot take.
    pub fn given(&self) -> Vec<&'static str> {
        let mut v = Vec::new();
        for (set, name) in [
            (self.policy.is_some(), "--policy"),
            (self.block_ms.is_some(), "--block"),
            (self.interval_ms.is_some(), "--interval"),
            (self.headroom.is_some(), "--headroom"),
            (self.recycle.is_some(), "--recycle"),
            (self.sync_guard.is_some(), "--sync-guard"),
            (self.sync_guard_quiet.is_some(), "--sync-guard-quiet"),
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

#[derive(Debug, Clone, PartialEq, Args)]
pub struct WcallRunArgs {
    /// The group of CMD's processes: rt-high (high), rt-low (low), normal (non-rt),
    /// or auto (from each process's scheduling class: real-time priority above 50,
    /// 1-50, not real-time)
    #[arg(long, value_name = "GROUP", default_value = "auto", value_parser = parsed::<RunGroup>)]
    pub group: RunGroup,
    /// Join the running governor of this name (default: the one governor daemon
    /// running, if there is exactly one)
    #[arg(long, value_name = "NAME", conflicts_with = "private", value_parser = parsed::<GovernorName>)]
    pub name: Option<GovernorName>,
    /// Start a governor of its own for CMD even if a daemon runs (it sees only
    /// CMD's writers)
    #[arg(long)]
    pub private: bool,
    /// With a governor of its own, run as root: let CMD's programs that change
    /// to another user (a server that drops root) join it too. By default its
    /// socket is root's alone (mode 0600) and such a program runs ungoverned
    #[arg(long)]
    pub shared_socket: bool,
    #[command(flatten)]
    pub policy: WcallPolicyArgs,
    /// The program and its arguments
    #[arg(last = true, required = true, value_name = "CMD")]
    pub command: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Args)]
pub struct WcallDaemonArgs {
    /// The governor's name, for `oslab wcall run --name` and `status`
    #[arg(long, value_name = "NAME", default_value = "default", value_parser = parsed::<GovernorName>)]
    pub name: GovernorName,
    #[command(flatten)]
    pub policy: WcallPolicyArgs,
    /// Put the processes of a system service in a group, e.g.
    /// postgresql@*.service=rt-high (repeat for each service): root's word, as the
    /// service is root's, whichever user the service runs as; processes of any
    /// service stay in their unit's cgroup
    #[arg(long, value_name = "UNIT=GROUP", value_parser = parsed::<ServiceRule>)]
    pub service: Vec<ServiceRule>,
    /// Stop after this long, e.g. 30s (default: on Ctrl-C)
    #[arg(long = "for", value_name = "DURATION", allow_negative_numbers = true, value_parser = seconds(0.0, 31_536_000.0))]
    pub duration: Option<f64>,
    /// Print a status line this often, e.g. 5s (0: never)
    #[arg(long, value_name = "DURATION", default_value = "1s", allow_negative_numbers = true, value_parser = seconds(0.0, 3600.0))]
    pub every: f64,
}

#[derive(Debug, Clone, PartialEq, Args)]
pub struct WcallWriterArgs {
    #[arg(long)]
    pub file: PathBuf,
    #[arg(long, default_value = "512KiB", value_parser = size(1, 1 << 30))]
    pub chunk: u64,
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

#[derive(Debug, Clone, PartialEq, Args)]
pub struct WcallBenchArgs {
    #[arg(long)]
    pub file: PathBuf,
    #[arg(long, default_value_t = 15)]
    pub batches: usize,
    #[arg(long, default_value_t = 20_000)]
    pub per_batch: u64,
}

/// An `oslab wcall` subcommand to start, as its typed arguments.
#[derive(Debug, Clone, PartialEq)]
pub enum Launch {
    Run(WcallRunArgs),
    Daemon(WcallDaemonArgs),
    Writer(WcallWriterArgs),
    BenchWrites(WcallBenchArgs),
}

impl Launch {
    /// The arguments after the program's name: `wcall SUBCOMMAND OPTIONS...`.
    pub fn argv(&self) -> Vec<OsString> {
        let mut v = Argv(vec!["wcall".into()]);
        match self {
            Launch::Run(a) => a.push_argv(&mut v),
            Launch::Daemon(a) => a.push_argv(&mut v),
            Launch::Writer(a) => a.push_argv(&mut v),
            Launch::BenchWrites(a) => a.push_argv(&mut v),
        }
        v.0
    }

    /// The command that starts it with the oslab binary `exe` (named `oslab`
    /// to itself, whatever path runs it: /proc/self/exe, say).
    pub fn command(&self, exe: &Path) -> Command {
        let mut cmd = Command::new(exe);
        std::os::unix::process::CommandExt::arg0(&mut cmd, "oslab");
        cmd.args(self.argv());
        cmd
    }
}

/// A command line built from typed values.
struct Argv(Vec<OsString>);

impl Argv {
    fn word(&mut self, word: impl Into<OsString>) {
        self.0.push(word.into());
    }

    /// `--flag=VALUE`, one word, so that a value such as `-5` is not taken for
    /// an option.
    fn value(&mut self, flag: &str, value: impl Display) {
        self.word(format!("{flag}={value}"));
    }

    fn path(&mut self, flag: &str, path: &Path) {
        let mut word = OsString::from(format!("{flag}="));
        word.push(path);
        self.word(word);
    }

    fn option(&mut self, flag: &str, value: &Option<impl Display>) {
        if let Some(v) = value {
            self.value(flag, v);
        }
    }

    /// A duration option, in the unit it is kept in (`ms`, `s`): a duration
    /// is always typed with its unit.
    fn duration(&mut self, flag: &str, value: &Option<f64>, unit: &str) {
        if let Some(v) = value {
            self.value(flag, format!("{v}{unit}"));
        }
    }

    fn each(&mut self, flag: &str, values: &[impl Display]) {
        values.iter().for_each(|v| self.value(flag, v));
    }

    fn flag(&mut self, flag: &str, on: bool) {
        if on {
            self.word(flag);
        }
    }
}

// Each builder names every field (no `..`), so a new argument does not compile
// until its command line is written too.

impl WcallPolicyArgs {
    fn push_argv(&self, v: &mut Argv) {
        let WcallPolicyArgs {
            policy,
            block_ms,
            interval_ms,
            headroom,
            recycle,
            sync_guard,
            sync_guard_quiet,
            no_cgroups,
            memory_high,
        } = self;
        v.option("--policy", policy);
        v.duration("--block", block_ms, "ms");
        v.duration("--interval", interval_ms, "ms");
        v.option("--headroom", headroom);
        v.option("--recycle", recycle);
        v.option("--sync-guard", sync_guard);
        v.duration("--sync-guard-quiet", sync_guard_quiet, "s");
        v.flag("--no-cgroups", *no_cgroups);
        v.each("--memory-high", memory_high);
    }
}

impl WcallRunArgs {
    fn push_argv(&self, v: &mut Argv) {
        let WcallRunArgs {
            group,
            name,
            private,
            shared_socket,
            policy,
            command,
        } = self;
        v.word("run");
        v.value("--group", group);
        v.option("--name", name);
        v.flag("--private", *private);
        v.flag("--shared-socket", *shared_socket);
        policy.push_argv(v);
        v.word("--");
        command.iter().for_each(|w| v.word(w));
    }
}

impl WcallDaemonArgs {
    fn push_argv(&self, v: &mut Argv) {
        let WcallDaemonArgs {
            name,
            policy,
            service,
            duration,
            every,
        } = self;
        v.word("daemon");
        v.value("--name", name);
        policy.push_argv(v);
        v.each("--service", service);
        v.duration("--for", duration, "s");
        v.duration("--every", &Some(*every), "s");
    }
}

impl WcallWriterArgs {
    fn push_argv(&self, v: &mut Argv) {
        let WcallWriterArgs {
            file,
            chunk,
            period_ms,
            count,
            duration,
            fifo,
            nice,
            start_at,
        } = self;
        v.word("writer");
        v.path("--file", file);
        v.value("--chunk", chunk);
        v.value("--period-ms", period_ms);
        v.option("--count", count);
        v.option("--duration", duration);
        v.option("--fifo", fifo);
        v.option("--nice", nice);
        v.option("--start-at", start_at);
    }
}

impl WcallBenchArgs {
    fn push_argv(&self, v: &mut Argv) {
        let WcallBenchArgs {
            file,
            batches,
            per_batch,
        } = self;
        v.word("bench-writes");
        v.path("--file", file);
        v.value("--batches", batches);
        v.value("--per-batch", per_batch);
    }
}
