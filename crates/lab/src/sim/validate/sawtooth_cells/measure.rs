//! Running the sawtooth cells: per device its probe (the testbed's own, or a
//! direct-I/O write of the root disk), then every run of every cell, runs
//! interleaved so that no cell gets all of one stretch of the machine's day,
//! each after a read of the device's live state (`sim::live`).

use std::path::Path;

use super::{SawCell, SawDevice, SawDeviceRaw, SawRunRaw};
use oslab_harness::scratch::Scratch;
use oslab_harness::{Context, LabError};
use oslab_services::machine_profile::{DEVICE_BYTES_QUICK, device_write_bandwidth};
use oslab_services::sawtooth::run_sawtooth_in;
use oslab_services::testbed::{down_for_run, up_for_run};

const ID: &str = "sim.validate.sawtooth";

fn run_cells(
    ctx: &mut Context,
    base: &Path,
    cells: &[SawCell],
    (runs, cycles): (usize, usize),
    done: &mut usize,
    total: usize,
) -> Result<Vec<SawRunRaw>, LabError> {
    let mut out = Vec::new();
    for run in 0..runs {
        for cell in cells {
            ctx.progress.stage(&format!(
                "sawtooth run {} of {runs}: {} (until {cycles} drops of Dirty, at most {:.0} s)",
                run + 1,
                cell.label(),
                cell.duration_s()
            ));
            // what `sim run --live` would start from, read as the run is about to
            // begin (before its sysctls: the estimates do not depend on them)
            let (live, live_not_read) = match crate::sim::live::read(base) {
                Ok(l) => (Some(l), None),
                Err(why) => (None, Some(why)),
            };
            let saw =
                run_sawtooth_in(ctx, base, ID, &cell.knobs(), cell.rate, cell.length(cycles))?;
            out.push(SawRunRaw {
                cell: *cell,
                run,
                saw,
                live,
                live_not_read,
            });
            *done += 1;
            ctx.progress.fraction(*done as f64 / total as f64);
        }
    }
    Ok(out)
}

/// The largest file one run writes, bytes.
fn largest_run_bytes(cells: &[SawCell]) -> u64 {
    cells
        .iter()
        .map(|c| (c.rate as f64 * c.duration_s()) as u64)
        .max()
        .unwrap_or(0)
}

fn on_root(
    ctx: &mut Context,
    cells: &[SawCell],
    runs: (usize, usize),
    done: &mut usize,
    total: usize,
) -> Result<SawDeviceRaw, LabError> {
    let base = ctx.config.scratch_dir.clone();
    ctx.progress
        .stage("sawtooth: probing the root disk's write bandwidth (direct I/O)");
    let probe = Scratch::create(&base, ID, DEVICE_BYTES_QUICK + (64 << 20))?;
    let measured = device_write_bandwidth(probe.dir(), DEVICE_BYTES_QUICK)?;
    drop(probe);
    let runs = run_cells(ctx, &base, cells, runs, done, total)?;
    Ok(SawDeviceRaw {
        device: SawDevice::Root,
        measured_bytes_s: measured,
        cap_bytes_s: None,
        runs,
        teardown_errors: Vec::new(),
        error: None,
    })
}

fn on_testbed(
    ctx: &mut Context,
    cells: &[SawCell],
    runs: (usize, usize),
    cap: u64,
    done: &mut usize,
    total: usize,
) -> Result<SawDeviceRaw, LabError> {
    ctx.progress.stage("sawtooth: building the testbed");
    let size = largest_run_bytes(cells) * 2 + (1 << 30);
    let tb = up_for_run(&ctx.config.scratch_dir, size, cap)?;
    let result = run_cells(ctx, &tb.mount, cells, runs, done, total);
    let errors = down_for_run(&tb);
    let (runs, error) = match result {
        Ok(r) => (r, None),
        Err(e) => (Vec::new(), Some(e.to_string())),
    };
    Ok(SawDeviceRaw {
        device: SawDevice::Testbed,
        measured_bytes_s: tb.measured_bytes_s,
        cap_bytes_s: Some(cap),
        runs,
        teardown_errors: errors,
        error,
    })
}

/// Runs `cells` `runs.0` times each, each run until `runs.1` whole cycles (or its
/// bound), the root disk's first; `cap` is the testbed's. Each run adds one to
/// `done` of the whole validation's `total` steps.
pub fn measure(
    ctx: &mut Context,
    cells: &[SawCell],
    runs: (usize, usize),
    cap: u64,
    (done, total): (&mut usize, usize),
) -> Result<Vec<SawDeviceRaw>, LabError> {
    let mut out = Vec::new();
    for device in [SawDevice::Root, SawDevice::Testbed] {
        let mine: Vec<SawCell> = cells
            .iter()
            .copied()
            .filter(|c| c.device == device)
            .collect();
        if mine.is_empty() {
            continue;
        }
        let result = match device {
            SawDevice::Root => on_root(ctx, &mine, runs, done, total),
            SawDevice::Testbed => on_testbed(ctx, &mine, runs, cap, done, total),
        };
        // a device that cannot be measured (no O_DIRECT on tmpfs, no testbed)
        // costs its cells, not the contested cells measured before them
        out.push(result.unwrap_or_else(|e| SawDeviceRaw {
            device,
            measured_bytes_s: 0.0,
            cap_bytes_s: (device == SawDevice::Testbed).then_some(cap),
            runs: Vec::new(),
            teardown_errors: Vec::new(),
            error: Some(e.to_string()),
        }));
    }
    Ok(out)
}
