//! Measuring the matrix: the testbed, the knobs, and per cell the governor (or
//! none), the writer processes and the 10 Hz poller. Nothing here judges.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use oslab_wbsim::policy::Policy;
use oslab_wcall::launch;
use oslab_wcall::service::{Governor, Options};
use oslab_wcall::view::Snapshot;

use super::{
    Cell, GovernorRaw, GroupCount, GroupPoll, META, PERIOD_MS, Plan, Raw, Scenario, WriterRaw,
};
use crate::experiment::{Context, LabError};
use crate::kernel_trace::KernelTrace;
use crate::shape::Measured;
use crate::wb::knobs::Knobs;
use crate::wb::testbed::{Testbed, down_for_run, unavailable, up_for_run};
use crate::wb::throttle::{BACKGROUND, HARD};
use crate::wb::trace::{self, WriterTrace};
use oslab_trace::TraceOutcome;

/// One writer process to start.
#[derive(Debug, Clone)]
pub struct WriterArgs {
    pub name: String,
    pub fifo: Option<i32>,
    pub nice: Option<i32>,
    /// None: a bulk writer for `duration_s`.
    pub count: Option<u64>,
    pub duration_s: f64,
}

/// The writers of a scenario; the first is the one the claims are about.
pub fn writers_for(s: Scenario, writes: u64) -> Vec<WriterArgs> {
    let span = writes as f64 * PERIOD_MS / 1000.0;
    let periodic = |name: &str, fifo: Option<i32>, nice: Option<i32>, count: u64| WriterArgs {
        name: name.into(),
        fifo,
        nice,
        count: Some(count),
        duration_s: span * 2.0 + 30.0,
    };
    let high = periodic("rt55", Some(55), None, writes);
    match s {
        Scenario::Alone => vec![high],
        Scenario::RtLow => vec![
            high,
            periodic("rt45-a", Some(45), None, writes),
            periodic("rt45-b", Some(45), None, writes),
        ],
        Scenario::Bulk => {
            let bulk = |name: &str| WriterArgs {
                name: name.into(),
                fifo: None,
                nice: None,
                count: None,
                duration_s: span,
            };
            vec![high, bulk("bulk-a"), bulk("bulk-b")]
        }
        Scenario::Fig7 => vec![periodic("nice4", None, Some(4), writes * 10 / 7)],
    }
}

fn spawn_writer(
    exe: &Path,
    w: &WriterArgs,
    file: &Path,
    out: &Path,
    start_at: u64,
    env: &[(String, String)],
) -> Result<Child, LabError> {
    let mut cmd = Command::new(exe);
    cmd.args(["wcall", "writer", "--chunk", "512KiB", "--file"])
        .arg(file)
        .args(["--start-at", &start_at.to_string()])
        .args(["--duration", &format!("{:.3}", w.duration_s)]);
    match w.count {
        Some(c) => cmd.args([
            "--period-ms",
            &PERIOD_MS.to_string(),
            "--count",
            &c.to_string(),
        ]),
        None => cmd.args(["--period-ms", "0"]),
    };
    if let Some(p) = w.fifo {
        cmd.args(["--fifo", &p.to_string()]);
    }
    if let Some(n) = w.nice {
        cmd.args(["--nice", &n.to_string()]);
    }
    let stdout = std::fs::File::create(out)
        .map_err(|e| LabError::Failed(format!("{}: {e}", out.display())))?;
    cmd.stdout(Stdio::from(stdout)).stderr(Stdio::piped());
    cmd.envs(env.iter().map(|(k, v)| (k, v)));
    oslab_sys::signals::child_of_oslab(&mut cmd, oslab_sys::signals::OnParentDeath::Kill)
        .spawn()
        .map_err(|e| LabError::Failed(format!("cannot start a writer: {e}")))
}

/// What every cell of one run shares.
struct Env<'a> {
    tb: &'a Testbed,
    machine: &'a oslab_sys::machine::MachineInfo,
    exe: PathBuf,
    lib: PathBuf,
    scratch: PathBuf,
    coordinator_fifo: Option<i32>,
    backed_memory: bool,
}

/// Memory touched (and freed) before each cell, so the cell's page cache comes from
/// memory the host backs: more than the dirty limit, the write-back in flight and
/// 100 ms of writing together.
const WARM_BYTES: usize = 512 << 20;

fn start_governor(e: &Env, policy: Policy) -> Result<Option<Governor>, LabError> {
    if policy == Policy::Vanilla {
        return Ok(None);
    }
    Governor::start(
        "wb-wcall",
        Options {
            policy,
            block_ns: oslab_wcall::coordinator::WCALL_BLOCK_NS,
            interval: Duration::from_millis(10),
            fifo_priority: e.coordinator_fifo,
            // placement in memory cgroups is left out of the measurement
            cgroups: false,
            cgroup_limits: Default::default(),
            tuning: Default::default(),
            kernel_monitor: true,
        },
    )
    .map(Some)
    .map_err(|err| LabError::Failed(format!("cannot start the governor: {err}")))
}

/// The governor's account, as much of its snapshot as the judging reads.
fn governor_raw(s: &Snapshot) -> GovernorRaw {
    GovernorRaw {
        passes: s.passes,
        pass_mean_us: s.pass_mean_us,
        pass_max_us: s.pass_max_us,
        groups: s
            .groups
            .iter()
            .map(|g| GroupCount {
                group: g.group.clone(),
                writes: g.writes,
                delayed_writes: g.delayed_writes,
                held_ms: g.held_ms,
            })
            .collect(),
    }
}

/// Polls every 100 ms until every writer has exited: meminfo and cachestat, the
/// governor's table, and (backed memory) drops the writers' clean pages.
fn poll_until_done(
    e: &Env,
    governor: Option<&Governor>,
    children: &mut [(String, Child, PathBuf)],
    files: &[PathBuf],
    start_at: u64,
) -> (Vec<trace::Poll>, Vec<GroupPoll>) {
    let page = oslab_sys::machine::page_size();
    let mut polls = Vec::new();
    let mut groups = Vec::new();
    std::thread::sleep(Duration::from_nanos(
        start_at.saturating_sub(oslab_sys::clock::monotonic_ns()),
    ));
    loop {
        if e.backed_memory {
            for f in files {
                if let Ok(h) = std::fs::File::open(f) {
                    let _ = oslab_sys::fileio::drop_clean_start(&h, page);
                }
            }
        }
        let poll = trace::poll_once(start_at, files, page);
        if let Some(g) = governor {
            let snap = g.snapshot();
            groups.push(GroupPoll {
                t_s: poll.t_s,
                groups: snap
                    .groups
                    .iter()
                    .map(|x| (x.dirty_bytes + x.writeback_bytes, x.limit_bytes))
                    .collect(),
            });
        }
        polls.push(poll);
        if children
            .iter_mut()
            .all(|(_, c, _)| c.try_wait().ok().flatten().is_some())
        {
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    (polls, groups)
}

/// Each writer's trace from the file it printed it to.
fn collect_traces(children: Vec<(String, Child, PathBuf)>) -> Result<Vec<WriterRaw>, LabError> {
    let mut writers = Vec::new();
    for (name, child, out) in children {
        let o = child
            .wait_with_output()
            .map_err(|err| LabError::Failed(err.to_string()))?;
        let text = std::fs::read_to_string(&out).unwrap_or_default();
        let _ = std::fs::remove_file(&out);
        let trace: WriterTrace = serde_json::from_str(text.trim()).map_err(|_| {
            LabError::Failed(format!(
                "writer {name} gave no trace: {}",
                String::from_utf8_lossy(&o.stderr).trim()
            ))
        })?;
        if let Some(err) = &trace.error {
            return Err(LabError::Failed(format!("writer {name}: {err}")));
        }
        writers.push(WriterRaw { name, trace });
    }
    Ok(writers)
}

fn run_cell(
    e: &Env,
    policy: Policy,
    scenario: Scenario,
    writes: u64,
    run: usize,
) -> Result<Cell, LabError> {
    trace::settle();
    let governor = start_governor(e, policy)?;
    let env = governor
        .as_ref()
        .map(|g| launch::env(&e.lib, g.path(), "auto"))
        .unwrap_or_default();
    if e.backed_memory {
        // touched, then freed: back on the free lists, and backed by the host
        drop(oslab_sys::memprobe::Buffer::new(WARM_BYTES, false));
    }
    let kernel = KernelTrace::writeback(e.machine);
    let start_at = oslab_sys::clock::monotonic_ns() + 300_000_000;
    let mut children = Vec::new();
    let mut files = Vec::new();
    for w in &writers_for(scenario, writes) {
        let file = e.tb.mount.join(format!(
            "{}-{}-{}-{}.dat",
            policy.name(),
            scenario.name(),
            run,
            w.name
        ));
        let out = e.scratch.join(format!("trace-{}.json", w.name));
        let child = spawn_writer(&e.exe, w, &file, &out, start_at, &env)?;
        children.push((w.name.clone(), child, out));
        files.push(file);
    }
    let (polls, groups) = poll_until_done(e, governor.as_ref(), &mut children, &files, start_at);
    let governor = governor.map(|g| governor_raw(&g.finish()));
    let writers = collect_traces(children)?;
    let first = writers.first().map_or(0, |w| w.trace.tid);
    let kernel = keep_first_writers_calls(kernel.finish(), first);
    trace::settle();
    for f in &files {
        let _ = std::fs::remove_file(f);
    }
    Ok(Cell {
        policy,
        scenario,
        run,
        writers,
        polls,
        groups,
        governor,
        kernel,
    })
}

/// The kernel's records a cell keeps: the first writer's calls and blocked
/// stretches (the others' would only weigh the raw data), everyone's throttling
/// decisions, the bandwidth estimates and the flusher's passes.
fn keep_first_writers_calls(mut outcome: TraceOutcome, tid: u32) -> TraceOutcome {
    if let TraceOutcome::Traced(c) = &mut outcome {
        c.writes.retain(|w| w.pid == tid);
        c.offcpu.retain(|o| o.pid == tid);
        c.dirtiers.clear();
    }
    outcome
}

/// Every cell of the plan, run by run, on the testbed `tb`.
fn run_matrix(
    plan: &Plan,
    ctx: &mut Context,
    tb: &Testbed,
    exe: PathBuf,
    lib: PathBuf,
) -> Result<Vec<Cell>, LabError> {
    // the writers' trace files, journaled like every file oslab makes
    let scratch = crate::scratch::Scratch::create(&ctx.config.scratch_dir, META.id, 0)?;
    let _k = Knobs::set(&[
        ("vm.dirty_background_bytes", BACKGROUND.to_string()),
        ("vm.dirty_bytes", HARD.to_string()),
    ])?;
    let fifo = plan.coordinator_fifo as i32;
    let env = Env {
        tb,
        machine: ctx.machine,
        exe,
        lib,
        scratch: scratch.dir().to_path_buf(),
        coordinator_fifo: (fifo > 0).then_some(fifo),
        backed_memory: plan.backed_memory,
    };
    let total = plan.runs * plan.scenarios.len() * plan.policies.len();
    let mut cells = Vec::new();
    for run in 0..plan.runs {
        for &s in &plan.scenarios {
            for &p in &plan.policies {
                ctx.progress
                    .stage(&format!("run {} {} {}", run + 1, s.name(), p.name()));
                cells.push(run_cell(&env, p, s, plan.writes, run)?);
                ctx.progress.fraction(cells.len() as f64 / total as f64);
            }
        }
    }
    Ok(cells)
}

/// Builds the testbed, runs the matrix, takes the testbed down.
pub fn measure(plan: &Plan, ctx: &mut Context) -> Result<Measured<Raw>, LabError> {
    if let Some(why) = unavailable() {
        return Ok(Measured::Skipped { reason: why });
    }
    let lib = match launch::preload_path() {
        Ok(l) => l,
        Err(e) => return Ok(Measured::Skipped { reason: e }),
    };
    let exe = std::env::current_exe()
        .map_err(|e| LabError::Failed(format!("cannot find oslab itself: {e}")))?;
    ctx.progress.stage("building the testbed");
    // each cell's files are removed after it; room for the biggest cell
    let size =
        (plan.bandwidth as f64 * plan.writes as f64 * PERIOD_MS / 1000.0 * 3.0) as u64 + (1 << 30);
    let tb = up_for_run(&ctx.config.scratch_dir, size, plan.bandwidth)?;
    let result = run_matrix(plan, ctx, &tb, exe, lib);
    let teardown_errors = down_for_run(&tb);
    let cells = result?;
    Ok(Measured::Raw(Raw {
        testbed_device: tb.device.display().to_string(),
        testbed_measured_bytes_s: tb.measured_bytes_s,
        dirty_bytes: HARD,
        dirty_background_bytes: BACKGROUND,
        page_reporting: oslab_sys::fsread::Root::live().exists("/sys/module/page_reporting"),
        cells,
        teardown_errors,
    }))
}
