//! wb.throttle's measurement: writers on the slow testbed under a low dirty limit.

use std::time::Duration;

use super::{BACKGROUND, CHUNK, HARD, Plan, Raw};
use oslab_harness::Measured;
use oslab_harness::kernel_trace::KernelTrace;
use oslab_harness::{Context, LabError};
use oslab_services::knobs::Knobs;
use oslab_services::testbed::{down_for_run, unavailable, up_for_run};
use oslab_services::timed_writer::{self, Poll, WriterSpec, WriterTrace};

pub(super) fn measure(plan: &Plan, ctx: &mut Context) -> Result<Measured<Raw>, LabError> {
    if let Some(why) = unavailable() {
        return Ok(Measured::Skipped { reason: why });
    }
    ctx.progress.stage("building the testbed");
    let size = (plan.bandwidth as f64 * plan.duration * 1.5) as u64 + (512 << 20);
    let tb = up_for_run(&ctx.config.scratch_dir, size, plan.bandwidth)?;
    let kernel = KernelTrace::writeback(ctx.machine);
    let result = write_on(&tb.mount, plan, ctx);
    let kernel = kernel.finish();
    let errors = down_for_run(&tb);
    if !errors.is_empty() {
        return Err(LabError::Failed(format!(
            "testbed teardown: {}",
            errors.join("; ")
        )));
    }
    let (traces, polls) = result?;
    Ok(Measured::Raw(Raw {
        testbed_device: tb.device.display().to_string(),
        testbed_cap: tb.cap.clone(),
        testbed_measured_bytes_s: tb.measured_bytes_s,
        dirty_bytes: HARD,
        dirty_background_bytes: BACKGROUND,
        chunk_bytes: CHUNK as u64,
        traces,
        polls,
        testbed_dev: tb.dev.clone(),
        kernel,
    }))
}

/// The writers on the mounted testbed, with the dirty limits set for as long.
pub(super) fn write_on(
    mount: &std::path::Path,
    plan: &Plan,
    ctx: &mut Context,
) -> Result<(Vec<WriterTrace>, Vec<Poll>), LabError> {
    timed_writer::settle();
    let knobs = Knobs::set(&[
        ("vm.dirty_background_bytes", BACKGROUND.to_string()),
        ("vm.dirty_bytes", HARD.to_string()),
    ])?;
    ctx.progress.stage("writing");
    let specs: Vec<WriterSpec> = (0..plan.writers)
        .map(|i| WriterSpec {
            path: mount.join(format!("bulk-{i}.dat")),
            chunk: CHUNK,
            period: Duration::ZERO,
            count: None,
            fifo_priority: None,
            nice: None,
        })
        .collect();
    let progress = ctx.progress;
    let (traces, polls) = timed_writer::run(
        specs,
        Duration::from_secs_f64(plan.duration),
        Duration::from_millis(100),
        &|f| progress.fraction(f),
    );
    drop(knobs);
    if let Some(e) = traces.iter().find_map(|t| t.error.clone()) {
        return Err(LabError::Failed(format!("writer: {e}")));
    }
    Ok((traces, polls))
}
