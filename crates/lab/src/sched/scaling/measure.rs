//! sched.scaling's measurement: spinners on one CPU, one round per count of workers.

use oslab_sys::fsread::Root;

use super::{MAX_GAPS, Plan, Raw, Round};
use crate::sched::common::probe::{self};
use oslab_harness::Measured;
use oslab_harness::{Context, LabError};

pub(super) fn measure(plan: &Plan, ctx: &mut Context) -> Result<Measured<Raw>, LabError> {
    let cpu0 = probe::first_cpu();
    let root = Root::live();
    let work_ns = (plan.work * 1e9) as u64;
    let total = plan.ns.len() * 2;
    let mut done = 0;
    let mut both = [Vec::new(), Vec::new()];
    for (rounds, (label, pinned)) in both
        .iter_mut()
        .zip([("one CPU", true), ("all CPUs", false)])
    {
        for &n in &plan.ns {
            ctx.progress.stage(&format!("{label}, {n}"));
            let stat_before = probe::stat(&root);
            let workers = probe::spin(
                &probe::specs(n, pinned.then_some(cpu0), 0, work_ns),
                work_ns * (n as u64 + 2) * 4,
                MAX_GAPS,
                |_| {},
            )?;
            rounds.push(Round {
                n,
                workers,
                stat_before,
                stat_after: probe::stat(&root),
            });
            done += 1;
            ctx.progress.fraction(done as f64 / total as f64);
        }
    }
    let [one_cpu, all_cpus] = both;
    Ok(Measured::Raw(Raw {
        cpu0,
        one_cpu,
        all_cpus,
    }))
}
