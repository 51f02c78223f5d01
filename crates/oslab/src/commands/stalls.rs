//! `oslab stalls`: slow file calls (writes, syncs, reads, page faults on a
//! file's mapping) explained by the kernel, live.

use clap::Args;
use oslab_arg_values::{duration, seconds, whole};

use std::path::{Path, PathBuf};
use std::process::{Child, Command};
use std::time::Duration;

use oslab_report::stalls as render;
use oslab_sys::clock::{local_hms, unix_time_s};
use oslab_sys::signals::{OnParentDeath, child_of_oslab};
use oslab_trace::folded::Folded;
use oslab_trace::session::{StallsOptions, StallsSession, Tick};
use oslab_trace::timeline::TraceStream;
use oslab_trace::{CallHooks, RunQueue, Watch, WritebackOptions};

use crate::failure::CmdResult;
use crate::failure::{EXIT_PRIVILEGE, Failure};
use crate::output::{Stream, check_file_target, is_stdout, print};

#[derive(Debug, Args)]
pub struct StallsArgs {
    /// Watch only this process (repeatable; its children forked later too)
    #[arg(long = "pid", value_name = "PID", allow_negative_numbers = true, value_parser = whole(1, u32::MAX as u64))]
    pub pids: Vec<u64>,
    /// Report calls at least this long, e.g. 10ms or 1.5s
    #[arg(long, value_name = "DURATION", default_value = "10ms", allow_negative_numbers = true, value_parser = duration(0.000_01, 60.0))]
    pub threshold: u64,
    /// Time between summaries, e.g. 1s (100ms to 3600s; default 1s, or 200ms with
    /// --each)
    #[arg(long, value_name = "DURATION", allow_negative_numbers = true, value_parser = seconds(0.1, 3600.0))]
    pub interval: Option<f64>,
    /// Stop after N intervals
    #[arg(long, value_name = "N", allow_negative_numbers = true, value_parser = whole(1, u64::MAX))]
    pub count: Option<u64>,
    /// Also write JSON lines (each slow call, then each interval) to FILE (`-` for
    /// standard output, which then holds only the JSON)
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// Write a Chrome/Perfetto trace (real pids and tids, CLOCK_MONOTONIC time) to FILE
    #[arg(long, value_name = "FILE")]
    pub trace: Option<PathBuf>,
    /// Print one line per slow call (time, command, pid, call, bytes, latency,
    /// main cause, file) instead of the per-interval tables
    #[arg(long)]
    pub each: bool,
    /// Write the slow calls' off-CPU time as folded stacks (nanoseconds) to
    /// FILE, or `-` for standard output, for flamegraph.pl, inferno or speedscope
    #[arg(long, value_name = "FILE")]
    pub folded: Option<PathBuf>,
    /// Count oslab's own calls and dirtied pages too
    #[arg(long)]
    pub include_self: bool,
    /// Rows per table (dirtiers, blocking places)
    #[arg(long, value_name = "N", default_value_t = 5, allow_negative_numbers = true, value_parser = whole(1, 1000))]
    pub top: u64,
    /// Run this command and watch it (and its children) until it ends
    #[arg(last = true, value_name = "CMD")]
    pub command: Vec<String>,
}

fn check_args(a: &StallsArgs) -> Result<(), Failure> {
    if !a.pids.is_empty() && !a.command.is_empty() {
        return Err(Failure::usage(
            "give either --pid or a command after --, not both",
        ));
    }
    for &pid in &a.pids {
        if !Path::new(&format!("/proc/{pid}")).exists() {
            return Err(Failure::usage(format!("--pid {pid}: no such process")));
        }
    }
    for (flag, path) in [
        ("--json", &a.json),
        ("--trace", &a.trace),
        ("--folded", &a.folded),
    ] {
        if let Some(p) = path
            && !is_stdout(p)
        {
            check_file_target(p, flag)?;
        }
    }
    if a.trace.as_deref().is_some_and(is_stdout) {
        return Err(Failure::usage("--trace needs a file name"));
    }
    let to_stdout = [&a.json, &a.folded]
        .iter()
        .filter(|p| p.as_deref().is_some_and(is_stdout))
        .count();
    if to_stdout > 1 {
        return Err(Failure::usage(
            "only one of --json and --folded can write to standard output (-)",
        ));
    }
    if a.each && to_stdout > 0 {
        return Err(Failure::usage(
            "--each prints to standard output: give --json or --folded a file name",
        ));
    }
    Ok(())
}

fn spawn(command: &[String]) -> Result<Child, Failure> {
    let mut cmd = Command::new(&command[0]);
    cmd.args(&command[1..]);
    crate::guard::spawn_forwarding(child_of_oslab(&mut cmd, OnParentDeath::Terminate))
        .map_err(|e| Failure::usage(format!("cannot run '{}': {e}", command[0])))
}

pub fn run(a: StallsArgs) -> CmdResult {
    check_args(&a)?;
    if !oslab_sys::process::is_root() {
        return Err(Failure {
            code: EXIT_PRIVILEGE,
            message: "oslab stalls reads the kernel's own account with eBPF and needs root: run it with sudo".into(),
        });
    }
    if let Err(reason) = oslab_trace::available() {
        return Err(Failure::runtime(format!(
            "kernel tracing is not available here: {reason}"
        )));
    }
    let watch = if !a.pids.is_empty() {
        Watch::Pids(a.pids.iter().map(|&p| p as u32).collect())
    } else if !a.command.is_empty() {
        // The command is forked by oslab, so following oslab follows it from its
        // first instruction; oslab's own writes are left out by the session.
        Watch::Pids(vec![std::process::id()])
    } else {
        Watch::All
    };
    let whom = whom(&watch, &a.command);
    let options = StallsOptions {
        tracing: WritebackOptions {
            watch,
            all_writes: false,
            write_threshold: Duration::from_nanos(a.threshold),
            stack_threshold: Duration::from_nanos((a.threshold / 10).max(1_000_000)),
            // who dirtied files on which device, to name whose write back a
            // slow read waited behind
            per_file: true,
            file_calls: true,
            dirtiers_only: false,
            // the file systems' functions where the kernel allows programs
            // there: then a system call on no file runs none
            hooks: CallHooks::Auto,
            run_queue: RunQueue::Auto,
        },
        interval_ns: (interval(&a) * 1e9) as u64,
        count: a.count,
        top: a.top as usize,
        name_threads: a.trace.is_some(),
        include_self: a.include_self,
    };
    let mut session = StallsSession::start(options).map_err(|e| Failure::runtime(e.to_string()))?;
    let mut sinks = Sinks::open(&a)?;
    // the command first: nothing is printed for one that cannot run
    let mut child = if a.command.is_empty() {
        None
    } else {
        let c = spawn(&a.command)?;
        let name = Path::new(&a.command[0]).file_name().map_or_else(
            || a.command[0].clone(),
            |n| n.to_string_lossy().into_owned(),
        );
        session.watch_command(c.id(), &name);
        Some(c)
    };
    banner(&a, &whom, &session);
    if a.each {
        print(&render::each_header());
    }
    // Ctrl-C (with no command to pass it to) ends the last interval and writes
    // the files, as `perf record` does, and exits 128 + the signal, as watch does.
    crate::guard::finish_on_signal();
    let ended = || {
        if let Some(code) = crate::guard::finish_asked() {
            return Some(code);
        }
        let status = child.as_mut()?.try_wait().ok()??;
        Some(crate::child::exit_code(status))
    };
    let code = session.run(ended, |tick| sinks.write(tick, a.threshold));
    crate::guard::stop_forwarding();
    let lost = session.stop();
    sinks.close(&a)?;
    if lost > 0 {
        eprintln!(
            "oslab: {lost} kernel records were lost (the ring buffer was full): the figures are incomplete"
        );
    }
    Ok(code.unwrap_or(0))
}

/// The first lines: what is traced, with which programs, and within what limits.
fn banner(a: &StallsArgs, whom: &str, session: &StallsSession) {
    eprintln!(
        "oslab: tracing reads, writes, syncs and page faults on files of {whom} over {} ms, every {} s; Ctrl-C to stop",
        a.threshold as f64 / 1e6,
        interval(a)
    );
    if let Some(attached) = session.attached() {
        eprintln!("oslab: {}", attached.describe());
    }
    for limit in session.limits() {
        eprintln!("oslab: {limit}");
    }
}

fn interval(a: &StallsArgs) -> f64 {
    a.interval.unwrap_or(if a.each { 0.2 } else { 1.0 })
}

/// Who is watched, for the first line.
fn whom(watch: &Watch, command: &[String]) -> String {
    match watch {
        Watch::All => "every process".to_string(),
        Watch::Pids(_) if !command.is_empty() => format!("'{}'", command.join(" ")),
        Watch::Pids(p) => format!(
            "pid {}",
            p.iter().map(u32::to_string).collect::<Vec<_>>().join(", ")
        ),
    }
}

/// Where each interval goes: the tables or one line per call, JSON lines, a
/// trace file, folded stacks.
struct Sinks {
    tables: bool,
    each: bool,
    json: Option<Stream>,
    trace: Option<(Stream, TraceStream)>,
    folded: Option<(Stream, Folded)>,
}

impl Sinks {
    fn open(a: &StallsArgs) -> Result<Sinks, Failure> {
        let json = a
            .json
            .as_deref()
            .map(|p| Stream::open(p, "--json"))
            .transpose()?;
        let trace = a
            .trace
            .as_deref()
            .map(|p| Stream::open(p, "--trace"))
            .transpose()?;
        let folded = a
            .folded
            .as_deref()
            .map(|p| Stream::open(p, "--folded"))
            .transpose()?;
        let stdout_taken = [&a.json, &a.folded]
            .iter()
            .any(|p| p.as_deref().is_some_and(is_stdout));
        Ok(Sinks {
            tables: !stdout_taken && !a.each,
            each: a.each,
            json,
            trace: trace.map(|t| (t, TraceStream::default())),
            folded: folded.map(|f| (f, Folded::default())),
        })
    }

    fn write(&mut self, tick: &Tick, threshold: u64) {
        if self.each {
            let mut lines: Vec<_> = tick.lines.iter().collect();
            lines.sort_by_key(|l| l.start_ns + l.dur_ns);
            for l in lines {
                print(&render::each_line(&clock_at(l.start_ns + l.dur_ns), l));
            }
        }
        if let Some((_, f)) = self.folded.as_mut() {
            f.add(&tick.lines, &tick.stacks);
        }
        if self.tables {
            print(&render::interval_text(
                &local_hms(),
                &tick.summary,
                threshold,
                tick.page_size,
            ));
        }
        if let Some(j) = self.json.as_mut() {
            for l in &tick.lines {
                j.put(&render::stall_json(l));
            }
            j.put(&render::interval_json(&tick.summary, unix_time_s()));
        }
        if let Some((t, stream)) = self.trace.as_mut() {
            t.put(&stream.interval(tick));
        }
    }

    /// Ends the files, each named on stderr.
    fn close(self, a: &StallsArgs) -> Result<(), Failure> {
        if let Some((mut t, mut stream)) = self.trace {
            t.put(&stream.end());
            t.close()?;
            if let Some(p) = &a.trace {
                eprintln!(
                    "oslab: trace written: {} ({} events; open it in ui.perfetto.dev)",
                    p.display(),
                    stream.events
                );
            }
        }
        if let Some((mut out, f)) = self.folded {
            out.put(&f.text());
            out.close()?;
            if let Some(p) = a.folded.as_deref().filter(|p| !is_stdout(p)) {
                eprintln!(
                    "oslab: folded stacks written: {} (render with flamegraph.pl or inferno-flamegraph)",
                    p.display()
                );
            }
        }
        if let Some(j) = self.json {
            j.close()?;
        }
        if let Some(p) = a.json.as_deref().filter(|p| !is_stdout(p)) {
            eprintln!("oslab: JSON lines written: {}", p.display());
        }
        Ok(())
    }
}

/// The wall-clock time (HH:MM:SS.mmm) of a CLOCK_MONOTONIC instant in the past.
fn clock_at(monotonic: u64) -> String {
    let ago = oslab_sys::clock::monotonic_ns().saturating_sub(monotonic) as f64 / 1e9;
    oslab_sys::clock::local_hms_ms(unix_time_s() - ago)
}
