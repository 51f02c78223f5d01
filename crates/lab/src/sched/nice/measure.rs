//! sched.nice's measurement: two spinners of different nice values on one CPU.

use oslab_probe::spinners::Spec;
use oslab_sys::fsread::Root;

use super::{MAX_GAPS, Pair, Plan, Raw};
use crate::sched::common::kernel_view;
use crate::sched::common::probe::{self};
use oslab_harness::Measured;
use oslab_harness::{Context, LabError};

pub(super) fn measure(plan: &Plan, ctx: &mut Context) -> Result<Measured<Raw>, LabError> {
    let cpu = probe::first_cpu();
    let root = Root::live();
    let mut pairs = Vec::new();
    for (i, &k) in plan.ks.iter().enumerate() {
        ctx.progress.stage(&format!("nice 0 vs nice {k}"));
        let specs = [0, k].map(|nice| Spec {
            cpu: Some(cpu),
            nice,
            work_ns: 0,
        });
        let mut sched = Vec::new();
        let stat_before = probe::stat(&root);
        let (workers, kernel) = kernel_view::spin_traced(
            ctx.machine,
            &specs,
            (plan.duration * 1e9) as u64,
            MAX_GAPS,
            |pids| {
                std::thread::sleep(std::time::Duration::from_millis(300));
                sched = pids.iter().map(|&p| probe::pid_sched(&root, p)).collect();
            },
        )?;
        pairs.push(Pair {
            k,
            workers,
            kernel,
            sched,
            stat_before,
            stat_after: probe::stat(&root),
        });
        ctx.progress.fraction((i + 1) as f64 / plan.ks.len() as f64);
    }
    Ok(Measured::Raw(Raw { cpu, pairs }))
}
