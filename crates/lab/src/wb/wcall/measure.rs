//! Measuring the matrix as a user would run it: the testbed and the knobs, then per
//! cell a governor daemon (none under vanilla), the writers started as programs
//! (through `oslab wcall run` when governed), the 10 Hz poller, the kernel's
//! trace, and afterwards a check of every byte. Nothing here judges.

use std::path::{Path, PathBuf};
use std::time::Duration;

use oslab_sys::clock::monotonic_ns;
use oslab_trace::TraceOutcome;
use oslab_wbsim::policy::Policy;
use oslab_wcall::cli::GovernorPolicy;
use oslab_wcall::rendezvous::GovernorName;

use super::run_env::Env;
use super::writers::{Launched, WriterKind, WriterPlan, check_content, writers_for};
use super::{FirstTouch, META, Plan, Raw};
use crate::wb::common::limits::{BACKGROUND, HARD};
use oslab_harness::Measured;
use oslab_harness::kernel_trace::KernelTrace;
use oslab_harness::{Context, LabError};
use oslab_services::cells::record::{Cell, Scenario, Start, WriterRaw};
use oslab_services::daemon::Daemon;
use oslab_services::knobs::Knobs;
use oslab_services::testbed::{down_for_run, unavailable, up_for_run};
use oslab_services::timed_writer::{self, WriterTrace};

fn start_daemon(e: &Env, policy: GovernorPolicy, cell: &str) -> Result<Daemon, LabError> {
    let name = format!("wb-wcall-{}-{cell}", std::process::id());
    let policy = oslab_wcall::cli::WcallPolicyArgs {
        policy: Some(policy),
        ..Default::default()
    };
    Daemon::start(&e.exe, &name, policy)
}

/// The governor's table, read now (None without a governor or once it is gone).
fn governor_view(d: Option<&Daemon>) -> Option<oslab_model::governor::Snapshot> {
    let d = d?;
    Some(oslab_wcall::view::snapshot_of(
        d.board.as_ref()?.board(),
        monotonic_ns(),
        d.child.id(),
    ))
}

/// Polls every 100 ms until the first writer has exited; kills the daemon half
/// way through the first writer's span when asked.
fn poll_until_first_exits(
    e: &Env,
    daemon: &mut Option<Daemon>,
    launched: &mut [Launched],
    cell_start: u64,
) -> super::poll::Polled {
    let page = oslab_sys::machine::page_size();
    let files: Vec<PathBuf> = launched.iter().map(|l| l.file.clone()).collect();
    let mut polled = super::poll::Polled::default();
    let expected_span = e.plan.writes as f64 * oslab_services::cells::record::PERIOD_MS / 1000.0;
    loop {
        let poll = timed_writer::poll_once(cell_start, &files, page);
        polled.add(poll, &files, page, governor_view(daemon.as_ref()));
        let first_done = launched[0].child.try_wait().ok().flatten().is_some();
        if first_done {
            polled.first_end_s = Some(poll.t_s);
            break;
        }
        if let Some(t0) = launched[0].started_s(cell_start)
            && e.plan.kill_coordinator
            && poll.t_s - t0 > expected_span / 2.0
            && let Some(d) = daemon.take()
        {
            // SIGKILL: no chance to release the writers or clean up
            let mut d = d;
            let pid = d.child.id();
            let _ = d.child.kill();
            let _ = d.child.wait();
            std::mem::forget(d);
            // what it changed (its cgroups) is undone as `oslab restore` would
            oslab_sys::journal::restore_dead(&oslab_sys::journal::journal_dir(), pid);
            polled.coordinator_killed_at_s = Some(poll.t_s);
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    polled
}

/// One cell: policy x scenario x start x run.
fn run_cell(
    e: &Env,
    policy: Policy,
    scenario: Scenario,
    start: Start,
    run: usize,
) -> Result<Cell, LabError> {
    timed_writer::settle();
    let tag = format!(
        "{}-{}-{}-{run}",
        policy.name(),
        scenario.name(),
        start.name()
    );
    // vanilla is the kernel alone, without a governor
    let mut daemon = match GovernorPolicy::of(policy) {
        None => None,
        Some(p) => Some(start_daemon(e, p, &tag)?),
    };
    let kernel = KernelTrace::writeback(e.machine);
    let plans: Vec<WriterPlan> = writers_for(scenario, e.plan)
        .into_iter()
        .map(|w| w.with_file(&e.tb.mount, &e.scratch, &tag))
        .collect();
    let cell_start = monotonic_ns() + 300_000_000;
    let governor = daemon.as_ref().map(|d| d.name.clone());
    let mut launched = launch_writers(e, &plans, start, cell_start, governor.as_ref())?;
    let polled = poll_until_first_exits(e, &mut daemon, &mut launched, cell_start);
    let view = governor_view(daemon.as_ref());
    for l in launched.iter_mut().skip(1) {
        l.stop();
    }
    for l in launched.iter_mut() {
        l.wait();
    }
    let outcome = kernel.finish();
    drop(daemon);
    let first_tgid = launched[0].program_pid;
    let writers = writers_raw(&plans, &launched, &polled, &outcome, cell_start);
    // what the testbed holds once the writers stopped, when the high writer
    // failed (ENOSPC is the likely cause), read before the files go
    let failure_context = writers
        .first()
        .and_then(|w| w.trace.error.as_ref())
        .map(|_| testbed_fill(&e.tb.mount, &plans));
    // every byte was checked in the page cache: removing the files first spares
    // the next cell the wait for their write back (sync still waits for what the
    // device has in flight)
    remove_files(&plans);
    timed_writer::settle();
    // a paced high writer that never wrote leaves nothing to judge: say why,
    // not p99 0 (a user's command timed by the kernel's trace has its own note)
    if let (Some(WriterKind::Paced { .. }), Some(e)) = (
        plans.first().map(|p| &p.kind),
        writers.first().and_then(|w| w.trace.error.clone()),
    ) {
        return Err(LabError::Failed(format!(
            "cell {tag}: writer {}: {e} ({})",
            plans[0].name,
            failure_context.unwrap_or_default()
        )));
    }
    Ok(Cell {
        policy,
        scenario,
        run,
        start,
        writers,
        groups: polled.groups,
        governor: view.as_ref().map(super::poll::governor_raw),
        kernel: super::writers::keep_first_writers_calls(outcome, first_tgid),
        polls: polled.polls,
        coordinator_killed_at_s: polled.coordinator_killed_at_s,
    })
}

/// The cell's writers started: the competitors at `cell_start`, then the high
/// writer (the first plan), the plan's head start later when it starts late.
fn launch_writers(
    e: &Env,
    plans: &[WriterPlan],
    start: Start,
    cell_start: u64,
    governor: Option<&GovernorName>,
) -> Result<Vec<Launched>, LabError> {
    let head = match start {
        Start::Late if plans.len() > 1 => (e.plan.head_start_s * 1e9) as u64,
        _ => 0,
    };
    // competitors first (at the cell's start), then the high writer
    let mut order: Vec<usize> = (1..plans.len()).collect();
    order.push(0);
    let mut launched: Vec<Option<Launched>> = plans.iter().map(|_| None).collect();
    for i in order {
        let at = if i == 0 {
            cell_start + head
        } else {
            cell_start
        };
        std::thread::sleep(Duration::from_nanos(at.saturating_sub(monotonic_ns())));
        launched[i] = Some(plans[i].launch(e, governor)?);
    }
    Ok(launched.into_iter().flatten().collect())
}

/// What each writer of a finished cell did: its trace (a paced writer's own, a
/// user's command as the kernel traced it), the bytes the device took while the
/// first writer wrote, and whether its file holds what it wrote.
fn writers_raw(
    plans: &[WriterPlan],
    launched: &[Launched],
    polled: &super::poll::Polled,
    outcome: &TraceOutcome,
    cell_start: u64,
) -> Vec<WriterRaw> {
    let first_tgid = launched[0].program_pid;
    let mut writers = Vec::new();
    for (i, (p, l)) in plans.iter().zip(launched).enumerate() {
        let trace = match (&p.kind, i) {
            (WriterKind::Paced { .. }, _) => l.read_latencies(cell_start),
            (_, 0) => super::writers::trace_from_kernel(outcome, first_tgid, cell_start),
            _ => WriterTrace::default(),
        };
        writers.push(WriterRaw {
            name: p.name.clone(),
            device_bytes: polled.device_bytes(i, &trace_span(&writers, &trace, i)),
            content: check_content(p, l),
            trace,
        });
    }
    writers
}

/// The writers' files, latency and error files removed.
fn remove_files(plans: &[WriterPlan]) {
    for p in plans {
        let _ = std::fs::remove_file(&p.file);
        let _ = std::fs::remove_file(&p.latency_file);
        let _ = std::fs::remove_file(&p.err_file);
    }
}

/// The testbed's free space and the room each writer's file takes, for a failed
/// cell's message.
fn testbed_fill(mount: &Path, plans: &[WriterPlan]) -> String {
    use std::os::unix::fs::MetadataExt;
    let mib = |b: u64| b as f64 / (1u64 << 20) as f64;
    let free = oslab_sys::machine::free_bytes(mount)
        .map_or("unknown".to_string(), |b| format!("{:.0} MiB", mib(b)));
    let files: Vec<String> = plans
        .iter()
        .map(|p| {
            // blocks: what the file system gave it, holes and all
            let used = std::fs::metadata(&p.file).map_or(0, |m| m.blocks() * 512);
            format!("{} {:.0} MiB", p.name, mib(used))
        })
        .collect();
    format!("testbed free: {free}; files: {}", files.join(", "))
}

/// The first writer's span (start and end seconds since the cell's start), for
/// the competitors' device bytes: from the first writer's own trace once known.
fn trace_span(done: &[WriterRaw], own: &WriterTrace, i: usize) -> Option<(f64, f64)> {
    let t = if i == 0 { own } else { &done.first()?.trace };
    Some((
        *t.start_s.first()?,
        *t.start_s.last()? + oslab_services::cells::record::PERIOD_MS / 1000.0,
    ))
}

/// Every cell of the plan, run by run, on the testbed `tb`.
fn run_matrix(e: &Env, ctx: &mut Context) -> Result<Vec<Cell>, LabError> {
    let plan = e.plan;
    let _k = Knobs::set(&[
        ("vm.dirty_background_bytes", BACKGROUND.to_string()),
        ("vm.dirty_bytes", HARD.to_string()),
    ])?;
    let mut keys = Vec::new();
    for run in 0..plan.runs {
        for &s in &plan.scenarios {
            let starts: Vec<Start> = if Scenario::CONTESTED.contains(&s) {
                plan.starts.clone()
            } else {
                vec![Start::Together]
            };
            for st in starts {
                for &p in &plan.policies {
                    if s == Scenario::Alone && p != Policy::Vanilla && !plan.alone_governed {
                        continue;
                    }
                    keys.push((run, s, st, p));
                }
            }
        }
    }
    let mut cells = Vec::new();
    for (run, s, st, p) in &keys {
        ctx.progress.stage(&format!(
            "run {} {} {} {}",
            run + 1,
            s.name(),
            st.name(),
            p.name()
        ));
        cells.push(run_cell(e, *p, *s, *st, *run)?);
        ctx.progress
            .fraction(cells.len() as f64 / keys.len() as f64);
    }
    Ok(cells)
}

/// Touches `bytes` of fresh anonymous memory page by page, then again: the
/// machine's cost of a first touch (a host page fault where the hypervisor took
/// the memory back) beside a plain one.
fn first_touch(bytes: usize) -> Option<FirstTouch> {
    let t0 = monotonic_ns();
    let mut buf = oslab_probe::memprobe::Buffer::new(bytes, false).ok()?;
    let first = monotonic_ns() - t0;
    let t1 = monotonic_ns();
    oslab_probe::memprobe::write_sweep(buf.as_mut_slice(), 1);
    let again = monotonic_ns() - t1;
    let pages = (bytes / 4096) as f64;
    Some(FirstTouch {
        bytes: bytes as u64,
        first_ns_per_page: first as f64 / pages,
        again_ns_per_page: again as f64 / pages,
    })
}

/// Builds the testbed and the paced writer, runs the matrix, takes the testbed down.
pub fn measure(plan: &Plan, ctx: &mut Context) -> Result<Measured<Raw>, LabError> {
    if let Some(why) = unavailable() {
        return Ok(Measured::Skipped { reason: why });
    }
    if let Err(why) = oslab_wcall::launch::preload_path() {
        return Ok(Measured::Skipped { reason: why });
    }
    // the writers' files and traces, journaled like every file oslab makes
    let scratch = oslab_harness::scratch::Scratch::create(&ctx.config.scratch_dir, META.id, 0)?;
    let paced = match super::writers::install_paced(scratch.dir()) {
        Ok(p) => p,
        Err(reason) => return Ok(Measured::Skipped { reason }),
    };
    ctx.progress.stage("first touch of fresh memory");
    let touch = first_touch(256 << 20);
    ctx.progress.stage("building the testbed");
    let span =
        plan.writes as f64 * oslab_services::cells::record::PERIOD_MS / 1000.0 + plan.head_start_s;
    // room for the biggest cell: competitors write at the device's pace at most,
    // plus what sits in the cache; each cell's files are removed after it
    let size = (plan.bandwidth as f64 * span * 3.0) as u64 + (2 << 30);
    let tb = up_for_run(&ctx.config.scratch_dir, size, plan.bandwidth)?;
    let e = Env {
        tb: &tb,
        machine: ctx.machine,
        exe: ctx.config.oslab_exe.clone(),
        paced,
        scratch: scratch.dir().to_path_buf(),
        plan,
    };
    let result = run_matrix(&e, ctx);
    let teardown_errors = down_for_run(&tb);
    let cells = result?;
    Ok(Measured::Raw(Raw {
        testbed_device: tb.device.display().to_string(),
        testbed_cap: tb.cap.clone(),
        testbed_bdi: Some(tb.dev.clone()),
        testbed_measured_bytes_s: tb.measured_bytes_s,
        dirty_bytes: HARD,
        dirty_background_bytes: BACKGROUND,
        page_reporting: Path::new("/sys/module/page_reporting").exists(),
        first_touch: touch,
        cells,
        teardown_errors,
    }))
}
