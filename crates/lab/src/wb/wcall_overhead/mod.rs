//! `wb.wcall-overhead`: what the governor's interposer adds to a write() that it
//! does not hold back.
//!
//! What: ns per 64-byte pwrite() to a page that stays in the page cache, plain and
//! under a wcall-fair governor with its interposer loaded, and their difference:
//! the price every write of a governed program pays when nothing holds it back.
//!
//! Method: a child process (`oslab wcall bench-writes`) times batches of 64-byte
//! pwrite() calls over the same page of a file (always in the page cache, never
//! throttled), after 1000 untimed calls; once plain and once under a wcall-fair
//! governor with the interposer loaded (LD_PRELOAD), alternating round by round so
//! drift hits both alike. The overhead is the difference of the medians; the
//! governor's own count of the writes it saw is checked against the calls made
//! (each governed child is counted from the kernel's final figures after it exits
//! and before it is reaped, as `oslab wcall run` counts its command).
//!
//! Pitfalls: each figure includes the kernel's pwrite() (about a microsecond), so
//! the overhead is a small difference of two large numbers; rounds alternate to
//! keep a CPU frequency or a neighbour's load from landing on one side only. The
//! interposer reads the clock per write: where the clocksource is not the TSC,
//! that read is a system call of its own.
//!
//! References: ld.so(8) (LD_PRELOAD), pwrite(2), clock_gettime(2), vdso(7);
//! docs/wcall.md (the interposer's path); material section 7 of
//! ../shared/spec/material.md.

mod claims;
mod figures;
mod judge;
mod measure;
#[cfg(test)]
mod tests;

use oslab_model::Environment;
use serde::{Deserialize, Serialize};

use oslab_harness::{Context, LabError, Meta, Needs, Output};
use oslab_harness::{Experiment, Measured, Planner};

pub struct WcallOverhead;

static META: Meta = Meta {
    id: "wb.wcall-overhead",
    title: "The WCALL governor's cost on a write() it lets through",
    section: "7",
    summary: "ns per 64-byte pwrite() with and without the interposer, same run, alternating",
    needs: Needs {
        root: false,
        min_cpus: 1,
        free_disk_bytes: 0,
    },
    quick_s: 3.0,
    full_s: 10.0,
    internal: false,
    full_lab_only: false,
};

/// Untimed pwrite() calls each child makes first.
pub const WARMUP_CALLS: u64 = 1000;

/// ns per pwrite() of 64 bytes at offset 0, one figure per batch.
pub fn time_pwrites(
    path: &std::path::Path,
    batches: usize,
    per_batch: u64,
) -> std::io::Result<Vec<f64>> {
    use std::os::unix::fs::FileExt;
    let f = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .read(true)
        .write(true)
        .open(path)?;
    let buf = [0x5au8; 64];
    for _ in 0..WARMUP_CALLS {
        f.write_at(&buf, 0)?;
    }
    let mut out = Vec::with_capacity(batches);
    for _ in 0..batches {
        let t0 = oslab_sys::clock::monotonic_ns();
        for _ in 0..per_batch {
            f.write_at(&buf, 0)?;
        }
        out.push((oslab_sys::clock::monotonic_ns() - t0) as f64 / per_batch as f64);
    }
    Ok(out)
}

/// One benchmark child's batch figures, from `oslab wcall bench-writes` run by
/// the oslab binary `exe`; under `governor` (whose launcher this process is) it
/// is counted from the kernel's final counts after it exits and before it is
/// reaped, as `oslab wcall run` counts its command.
fn child(
    exe: &std::path::Path,
    env: &[(String, String)],
    governor: Option<&oslab_wcall::service::Governor>,
    file: &std::path::Path,
    batches: usize,
    per_batch: u64,
) -> Result<Vec<f64>, LabError> {
    let mut cmd = oslab_wcall::cli::Launch::BenchWrites(oslab_wcall::cli::WcallBenchArgs {
        file: file.to_path_buf(),
        batches,
        per_batch,
    })
    .command(exe);
    cmd.envs(env.iter().map(|(k, v)| (k, v)));
    let started =
        oslab_sys::signals::child_of_oslab(&mut cmd, oslab_sys::signals::OnParentDeath::Kill)
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .map_err(|e| LabError::Failed(format!("cannot start the benchmark child: {e}")))?;
    let out = finish_counted(started, governor)
        .map_err(|e| LabError::Failed(format!("waiting for the benchmark child: {e}")))?;
    if !out.status.success() {
        return Err(LabError::Failed(format!(
            "benchmark child failed: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        )));
    }
    serde_json::from_slice(&out.stdout)
        .map_err(|e| LabError::Failed(format!("benchmark child printed no figures: {e}")))
}

/// Collects a child's output; where a governor governs it, has the governor
/// count it between its exit and its reaping.
fn finish_counted(
    mut child: std::process::Child,
    governor: Option<&oslab_wcall::service::Governor>,
) -> std::io::Result<std::process::Output> {
    use std::io::Read;
    let mut err_pipe = child.stderr.take();
    let err_reader = std::thread::spawn(move || {
        let mut e = Vec::new();
        if let Some(p) = err_pipe.as_mut() {
            let _ = p.read_to_end(&mut e);
        }
        e
    });
    let mut stdout = Vec::new();
    let read = child.stdout.take().map(|mut p| p.read_to_end(&mut stdout));
    if let Some(Err(e)) = read {
        // not left running or unreaped
        let _ = child.kill();
        let _ = child.wait();
        return Err(e);
    }
    if let Some(g) = governor {
        // an error other than an interruption moves on to the ordinary wait
        while !oslab_sys::process::wait_exited_unreaped(child.id()) {}
        g.count_exited(child.id());
    }
    let status = child.wait()?;
    let stderr = err_reader.join().unwrap_or_default();
    Ok(std::process::Output {
        status,
        stdout,
        stderr,
    })
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Plan {
    /// Rounds of one plain and one governed child.
    pub samples: usize,
    /// Timed batches per child.
    pub batches: usize,
    /// pwrite() calls per batch.
    pub per_batch: u64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Raw {
    /// ns per call, one figure per batch, every plain child in turn.
    pub plain_ns: Vec<f64>,
    /// The same under the governor.
    pub governed_ns: Vec<f64>,
    /// Untimed calls each child made before its batches.
    pub warmup_calls: u64,
    /// Writes the governor counted, all groups together.
    pub writes_counted: u64,
    /// The file written (in the scratch directory).
    pub file: String,
}

impl Experiment for WcallOverhead {
    type Plan = Plan;
    type Raw = Raw;

    fn meta(&self) -> &Meta {
        &META
    }
    fn headline(&self) -> &'static str {
        "overhead_ns"
    }

    fn plan(&self, p: &mut Planner) -> Plan {
        Plan {
            samples: p.samples(3, 7),
            batches: 5,
            per_batch: if p.quick() { 20_000 } else { 100_000 },
        }
    }

    fn measure(&self, plan: &Plan, ctx: &mut Context) -> Result<Measured<Raw>, LabError> {
        measure::measure(plan, ctx)
    }

    fn judge(&self, plan: &Plan, raw: &Raw, env: &Environment) -> Output {
        judge::judge(plan, raw, env)
    }
}
