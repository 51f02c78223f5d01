//! `sched.smt`: what a sibling hardware thread gives. Two CPU-bound workers pinned to
//! the two threads of one core vs to two separate cores; throughput is the work both
//! got done (clock readings, a fixed tiny unit) per second. Without SMT siblings the
//! claim is not testable here, and the result shows the topology that says so.

use oslab_model::{Claim, Verdict};
use oslab_sys::machine::MachineInfo;
use oslab_sys::spinners::{self, Spec};

use super::slices::GAP_NS;
use crate::experiment::{Context, Experiment, LabError, Meta, Needs, Outcome, Output, finding};

pub struct SchedSmt;

static META: Meta = Meta {
    id: "sched.smt",
    title: "SMT: two workers on sibling threads vs on separate cores",
    section: "6",
    summary: "throughput of two CPU-bound workers on one core's two threads vs two cores (not testable without SMT)",
    needs: Needs {
        root: false,
        min_cpus: 1,
        free_disk_bytes: 0,
    },
    quick_s: 3.0,
    full_s: 8.0,
    internal: false,
};

/// Two CPUs to pin a pair of workers to.
pub type CpuPair = (u32, u32);

/// (a, b) on one core and (a, c) on two cores, when the topology has both.
pub fn pairs(m: &MachineInfo) -> (Option<CpuPair>, Option<CpuPair>) {
    let mut siblings = None;
    let mut separate = None;
    for c in &m.cpu.cpus {
        if let Some(s) = c.thread_siblings.iter().find(|s| **s != c.cpu) {
            siblings.get_or_insert((c.cpu, *s));
        }
        for d in &m.cpu.cpus {
            if d.cpu != c.cpu && !c.thread_siblings.contains(&d.cpu) {
                separate.get_or_insert((c.cpu, d.cpu));
            }
        }
    }
    (siblings, separate)
}

fn throughput(a: u32, b: u32, secs: f64) -> Result<f64, LabError> {
    let specs = [
        Spec {
            cpu: Some(a),
            nice: 0,
            work_ns: 0,
        },
        Spec {
            cpu: Some(b),
            nice: 0,
            work_ns: 0,
        },
    ];
    let t = spinners::run(&specs, (secs * 1e9) as u64, GAP_NS, 10_000, |_| {})
        .map_err(|e| LabError::Failed(e.to_string()))?;
    Ok(t.iter()
        .map(|x| x.readings as f64 / ((x.end_ns - x.start_ns) as f64 / 1e9))
        .sum())
}

impl Experiment for SchedSmt {
    fn meta(&self) -> &Meta {
        &META
    }

    fn run(&self, ctx: &mut Context) -> Result<Outcome, LabError> {
        let secs = if ctx.config.quick() { 1.0 } else { 3.0 };
        let (sib, sep) = pairs(ctx.machine);
        let topology = ctx
            .machine
            .cpu
            .cpus
            .iter()
            .map(|c| {
                format!(
                    "cpu{} core {:?} siblings {:?}",
                    c.cpu, c.core_id, c.thread_siblings
                )
            })
            .collect::<Vec<_>>()
            .join("; ");
        let mut claim = Claim {
            id: "smt-gives-20-30-percent".into(),
            text: "A second hardware thread adds about 20-30 % throughput, far less than a second core".into(),
            source: "material 6 (seed 003)".into(),
            expectation: "two workers on sibling threads get 1.2-1.3x one worker's throughput; on two cores 2x".into(),
            observed: format!("topology: {topology}"),
            verdict: Verdict::NotTestable,
            why: "no CPU here has an SMT sibling (every CPU's thread_siblings is itself)".into(),
        };
        let mut findings = Vec::new();
        if let (Some((a, b)), Some((c, d))) = (sib, sep) {
            let one = throughput(a, a, secs)?; // two on one thread = one thread's throughput
            let smt = throughput(a, b, secs)?;
            let cores = throughput(c, d, secs)?;
            let gain = smt / one - 1.0;
            findings.push(finding(
                "smt_gain",
                gain,
                "fraction",
                format!(
                    "siblings {a}+{b}: {:.2}x one thread; cores {c}+{d}: {:.2}x",
                    smt / one,
                    cores / one
                ),
            ));
            claim.observed = format!(
                "siblings give {:.0} % more than one thread, separate cores {:.0} %",
                gain * 100.0,
                (cores / one - 1.0) * 100.0
            );
            claim.verdict = if (0.1..=0.4).contains(&gain) {
                Verdict::Holds
            } else {
                Verdict::Differs
            };
            claim.why = "the two threads of a core share its execution units".into();
        }
        Ok(Outcome::Completed(Output {
            findings,
            claims: vec![claim],
            notes: vec![format!("topology: {topology}")],
            ..Default::default()
        }))
    }
}
