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
//! governor's own count of the writes it saw is checked against the calls made.
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

use oslab_model::Environment;
use oslab_wbsim::policy::Policy;
use oslab_wcall::launch;
use oslab_wcall::service::{Governor, Options};
use serde::{Deserialize, Serialize};

use crate::harness::check::{Check, Condition, Rule};
use crate::harness::{Context, LabError, Meta, Needs, Output, finding, measurement};
use crate::harness::{Experiment, Measured, Planner};

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

/// Untimed pwrite() calls each child makes first.
pub const WARMUP_CALLS: u64 = 1000;
/// The claim's bound: well under a microsecond.
const BOUND_NS: f64 = 1000.0;

const OVERHEAD: Check = Check {
    id: "overhead-under-1us",
    text: "The governor adds well under a microsecond to a write() it does not hold",
    source: "design.md, the governor; issue 6",
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

    fn plan(&self, p: &mut Planner) -> Plan {
        Plan {
            samples: p.samples(3, 7),
            batches: 5,
            per_batch: if p.quick() { 20_000 } else { 100_000 },
        }
    }

    fn measure(&self, plan: &Plan, ctx: &mut Context) -> Result<Measured<Raw>, LabError> {
        let lib = match launch::preload_path() {
            Ok(l) => l,
            Err(e) => return Ok(Measured::Skipped { reason: e }),
        };
        let scratch =
            crate::harness::scratch::Scratch::create(&ctx.config.scratch_dir, META.id, 64 << 20)?;
        let file = scratch.file("overhead.dat");
        let gov = Governor::start(
            &format!("overhead-{}", std::process::id()),
            Options {
                policy: Policy::WcallFair,
                block_ns: oslab_wcall::coordinator::WCALL_BLOCK_NS,
                interval: std::time::Duration::from_millis(10),
                fifo_priority: None,
                // placement in memory cgroups is left out of the measurement
                cgroups: false,
                cgroup_limits: Default::default(),
                tuning: Default::default(),
                kernel_monitor: true,
            },
        )
        .map_err(|e| LabError::Failed(format!("cannot start a governor: {e}")))?;
        gov.launch_as(oslab_wcall::shm::NORMAL)
            .map_err(|e| LabError::Failed(format!("cannot launch under a governor: {e}")))?;
        let governed_env = launch::env(&lib, gov.socket());
        let (mut plain, mut governed) = (Vec::new(), Vec::new());
        let result = (|| -> Result<(), LabError> {
            for r in 0..plan.samples {
                ctx.progress.fraction(r as f64 / plan.samples as f64);
                plain.extend(child(&[], &file, plan.batches, plan.per_batch)?);
                governed.extend(child(&governed_env, &file, plan.batches, plan.per_batch)?);
            }
            Ok(())
        })();
        let snap = gov.finish();
        let _ = std::fs::remove_file(&file);
        result?;
        Ok(Measured::Raw(Raw {
            plain_ns: plain,
            governed_ns: governed,
            warmup_calls: WARMUP_CALLS,
            writes_counted: snap.groups.iter().map(|g| g.writes).sum(),
            file: file.display().to_string(),
        }))
    }

    fn judge(&self, plan: &Plan, raw: &Raw, env: &Environment) -> Output {
        judge(plan, raw, env)
    }
}

/// The writes the children made, timed and untimed.
fn expected_writes(plan: &Plan, raw: &Raw) -> u64 {
    plan.samples as u64 * (plan.batches as u64 * plan.per_batch + raw.warmup_calls)
}

fn judge(plan: &Plan, raw: &Raw, env: &Environment) -> Output {
    let med = |v: &[f64]| oslab_stats::median(v);
    let (plain, governed) = (med(&raw.plain_ns), med(&raw.governed_ns));
    let overhead = plain.zip(governed).map(|(p, g)| g - p);
    let shown = |v: Option<f64>| v.map_or("none".to_string(), |x| format!("{x:.1}"));
    let expected = expected_writes(plan, raw);
    let counted = raw.writes_counted;
    let claim = claim(plan, raw, env);
    let mut out = Output {
        measurements: vec![
            measurement(
                "ns.plain",
                "64-byte pwrite(), no interposer",
                "ns",
                raw.plain_ns.clone(),
                env.seed,
                None,
            ),
            measurement(
                "ns.governed",
                "64-byte pwrite() through the interposer, group not held",
                "ns",
                raw.governed_ns.clone(),
                env.seed,
                None,
            ),
        ],
        claims: vec![claim],
        notes: vec![format!(
            "{} rounds of plain then governed children, {} batches of {} calls each; the file {} is in the page cache throughout",
            plan.samples, plan.batches, plan.per_batch, raw.file
        )],
        ..Default::default()
    };
    out.findings = vec![
        finding(
            "overhead_ns",
            overhead.unwrap_or(f64::NAN),
            "ns",
            format!(
                "median governed {} ns - median plain {} ns",
                shown(governed),
                shown(plain)
            ),
        ),
        finding(
            "ratio",
            governed
                .zip(plain)
                .map_or(f64::NAN, |(g, p)| g / p.max(1e-9)),
            "x",
            "governed / plain",
        ),
        finding(
            "writes_counted",
            counted as f64,
            "writes",
            format!("the governor counted {counted} of the {expected} writes the children made"),
        ),
    ];
    out
}

/// The claim: the overhead below a microsecond and every write counted; the
/// "why" from the clocksource and the load the run saw.
fn claim(plan: &Plan, raw: &Raw, env: &Environment) -> oslab_model::Claim {
    let med = |v: &[f64]| oslab_stats::median(v);
    let (plain, governed) = (med(&raw.plain_ns), med(&raw.governed_ns));
    let overhead = plain.zip(governed).map(|(p, g)| g - p);
    let shown = |v: Option<f64>| v.map_or("none".to_string(), |x| format!("{x:.1}"));
    let expected = expected_writes(plan, raw);
    let counted = raw.writes_counted;
    let conditions = [
        Condition::from_option(
            "median overhead",
            "ns",
            Rule::Below(BOUND_NS),
            overhead,
            "no timed batch on one side (plain or governed)",
        ),
        Condition::new(
            "writes the governor counted",
            "",
            Rule::Exactly(expected as f64),
            counted as f64,
        ),
    ];
    let context = format!(
        "medians governed {} vs plain {} ns; the children made {expected} writes",
        shown(governed),
        shown(plain)
    );
    let clocksource = env
        .machine
        .kernel
        .clocksource
        .as_deref()
        .unwrap_or("unknown");
    OVERHEAD.judge(&conditions, &context, |o| {
        let mut why = Vec::new();
        if o.holds() {
            why.push("a cached descriptor class, one atomic load of the group's hold flag, a clock read and three counter updates".to_string());
        }
        if o.failed(0) {
            why.push(match (clocksource, &env.load.warning) {
                ("tsc", Some(w)) => format!(
                    "the interposer's clock read is a vDSO read of the TSC, so the difference is the run's load: {w}"
                ),
                ("tsc", None) => "the interposer's clock read is a vDSO read of the TSC and no other load was seen: its path itself cost more than a few loads and stores here".to_string(),
                (cs, _) => format!(
                    "the interposer reads the clock per write through the {cs} clocksource, which the vDSO cannot read: every clock read is a system call"
                ),
            });
        }
        if o.failed(1) {
            why.push(format!(
                "the governor counted {counted} writes where the children made {expected}: writes passed the interposer uncounted"
            ));
        }
        why.join("; ")
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use oslab_model::Verdict;

    fn plan() -> Plan {
        Plan {
            samples: 2,
            batches: 5,
            per_batch: 100,
        }
    }

    /// Every write counted unless `lost`.
    fn raw(plain: f64, governed: f64, lost: u64) -> Raw {
        Raw {
            plain_ns: vec![plain; 10],
            governed_ns: vec![governed; 10],
            warmup_calls: WARMUP_CALLS,
            writes_counted: 2 * (500 + WARMUP_CALLS) - lost,
            file: "/tmp/x/overhead.dat".into(),
        }
    }

    fn env(clocksource: &str) -> Environment {
        let mut e = crate::wb::wcall::tests::env(None);
        e.machine.kernel.clocksource = Some(clocksource.into());
        e
    }

    #[test]
    fn every_verdict() {
        let j = |r: &Raw, cs: &str| judge(&plan(), r, &env(cs)).claims.remove(0);
        let c = j(&raw(900.0, 930.0, 0), "tsc");
        assert_eq!(c.verdict, Verdict::Holds, "{c:?}");
        assert_eq!(
            c.expectation,
            "median overhead below 1000 ns, and writes the governor counted exactly 3000"
        );
        let c = j(&raw(900.0, 2500.0, 0), "hpet");
        assert_eq!(c.verdict, Verdict::Differs);
        assert!(
            c.why.contains("hpet") && c.why.contains("system call"),
            "{}",
            c.why
        );
        let c = j(&raw(900.0, 2500.0, 0), "tsc");
        assert!(c.why.contains("no other load was seen"), "{}", c.why);
        let mut busy = env("tsc");
        busy.load.warning = Some("other programs kept about 90 % of the CPUs busy".into());
        let c = judge(&plan(), &raw(900.0, 2500.0, 0), &busy)
            .claims
            .remove(0);
        assert!(
            c.why
                .ends_with("the run's load: other programs kept about 90 % of the CPUs busy"),
            "{}",
            c.why
        );
        let c = j(&raw(900.0, 930.0, 7), "tsc");
        assert_eq!(c.verdict, Verdict::Differs);
        assert!(c.why.contains("2993 writes"), "{}", c.why);
        let mut none = raw(900.0, 930.0, 0);
        none.governed_ns.clear();
        let c = j(&none, "tsc");
        assert_eq!(c.verdict, Verdict::NotJudged);
        assert!(c.why.contains("no timed batch"), "{}", c.why);
    }

    #[test]
    fn findings() {
        let out = judge(&plan(), &raw(900.0, 930.0, 0), &env("tsc"));
        let f = |n: &str| out.findings.iter().find(|f| f.name == n).unwrap().value;
        assert_eq!(f("overhead_ns"), 30.0);
        assert!((f("ratio") - 930.0 / 900.0).abs() < 1e-12);
        assert_eq!(f("writes_counted"), 3000.0);
    }
}
