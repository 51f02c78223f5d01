//! mem.tlb's measurement: page-strided reads over growing numbers of pages.

use super::{CpuidTlb, PAGE, Plan, Raw};
use crate::mem::common::sweep::{Chased, chase_size, shuffled};
use oslab_harness::Measured;
use oslab_harness::{Context, LabError};

pub(super) fn measure(plan: &Plan, ctx: &mut Context) -> Result<Measured<Raw>, LabError> {
    let pages = plan.pages();
    let seed = ctx.config.seed;
    // a pseudo-random line within each page (see the module's method)
    let line_of =
        |page: usize| (((page as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 58) as usize) * 64;
    let total = pages.len() * 2;
    let mut done = 0;
    let mut curves = Vec::new();
    for huge in [false, true] {
        ctx.progress
            .stage(if huge { "huge pages" } else { "4 KiB pages" });
        let mut y: Vec<Option<Chased>> = vec![None; pages.len()];
        for i in shuffled(pages.len(), seed + huge as u64) {
            let bytes = pages[i] * PAGE as u64;
            y[i] = Some(chase_size(bytes, PAGE, line_of, huge, plan.samples, seed)?);
            done += 1;
            ctx.progress.fraction(done as f64 / total as f64);
        }
        curves.push(y.into_iter().flatten().collect::<Vec<_>>());
    }
    let huge = curves.pop().unwrap_or_default();
    let small = curves.pop().unwrap_or_default();
    let cpuid = oslab_sys::cpuid::tlbs()
        .into_iter()
        .map(|t| CpuidTlb {
            kind: t.kind,
            level: t.level,
            pages: t.pages,
            entries: t.entries,
            ways: t.ways,
        })
        .collect();
    Ok(Measured::Raw(Raw { small, huge, cpuid }))
}
