//! Measuring: per setting a testbed at its cap, its dirty limits, the page-cost
//! probe, then every cell. Nothing here judges.

use std::path::Path;

use super::cell::{Bench, run_cell};
use super::{CellRaw, META, Plan, Raw, SettingRaw, Spec};
use oslab_harness::Measured;
use oslab_harness::{Context, LabError};
use oslab_services::cells::record::PERIOD_MS;
use oslab_services::knobs::Knobs;
use oslab_services::testbed::{down_for_run, unavailable, up_for_run};

fn run_setting(
    spec: &Spec,
    ctx: &mut Context,
    lib: &Path,
    done: &mut usize,
    total: usize,
) -> Result<SettingRaw, LabError> {
    let span = spec.writes as f64 * PERIOD_MS / 1000.0;
    let size = (spec.bandwidth as f64 * span * 3.0) as u64 + (1 << 30);
    ctx.progress
        .stage(&format!("{}: building the testbed", spec.name));
    let tb = up_for_run(&ctx.config.scratch_dir, size, spec.bandwidth)?;
    let result = (|| -> Result<SettingRaw, LabError> {
        let scratch = oslab_harness::scratch::Scratch::create(&ctx.config.scratch_dir, META.id, 0)?;
        let _k = Knobs::set(&[
            (
                "vm.dirty_background_bytes",
                spec.dirty_background_bytes.to_string(),
            ),
            ("vm.dirty_bytes", spec.dirty_bytes.to_string()),
        ])?;
        let costs = oslab_services::page_costs::probe(&tb.mount)?;
        let bench = Bench {
            tb: &tb,
            machine: ctx.machine,
            exe: ctx.config.oslab_exe.clone(),
            lib: lib.to_path_buf(),
            scratch: scratch.dir().to_path_buf(),
        };
        let mut cells = Vec::new();
        for run in 0..spec.runs {
            for &s in &spec.scenarios {
                for &p in &spec.policies {
                    ctx.progress.stage(&format!(
                        "{}: run {} {} {}",
                        spec.name,
                        run + 1,
                        s.name(),
                        p.name()
                    ));
                    // what `sim run --live` would start from, read as the cell
                    // is about to begin
                    let (live, live_not_read) = match crate::sim::live::read(&tb.mount) {
                        Ok(l) => (Some(l), None),
                        Err(why) => (None, Some(why)),
                    };
                    let (cell, io) = run_cell(&bench, p, s, spec.writes, run)?;
                    cells.push(CellRaw {
                        cell,
                        io,
                        live,
                        live_not_read,
                    });
                    *done += 1;
                    ctx.progress.fraction(*done as f64 / total as f64);
                }
            }
        }
        Ok(SettingRaw {
            spec: spec.clone(),
            bandwidth: spec.bandwidth,
            dirty_bytes: spec.dirty_bytes,
            dirty_background_bytes: spec.dirty_background_bytes,
            testbed_dev: tb.dev.clone(),
            testbed_cap: Some(tb.cap.clone()),
            testbed_measured_bytes_s: tb.measured_bytes_s,
            costs,
            cells,
            teardown_errors: Vec::new(),
        })
    })();
    let errors = down_for_run(&tb);
    result.map(|mut s| {
        s.teardown_errors = errors;
        s
    })
}

pub fn measure(plan: &Plan, ctx: &mut Context) -> Result<Measured<Raw>, LabError> {
    if let Some(why) = unavailable() {
        return Ok(Measured::Skipped { reason: why });
    }
    let lib = match oslab_wcall::launch::preload_path() {
        Ok(l) => l,
        Err(e) => return Ok(Measured::Skipped { reason: e }),
    };
    let specs = plan.specs();
    let total: usize = specs
        .iter()
        .map(|s| s.runs * s.scenarios.len() * s.policies.len())
        .sum::<usize>()
        + plan.sawtooth.len() * plan.sawtooth_runs;
    let mut done = 0;
    let mut settings = Vec::new();
    for spec in &specs {
        settings.push(run_setting(spec, ctx, &lib, &mut done, total)?);
    }
    let sawtooth = super::sawtooth_cells::measure(
        ctx,
        &plan.sawtooth,
        (plan.sawtooth_runs, plan.sawtooth_cycles),
        plan.bandwidth,
        (&mut done, total),
    )?;
    Ok(Measured::Raw(Raw {
        settings,
        sawtooth,
        page_reporting: Path::new("/sys/module/page_reporting").exists(),
    }))
}
