//! Measuring wb.database: the testbed and the dirty limits, a PostgreSQL cluster on
//! it, then per run the five cells. Nothing here judges.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Instant;

use oslab_wcall::cli::{Launch, RunGroup, WcallPolicyArgs, WcallRunArgs};
use oslab_wcall::guard::GuardSetting;
use oslab_wcall::rendezvous::GovernorName;

use oslab_model::machine::MachineInfo;

use super::account::{TRACED_FROM, account};
use super::guard_log;
use super::server::{self, Cluster, Running};
use super::{BACKGROUND, CellRaw, DIRTY, DataCheck, Mode, Plan, Raw};
use oslab_harness::kernel_trace::KernelTrace;
use oslab_harness::{Context, LabError, Measured};
use oslab_services::daemon::Daemon;
use oslab_services::knobs::Knobs;
use oslab_services::testbed::{Testbed, down_for_run, unavailable, up_for_run};

/// What every cell shares.
struct Env<'a> {
    tb: &'a Testbed,
    cluster: &'a Cluster,
    /// pgbench's logs, beside the testbed's image, not on the device measured.
    logs: PathBuf,
    exe: PathBuf,
    plan: &'a Plan,
    machine: &'a MachineInfo,
}

pub fn measure(plan: &Plan, ctx: &mut Context) -> Result<Measured<Raw>, LabError> {
    let why = unavailable()
        .or_else(server::unavailable)
        .or_else(|| oslab_wcall::launch::preload_path().err());
    if let Some(reason) = why {
        return Ok(Measured::Skipped { reason });
    }
    ctx.progress.stage("building the testbed");
    // the copy writes at most the device's pace; the cluster holds the tables and
    // up to max_wal_size (1 GB) of WAL
    let size = (plan.bandwidth as f64 * (plan.duration + 30.0) * 1.5) as u64 + (4 << 30);
    let tb = up_for_run(&ctx.config.scratch_dir, size, plan.bandwidth)?;
    let result = with_testbed(plan, ctx, &tb);
    let teardown_errors = down_for_run(&tb);
    let (postgres, cells) = result?;
    Ok(Measured::Raw(Raw {
        postgres,
        testbed_device: tb.device.display().to_string(),
        testbed_cap: tb.cap.clone(),
        testbed_measured_bytes_s: tb.measured_bytes_s,
        cells,
        teardown_errors,
    }))
}

fn with_testbed(
    plan: &Plan,
    ctx: &mut Context,
    tb: &Testbed,
) -> Result<(String, Vec<CellRaw>), LabError> {
    let _knobs = Knobs::set(&[
        ("vm.dirty_background_bytes", BACKGROUND.to_string()),
        ("vm.dirty_bytes", DIRTY.to_string()),
    ])?;
    ctx.progress
        .stage("creating the PostgreSQL cluster and pgbench's tables");
    let cluster = Cluster::create(&tb.mount.join("postgres"))?;
    let postgres = {
        let _up = Running::start(plain_server(&cluster))?;
        cluster.pgbench(&[
            "-i".into(),
            "-q".into(),
            "-s".into(),
            plan.scale.to_string(),
        ])?;
        cluster.query("create extension if not exists amcheck")?;
        cluster.query("show server_version")?
    };
    // pgbench's log is the benchmark's instrument, not the database's load: it
    // is kept off the device measured, where its writes would queue beside the
    // commits it times
    let logs = tb.dir.join("pgbench-logs");
    server::users_own_dir(&logs)?;
    let e = Env {
        tb,
        cluster: &cluster,
        logs,
        exe: ctx.config.oslab_exe.clone(),
        plan,
        machine: ctx.machine,
    };
    let mut cells = Vec::new();
    for run in 0..plan.runs {
        for mode in Mode::ALL {
            ctx.progress.stage(&format!(
                "run {} of {}: {} ({} s of pgbench)",
                run + 1,
                plan.runs,
                mode.name(),
                plan.duration
            ));
            cells.push(cell(&e, run, mode)?);
        }
    }
    Ok((postgres, cells))
}

/// The server started as its user, with no governor.
fn plain_server(c: &Cluster) -> Command {
    let args = c.supervisor_args();
    let mut cmd = Command::new(&args[0]);
    cmd.args(&args[1..])
        .env("PATH", oslab_sys::program::trusted_path());
    cmd
}

/// The server started by root through `oslab wcall run --group rt-high`, as a
/// service manager would start it under the governor.
fn governed_server(e: &Env, governor: &GovernorName) -> Command {
    governed(e, governor, RunGroup::RtHigh, e.cluster.supervisor_args())
}

fn governed(e: &Env, governor: &GovernorName, group: RunGroup, command: Vec<String>) -> Command {
    Launch::Run(WcallRunArgs {
        group,
        name: Some(governor.clone()),
        private: false,
        shared_socket: false,
        policy: WcallPolicyArgs::default(),
        command,
    })
    .command(&e.exe)
}

/// `dd if=/dev/zero bs=1M` long enough to outlast the cell.
fn start_copy(e: &Env, file: &Path, governor: Option<&GovernorName>) -> Result<Child, LabError> {
    let count = (e.plan.bandwidth as f64 * (e.plan.duration + 60.0) / (1 << 20) as f64) as u64;
    let dd = oslab_sys::program::find("dd").map_err(LabError::Failed)?;
    let argv: Vec<String> = vec![
        dd.to_string_lossy().into_owned(),
        "if=/dev/zero".into(),
        format!("of={}", file.display()),
        "bs=1M".into(),
        format!("count={count}"),
        "status=none".into(),
    ];
    let mut cmd = match governor {
        Some(g) => governed(e, g, RunGroup::Normal, argv),
        None => {
            let mut c = Command::new(&argv[0]);
            c.args(&argv[1..])
                .env("PATH", oslab_sys::program::trusted_path());
            c
        }
    };
    cmd.stdout(Stdio::null()).stderr(Stdio::null());
    oslab_sys::signals::child_of_oslab(&mut cmd, oslab_sys::signals::OnParentDeath::Kill)
        .spawn()
        .map_err(|err| LabError::Failed(format!("cannot start dd: {err}")))
}

fn cell(e: &Env, run: u64, mode: Mode) -> Result<CellRaw, LabError> {
    let tag = format!("{}-{run}", mode.name());
    let daemon = if mode.governed() {
        Some(Daemon::start(
            &e.exe,
            &format!("wb-database-{}-{tag}", std::process::id()),
            WcallPolicyArgs {
                sync_guard: e.plan.guard.map(GuardSetting::Fixed),
                ..Default::default()
            },
        )?)
    } else {
        None
    };
    // before the server starts: the tracer follows the processes this one starts
    // from now on, and the server's are forked by the postmaster it starts
    let kernel = KernelTrace::slow_calls(e.machine, TRACED_FROM);
    let server = Running::start(match &daemon {
        Some(d) => governed_server(e, &d.name),
        None => plain_server(e.cluster),
    })?;
    let before = e
        .cluster
        .query("select sum(abalance) from pgbench_accounts")?;
    oslab_sys::process::sync_all();
    let disk = e.tb.disk_name();
    let (device0, steal0, t0) = (written_bytes(&disk), steal_ticks(), Instant::now());
    let start_ns = oslab_sys::clock::monotonic_ns();
    let copy = e.tb.mount.join("copy");
    let mut dd = if mode.with_copy() {
        Some(start_copy(e, &copy, daemon.as_ref().map(|d| &d.name))?)
    } else {
        None
    };
    let prefix = e.logs.join(format!("pgbench-{tag}"));
    let board = daemon
        .as_ref()
        .and_then(|d| d.board.as_ref())
        .map(|b| b.board());
    let (bench, watched) = guard_log::while_running(board, start_ns, || pgbench(e, &prefix));
    if let Some(dd) = dd.as_mut() {
        oslab_sys::process::signal_process(dd.id(), oslab_sys::signals::TERM).ok();
        let _ = dd.wait();
    }
    oslab_sys::process::sync_all();
    let span_s = t0.elapsed().as_secs_f64();
    let account = account(&kernel.finish(), start_ns);
    let device_bytes = written_bytes(&disk).saturating_sub(device0);
    let steal_pct = steal_ticks().percent_since(&steal0);
    let latency_counts = read_pgbench_logs(&prefix);
    let bench = bench?;
    let copy_bytes = std::fs::metadata(&copy).map_or(0, |m| m.len());
    let copy_intact = dd.map(|_| all_zeros(&copy));
    let _ = std::fs::remove_file(&copy);
    let data = check_data(e.cluster, &before, copy_intact)?;
    if daemon.is_some() && !watched.rt_high_governed {
        return Err(LabError::Failed(format!(
            "{tag}: no process of the server joined the governor's rt-high group, so the cell did not measure the governor (a governed program says why on its stderr, in the server's log)"
        )));
    }
    drop(server);
    drop(daemon);
    Ok(CellRaw {
        run,
        mode,
        latency_counts,
        transactions: transactions(&bench),
        span_s,
        device_bytes,
        copy_bytes,
        data,
        steal_pct,
        kernel: Some(account),
        guard: watched.changes,
    })
}

fn check_data(c: &Cluster, before: &str, copy_intact: Option<bool>) -> Result<DataCheck, LabError> {
    let before: i64 = before.parse().unwrap_or(0);
    let count = |sql: &str| -> Result<u64, LabError> { Ok(c.query(sql)?.parse().unwrap_or(0)) };
    Ok(DataCheck {
        history_rows: count("select count(*) from pgbench_history")?,
        balances_match: c.query(&format!(
            "select (select sum(abalance) from pgbench_accounts) - {before} = \
             (select coalesce(sum(delta), 0) from pgbench_history)"
        ))? == "t",
        // bt_index_check raises an error on the first bad index: psql fails
        indexes_checked: count(
            "select count(bt_index_check(i.indexrelid)) from pg_index i \
             join pg_class c on c.oid = i.indexrelid where c.relname like 'pgbench_%'",
        )?,
        copy_intact,
    })
}

/// `pgbench -N -c 2 -j 2` for the cell's duration, logging each transaction
/// under `prefix`; its output.
fn pgbench(e: &Env, prefix: &Path) -> Result<String, LabError> {
    e.cluster.pgbench(&[
        "-N".into(),
        "-c".into(),
        "2".into(),
        "-j".into(),
        "2".into(),
        "-T".into(),
        format!("{}", e.plan.duration.round() as u64),
        "--log".into(),
        format!("--log-prefix={}", prefix.display()),
    ])
}

/// pgbench's "number of transactions actually processed: N".
pub fn transactions(pgbench_out: &str) -> u64 {
    pgbench_out
        .lines()
        .find_map(|l| l.strip_prefix("number of transactions actually processed: "))
        .and_then(|n| n.split_whitespace().next()?.parse().ok())
        .unwrap_or(0)
}

/// Every latency (µs, the third field) in the logs `PREFIX.PID[.N]`, counted by
/// value; the logs are removed.
fn read_pgbench_logs(prefix: &Path) -> Vec<(u64, u64)> {
    let (Some(dir), Some(stem), Some(owner)) = (prefix.parent(), prefix.file_name(), server::uid())
    else {
        return Vec::new();
    };
    let stem = format!("{}.", stem.to_string_lossy());
    let mut counts = std::collections::BTreeMap::new();
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        if !entry.file_name().to_string_lossy().starts_with(&stem) {
            continue;
        }
        if let Some(text) = read_log(&entry.path(), owner) {
            for us in latencies(&text) {
                *counts.entry(us).or_insert(0u64) += 1;
            }
        }
        let _ = std::fs::remove_file(entry.path());
    }
    counts.into_iter().collect()
}

/// A log pgbench (the server's user) wrote: read only when it is that user's
/// regular file of at most 1 GiB, never through a link put in its place.
fn read_log(path: &Path, owner: u32) -> Option<String> {
    let f = oslab_sys::owned::open_owned(path, owner).ok()?;
    if f.metadata().ok()?.len() > 1 << 30 {
        return None;
    }
    let mut text = String::new();
    f.take(1 << 30).read_to_string(&mut text).ok()?;
    Some(text)
}

/// The latency column of a pgbench per-transaction log: `client_id
/// transaction_no time script_no time_epoch time_us`, time in µs.
pub fn latencies(log: &str) -> impl Iterator<Item = u64> + '_ {
    log.lines()
        .filter_map(|l| l.split_whitespace().nth(2)?.parse().ok())
}

/// Sectors written to a block device (/sys/block/NAME/stat, field 7), in bytes.
fn written_bytes(disk: &str) -> u64 {
    std::fs::read_to_string(format!("/sys/block/{disk}/stat"))
        .ok()
        .and_then(|t| t.split_whitespace().nth(6)?.parse::<u64>().ok())
        .map_or(0, |s| s * 512)
}

/// Steal and total ticks of all CPUs (/proc/stat).
struct Ticks {
    steal: u64,
    total: u64,
}

fn steal_ticks() -> Ticks {
    let line = std::fs::read_to_string("/proc/stat").unwrap_or_default();
    let f: Vec<u64> = line
        .lines()
        .next()
        .unwrap_or("")
        .split_whitespace()
        .skip(1)
        .take(8)
        .filter_map(|x| x.parse().ok())
        .collect();
    Ticks {
        steal: f.get(7).copied().unwrap_or(0),
        total: f.iter().sum(),
    }
}

impl Ticks {
    fn percent_since(&self, before: &Ticks) -> f64 {
        let total = self.total.saturating_sub(before.total);
        if total == 0 {
            return 0.0;
        }
        self.steal.saturating_sub(before.steal) as f64 * 100.0 / total as f64
    }
}

/// Whether every byte of the copy (of /dev/zero) reads back as zero from blocks
/// the file system holds: a write lost before it reached the disk would leave a
/// hole, which reads as zeros too.
pub fn all_zeros(path: &Path) -> bool {
    let Ok(mut f) = std::fs::File::open(path) else {
        return false;
    };
    let len = f.metadata().map_or(0, |m| m.len());
    if len == 0 {
        return true;
    }
    if oslab_sys::fileio::first_hole(&f).ok() != Some(len) || std::io::Seek::rewind(&mut f).is_err()
    {
        return false;
    }
    let mut buf = vec![0u8; 1 << 20];
    loop {
        match f.read(&mut buf) {
            Ok(0) => return true,
            Ok(n) if buf[..n].iter().all(|b| *b == 0) => {}
            _ => return false,
        }
    }
}
