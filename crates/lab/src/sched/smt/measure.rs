//! sched.smt's measurement: two spinners on SMT siblings, then on two cores.

use oslab_probe::spinners::Spec;

use super::{CpuSeen, Plan, Raw, Runs, pairs};
use crate::sched::common::analysis::Worker;
use crate::sched::common::probe;
use oslab_harness::Measured;
use oslab_harness::{Context, LabError};

pub(super) fn measure(plan: &Plan, ctx: &mut Context) -> Result<Measured<Raw>, LabError> {
    let (sibling_pair, separate_pair) = pairs(ctx.machine);
    let runs = match (sibling_pair, separate_pair) {
        (Some((a, b)), Some((c, d))) => {
            ctx.progress.stage("one thread");
            let one_thread = pair(a, a, plan.duration)?;
            ctx.progress.stage("sibling threads");
            let siblings = pair(a, b, plan.duration)?;
            ctx.progress.stage("separate cores");
            let cores = pair(c, d, plan.duration)?;
            Some(Runs {
                one_thread,
                siblings,
                cores,
            })
        }
        _ => None,
    };
    Ok(Measured::Raw(Raw {
        topology: ctx
            .machine
            .cpu
            .cpus
            .iter()
            .map(|c| CpuSeen {
                cpu: c.cpu,
                core_id: c.core_id,
                siblings: c.thread_siblings.clone(),
            })
            .collect(),
        smt_control: ctx.machine.cpu.smt_control.value().cloned(),
        sibling_pair,
        separate_pair,
        runs,
    }))
}

pub(super) fn pair(a: u32, b: u32, secs: f64) -> Result<Vec<Worker>, LabError> {
    let specs = [a, b].map(|cpu| Spec {
        cpu: Some(cpu),
        nice: 0,
        work_ns: 0,
    });
    probe::spin(&specs, (secs * 1e9) as u64, 10_000, |_| {})
}
