//! `oslab stalls`: slow writes explained by the kernel, live.

use std::collections::HashMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Child, Command};
use std::time::Duration;

use oslab_report::stalls as render;
use oslab_sys::clock::{local_hms, monotonic_ns, unix_time_s};
use oslab_sys::fsread::Root;
use oslab_sys::outfile;
use oslab_sys::pidinfo;
use oslab_sys::signals::{OnParentDeath, child_of_oslab};
use oslab_trace::analysis::{Captured, hz_from_pauses};
use oslab_trace::stalls::{Interval, ProcessInfo, dirtied_since, stall_lines, summarize};
use oslab_trace::{Tracer, Watch, WritebackOptions};
use oslab_trace::{chrome, timeline};

use crate::CmdResult;
use crate::cli::StallsArgs;
use crate::failure::{EXIT_PRIVILEGE, Failure};
use crate::output::{check_file_target, is_stdout, print};

/// An open output file, or standard output for `-`.
enum Sink {
    Stdout,
    /// The file, its name, and the first error writing it, if any.
    File(std::fs::File, PathBuf, Option<String>),
}

impl Sink {
    fn open(path: &Path, flag: &str) -> Result<Sink, Failure> {
        if is_stdout(path) {
            return Ok(Sink::Stdout);
        }
        outfile::open_stream(path)
            .map(|f| Sink::File(f, path.to_path_buf(), None))
            .map_err(|e| Failure::usage(format!("cannot write {flag} {}: {e}", path.display())))
    }

    /// Writes `text`; an error on a file is kept for [`Sink::close`] and ends
    /// the writing to it (the trace goes on).
    fn put(&mut self, text: &str) {
        match self {
            Sink::Stdout => print(text),
            Sink::File(f, path, failed @ None) => {
                if let Err(e) = f.write_all(text.as_bytes()) {
                    *failed = Some(format!(
                        "cannot write {}: {}",
                        path.display(),
                        outfile::plain(&e)
                    ));
                }
            }
            Sink::File(..) => {}
        }
    }

    /// The error writing the file, if there was one.
    fn close(self) -> Result<(), Failure> {
        match self {
            Sink::File(_, _, Some(why)) => Err(Failure::runtime(why)),
            _ => Ok(()),
        }
    }
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
    for (flag, path) in [("--json", &a.json), ("--trace", &a.trace)] {
        if let Some(p) = path
            && !is_stdout(p)
        {
            check_file_target(p, flag)?;
        }
    }
    if a.trace.as_deref().is_some_and(is_stdout) {
        return Err(Failure::usage("--trace needs a file name"));
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
    let own = std::process::id();
    let watch = if !a.pids.is_empty() {
        Watch::Pids(a.pids.iter().map(|&p| p as u32).collect())
    } else if !a.command.is_empty() {
        // The command is forked by oslab, so following oslab follows it from its
        // first instruction; oslab's own writes are left out below.
        Watch::Pids(vec![own])
    } else {
        Watch::All
    };
    let opts = WritebackOptions {
        watch: watch.clone(),
        all_writes: false,
        write_threshold: Duration::from_nanos(a.threshold),
        stack_threshold: Duration::from_nanos((a.threshold / 10).max(1_000_000)),
        per_file: false,
    };
    let mut tracer = Tracer::writeback(&opts).map_err(|e| Failure::runtime(e.to_string()))?;
    let mut json = a
        .json
        .as_deref()
        .map(|p| Sink::open(p, "--json"))
        .transpose()?;
    let mut trace = a
        .trace
        .as_deref()
        .map(|p| Sink::open(p, "--trace"))
        .transpose()?;
    let tables = !a.json.as_deref().is_some_and(is_stdout);
    let whom = match &watch {
        Watch::All => "every process".to_string(),
        Watch::Pids(_) if !a.command.is_empty() => format!("'{}'", a.command.join(" ")),
        Watch::Pids(p) => format!(
            "pid {}",
            p.iter().map(u32::to_string).collect::<Vec<_>>().join(", ")
        ),
    };
    eprintln!(
        "oslab: tracing write, pwrite, writev and fsync calls of {whom} over {} ms, every {} s; Ctrl-C to stop",
        a.threshold as f64 / 1e6,
        a.interval
    );
    let mut child = if a.command.is_empty() {
        None
    } else {
        Some(spawn(&a.command)?)
    };

    let root = Root::live();
    let release = root
        .read_trim("/proc/sys/kernel/osrelease")
        .unwrap_or_default();
    let known_hz = oslab_sys::machine::kernel_hz(&root, &release)
        .value()
        .map(|h| h.hz);
    let page_size = oslab_sys::machine::page_size();
    let mut names: HashMap<u32, ProcessInfo> = HashMap::new();
    let mut pages_before: HashMap<u32, u64> = HashMap::new();
    let mut chrome_out = chrome::Writer::default();
    let mut named_in_trace: std::collections::HashSet<(u32, u32)> = Default::default();
    let mut trace_events = 0usize;
    let step = (a.interval * 1e9) as u64;
    let origin = monotonic_ns();
    let mut n = 0u64;
    let mut exit_code = 0;
    loop {
        let target = origin + (n + 1) * step;
        let mut child_done = false;
        while monotonic_ns() < target {
            if let Some(c) = child.as_mut()
                && let Ok(Some(status)) = c.try_wait()
            {
                exit_code = crate::child::exit_code(status);
                child_done = true;
                break;
            }
            std::thread::sleep(Duration::from_millis(20).min(Duration::from_nanos(
                target.saturating_sub(monotonic_ns()).max(1),
            )));
        }
        let mut cap = Captured::default();
        tracer.collect(&mut cap);
        let snap = tracer.snapshot();
        cap.writes.retain(|w| w.tgid != own);
        cap.offcpu.retain(|o| o.tgid != own);
        let hz = known_hz
            .or_else(|| hz_from_pauses(&cap.pauses))
            .unwrap_or(0);
        for tgid in cap
            .writes
            .iter()
            .map(|w| w.tgid)
            .chain(snap.dirtiers.iter().map(|d| d.tgid))
        {
            names.entry(tgid).or_insert_with(|| ProcessInfo {
                comm: pidinfo::comm(&root, tgid).unwrap_or_default(),
                cgroup: pidinfo::cgroup(&root, tgid).unwrap_or_else(|| "?".into()),
            });
        }
        let info = |tgid: u32| -> ProcessInfo { names.get(&tgid).cloned().unwrap_or_default() };
        let dirtied = dirtied_since(&pages_before, &snap.dirtiers);
        pages_before = snap.dirtiers.iter().map(|d| (d.tgid, d.pages)).collect();
        let now = monotonic_ns();
        let iv = Interval {
            start_ns: now.saturating_sub(step),
            end_ns: now,
            writes: &cap.writes,
            offcpu: &cap.offcpu,
            pauses: &cap.pauses,
            bandwidth: &cap.bandwidth,
            flushes: &cap.flushes,
            lost: snap.lost,
            hz,
            page_size,
        };
        let summary = summarize(&iv, &dirtied, &info, a.top as usize);
        let lines = stall_lines(&cap.writes, &cap.offcpu, &info);
        if tables {
            print(&render::interval_text(
                &local_hms(),
                &summary,
                a.threshold,
                page_size,
            ));
        }
        if let Some(j) = json.as_mut() {
            for l in &lines {
                j.put(&render::stall_json(l));
            }
            j.put(&render::interval_json(&summary, unix_time_s()));
        }
        if let Some(t) = trace.as_mut() {
            let mut events = Vec::new();
            for l in &lines {
                if named_in_trace.insert((l.tgid, l.pid)) {
                    events.push(chrome::name(l.tgid, l.pid, false, &l.comm));
                    let thread = pidinfo::comm(&root, l.pid).unwrap_or_else(|| l.comm.clone());
                    events.push(chrome::name(l.tgid, l.pid, true, &thread));
                }
            }
            if named_in_trace.insert((timeline::KERNEL_TRACK_PID, 0)) {
                events.push(chrome::name(
                    timeline::KERNEL_TRACK_PID,
                    0,
                    false,
                    "kernel: write back",
                ));
            }
            events.extend(timeline::trace_events(
                &lines,
                &cap.pauses,
                &cap.offcpu,
                &cap.flushes,
                &cap.bandwidth,
                hz,
                page_size,
            ));
            trace_events += events.len();
            t.put(&chrome_out.chunk(&events));
        }
        n += 1;
        if child_done || a.count.is_some_and(|c| n >= c) {
            break;
        }
    }
    crate::guard::stop_forwarding();
    let (_, last) = tracer.stop();
    if let Some(mut t) = trace {
        t.put(&chrome_out.end());
        t.close()?;
        if let Some(p) = &a.trace {
            eprintln!(
                "oslab: trace written: {} ({trace_events} events; open it in ui.perfetto.dev)",
                p.display()
            );
        }
    }
    if let Some(j) = json {
        j.close()?;
    }
    if let (Some(p), true) = (&a.json, tables) {
        eprintln!("oslab: JSON lines written: {}", p.display());
    }
    if last.lost > 0 {
        eprintln!(
            "oslab: {} kernel records were lost (the ring buffer was full): the figures are incomplete",
            last.lost
        );
    }
    Ok(exit_code)
}
