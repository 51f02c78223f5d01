//! One real cell on the testbed, as wb.wcall runs its cells: each writer its own
//! `oslab wcall writer` process (with the governor's interposer under wcall and
//! wcall-fair), the kernel traced, /proc/meminfo polled every 100 ms, and around
//! it the machine's write-back counters (for the other devices' share).

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use oslab_trace::TraceOutcome;
use oslab_wbsim::policy::Policy;
use oslab_wcall::service::{Governor, Options};

use super::IoCounts;
use super::workload::{WriterArgs, writers_for};
use oslab_harness::LabError;
use oslab_harness::kernel_trace::KernelTrace;
use oslab_services::cells::record::{Cell, Content, PERIOD_MS, Scenario, Start, WriterRaw};
use oslab_services::testbed::Testbed;
use oslab_services::timed_writer::{self, WriterTrace};

/// What every cell of a setting shares.
pub struct Bench<'a> {
    pub tb: &'a Testbed,
    pub machine: &'a oslab_model::machine::MachineInfo,
    pub exe: PathBuf,
    pub lib: PathBuf,
    pub scratch: PathBuf,
}

/// Memory touched and freed before a cell, so its page cache comes from memory a
/// VM host already backs (as wb.wcall's backed_memory).
const WARM_BYTES: usize = 512 << 20;

fn writer_command(b: &Bench, w: &WriterArgs, file: &Path, start_at: u64) -> Command {
    let period_ms = if w.count.is_some() { PERIOD_MS } else { 0.0 };
    use oslab_wcall::cli::{Launch, WcallWriterArgs};
    Launch::Writer(WcallWriterArgs {
        file: file.to_path_buf(),
        chunk: 512 << 10,
        period_ms,
        count: w.count,
        // to the millisecond, as the writers of one run share a start
        duration: Some((w.duration_s * 1000.0).round() / 1000.0),
        fifo: w.fifo,
        nice: w.nice,
        start_at: Some(start_at),
    })
    .command(&b.exe)
}

/// A started writer: its name, process and the file its trace goes to.
struct Running {
    name: String,
    child: Child,
    out: PathBuf,
}

fn spawn(
    b: &Bench,
    w: &WriterArgs,
    file: &Path,
    start_at: u64,
    env: &[(String, String)],
) -> Result<Running, LabError> {
    let out = b.scratch.join(format!("trace-{}.json", w.name));
    let stdout = std::fs::File::create(&out)
        .map_err(|e| LabError::Failed(format!("{}: {e}", out.display())))?;
    let mut cmd = writer_command(b, w, file, start_at);
    cmd.stdout(Stdio::from(stdout)).stderr(Stdio::piped());
    cmd.envs(env.iter().map(|(k, v)| (k, v)));
    let child =
        oslab_sys::signals::child_of_oslab(&mut cmd, oslab_sys::signals::OnParentDeath::Kill)
            .spawn()
            .map_err(|e| LabError::Failed(format!("cannot start a writer: {e}")))?;
    Ok(Running {
        name: w.name.clone(),
        child,
        out,
    })
}

fn finish(r: Running) -> Result<WriterRaw, LabError> {
    let o = r
        .child
        .wait_with_output()
        .map_err(|e| LabError::Failed(e.to_string()))?;
    let text = std::fs::read_to_string(&r.out).unwrap_or_default();
    let _ = std::fs::remove_file(&r.out);
    let trace: WriterTrace = serde_json::from_str(text.trim()).map_err(|_| {
        LabError::Failed(format!(
            "writer {} gave no trace: {}",
            r.name,
            String::from_utf8_lossy(&o.stderr).trim()
        ))
    })?;
    if let Some(err) = &trace.error {
        return Err(LabError::Failed(format!("writer {}: {err}", r.name)));
    }
    Ok(WriterRaw {
        name: r.name,
        trace,
        device_bytes: None,
        content: Content::NotChecked,
    })
}

/// Pages whose write back completed, every device (/proc/vmstat nr_written).
fn nr_written() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/vmstat").ok()?;
    text.lines()
        .find_map(|l| l.strip_prefix("nr_written "))
        .and_then(|v| v.trim().parse().ok())
}

/// Bytes the block device `name` has written (/sys/block/NAME/stat, sectors).
fn device_written(name: &str) -> Option<u64> {
    let text = std::fs::read_to_string(format!("/sys/block/{name}/stat")).ok()?;
    let sectors: u64 = text.split_whitespace().nth(6)?.parse().ok()?;
    Some(sectors * 512)
}

/// The kernel's records a cell keeps: the first writer's calls, the writers'
/// throttling decisions, the estimates and the flusher's passes.
fn keep(mut outcome: TraceOutcome, writers: &[WriterRaw]) -> TraceOutcome {
    let first_tid = writers.first().map_or(0, |w| w.trace.tid);
    let tids: Vec<u32> = writers.iter().map(|w| w.trace.tid).collect();
    if let TraceOutcome::Traced(c) = &mut outcome {
        c.writes.retain(|w| w.pid == first_tid);
        c.offcpu.retain(|o| o.pid == first_tid);
        c.pauses.retain(|p| tids.contains(&p.pid));
        c.dirtiers.clear();
        c.limits.clear();
    }
    outcome
}

/// Polls every 100 ms until every writer has exited (dropping the writers' clean
/// pages, so later writes also use memory the host backs).
fn poll(running: &mut [Running], files: &[PathBuf], start_at: u64) -> Vec<timed_writer::Poll> {
    let page = oslab_sys::machine::page_size();
    let mut polls = Vec::new();
    std::thread::sleep(Duration::from_nanos(
        start_at.saturating_sub(oslab_sys::clock::monotonic_ns()),
    ));
    loop {
        for f in files {
            if let Ok(h) = std::fs::File::open(f) {
                let _ = oslab_sys::fileio::drop_clean_start(&h, page);
            }
        }
        polls.push(timed_writer::poll_once(start_at, files, page));
        if running
            .iter_mut()
            .all(|r| r.child.try_wait().ok().flatten().is_some())
        {
            return polls;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Runs one cell: `scenario` under `policy`, run number `run`.
pub fn run_cell(
    b: &Bench,
    policy: Policy,
    scenario: Scenario,
    writes: u64,
    run: usize,
) -> Result<(Cell, IoCounts), LabError> {
    timed_writer::settle();
    let governor = match policy {
        Policy::Vanilla => None,
        _ => Some(
            Governor::start(
                &format!("sim-validate-{}", std::process::id()),
                Options {
                    policy,
                    block_ns: oslab_wcall::coordinator::WCALL_BLOCK_NS,
                    interval: Duration::from_millis(
                        oslab_services::cells::sim_config::PASS_MS as u64,
                    ),
                    fifo_priority: Some(oslab_wcall::service::COORDINATOR_FIFO),
                    cgroups: false,
                    cgroup_limits: Default::default(),
                    // the cell drops its writers' clean pages itself (poll)
                    tuning: Default::default(),
                    kernel_monitor: false,
                    // its writers are its own user's programs
                    access: oslab_wcall::service::Access::Owner,
                    services: Vec::new(),
                },
            )
            .map_err(|e| LabError::Failed(format!("cannot start the governor: {e}")))?,
        ),
    };
    let env = match &governor {
        Some(g) => {
            // the writers start from here and join in the group their scheduling
            // gives them (AUTO), as `oslab wcall run` would have them
            g.launch_as(oslab_wcall::shm::AUTO)
                .map_err(|e| LabError::Failed(format!("cannot launch under the governor: {e}")))?;
            oslab_wcall::launch::env(&b.lib, g.socket())
        }
        None => Vec::new(),
    };
    drop(oslab_probe::memprobe::Buffer::new(WARM_BYTES, false));
    let kernel = KernelTrace::writeback(b.machine);
    let (nr0, dev0) = (nr_written(), device_written(&b.tb.disk_name()));
    let t0 = oslab_sys::clock::monotonic_ns();
    let start_at = oslab_sys::clock::monotonic_ns() + 300_000_000;
    let mut running = Vec::new();
    let mut files = Vec::new();
    for w in &writers_for(scenario, writes) {
        let name = format!("{}-{}-{run}-{}.dat", policy.name(), scenario.name(), w.name);
        let file = b.tb.mount.join(name);
        running.push(spawn(b, w, &file, start_at, &env)?);
        files.push(file);
    }
    let polls = poll(&mut running, &files, start_at);
    let (nr1, dev1) = (nr_written(), device_written(&b.tb.disk_name()));
    let window_s = (oslab_sys::clock::monotonic_ns() - t0) as f64 / 1e9;
    drop(governor.map(|g| g.finish()));
    let writers = running
        .into_iter()
        .map(finish)
        .collect::<Result<Vec<_>, _>>()?;
    let kernel = keep(kernel.finish(), &writers);
    timed_writer::settle();
    for f in &files {
        let _ = std::fs::remove_file(f);
    }
    let cell = Cell {
        policy,
        scenario,
        run,
        start: Start::Together,
        writers,
        polls,
        groups: Vec::new(),
        governor: None,
        kernel,
        coordinator_killed_at_s: None,
    };
    let io = IoCounts {
        nr_written_pages: nr0.zip(nr1).map(|(a, b)| b.saturating_sub(a)),
        testbed_written_bytes: dev0.zip(dev1).map(|(a, b)| b.saturating_sub(a)),
        window_s,
    };
    Ok((cell, io))
}
