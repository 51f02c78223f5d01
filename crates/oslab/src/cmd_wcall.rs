//! `oslab wcall`: the WCALL governor from the command line.

use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

use oslab_report::wcall::Running;
use oslab_sys::parse::size::parse_human_size;
use oslab_wbsim::policy::Policy;
use oslab_wcall::cgroups::CgroupLimits;
use oslab_wcall::launch;
use oslab_wcall::service::{self, Governor, Options};
use oslab_wcall::shm::{Mapped, group_number};
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
    let policy = match Policy::parse(&p.policy) {
        Some(Policy::Vanilla) | None => {
            return Err(Failure::usage(format!(
                "unknown policy '{}': use wcall or wcall-fair",
                p.policy
            )));
        }
        Some(x) => x,
    };
    let ms = |name: &str, v: f64, lo: f64| {
        if v.is_finite() && v >= lo && v <= 10_000.0 {
            Ok(Duration::from_secs_f64(v / 1000.0))
        } else {
            Err(Failure::usage(format!(
                "--{name} {v} is out of range ({lo} to 10000 ms)"
            )))
        }
    };
    Ok(Options {
        policy,
        block_ns: ms("block-ms", p.block_ms, 1.0)?.as_nanos() as u64,
        interval: ms("interval-ms", p.interval_ms, 1.0)?,
        fifo_priority: oslab_sys::process::is_root()
            .then_some(oslab_wcall::service::COORDINATOR_FIFO),
        cgroups: !p.no_cgroups,
        cgroup_limits: cgroup_limits(&p.memory_high)?,
    })
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
    if let Ok(release) = g.releaser() {
        crate::guard::on_interrupt(release);
    }
    Ok(g)
}

fn run_governed(a: WcallRunArgs) -> CmdResult {
    if group_number(&a.group).is_none() {
        return Err(Failure::usage(format!(
            "unknown group '{}': use rt-high, rt-low, normal or auto",
            a.group
        )));
    }
    let opts = options(&a.policy)?;
    let lib = launch::preload_path().map_err(Failure::runtime)?;
    let program = &a.command[0];
    let Some(path) = launch::resolve(program) else {
        return Err(Failure::usage(format!("no program '{program}' found")));
    };
    if launch::is_static(&path) == Some(true) {
        eprintln!(
            "oslab wcall: {} is statically linked: the interposer cannot reach it, so it runs ungoverned",
            path.display()
        );
    }
    let (own, table) = match &a.name {
        Some(name) => {
            let found = service::discover(&oslab_sys::fsread::Root::live())
                .into_iter()
                .find(|f| &f.name == name)
                .ok_or_else(|| {
                    Failure::runtime(format!(
                        "no governor named '{name}' is running (start one with `oslab wcall daemon --name {name}`)"
                    ))
                })?;
            (None, found.path)
        }
        None => {
            let g = start(&format!("run-{}", std::process::id()), opts)?;
            let p = g.path().to_path_buf();
            (Some(g), p)
        }
    };
    let mut cmd = std::process::Command::new(&path);
    cmd.args(&a.command[1..]);
    for (k, v) in launch::env(&lib, &table, &a.group) {
        cmd.env(k, v);
    }
    let code = crate::child::run_forwarding(&mut cmd, program)?;
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
    if a.name.is_empty() || a.name.contains('/') || a.name.len() > 64 {
        return Err(Failure::usage("--name must be 1-64 characters without '/'"));
    }
    if service::discover(&oslab_sys::fsread::Root::live())
        .iter()
        .any(|f| f.name == a.name)
    {
        return Err(Failure::runtime(format!(
            "a governor named '{}' is already running (see `oslab wcall status`)",
            a.name
        )));
    }
    let g = start(&a.name, opts)?;
    eprintln!(
        "oslab wcall: governor '{}' ({}) running as pid {}; govern programs with `oslab wcall run --name {} -- CMD`; Ctrl-C stops it; {}",
        a.name,
        opts.policy.name(),
        std::process::id(),
        a.name,
        g.cgroups().describe()
    );
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
    let found: Vec<_> = service::discover(&oslab_sys::fsread::Root::live())
        .into_iter()
        .filter(|f| a.name.as_ref().is_none_or(|n| &f.name == n))
        .collect();
    let mut snaps = Vec::new();
    for f in &found {
        match Mapped::open(&f.path) {
            // the pid that holds the table, not the one the table claims
            Ok(m) => snaps.push((
                f,
                snapshot_of(m.table(), oslab_sys::clock::monotonic_ns(), f.pid),
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
    let spec = oslab_lab::wb::trace::WriterSpec {
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
    let trace = oslab_lab::wb::trace::run_writer(spec, start, stop);
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
