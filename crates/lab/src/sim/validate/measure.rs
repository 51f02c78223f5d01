//! Measuring: per setting a testbed at its cap, its dirty limits, the page-cost
//! probe, then every cell. Nothing here judges.

use std::io::{Seek, SeekFrom, Write};
use std::path::Path;

use oslab_sys::clock::monotonic_ns;

use super::cell::{Bench, run_cell};
use super::{CellRaw, META, PageCosts, Plan, Raw, SettingRaw, Spec};
use crate::harness::Measured;
use crate::harness::{Context, LabError};
use crate::services::cells::record::{CHUNK, PERIOD_MS};
use crate::services::knobs::Knobs;
use crate::services::testbed::{down_for_run, unavailable, up_for_run};
use crate::services::timed_writer;

/// Writes per probe round, and rounds.
const PROBE_WRITES: usize = 8;
const PROBE_ROUNDS: usize = 16;

/// One timed 512 KiB write, ns per page.
fn timed_write(f: &mut std::fs::File, buf: &[u8]) -> std::io::Result<f64> {
    let t = monotonic_ns();
    f.write_all(buf)?;
    Ok((monotonic_ns() - t) as f64 / (buf.len() / 4096) as f64)
}

/// What a 512 KiB write costs per page in free run, as the cells' writers see it:
/// paced 20 ms apart into new page-cache pages whose predecessors were written
/// back and dropped (so they come from memory the machine backs, as in the cells),
/// and over the same range while it is still cached (the copy alone).
fn probe_costs(dir: &Path) -> Result<PageCosts, LabError> {
    let path = dir.join("page-cost-probe");
    let buf = oslab_sys::fileio::AlignedBuf::new(CHUNK as usize, 11);
    let page = oslab_sys::machine::page_size();
    let mut costs = PageCosts::default();
    let io = |e: std::io::Error| LabError::Failed(format!("page-cost probe: {e}"));
    timed_writer::settle();
    drop(oslab_probe::memprobe::Buffer::new(512 << 20, false));
    let mut f = std::fs::File::create(&path).map_err(io)?;
    let pace = std::time::Duration::from_nanos((PERIOD_MS * 1e6) as u64);
    for round in 0..PROBE_ROUNDS {
        let start = f.stream_position().map_err(io)?;
        for _ in 0..PROBE_WRITES {
            costs
                .fresh_ns_per_page
                .push(timed_write(&mut f, buf.as_slice()).map_err(io)?);
            std::thread::sleep(pace);
        }
        if round % 4 == 3 {
            // the same range again, still cached: the copy alone
            f.seek(SeekFrom::Start(start)).map_err(io)?;
            for _ in 0..PROBE_WRITES {
                costs
                    .cached_ns_per_page
                    .push(timed_write(&mut f, buf.as_slice()).map_err(io)?);
            }
        }
        f.sync_data().map_err(io)?;
        let _ = oslab_sys::fileio::drop_clean_start(&f, page);
    }
    drop(f);
    let _ = std::fs::remove_file(&path);
    timed_writer::settle();
    Ok(costs)
}

fn run_setting(
    spec: &Spec,
    ctx: &mut Context,
    exe: &Path,
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
        let scratch =
            crate::harness::scratch::Scratch::create(&ctx.config.scratch_dir, META.id, 0)?;
        let _k = Knobs::set(&[
            (
                "vm.dirty_background_bytes",
                spec.dirty_background_bytes.to_string(),
            ),
            ("vm.dirty_bytes", spec.dirty_bytes.to_string()),
        ])?;
        let costs = probe_costs(&tb.mount)?;
        let bench = Bench {
            tb: &tb,
            machine: ctx.machine,
            exe: exe.to_path_buf(),
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
                    let (cell, io) = run_cell(&bench, p, s, spec.writes, run)?;
                    cells.push(CellRaw { cell, io });
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
    let exe = std::env::current_exe()
        .map_err(|e| LabError::Failed(format!("cannot find oslab itself: {e}")))?;
    let specs = plan.specs();
    let total: usize = specs
        .iter()
        .map(|s| s.runs * s.scenarios.len() * s.policies.len())
        .sum();
    let mut done = 0;
    let mut settings = Vec::new();
    for spec in &specs {
        settings.push(run_setting(spec, ctx, &exe, &lib, &mut done, total)?);
    }
    Ok(Measured::Raw(Raw {
        settings,
        page_reporting: Path::new("/sys/module/page_reporting").exists(),
    }))
}
