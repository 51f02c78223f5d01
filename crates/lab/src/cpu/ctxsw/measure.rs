//! Measuring `cpu.ctxsw`: the placements, one cell of launches, the system calls
//! alone, perf bench; nothing derived.

use std::sync::atomic::AtomicU32;

use oslab_model::machine::MachineInfo;
use oslab_probe::pingpong::{self, Mechanism, Tasks};
use oslab_sys::fsread::Root;
use oslab_sys::parse::procstat::{CpuTimes, cpu_times};

use super::{CellRaw, LaunchRaw, PerfRaw, Placement, Plan, Raw};
use crate::cpu::common::timing::{MIN_BATCH_NS, calibrate, time_batch};
use oslab_harness::{Context, LabError};

/// Same CPU, one pair per class the topology offers, and unpinned.
pub fn placements(m: &MachineInfo) -> Vec<Placement> {
    let cpus: Vec<u32> = m.cpu.cpus.iter().map(|c| c.cpu).collect();
    let first = cpus.first().copied().unwrap_or(0);
    let mut out = vec![Placement {
        name: "same-cpu".into(),
        own: Some(first),
        peer: Some(first),
    }];
    let siblings: Vec<u32> = m
        .cpu
        .cpus
        .iter()
        .find(|c| c.cpu == first)
        .map(|c| c.thread_siblings.clone())
        .unwrap_or_default();
    let l3_shared = |a: u32, b: u32| {
        m.caches
            .distinct
            .iter()
            .any(|c| c.level == 3 && c.shared_cpus.contains(&a) && c.shared_cpus.contains(&b))
    };
    let mut classes: Vec<(&str, u32)> = Vec::new();
    for &c in cpus.iter().filter(|c| **c != first) {
        let class = if siblings.contains(&c) {
            "smt-sibling"
        } else if l3_shared(first, c) {
            "same-l3"
        } else {
            "other-l3"
        };
        if !classes.iter().any(|(k, _)| *k == class) {
            classes.push((class, c));
        }
    }
    for (class, c) in classes {
        out.push(Placement {
            name: format!("cross-cpu.{class}"),
            own: Some(first),
            peer: Some(c),
        });
    }
    out.push(Placement {
        name: "unpinned".into(),
        own: None,
        peer: None,
    });
    out
}

/// Switches each side made per round trip (voluntary, involuntary).
pub fn per_round_trip(vol: u64, invol: u64, round_trips: u64) -> (f64, f64) {
    let n = round_trips.max(1) as f64;
    (vol as f64 / n, invol as f64 / n)
}

/// Whether a run is clean: on one CPU exactly one switch per side per round trip.
/// Involuntary ones are expected there: the woken task preempts the waker on its
/// way back from the wake call (wake-up preemption), before it blocks, and that
/// counts as involuntary; the waker then finds its turn already back and does not
/// block.
pub fn clean(own: (f64, f64), peer: (f64, f64)) -> bool {
    let ok = |x: (f64, f64)| (x.0 + x.1 - 1.0).abs() <= 0.02;
    ok(own) && ok(peer)
}

fn stat_now() -> Option<CpuTimes> {
    cpu_times(&Root::live().read("/proc/stat").ok()?)
}

pub fn task_name(t: Tasks) -> &'static str {
    match t {
        Tasks::Processes => "processes",
        Tasks::Threads => "threads",
    }
}

pub fn mechanism_name(m: Mechanism) -> &'static str {
    match m {
        Mechanism::Futex => "futex",
        Mechanism::Pipe => "pipe",
    }
}

/// One cell: `launches` fresh peers, each `batches` batches of `rts` round trips,
/// each side writing `ws` bytes of a shared working set between handoffs.
pub fn run_cell(
    tasks: Tasks,
    mech: Mechanism,
    p: &Placement,
    launches: usize,
    batches: usize,
    rts: u64,
    ws: usize,
) -> Result<CellRaw, LabError> {
    let warmup = rts / 4 + 100;
    let stat_before = stat_now();
    let mut runs = Vec::with_capacity(launches);
    for _ in 0..launches {
        let r = pingpong::run(tasks, mech, p.own, p.peer, rts, batches, warmup, ws)?;
        runs.push(LaunchRaw {
            round_trips: rts,
            warmup,
            batch_ns: r.batch_ns,
            own_voluntary: r.own_voluntary,
            own_involuntary: r.own_involuntary,
            peer_voluntary: r.peer_voluntary,
            peer_involuntary: r.peer_involuntary,
            own_cpus: r.own_cpus,
            peer_cpus: r.peer_cpus,
        });
    }
    Ok(CellRaw {
        tasks: task_name(tasks).into(),
        mechanism: mechanism_name(mech).into(),
        placement: p.name.clone(),
        launches: runs,
        stat_before,
        stat_after: stat_now(),
    })
}

/// ns per call of `f`, `n` batches calibrated to last [`MIN_BATCH_NS`].
fn per_call<F: FnMut()>(mut f: F, n: usize) -> Vec<f64> {
    let batch = calibrate(&mut f, MIN_BATCH_NS);
    (0..n)
        .map(|_| time_batch(batch, &mut f) as f64 / batch as f64)
        .collect()
}

/// perf bench sched pipe: µs per round trip, pinned with taskset like ours.
fn perf_bench(cpu: Option<u32>, threads: bool, loops: u64) -> Option<f64> {
    let perf = oslab_sys::program::find("perf").ok()?;
    let mut cmd = match cpu {
        Some(c) => {
            let mut x = oslab_sys::program::command("taskset").ok()?;
            x.args(["-c", &c.to_string()]).arg(&perf);
            x
        }
        None => oslab_sys::program::command("perf").ok()?,
    };
    cmd.args(["bench", "sched", "pipe", "-l", &loops.to_string()]);
    if threads {
        cmd.arg("-T");
    }
    cmd.stderr(std::process::Stdio::null());
    // perf forks the pipe's other end: the whole group dies with oslab
    let out = oslab_sys::child_group::output(&mut cmd).ok()?;
    let text = String::from_utf8_lossy(&out.stdout);
    text.lines()
        .find(|l| l.contains("usecs/op"))
        .and_then(|l| l.split_whitespace().next()?.parse().ok())
}

fn has_perf() -> bool {
    let Ok(mut perf) = oslab_sys::program::command("perf") else {
        return false;
    };
    perf.arg("--version")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

pub fn measure(plan: &Plan, ctx: &mut Context) -> Result<Raw, LabError> {
    let mut cells = Vec::new();
    let total = plan.placements.len() * 4;
    for p in &plan.placements {
        for tasks in [Tasks::Processes, Tasks::Threads] {
            for mech in [Mechanism::Futex, Mechanism::Pipe] {
                ctx.progress.stage(&p.name);
                cells.push(run_cell(
                    tasks,
                    mech,
                    p,
                    plan.launches as usize,
                    plan.samples,
                    plan.round_trips,
                    0,
                )?);
                ctx.progress.fraction(cells.len() as f64 / total as f64);
            }
        }
    }
    ctx.progress.stage("system calls alone");
    let n = plan.samples.max(3);
    let word = AtomicU32::new(0);
    let wake = per_call(|| pingpong::futex_wake_nobody(&word), n);
    let wait = per_call(|| pingpong::futex_wait_mismatch(&word), n);
    let mut fds = [-1i32; 2];
    let pipe = pingpong::nonblocking_pipe(&mut fds)
        .then(|| per_call(|| pingpong::pipe_write_read(&fds), n));
    pingpong::close_pipe(&fds);

    let perf = if has_perf() {
        ctx.progress.stage("perf bench sched pipe");
        let pinned_cpu = plan.placements.first().and_then(|p| p.own);
        let mut v = Vec::new();
        for (pinned, threads) in [(true, false), (true, true), (false, false), (false, true)] {
            let cpu = if pinned { pinned_cpu } else { None };
            v.push(PerfRaw {
                tasks: if threads { "threads" } else { "processes" }.into(),
                placement: if pinned { "same-cpu" } else { "unpinned" }.into(),
                cpu,
                loops: plan.perf_loops,
                usecs_per_op: (0..plan.perf_runs)
                    .map(|_| perf_bench(cpu, threads, plan.perf_loops))
                    .collect(),
            });
        }
        Some(v)
    } else {
        None
    };
    ctx.progress.stage("switches counted by the kernel");
    let kernel = super::kernel_count::count(
        ctx.machine,
        plan.placements.first().and_then(|p| p.own),
        plan.round_trips,
    );
    Ok(Raw {
        kernel,
        cells,
        futex_wake_no_waiter_ns: wake,
        futex_wait_mismatch_ns: wait,
        pipe_write_read_ns: pipe,
        perf,
        pcid: oslab_sys::parse::cpuinfo::read_has_flag(&Root::live(), "pcid"),
    })
}
