//! `wb.wcall`: the WCALL paper's evaluation (material section 7) on the real kernel,
//! vanilla vs the governor's `wcall` and `wcall-fair`.
//!
//! On the testbed (a blk-throttled loop device, dirty_bytes 64 MiB, background
//! 32 MiB) a SCHED_FIFO 55 writer writes 512 KiB every 20 ms, either alone, or with
//! two SCHED_FIFO 45 writers doing the same (the paper's Fig. 2/4/5), or with two
//! non-RT bulk writers; and, as the paper's Fig. 7, one nice-4 writer alone. Every
//! writer is its own process (`oslab wcall writer`), so the governor's interposer
//! is loaded into it exactly as into any program; under vanilla nothing is loaded.
//! The groups come from the writers' scheduling classes (group auto). The
//! simulator's prediction for the same workload is run beside.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use oslab_model::{Axis, Claim, Plot, Scale, Series, SeriesStyle, Verdict};
use oslab_sys::parse::size::human_bytes;
use oslab_wbsim::policy::Policy;
use oslab_wcall::launch;
use oslab_wcall::service::{Governor, Options};
use oslab_wcall::view::Snapshot;

use super::knobs::Knobs;
use super::testbed::{Testbed, down_for_run, unavailable, up_for_run};
use super::throttle::{BACKGROUND, HARD};
use super::trace::{self, Poll, WriterTrace, mib};
use crate::experiment::{
    Context, Experiment, LabError, Meta, Needs, Outcome, Output, finding, measurement,
};
use crate::settings::{AnySetting, Bytes, Choices, Count, Declared, Flag, Setting};
use crate::simrun::latency_stats;

pub struct WbWcall;

static META: Meta = Meta {
    id: "wb.wcall",
    title: "WCALL on the real kernel: a high-priority writer among competitors, vanilla vs governed",
    section: "7",
    summary: "the paper's Fig. 4-7 measured on a throttled testbed under vanilla, wcall and wcall-fair, with the simulator beside",
    needs: Needs {
        root: true,
        min_cpus: 1,
        free_disk_bytes: 0,
    },
    quick_s: 75.0,
    full_s: 650.0,
    internal: false,
};

const SCENARIO_NAMES: &[&str] = &["alone", "rt45x2", "bulkx2", "fig7-nice4"];
const POLICY_NAMES: &[&str] = &["vanilla", "wcall", "wcall-fair"];

static BANDWIDTH: Setting<Bytes> = Setting {
    name: "bandwidth",
    help: "testbed write cap per second",
    quick: 40 << 20,
    full: 40 << 20,
    bounds: Some((1 << 20, 10 << 30)),
    names: &[],
};
static WRITES: Setting<Count> = Setting {
    name: "writes",
    help: "writes of the RT-55 writer per cell",
    quick: 150,
    full: 700,
    bounds: Some((20, 10_000)),
    names: &[],
};
static RUNS: Setting<Count> = Setting {
    name: "runs",
    help: "repetitions of the whole matrix",
    quick: 1,
    full: 3,
    bounds: Some((1, 10)),
    names: &[],
};
static SCENARIO_CHOICE: Setting<Choices> = Setting {
    name: "scenarios",
    help: "which workloads to run (claims that need a missing one are not judged)",
    quick: Vec::new(),
    full: Vec::new(),
    bounds: None,
    names: SCENARIO_NAMES,
};
static POLICY_CHOICE: Setting<Choices> = Setting {
    name: "policies",
    help: "which policies to run",
    quick: Vec::new(),
    full: Vec::new(),
    bounds: None,
    names: POLICY_NAMES,
};
static COORDINATOR_FIFO: Setting<Count> = Setting {
    name: "coordinator_fifo",
    help: "SCHED_FIFO priority of the coordinator of the governor (below the RT-55 writer; 0: not real-time)",
    quick: oslab_wcall::service::COORDINATOR_FIFO as u64,
    full: oslab_wcall::service::COORDINATOR_FIFO as u64,
    bounds: Some((0, 99)),
    names: &[],
};
static BACKED_MEMORY: Setting<Flag> = Setting {
    name: "backed_memory",
    help: "touch 512 MiB before each cell and drop the written-back pages of the writers, so writes use memory a VM host already backs (see the notes)",
    quick: true,
    full: true,
    bounds: None,
    names: &[],
};
static SETTINGS: [&dyn AnySetting; 7] = [
    &BANDWIDTH,
    &WRITES,
    &RUNS,
    &SCENARIO_CHOICE,
    &POLICY_CHOICE,
    &COORDINATOR_FIFO,
    &BACKED_MEMORY,
];

const CHUNK: u64 = 512 << 10;
const PERIOD_MS: f64 = 20.0;
pub const POLICIES: [Policy; 3] = [Policy::Vanilla, Policy::Wcall, Policy::WcallFair];

/// Who writes beside the RT-55 writer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scenario {
    Alone,
    RtLow,
    Bulk,
    /// The paper's Fig. 7: one nice-4 writer, no competition.
    Fig7,
}

impl Scenario {
    pub const ALL: [Scenario; 4] = [
        Scenario::Alone,
        Scenario::RtLow,
        Scenario::Bulk,
        Scenario::Fig7,
    ];
    pub fn name(self) -> &'static str {
        match self {
            Scenario::Alone => SCENARIO_NAMES[0],
            Scenario::RtLow => SCENARIO_NAMES[1],
            Scenario::Bulk => SCENARIO_NAMES[2],
            Scenario::Fig7 => SCENARIO_NAMES[3],
        }
    }
    fn sim_scenario(self) -> Option<&'static str> {
        match self {
            Scenario::Alone => Some("testbed-alone"),
            Scenario::RtLow => Some("testbed-fig2"),
            Scenario::Bulk => Some("testbed-bulk"),
            Scenario::Fig7 => None,
        }
    }
}

/// One writer process to start.
#[derive(Debug, Clone)]
struct WriterArgs {
    name: String,
    fifo: Option<i32>,
    nice: Option<i32>,
    /// None: a bulk writer for `duration_s`.
    count: Option<u64>,
    duration_s: f64,
}

fn writers_for(s: Scenario, writes: u64) -> Vec<WriterArgs> {
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

/// A group's dirty + writeback bytes and its limit (None: no limit) at one poll.
pub type GroupPoint = (u64, Option<u64>);

/// What one cell (policy x scenario x run) gave.
#[derive(Debug, Clone)]
pub struct Cell {
    pub policy: Policy,
    pub scenario: Scenario,
    pub run: usize,
    pub traces: Vec<(String, WriterTrace)>,
    pub polls: Vec<Poll>,
    /// The governor's view at each poll: time, and per group dirty + writeback and limit.
    pub groups: Vec<(f64, Vec<GroupPoint>)>,
    pub governor: Option<Snapshot>,
}

impl Cell {
    fn first(&self) -> &WriterTrace {
        &self.traces[0].1
    }

    /// Bytes per second the writers after the first managed while the first wrote
    /// (writes that started within its span).
    fn competitors_bytes_s(&self) -> f64 {
        let span = self.first().start_s.last().copied().unwrap_or(0.0) + PERIOD_MS / 1000.0;
        let writes = self
            .traces
            .iter()
            .skip(1)
            .map(|(_, t)| t.start_s.iter().filter(|s| **s < span).count())
            .sum::<usize>();
        if span > 0.0 {
            writes as f64 * CHUNK as f64 / span
        } else {
            0.0
        }
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

struct Env<'a> {
    tb: &'a Testbed,
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

fn run_cell(
    e: &Env,
    policy: Policy,
    scenario: Scenario,
    writes: u64,
    run: usize,
) -> Result<Cell, LabError> {
    trace::settle();
    let governor = match policy {
        Policy::Vanilla => None,
        p => Some(
            Governor::start(
                "wb-wcall",
                Options {
                    policy: p,
                    block_ns: oslab_wcall::coordinator::WCALL_BLOCK_NS,
                    interval: Duration::from_millis(10),
                    fifo_priority: e.coordinator_fifo,
                    // placement in memory cgroups is left out of the measurement
                    cgroups: false,
                    cgroup_limits: Default::default(),
                },
            )
            .map_err(|err| LabError::Failed(format!("cannot start the governor: {err}")))?,
        ),
    };
    let env = governor
        .as_ref()
        .map(|g| launch::env(&e.lib, g.path(), "auto"))
        .unwrap_or_default();
    if e.backed_memory {
        // touched, then freed: back on the free lists, and backed by the host
        drop(oslab_sys::memprobe::Buffer::new(WARM_BYTES, false));
    }
    let specs = writers_for(scenario, writes);
    let start_at = oslab_sys::clock::monotonic_ns() + 300_000_000;
    let mut children = Vec::new();
    let mut files = Vec::new();
    for w in &specs {
        let file = e.tb.mount.join(format!(
            "{}-{}-{}-{}.dat",
            policy.name(),
            scenario.name(),
            run,
            w.name
        ));
        let out = e.scratch.join(format!("trace-{}.json", w.name));
        children.push((
            w.name.clone(),
            spawn_writer(&e.exe, w, &file, &out, start_at, &env)?,
            out,
        ));
        files.push(file);
    }
    let page = oslab_sys::machine::page_size();
    let mut polls = Vec::new();
    std::thread::sleep(Duration::from_nanos(
        start_at.saturating_sub(oslab_sys::clock::monotonic_ns()),
    ));
    let mut groups = Vec::new();
    loop {
        if e.backed_memory {
            for f in &files {
                if let Ok(h) = std::fs::File::open(f) {
                    let _ = oslab_sys::fileio::drop_clean_start(&h, page);
                }
            }
        }
        let poll = trace::poll_once(start_at, &files, page);
        if let Some(g) = &governor {
            let snap = g.snapshot();
            groups.push((
                poll.t_s,
                snap.groups
                    .iter()
                    .map(|x| (x.dirty_bytes + x.writeback_bytes, x.limit_bytes))
                    .collect(),
            ));
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
    let snapshot = governor.map(|g| g.finish());
    let mut traces = Vec::new();
    for (name, child, out) in children {
        let o = child
            .wait_with_output()
            .map_err(|err| LabError::Failed(err.to_string()))?;
        let text = std::fs::read_to_string(&out).unwrap_or_default();
        let _ = std::fs::remove_file(&out);
        let t: WriterTrace = serde_json::from_str(text.trim()).map_err(|_| {
            LabError::Failed(format!(
                "writer {name} gave no trace: {}",
                String::from_utf8_lossy(&o.stderr).trim()
            ))
        })?;
        if let Some(err) = &t.error {
            return Err(LabError::Failed(format!("writer {name}: {err}")));
        }
        traces.push((name, t));
    }
    trace::settle();
    for f in &files {
        let _ = std::fs::remove_file(f);
    }
    Ok(Cell {
        policy,
        scenario,
        run,
        traces,
        polls,
        groups,
        governor: snapshot,
    })
}

/// The simulator's latencies of the first writer, for the same workload.
fn predict(s: Scenario, policy: Policy, bandwidth: f64, writes: u64) -> Option<Vec<f64>> {
    let mut c = oslab_wbsim::scenario::find(s.sim_scenario()?)?.config;
    c.device.bandwidth_bytes_s = bandwidth;
    c.policy = policy;
    let o = oslab_wbsim::engine::simulate(&c);
    let lat = &o.writers.first()?.latency_ms;
    Some(lat.iter().take(writes as usize).copied().collect())
}

/// The governor's targets for one run: with competitors the RT-55 writer's p99
/// within 2x of its p99 alone (vanilla, same run) and no write over 200 ms.
pub fn meets_latency_target(alone_p99: f64, with: &[f64]) -> bool {
    let r = latency_stats(with);
    r.p99 <= 2.0 * alone_p99.max(0.001) && r.over_200 == 0
}

fn series_of(t: &WriterTrace, name: &str) -> Series {
    Series {
        name: name.into(),
        style: SeriesStyle::Points,
        points: t
            .start_s
            .iter()
            .zip(&t.latency_ms)
            .map(|(a, b)| [*a, b.max(0.01)])
            .collect(),
    }
}

fn sim_series(lat: &[f64], name: &str) -> Series {
    Series {
        name: name.into(),
        style: SeriesStyle::Line,
        points: lat
            .iter()
            .enumerate()
            .map(|(i, l)| [i as f64 * PERIOD_MS / 1000.0, l.max(0.01)])
            .collect(),
    }
}

impl Experiment for WbWcall {
    fn meta(&self) -> &Meta {
        &META
    }

    fn settings(&self) -> Declared {
        &SETTINGS
    }

    fn run(&self, ctx: &mut Context) -> Result<Outcome, LabError> {
        if let Some(why) = unavailable() {
            return Ok(Outcome::Skipped { reason: why });
        }
        let lib = match launch::preload_path() {
            Ok(l) => l,
            Err(e) => return Ok(Outcome::Skipped { reason: e }),
        };
        let exe = std::env::current_exe()
            .map_err(|e| LabError::Failed(format!("cannot find oslab itself: {e}")))?;
        let bw = ctx.get(&BANDWIDTH);
        let writes = ctx.get(&WRITES);
        let runs = ctx.get(&RUNS) as usize;
        let scenarios: Vec<Scenario> = ctx
            .choices(&SCENARIO_CHOICE)
            .iter()
            .filter_map(|n| Scenario::ALL.into_iter().find(|s| s.name() == *n))
            .collect();
        let policies: Vec<Policy> = ctx
            .choices(&POLICY_CHOICE)
            .iter()
            .filter_map(|n| Policy::parse(n))
            .collect();
        let fifo = ctx.get(&COORDINATOR_FIFO) as i32;
        let backed_memory = ctx.get(&BACKED_MEMORY);
        ctx.progress.stage("building the testbed");
        // each cell's files are removed after it; room for the biggest cell
        let size = (bw as f64 * writes as f64 * PERIOD_MS / 1000.0 * 3.0) as u64 + (1 << 30);
        let tb = up_for_run(&ctx.config.scratch_dir, size, bw)?;
        let result = (|| -> Result<Vec<Cell>, LabError> {
            // the writers' trace files, journaled like every file oslab makes
            let scratch = crate::scratch::Scratch::create(&ctx.config.scratch_dir, META.id, 0)?;
            let _k = Knobs::set(&[
                ("vm.dirty_background_bytes", BACKGROUND.to_string()),
                ("vm.dirty_bytes", HARD.to_string()),
            ])?;
            let env = Env {
                tb: &tb,
                exe: exe.clone(),
                lib: lib.clone(),
                scratch: scratch.dir().to_path_buf(),
                coordinator_fifo: (fifo > 0).then_some(fifo),
                backed_memory,
            };
            let total = runs * scenarios.len() * policies.len();
            let mut cells = Vec::new();
            for run in 0..runs {
                for &s in &scenarios {
                    for &p in &policies {
                        ctx.progress
                            .stage(&format!("run {} {} {}", run + 1, s.name(), p.name()));
                        cells.push(run_cell(&env, p, s, writes, run)?);
                        ctx.progress.fraction(cells.len() as f64 / total as f64);
                    }
                }
            }
            Ok(cells)
        })();
        let down_errors = down_for_run(&tb);
        let cells = result?;
        let mut out = report(&cells, &tb, writes, runs, ctx.config.seed);
        out.notes.push(memory_note(backed_memory));
        out.notes.push(match fifo {
            0 => "the coordinator ran as an ordinary (not real-time) thread".to_string(),
            f => format!("the coordinator ran SCHED_FIFO {f}"),
        });
        out.notes.extend(
            down_errors
                .into_iter()
                .map(|e| format!("testbed teardown: {e}")),
        );
        Ok(Outcome::Completed(out))
    }
}

/// Why the writers' clean pages are dropped, and whether this machine needs it.
fn memory_note(backed_memory: bool) -> String {
    let reporting = std::path::Path::new("/sys/module/page_reporting").exists();
    let machine = if reporting {
        "this machine reports free memory to its hypervisor (free page reporting is loaded), and the first touch of such memory costs a host page fault per page (docs/wcall.md has figures)"
    } else {
        "in a virtual machine that hands free memory back to its host, the first touch of that memory costs a host page fault"
    };
    if backed_memory {
        format!(
            "before each cell 512 MiB of memory was touched and freed, and the writers' pages were dropped from the page cache every 100 ms once written back (never a dirty or writeback page; POSIX_FADV_DONTNEED on the clean start of each file), so writes use memory the machine already backs: {machine}; the kernel's dirty limits do not change, as free and clean cached memory count alike"
        )
    } else {
        format!(
            "no memory was touched before the cells and clean pages were kept in the page cache (backed_memory=false): {machine}, which adds to every write after that point in every policy"
        )
    }
}

/// The scenarios and the policies present in `cells`, in the usual order.
fn present(cells: &[Cell]) -> (Vec<Scenario>, Vec<Policy>) {
    let scenarios = Scenario::ALL
        .into_iter()
        .filter(|s| cells.iter().any(|c| c.scenario == *s))
        .collect();
    let policies = POLICIES
        .into_iter()
        .filter(|p| cells.iter().any(|c| c.policy == *p))
        .collect();
    (scenarios, policies)
}

fn report(cells: &[Cell], tb: &Testbed, writes: u64, runs: usize, seed: u64) -> Output {
    let (scenarios, policies) = present(cells);
    let pooled = |p: Policy, s: Scenario| -> Vec<f64> {
        cells
            .iter()
            .filter(|c| c.policy == p && c.scenario == s)
            .flat_map(|c| c.first().latency_ms.clone())
            .collect()
    };
    let cell = |p: Policy, s: Scenario, run: usize| {
        cells
            .iter()
            .find(|c| c.policy == p && c.scenario == s && c.run == run)
    };
    let high_rate = CHUNK as f64 / (PERIOD_MS / 1000.0);
    let left = (tb.measured_bytes_s - high_rate).max(0.0);
    let mut measurements = Vec::new();
    let mut findings = Vec::new();
    let mut notes = Vec::new();
    let mut rows_mean = Vec::new();
    for &s in &scenarios {
        for &p in &policies {
            let lat = pooled(p, s);
            let key = format!("{}.{}", p.name(), s.name());
            let who = if s == Scenario::Fig7 {
                "the nice-4 writer"
            } else {
                "the SCHED_FIFO 55 writer"
            };
            measurements.push(measurement(
                &format!("latency.{key}"),
                &format!("every write() of 512 KiB by {who}, {runs} run(s) pooled"),
                "ms",
                lat.clone(),
                seed,
                None,
            ));
            let r = latency_stats(&lat);
            let per_run: Vec<String> = (0..runs)
                .filter_map(|k| cell(p, s, k))
                .map(|c| format!("{}", latency_stats(&c.first().latency_ms).over_200))
                .collect();
            findings.push(finding(
                &format!("p99_ms.{key}"),
                r.p99,
                "ms",
                format!("mean {:.1}, p50 {:.1}, p90 {:.1}, p99 {:.1}, max {:.0} ms; over 200 ms: {} (per run: {})", r.mean, r.p50, r.p90, r.p99, r.max, r.over_200, per_run.join(", ")),
            ));
            rows_mean.push((key.clone(), r.mean));
            if matches!(s, Scenario::RtLow | Scenario::Bulk) {
                let tput: Vec<f64> = cells
                    .iter()
                    .filter(|c| c.policy == p && c.scenario == s)
                    .map(|c| c.competitors_bytes_s())
                    .collect();
                let m = oslab_stats::mean(&tput).unwrap_or(0.0);
                findings.push(finding(
                    &format!("competitors_mib_s.{key}"),
                    m / (1 << 20) as f64,
                    "MiB/s",
                    format!("both competitors together over the RT-55 writer's span; the device leaves them {:.1} MiB/s ({:.0} %)", left / (1 << 20) as f64, if left > 0.0 { m / left * 100.0 } else { 0.0 }),
                ));
            }
            // what the governor held back, per group, over all runs
            let mut held: Vec<(String, f64, u64, u64)> = Vec::new();
            for g in cells
                .iter()
                .filter(|c| c.policy == p && c.scenario == s)
                .filter_map(|c| c.governor.as_ref())
                .flat_map(|g| g.groups.iter().filter(|x| x.writes > 0))
            {
                match held.iter_mut().find(|h| h.0 == g.group) {
                    Some(h) => {
                        h.1 += g.held_ms;
                        h.2 += g.delayed_writes;
                        h.3 += g.writes;
                    }
                    None => held.push((g.group.clone(), g.held_ms, g.delayed_writes, g.writes)),
                }
            }
            if !held.is_empty() {
                let mut parts: Vec<String> = held
                    .iter()
                    .map(|(g, ms, d, w)| {
                        format!("{g} held {ms:.0} ms in all, {d} of {w} writes delayed")
                    })
                    .collect();
                let governors: Vec<&Snapshot> = cells
                    .iter()
                    .filter(|c| c.policy == p && c.scenario == s)
                    .filter_map(|c| c.governor.as_ref())
                    .collect();
                let passes: u64 = governors.iter().map(|g| g.passes).sum();
                let busy_us: f64 = governors
                    .iter()
                    .map(|g| g.pass_mean_us * g.passes as f64)
                    .sum();
                let longest = governors.iter().map(|g| g.pass_max_us).fold(0.0, f64::max);
                parts.push(format!(
                    "coordinator: {passes} passes of {:.0} µs on average, the longest {longest:.0} µs",
                    busy_us / passes.max(1) as f64
                ));
                notes.push(format!("{key} ({runs} run(s)): {}", parts.join("; ")));
            }
            if let Some(sim) = predict(s, p, tb.measured_bytes_s, writes) {
                let r = latency_stats(&sim);
                findings.push(finding(
                    &format!("sim.p99_ms.{key}"),
                    r.p99,
                    "ms",
                    format!("simulator, same workload and measured bandwidth: mean {:.1}, p99 {:.1}, max {:.0} ms, over 200 ms {}", r.mean, r.p99, r.max, r.over_200),
                ));
                rows_mean.push((format!("sim {key}"), r.mean));
            }
        }
    }
    findings.push(finding(
        "testbed_measured_mib_s",
        tb.measured_bytes_s / (1 << 20) as f64,
        "MiB/s",
        format!("cap {}/s", human_bytes(tb.bandwidth_bytes_s)),
    ));

    let (claims, unjudged) = claims(cells, runs, left);
    if !unjudged.is_empty() {
        notes.push(format!(
            "not judged, because the workloads they need were left out: {}",
            unjudged.join(", ")
        ));
    }
    let plots = plots(cells, &rows_mean, tb, writes);
    notes.push(format!(
        "{runs} run(s) x 4 scenarios x 3 policies; {writes} writes of 512 KiB every 20 ms by the RT-55 writer; dirty_bytes {}, dirty_background_bytes {}; groups from each writer's scheduling class",
        human_bytes(HARD),
        human_bytes(BACKGROUND)
    ));
    notes.push("the simulator does not model per-wb limits or the rate estimator's lag, so it under-predicts vanilla's stalls with bulk writers (see sim validate)".into());
    Output {
        measurements,
        findings,
        claims,
        plots,
        notes,
        ..Default::default()
    }
}

/// The claims the cells can judge, and the ids of those they cannot (a scenario or
/// policy was left out with `--set`).
fn claims(cells: &[Cell], runs: usize, left: f64) -> (Vec<Claim>, Vec<&'static str>) {
    let cell = |p: Policy, s: Scenario, run: usize| {
        cells
            .iter()
            .find(|c| c.policy == p && c.scenario == s && c.run == run)
    };
    let has = |p: Policy, s: Scenario| cells.iter().any(|c| c.policy == p && c.scenario == s);
    let contested = [Scenario::RtLow, Scenario::Bulk];
    let has_contest = |p: Policy| contested.iter().any(|s| has(p, *s));
    let mut unjudged = Vec::new();
    // The reference is the RT-55 writer alone under vanilla, all runs pooled: a
    // p99 of a few hundred writes rests on a handful of them and moved 0.2-2.2 ms
    // between runs here, too little to judge one run by.
    let alone_lat: Vec<f64> = cells
        .iter()
        .filter(|c| c.policy == Policy::Vanilla && c.scenario == Scenario::Alone)
        .flat_map(|c| c.first().latency_ms.clone())
        .collect();
    let alone_pooled = latency_stats(&alone_lat).p99;
    let alone_p99 = |_run: usize| alone_pooled;
    let target_runs = |p: Policy| -> (usize, Vec<String>) {
        let mut ok = 0;
        let mut seen = Vec::new();
        for run in 0..runs {
            let a = alone_p99(run);
            let all = contested.iter().filter(|s| has(p, **s)).all(|s| {
                cell(p, *s, run).is_some_and(|c| meets_latency_target(a, &c.first().latency_ms))
            });
            ok += all as usize;
            for s in contested {
                if let Some(c) = cell(p, s, run) {
                    let r = latency_stats(&c.first().latency_ms);
                    let limit = if alone_lat.is_empty() {
                        String::new()
                    } else {
                        format!(" (limit {:.2})", 2.0 * a)
                    };
                    seen.push(format!(
                        "run {} {}: p99 {:.1} ms{limit}, {} over 200 ms",
                        run + 1,
                        s.name(),
                        r.p99,
                        r.over_200
                    ));
                }
            }
        }
        (ok, seen)
    };
    let mut out = Vec::new();
    let stalled = |c: &Cell| {
        let r = latency_stats(&c.first().latency_ms);
        r.p99 >= 100.0 || r.over_200 > 0
    };
    // throttled at all: a p99 of ten page-cache copies or more
    let vanilla_throttled = cells.iter().any(|c| {
        c.policy == Policy::Vanilla
            && contested.contains(&c.scenario)
            && latency_stats(&c.first().latency_ms).p99 >= 10.0
    });
    let vanilla_bad = (0..runs).any(|run| {
        contested
            .iter()
            .any(|s| cell(Policy::Vanilla, *s, run).is_some_and(stalled))
    });
    let (_, vseen) = target_runs(Policy::Vanilla);
    if !has_contest(Policy::Vanilla) {
        unjudged.push("vanilla-stalls-the-high-writer");
    } else {
        out.push(Claim {
        id: "vanilla-stalls-the-high-writer".into(),
        text: "On vanilla Linux, lower-priority writers make a high-priority writer's write() stall (often past 200 ms)".into(),
        source: "material 7 (paper Fig. 2/4); writeback-kernel.md on 6.18".into(),
        expectation: "with competitors, the RT-55 writer's p99 reaches 100 ms or some write takes over 200 ms".into(),
        observed: vseen.join("; "),
        verdict: if vanilla_bad { Verdict::Holds } else { Verdict::Differs },
        why: if vanilla_bad {
            "the global dirty limit throttles every writer, whatever its priority".into()
        } else {
            if vanilla_throttled {
                "the kernel did throttle the writer (p99 over 10 ms), but the pauses stayed short of the paper's marks; a short run (--quick: 150 writes, 3 s) can end before they grow".into()
            } else {
                "the device kept up with all writers here, so nobody reached the limit".into()
            }
        },
    });
    }
    let with_whom = contested
        .iter()
        .filter(|s| cells.iter().any(|c| c.scenario == **s))
        .map(|s| match s {
            Scenario::RtLow => "with RT-45",
            _ => "with bulk",
        })
        .collect::<Vec<_>>()
        .join(" and ");
    for (p, id) in [
        (Policy::Wcall, "wcall-keeps-latency"),
        (Policy::WcallFair, "wcall-fair-keeps-latency"),
    ] {
        if !has(Policy::Vanilla, Scenario::Alone) || !has_contest(p) {
            unjudged.push(id);
            continue;
        }
        let (ok, seen) = target_runs(p);
        out.push(Claim {
            id: id.into(),
            text: format!("Under the governor ({}) the high-priority writer keeps its latency among competitors", p.name()),
            source: "material 7 (paper Fig. 5/6); issue 6 targets".into(),
            expectation: format!("in every run: p99 within 2x of the writer's p99 alone (vanilla, all runs pooled: {alone_pooled:.1} ms) and no write over 200 ms, {with_whom} competitors ({runs} of {runs})"),
            observed: format!("{ok} of {runs} runs met it: {}", seen.join("; ")),
            verdict: if ok == runs { Verdict::Holds } else { Verdict::Differs },
            why: match (p, ok == runs) {
                (_, true) => "the over-share groups waited, so global dirty memory stayed below where the kernel throttles".into(),
                (Policy::Wcall, false) => "Algorithm 1 divides the hard limit by tasks x weight x dirty pages, so shares follow whoever dirtied most; it holds any group over its share for HZ/10, the high-priority group included (see the notes), and holds the competitors only near the hard limit, past the point where the kernel already throttles".into(),
                _ => "see the per-run figures".into(),
            },
        });
    }
    let fair_tput: Vec<f64> = cells
        .iter()
        .filter(|c| {
            c.policy == Policy::WcallFair && matches!(c.scenario, Scenario::RtLow | Scenario::Bulk)
        })
        .map(|c| c.competitors_bytes_s())
        .collect();
    let worst = fair_tput.iter().copied().fold(f64::INFINITY, f64::min);
    if worst.is_finite() {
        let holds = left > 0.0 && worst >= 0.8 * left;
        out.push(Claim {
            id: "competitors-not-starved".into(),
            text: "The competitors keep at least 80 % of the device bandwidth the high writer leaves them".into(),
            source: "issue 6 (a global gate starves them: shares must be per group)".into(),
            expectation: format!("wcall-fair, every cell: competitors >= {:.1} MiB/s (80 % of {:.1})", 0.8 * left / (1 << 20) as f64, left / (1 << 20) as f64),
            observed: format!("worst {:.1} MiB/s ({:.0} %)", worst / (1 << 20) as f64, if left > 0.0 { worst / left * 100.0 } else { 0.0 }),
            verdict: if holds { Verdict::Holds } else { Verdict::Differs },
            why: if holds { "held writers resume as soon as their group is under its share".into() } else { "the competitors were held back more than the device needed".into() },
        });
    }
    let mean_of = |p: Policy| -> f64 {
        let v: Vec<f64> = cells
            .iter()
            .filter(|c| c.policy == p && c.scenario == Scenario::Fig7)
            .flat_map(|c| c.first().latency_ms.clone())
            .collect();
        oslab_stats::mean(&v).unwrap_or(0.0)
    };
    let governed: Vec<Policy> = [Policy::Wcall, Policy::WcallFair]
        .into_iter()
        .filter(|p| has(*p, Scenario::Fig7))
        .collect();
    if !has(Policy::Vanilla, Scenario::Fig7) || governed.is_empty() {
        unjudged.push("fig7-no-overhead");
        return (out, unjudged);
    }
    let v = mean_of(Policy::Vanilla);
    // "not slower" allows the run-to-run noise of a page-cache copy: 10 % or 0.2 ms
    let not_slower = |x: f64| x <= v * 1.10 || x <= v + 0.2;
    let observed: Vec<String> = std::iter::once(Policy::Vanilla)
        .chain(governed.iter().copied())
        .map(|p| format!("{} {:.2} ms", p.name(), mean_of(p)))
        .collect();
    out.push(Claim {
        id: "fig7-no-overhead".into(),
        text: "With no competition the governor does not make a writer slower (paper Fig. 7)"
            .into(),
        source: "material 7 (paper Fig. 7: nice-4 writer, 1000 writes)".into(),
        expectation: "mean write() under wcall and wcall-fair within 10 % (or 0.2 ms) of vanilla"
            .into(),
        observed: format!("mean: {}", observed.join(", ")),
        verdict: if governed.iter().all(|p| not_slower(mean_of(*p))) {
            Verdict::Holds
        } else {
            Verdict::Differs
        },
        why: "a lone group is never held; the interposer costs tens of ns (wb.wcall-overhead)"
            .into(),
    });
    (out, unjudged)
}

fn plots(cells: &[Cell], rows_mean: &[(String, f64)], tb: &Testbed, writes: u64) -> Vec<Plot> {
    let first = |p: Policy, s: Scenario| {
        cells
            .iter()
            .find(|c| c.policy == p && c.scenario == s && c.run == 0)
    };
    let lat_axis = || Axis::new("write() latency", "ms", Scale::Log10);
    let time_axis = || Axis::new("time", "s", Scale::Linear);
    let mut plots = Vec::new();
    for (id, title, p) in [
        (
            "fig4-vanilla",
            "Fig. 4 redrawn: RT-55 writer among two RT-45 writers, vanilla",
            Policy::Vanilla,
        ),
        (
            "fig5-wcall",
            "Fig. 5 redrawn: the same under the governor, wcall",
            Policy::Wcall,
        ),
        (
            "fig5-wcall-fair",
            "Fig. 5 redrawn: the same under the governor, wcall-fair",
            Policy::WcallFair,
        ),
    ] {
        let Some(c) = first(p, Scenario::RtLow) else {
            continue;
        };
        let mut series = vec![series_of(c.first(), "measured RT-55")];
        if let Some(sim) = predict(Scenario::RtLow, p, tb.measured_bytes_s, writes) {
            series.push(sim_series(&sim, "simulator"));
        }
        plots.push(Plot {
            id: id.into(),
            title: title.into(),
            x: time_axis(),
            y: lat_axis(),
            series,
            markers: vec![],
            x_labels: vec![],
        });
    }
    let mut bars = Vec::new();
    let mut labels = Vec::new();
    for (i, (k, m)) in rows_mean
        .iter()
        .filter(|(k, _)| !k.contains("fig7"))
        .enumerate()
    {
        bars.push([i as f64, *m]);
        labels.push(k.clone());
    }
    plots.push(Plot {
        id: "fig6-mean".into(),
        title: "Fig. 6 redrawn: mean write() latency of the RT-55 writer (measured and simulated)"
            .into(),
        x: Axis::new("", "", Scale::Linear),
        y: Axis::new("mean latency", "ms", Scale::Linear),
        series: vec![Series {
            name: "mean".into(),
            style: SeriesStyle::Bars,
            points: bars,
        }],
        markers: vec![],
        x_labels: labels,
    });
    let fig7: Vec<Series> = POLICIES
        .iter()
        .filter_map(|p| first(*p, Scenario::Fig7).map(|c| series_of(c.first(), p.name())))
        .collect();
    if !fig7.is_empty() {
        plots.push(Plot {
            id: "fig7-nice4".into(),
            title: "Fig. 7 redrawn: a nice-4 writer alone, vanilla vs governed".into(),
            x: time_axis(),
            y: lat_axis(),
            series: fig7,
            markers: vec![],
            x_labels: vec![],
        });
    }
    for p in POLICIES {
        if let Some(c) = first(p, Scenario::RtLow) {
            let mut series = Vec::new();
            for (g, name) in oslab_wcall::shm::GROUP_NAMES.iter().enumerate().take(2) {
                if !c.groups.is_empty() {
                    series.push(Series {
                        name: format!("{name} dirty+writeback"),
                        style: SeriesStyle::Line,
                        points: c.groups.iter().map(|(t, v)| [*t, mib(v[g].0)]).collect(),
                    });
                    series.push(Series {
                        name: format!("{name} limit"),
                        style: SeriesStyle::Line,
                        points: c
                            .groups
                            .iter()
                            .filter_map(|(t, v)| v[g].1.map(|l| [*t, mib(l)]))
                            .collect(),
                    });
                }
            }
            let mut all = vec![
                Series {
                    name: "Dirty".into(),
                    style: SeriesStyle::Line,
                    points: c
                        .polls
                        .iter()
                        .map(|q| [q.t_s, mib(q.dirty_bytes)])
                        .collect(),
                },
                Series {
                    name: "Writeback".into(),
                    style: SeriesStyle::Line,
                    points: c
                        .polls
                        .iter()
                        .map(|q| [q.t_s, mib(q.writeback_bytes)])
                        .collect(),
                },
            ];
            all.extend(series);
            plots.push(Plot {
                id: format!("dirty-{}", p.name()),
                title: format!(
                    "Dirty, Writeback and the governor's groups, RT-55 + two RT-45, {}",
                    p.name()
                ),
                x: time_axis(),
                y: Axis::new("memory", "MiB", Scale::Linear),
                series: all,
                markers: vec![],
                x_labels: vec![],
            });
        }
    }
    plots
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_latency_target() {
        let calm: Vec<f64> = vec![2.0; 100];
        assert!(meets_latency_target(3.0, &calm));
        let mut spiky = calm.clone();
        spiky.push(201.0);
        assert!(
            !meets_latency_target(3.0, &spiky),
            "one write over 200 ms fails it"
        );
        let slow: Vec<f64> = vec![7.0; 100];
        assert!(
            !meets_latency_target(3.0, &slow),
            "p99 over 2x alone fails it"
        );
    }

    #[test]
    fn the_paper_workloads() {
        let w = writers_for(Scenario::RtLow, 700);
        assert_eq!(w.len(), 3);
        assert_eq!(
            (w[0].fifo, w[1].fifo, w[2].fifo),
            (Some(55), Some(45), Some(45))
        );
        assert!(w.iter().all(|x| x.count == Some(700)));
        let b = writers_for(Scenario::Bulk, 700);
        assert_eq!(b[1].count, None, "bulk writers write back to back");
        assert!((b[1].duration_s - 14.0).abs() < 1e-9);
        let f = writers_for(Scenario::Fig7, 700);
        assert_eq!((f[0].nice, f[0].count), (Some(4), Some(1000)));
    }
}
