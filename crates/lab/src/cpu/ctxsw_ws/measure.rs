//! cpu.ctxsw-ws's measurement: a ping-pong that touches a working set at each
//! handoff, by size and placement.

use oslab_probe::pingpong::{self, Mechanism, Tasks};
use oslab_units::human_bytes;

use super::{Plan, PointRaw, Raw};
use crate::cpu::ctxsw::run_cell;
use oslab_harness::Measured;
use oslab_harness::{Context, LabError};

pub(super) fn measure(plan: &Plan, ctx: &mut Context) -> Result<Measured<Raw>, LabError> {
    let total = plan.sizes.len() * plan.placements.len();
    let mut points = Vec::with_capacity(total);
    for p in &plan.placements {
        for &w in &plan.sizes {
            ctx.progress
                .stage(&format!("{} {}", p.name, human_bytes(w)));
            let write = write_only_ns(w, p.own, plan.samples)?;
            let write_ns = oslab_stats::median(&write).unwrap_or(0.0);
            // a handoff also costs the write; a first guess of the rest, so a
            // batch lasts about the target (one CPU: a switch; else a wake-up)
            let guess = write_ns
                + if p.name == "same-cpu" {
                    1500.0
                } else {
                    30_000.0
                };
            let rts = ((plan.target_batch_ns / (2.0 * guess)) as u64).clamp(20, 5000);
            let cell = run_cell(
                Tasks::Processes,
                Mechanism::Futex,
                p,
                1,
                plan.samples,
                rts,
                w as usize,
            )?;
            points.push(PointRaw {
                ws: w,
                write_only_ns: write,
                cell,
            });
            ctx.progress.fraction(points.len() as f64 / total as f64);
        }
    }
    Ok(Measured::Raw(Raw { points }))
}

/// ns to write `w` bytes of a shared mapping once, pinned to `cpu`, warm.
pub(super) fn write_only_ns(
    w: u64,
    cpu: Option<u32>,
    samples: usize,
) -> Result<Vec<f64>, LabError> {
    let _pin = cpu.and_then(|c| oslab_sys::process::PinGuard::pin(c).ok());
    // about 2 ms of writing a sample at ~10 GB/s, at least 4 writes
    let per_sample = (20_000_000 / w.max(1)).clamp(4, 10_000);
    Ok(pingpong::time_writes(w as usize, per_sample, samples)?)
}
