//! sched.smt's findings from the spinners' throughput.

use oslab_model::Environment;

use super::claims::{SMT, smt_claim};
use super::{Raw, describe};
use crate::sched::common::analysis::Worker;
use oslab_harness::{Output, finding};

/// Clock readings per second of wall time, summed over the workers.
pub(super) fn throughput(w: &[Worker]) -> f64 {
    w.iter()
        .map(|x| x.readings as f64 / (x.wall_ns().max(1) as f64 / 1e9))
        .sum()
}

pub(super) fn judge(raw: &Raw, env: &Environment) -> Output {
    let topology = describe(&raw.topology);
    let mut out = Output::default();
    let claim = match (&raw.runs, raw.sibling_pair, raw.separate_pair) {
        (Some(runs), Some((a, b)), Some((c, d))) => {
            let one = throughput(&runs.one_thread);
            let gain = throughput(&runs.siblings) / one - 1.0;
            let cores = throughput(&runs.cores) / one - 1.0;
            out.findings.push(finding(
                "smt_gain",
                gain,
                "fraction",
                format!(
                    "siblings {a}+{b}: {:.2}x one thread; cores {c}+{d}: {:.2}x",
                    1.0 + gain,
                    1.0 + cores
                ),
            ));
            out.findings.push(finding(
                "core_gain",
                cores,
                "fraction",
                format!("two workers on cores {c} and {d} against both on cpu{a}"),
            ));
            smt_claim(gain, cores, env)
        }
        _ => SMT.not_testable(
            "two workers on sibling threads get 1.1-1.4x one thread's throughput; on two cores at least 1.7x",
            format!(
                "no CPU here has an SMT sibling (every CPU's thread_siblings is itself: {topology}; {} thread(s) per core{})",
                env.machine.cpu.threads_per_core,
                raw.smt_control
                    .as_ref()
                    .map(|s| format!(", SMT control {s}"))
                    .unwrap_or_default()
            ),
        ),
    };
    out.claims.push(claim);
    out.notes.push(format!("topology: {topology}"));
    out
}
