//! `wb.wcall-overhead`: what the governor's interposer adds to a write() that it
//! does not hold back. A child process times batches of 64-byte pwrite() calls over
//! the same page of a file (always in the page cache, never throttled), once plain
//! and once under a governor with the interposer loaded, alternating several times;
//! the overhead is the difference of the medians.

use oslab_model::{Claim, Verdict};
use oslab_wbsim::policy::Policy;
use oslab_wcall::launch;
use oslab_wcall::service::{Governor, Options};

use crate::experiment::{
    Context, Experiment, LabError, Meta, Needs, Outcome, Output, finding, measurement,
};

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
};

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
    for _ in 0..1000 {
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

fn child(
    env: &[(String, String)],
    file: &std::path::Path,
    batches: usize,
    per_batch: u64,
) -> Result<Vec<f64>, LabError> {
    let exe = std::env::current_exe()
        .map_err(|e| LabError::Failed(format!("cannot find oslab itself: {e}")))?;
    let mut cmd = std::process::Command::new(exe);
    cmd.args([
        "wcall",
        "bench-writes",
        "--batches",
        &batches.to_string(),
        "--per-batch",
        &per_batch.to_string(),
        "--file",
    ])
    .arg(file)
    .envs(env.iter().map(|(k, v)| (k, v)));
    let out = oslab_sys::signals::child_of_oslab(&mut cmd, oslab_sys::signals::OnParentDeath::Kill)
        .output()
        .map_err(|e| LabError::Failed(format!("cannot start the benchmark child: {e}")))?;
    if !out.status.success() {
        return Err(LabError::Failed(format!(
            "benchmark child failed: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        )));
    }
    serde_json::from_slice(&out.stdout)
        .map_err(|e| LabError::Failed(format!("benchmark child printed no figures: {e}")))
}

impl Experiment for WcallOverhead {
    fn meta(&self) -> &Meta {
        &META
    }

    fn run(&self, ctx: &mut Context) -> Result<Outcome, LabError> {
        let lib = match launch::preload_path() {
            Ok(l) => l,
            Err(e) => return Ok(Outcome::Skipped { reason: e }),
        };
        let rounds = ctx.samples(3, 7);
        let batches = 5;
        let per_batch: u64 = if ctx.config.quick() { 20_000 } else { 100_000 };
        let scratch = crate::scratch::Scratch::create(&ctx.config.scratch_dir, META.id, 64 << 20)?;
        let file = scratch.file("overhead.dat");
        let gov = Governor::start(
            "overhead",
            Options {
                policy: Policy::WcallFair,
                block_ns: oslab_wcall::coordinator::WCALL_BLOCK_NS,
                interval: std::time::Duration::from_millis(10),
                fifo_priority: None,
                // placement in memory cgroups is left out of the measurement
                cgroups: false,
                cgroup_limits: Default::default(),
            },
        )
        .map_err(|e| LabError::Failed(format!("cannot start a governor: {e}")))?;
        let governed_env = launch::env(&lib, gov.path(), "normal");
        let (mut plain, mut governed) = (Vec::new(), Vec::new());
        let result = (|| -> Result<(), LabError> {
            for r in 0..rounds {
                ctx.progress.fraction(r as f64 / rounds as f64);
                plain.extend(child(&[], &file, batches, per_batch)?);
                governed.extend(child(&governed_env, &file, batches, per_batch)?);
            }
            Ok(())
        })();
        let snap = gov.finish();
        let _ = std::fs::remove_file(&file);
        result?;
        let med = |v: &[f64]| oslab_stats::median(v).unwrap_or(0.0);
        let overhead = med(&governed) - med(&plain);
        let counted: u64 = snap.groups.iter().map(|g| g.writes).sum();
        let expected = rounds as u64 * (batches as u64 * per_batch + 1000);
        let seed = ctx.config.seed;
        let holds = overhead < 1000.0 && counted == expected;
        Ok(Outcome::Completed(Output {
            measurements: vec![
                measurement(
                    "ns.plain",
                    "64-byte pwrite(), no interposer",
                    "ns",
                    plain.clone(),
                    seed,
                    None,
                ),
                measurement(
                    "ns.governed",
                    "64-byte pwrite() through the interposer, group not held",
                    "ns",
                    governed.clone(),
                    seed,
                    None,
                ),
            ],
            findings: vec![
                finding(
                    "overhead_ns",
                    overhead,
                    "ns",
                    format!(
                        "median governed {:.1} ns - median plain {:.1} ns",
                        med(&governed),
                        med(&plain)
                    ),
                ),
                finding(
                    "ratio",
                    med(&governed) / med(&plain).max(1e-9),
                    "x",
                    "governed / plain",
                ),
                finding(
                    "writes_counted",
                    counted as f64,
                    "writes",
                    format!(
                        "the governor counted {counted} of the {expected} writes the children made"
                    ),
                ),
            ],
            claims: vec![Claim {
                id: "overhead-under-1us".into(),
                text: "The governor adds well under a microsecond to a write() it does not hold"
                    .into(),
                source: "design.md, the governor; issue 6".into(),
                expectation: "median overhead < 1000 ns, and every governed write counted".into(),
                observed: format!(
                    "{overhead:.1} ns ({:.1} vs {:.1} ns); {counted} of {expected} writes counted",
                    med(&governed),
                    med(&plain)
                ),
                verdict: if holds {
                    Verdict::Holds
                } else {
                    Verdict::Differs
                },
                why: if holds {
                    "a cached descriptor class, one atomic load of the group's hold flag, a clock read and three counter updates".into()
                } else {
                    "see the figures".into()
                },
            }],
            notes: vec![format!(
                "{rounds} rounds of plain then governed children, {batches} batches of {per_batch} calls each; the file {} is in the page cache throughout",
                file.display()
            )],
            ..Default::default()
        }))
    }
}
