//! wb.cases' measurement: each case's writer on the testbed, scaled to its memory.

use std::time::Duration;

use super::{CASES, Plan, Raw, TestbedFacts};
use oslab_harness::Measured;
use oslab_harness::kernel_trace::KernelTrace;
use oslab_harness::{Context, LabError};
use oslab_services::disk_probe::disk_facts;
use oslab_services::sawtooth::SawRaw;
use oslab_services::sawtooth::measure::{DeviceProbe, flusher_view, run_with_knobs};
use oslab_services::testbed::{Testbed, down_for_run, unavailable, up_for_run};

pub(super) fn measure(plan: &Plan, ctx: &mut Context) -> Result<Measured<Raw>, LabError> {
    if let Some(reason) = unavailable() {
        return Ok(Measured::Skipped { reason });
    }
    ctx.progress.stage("building the testbed");
    let size = (plan.rate as f64 * plan.duration * 2.5) as u64 + (512 << 20);
    let tb = up_for_run(&ctx.config.scratch_dir, size, plan.bandwidth)?;
    let result = run_cases(plan, ctx, &tb);
    let errors = down_for_run(&tb);
    let cases = result?;
    if !errors.is_empty() {
        return Err(LabError::Failed(format!(
            "testbed teardown: {}",
            errors.join("; ")
        )));
    }
    Ok(Measured::Raw(Raw {
        testbed: TestbedFacts::of(&tb),
        cases,
    }))
}

pub(super) fn run_cases(
    plan: &Plan,
    ctx: &mut Context,
    tb: &Testbed,
) -> Result<Vec<SawRaw>, LabError> {
    let probe = DeviceProbe::new(&tb.disk_name(), Some(&tb.dev));
    let mut out = Vec::new();
    for (i, c) in CASES.iter().enumerate() {
        ctx.progress.stage(c.name);
        let progress = ctx.progress;
        let kernel = KernelTrace::writeback(ctx.machine);
        let mut raw = run_with_knobs(
            &c.knobs(),
            tb.mount.join(format!("case{}.dat", i + 1)),
            plan.rate,
            Duration::from_secs_f64(plan.duration).into(),
            Some(&probe),
            &|f| progress.fraction((i as f64 + f) / CASES.len() as f64),
        )?;
        raw.disk = disk_facts(&tb.mount);
        raw.bdi = Some(tb.dev.clone());
        raw.kernel = flusher_view(kernel.finish());
        out.push(raw);
    }
    Ok(out)
}
