//! mem.latency's measurement: a pointer chase over each working-set size, on small and huge pages.

use super::{Plan, Raw};
use crate::mem::common::sweep::{Chased, chase_size, shuffled};
use oslab_harness::Measured;
use oslab_harness::{Context, LabError};

pub(super) fn measure(plan: &Plan, ctx: &mut Context) -> Result<Measured<Raw>, LabError> {
    let (sizes, huge_sizes) = (plan.sizes(), plan.huge_sizes());
    let total = sizes.len() + huge_sizes.len();
    let mut done = 0;
    ctx.progress.stage("4 KiB pages");
    let small = sweep(ctx, plan, &sizes, false, &mut done, total)?;
    ctx.progress.stage("huge pages");
    let huge = sweep(ctx, plan, &huge_sizes, true, &mut done, total)?;
    Ok(Measured::Raw(Raw { small, huge }))
}

/// Chases every size once, in a shuffled order; the results in size order.
pub(super) fn sweep(
    ctx: &Context,
    plan: &Plan,
    sizes: &[u64],
    huge: bool,
    done: &mut usize,
    total: usize,
) -> Result<Vec<Chased>, LabError> {
    let seed = ctx.config.seed;
    let mut out: Vec<Option<Chased>> = vec![None; sizes.len()];
    for i in shuffled(sizes.len(), seed + huge as u64) {
        out[i] = Some(chase_size(sizes[i], 64, |_| 0, huge, plan.samples, seed)?);
        *done += 1;
        ctx.progress.fraction(*done as f64 / total as f64);
    }
    Ok(out.into_iter().flatten().collect())
}
