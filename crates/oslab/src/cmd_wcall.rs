//! `oslab wcall`: the WCALL governor from the command line.

use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

use oslab_report::wcall::Running;
use oslab_sys::parse::size::parse_human_size;
use oslab_wbsim::policy::Policy;
use oslab_wcall::cgroups::CgroupLimits;
use oslab_wcall::launch;
use oslab_wcall::rendezvous::{self, Found};
use oslab_wcall::service::{self, Governor, Options};
use oslab_wcall::shm::group_number;
use oslab_wcall::shm::wire::{self, Ask, Request};
use oslab_wcall::view::snapshot_of;

use crate::CmdResult;
use crate::cli::{
    WcallAttachArgs, WcallBenchArgs, WcallCommand, WcallDaemonArgs, WcallPolicyArgs, WcallRunArgs,
    WcallStatusArgs, WcallWriterArgs,
};
use crate::failure::Failure;
use crate::output::print;

pub fn run(c: WcallCommand) -> CmdResult {
    match c {
        WcallCommand::Run(a) => run_governed(a),
        WcallCommand::Daemon(a) => daemon(a),
        WcallCommand::Status(a) => status(a),
        WcallCommand::Attach(a) => attach(a),
        WcallCommand::Writer(a) => writer(a),
        WcallCommand::BenchWrites(a) => bench_writes(a),
    }
}

fn options(p: &WcallPolicyArgs) -> Result<Options, Failure> {
    let name = p.policy.as_deref().unwrap_or("wcall-fair");
    let policy = match Policy::parse(name) {
        Some(Policy::Vanilla) | None => {
            return Err(Failure::usage(format!(
                "unknown policy '{name}': use wcall or wcall-fair"
            )));
        }
        Some(x) => x,
    };
    let headroom = match &p.headroom {
        None => None,
        Some(h) => Some(parse_human_size(h).map_err(|e| {
            Failure::usage(format!("--headroom {h}: {e} (give a size such as 8MiB)"))
        })?),
    };
    let recycle = match p.recycle.as_deref().unwrap_or("auto") {
        "on" => true,
        "off" => false,
        "auto" => service::page_reporting(),
        other => {
            return Err(Failure::usage(format!(
                "--recycle {other}: use on, off or auto"
            )));
        }
    };
    let is_root = oslab_sys::process::is_root();
    Ok(Options {
        policy,
        block_ns: (p.block_ms.unwrap_or(100.0) * 1e6) as u64,
        interval: Duration::from_secs_f64(p.interval_ms.unwrap_or(10.0) / 1000.0),
        fifo_priority: is_root.then_some(oslab_wcall::service::COORDINATOR_FIFO),
        cgroups: !p.no_cgroups,
        cgroup_limits: cgroup_limits(&p.memory_high)?,
        tuning: oslab_wcall::coordinator::Tuning { headroom, recycle },
        kernel_monitor: true,
    })
}

/// What a governor does beside its policy, in one line for the user.
fn described(g: &Governor, o: &Options) -> String {
    let recycle = if o.tuning.recycle {
        "written-back pages of governed files are dropped every 100 ms (--recycle off to keep them)"
    } else {
        "written-back pages stay in the page cache"
    };
    format!("{}; {}; {recycle}", g.monitor(), g.cgroups().describe())
}

/// The policy's io weights and the `--memory-high GROUP=SIZE` values.
fn cgroup_limits(memory_high: &[String]) -> Result<CgroupLimits, Failure> {
    let mut l = CgroupLimits::policy_io_weights();
    for m in memory_high {
        let bad = || {
            Failure::usage(format!(
                "--memory-high {m}: expected GROUP=SIZE with GROUP rt-high, rt-low or normal and SIZE like 2GiB"
            ))
        };
        let (g, size) = m.split_once('=').ok_or_else(bad)?;
        let g = group_number(g.trim())
            .filter(|g| (*g as usize) < l.memory_high.len())
            .ok_or_else(bad)?;
        let bytes = parse_human_size(size.trim())
            .ok()
            .filter(|b| *b >= 1 << 20)
            .ok_or_else(bad)?;
        l.memory_high[g as usize] = Some(bytes);
    }
    Ok(l)
}

fn start(name: &str, o: Options) -> Result<Governor, Failure> {
    let g = Governor::start(name, o)
        .map_err(|e| Failure::runtime(format!("cannot start the governor: {e}")))?;
    crate::guard::on_interrupt(g.releaser());
    Ok(g)
}

/// The governor `wcall run` uses: the one named, the one daemon running, or one
/// of its own (with a word on what that means).
fn choose_governor(a: &WcallRunArgs) -> Result<Option<Found>, Failure> {
    if a.private {
        return Ok(None);
    }
    let daemons: Vec<Found> = rendezvous::discover()
        .into_iter()
        .filter(|f| !f.name.starts_with("run-"))
        .collect();
    let chosen = match &a.name {
        Some(name) => daemons.into_iter().find(|f| &f.name == name).ok_or_else(|| {
            Failure::runtime(format!(
                "no governor named '{name}' is running (start one with `oslab wcall daemon --name {name}`)"
            ))
        })?,
        None => match daemons.len() {
            0 => {
                eprintln!(
                    "oslab wcall: no governor daemon runs, so this command gets a governor of its own, which sees only its own writers; to govern several programs together start `oslab wcall daemon` first and run each with `oslab wcall run`"
                );
                return Ok(None);
            }
            1 => daemons.into_iter().next().expect("one"),
            _ => {
                let names: Vec<&str> = daemons.iter().map(|f| f.name.as_str()).collect();
                return Err(Failure::usage(format!(
                    "several governors run ({}): name one with --name, or use --private",
                    names.join(", ")
                )));
            }
        },
    };
    let given = a.policy.given();
    if !given.is_empty() {
        return Err(Failure::usage(format!(
            "{} cannot apply: governor '{}' is already running with its own settings; drop {} or use --private",
            given.join(", "),
            chosen.name,
            if given.len() == 1 { "it" } else { "them" }
        )));
    }
    eprintln!(
        "oslab wcall: joining governor '{}' (pid {}{})",
        chosen.name,
        chosen.pid,
        if chosen.uid == 0 && oslab_sys::process::uid() != 0 {
            ", root's"
        } else {
            ""
        }
    );
    Ok(Some(chosen))
}

/// Asks the governor at `socket` for something this launcher needs.
fn ask(socket: &std::path::Path, ask: Ask, group: u32, pid: u32) -> Result<(), String> {
    let req = Request { ask, group, pid };
    let a = wire::ask(socket, &req, std::time::Duration::from_secs(5))
        .map_err(|e| format!("the governor at {} did not answer: {e}", socket.display()))?;
    if a.reply.ok {
        Ok(())
    } else {
        Err(a.reply.reason)
    }
}

fn run_governed(a: WcallRunArgs) -> CmdResult {
    let Some(group) = group_number(&a.group) else {
        return Err(Failure::usage(format!(
            "unknown group '{}': use rt-high (high), rt-low (low), normal (non-rt) or auto",
            a.group
        )));
    };
    let lib = launch::preload_path().map_err(Failure::runtime)?;
    let program = &a.command[0];
    let Some(path) = launch::resolve(program) else {
        return Err(Failure::usage(format!("no program '{program}' found")));
    };
    let is_static = launch::is_static(&path) == Some(true);
    if is_static {
        eprintln!(
            "oslab wcall: {} is statically linked: the interposer cannot reach it, so its writes cannot be held; it is registered with the governor, which pushes the files it dirties where the kernel's records show them",
            path.display()
        );
    }
    let (own, socket) = match choose_governor(&a)? {
        Some(found) => {
            // the programs we start join in the group asked for, as far as the
            // governor grants it (docs/wcall.md, "The trust boundary")
            ask(&found.socket, Ask::Launcher, group, 0).map_err(|why| {
                Failure::runtime(format!(
                    "governor '{}' refused this launcher: {why}",
                    found.name
                ))
            })?;
            (None, found.socket)
        }
        None => {
            let opts = options(&a.policy)?;
            let g = start(&format!("run-{}", std::process::id()), opts)?;
            g.launch_as(group)
                .map_err(|e| Failure::runtime(format!("cannot launch under the governor: {e}")))?;
            eprintln!("oslab wcall: {}", described(&g, &opts));
            let p = g.socket().to_path_buf();
            (Some(g), p)
        }
    };
    let mut cmd = std::process::Command::new(&path);
    cmd.args(&a.command[1..]);
    for (k, v) in launch::env(&lib, &socket) {
        cmd.env(k, v);
    }
    // a static program cannot join itself: we ask for it, and the coordinator
    // checks that it is our child, of our user
    let code = crate::child::run_forwarding_with(
        &mut cmd,
        program,
        |pid| {
            if is_static && let Err(why) = ask(&socket, Ask::Launched, group, pid) {
                eprintln!("oslab wcall: {program} (pid {pid}) is not governed: {why}");
            }
        },
        // counted while the kernel still has its counts: its figures are whole
        |pid| {
            let _ = ask(&socket, Ask::Count, group, pid);
        },
    )?;
    if let Some(g) = own {
        let cgroups = g.cgroups().describe();
        let s = g.finish();
        eprint!("{}", oslab_report::wcall::summary(&s));
        eprintln!("  {cgroups}");
    }
    Ok(code)
}

fn daemon(a: WcallDaemonArgs) -> CmdResult {
    let opts = options(&a.policy)?;
    rendezvous::check_name(&a.name).map_err(|e| Failure::usage(format!("--name: {e}")))?;
    if rendezvous::discover()
        .iter()
        .any(|f| f.name == a.name && f.uid == oslab_sys::process::uid())
    {
        return Err(Failure::runtime(format!(
            "a governor named '{}' is already running (see `oslab wcall status`)",
            a.name
        )));
    }
    let g = start(&a.name, opts)?;
    eprintln!(
        "oslab wcall: governor '{}' ({}) running as pid {}; govern programs with `oslab wcall run -- CMD` (or --name {} when several run); Ctrl-C stops it",
        a.name,
        opts.policy.name(),
        std::process::id(),
        a.name
    );
    eprintln!("oslab wcall: {}", described(&g, &opts));
    let end = a
        .duration
        .map(|d| oslab_sys::clock::monotonic_ns() + (d.max(0.0) * 1e9) as u64);
    let every = Duration::from_secs_f64(if a.every > 0.0 {
        a.every.min(3600.0)
    } else {
        1.0
    });
    loop {
        std::thread::sleep(every);
        if a.every > 0.0 {
            eprintln!(
                "{}",
                oslab_report::wcall::status_line(&oslab_sys::clock::local_hms(), &g.snapshot())
            );
        }
        if end.is_some_and(|e| oslab_sys::clock::monotonic_ns() >= e) {
            break;
        }
    }
    let s = g.finish();
    eprint!("{}", oslab_report::wcall::summary(&s));
    Ok(0)
}

fn status(a: WcallStatusArgs) -> CmdResult {
    let found: Vec<_> = rendezvous::discover()
        .into_iter()
        .filter(|f| a.name.as_ref().is_none_or(|n| &f.name == n))
        .collect();
    let mut snaps = Vec::new();
    for f in &found {
        match f.board() {
            // the coordinator's pid as the kernel named the socket's peer
            Ok(b) => snaps.push((
                f,
                snapshot_of(b.board(), oslab_sys::clock::monotonic_ns(), f.pid),
            )),
            Err(e) => eprintln!(
                "oslab wcall: cannot read governor '{}' (pid {}): {e}",
                f.name, f.pid
            ),
        }
    }
    if a.json {
        let v: Vec<_> = snaps
            .iter()
            .map(|(f, s)| serde_json::json!({"name": f.name, "pid": f.pid, "status": s}))
            .collect();
        print(&(serde_json::to_string_pretty(&v).unwrap_or_default() + "\n"));
        return Ok(0);
    }
    let governors: Vec<Running> = snaps
        .iter()
        .map(|(f, s)| Running {
            name: &f.name,
            pid: f.pid,
            snapshot: s,
        })
        .collect();
    print(&oslab_report::wcall::status(&governors));
    Ok(0)
}

fn attach(a: WcallAttachArgs) -> CmdResult {
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

fn writer(a: WcallWriterArgs) -> CmdResult {
    let chunk = parse_human_size(&a.chunk)
        .map_err(|e| Failure::usage(format!("--chunk: {e}")))?
        .clamp(1, 1 << 30) as usize;
    let spec = oslab_lab::services::timed_writer::WriterSpec {
        path: a.file.clone(),
        chunk,
        period: Duration::from_secs_f64(a.period_ms.max(0.0) / 1000.0),
        count: a.count,
        fifo_priority: a.fifo,
        nice: a.nice,
    };
    let stop = Arc::new(AtomicBool::new(false));
    let start = a.start_at.unwrap_or_else(oslab_sys::clock::monotonic_ns);
    if let Some(d) = a.duration {
        let s = stop.clone();
        let end = start + (d.max(0.0) * 1e9) as u64;
        std::thread::spawn(move || {
            let now = oslab_sys::clock::monotonic_ns();
            std::thread::sleep(Duration::from_nanos(end.saturating_sub(now)));
            s.store(true, std::sync::atomic::Ordering::Relaxed);
        });
    }
    let trace = oslab_lab::services::timed_writer::run_writer(spec, start, stop);
    print(&(serde_json::to_string(&trace).map_err(|e| Failure::runtime(e.to_string()))? + "\n"));
    Ok(if trace.error.is_some() { 1 } else { 0 })
}

fn bench_writes(a: WcallBenchArgs) -> CmdResult {
    let v = oslab_lab::wb::wcall_overhead::time_pwrites(
        &a.file,
        a.batches.clamp(1, 1000),
        a.per_batch.clamp(1, 10_000_000),
    )
    .map_err(|e| Failure::runtime(format!("{}: {e}", a.file.display())))?;
    print(&(serde_json::to_string(&v).map_err(|e| Failure::runtime(e.to_string()))? + "\n"));
    Ok(0)
}
