//! Measuring `io.write`: the writes of every mode and block size, and the probes.

use std::fs::File;
use std::io::Write;
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::time::Duration;

use oslab_sys::clock::monotonic_ns;
use oslab_sys::fileio::{self, AlignedBuf, Mapping, open_write};
use oslab_units::human_bytes;

use super::{Cell, META, MODES, Mode, OverwriteProbe, Plan, Raw, TouchProbe, WriteRun, bs_label};
use oslab_harness::sampler::Sampler;
use oslab_harness::scratch::Scratch;
use oslab_harness::{Context, LabError};
use oslab_services::disk_probe::{disk, disk_facts, meminfo, traffic_since};

/// The probes write at most this much.
const PROBE_MAX: u64 = 256 << 20;

fn one_write(
    path: &Path,
    mode: Mode,
    bs: usize,
    bytes: u64,
    buf: &AlignedBuf,
    device: Option<&str>,
) -> std::io::Result<WriteRun> {
    let _ = std::fs::remove_file(path);
    let mut f = open_write(path, mode.flags(), true)?;
    let d0 = disk(device);
    let t0 = monotonic_ns();
    let mut left = bytes;
    while left > 0 {
        f.write_all(&buf.as_slice()[..bs])?;
        left -= bs as u64;
    }
    let t1 = monotonic_ns();
    let m = meminfo();
    let dmid = disk(device);
    let (_, dev_during) = traffic_since(device, d0);
    let mut sync_s = None;
    if mode == Mode::Buffered {
        let t2 = monotonic_ns();
        fileio::fdatasync(&f).map_err(|e| std::io::Error::other(e.to_string()))?;
        sync_s = Some((monotonic_ns() - t2) as f64 / 1e9);
    }
    let (_, dev_after) = traffic_since(device, dmid);
    drop(f);
    std::fs::remove_file(path)?;
    Ok(WriteRun {
        bytes,
        write_s: (t1 - t0) as f64 / 1e9,
        sync_s,
        dirty_after: m.as_ref().map(|m| m.dirty_bytes),
        writeback_after: m.as_ref().map(|m| m.writeback_bytes),
        dev_during,
        dev_after,
    })
}

/// Touches `len` bytes of fresh anonymous memory one byte per page, then again.
fn first_touch(len: usize) -> Result<TouchProbe, LabError> {
    let page = oslab_sys::machine::page_size() as usize;
    let mut m = Mapping::anonymous(len)?;
    let t0 = monotonic_ns();
    m.touch_write(page);
    let t1 = monotonic_ns();
    m.touch_write(page);
    let t2 = monotonic_ns();
    Ok(TouchProbe {
        bytes: len as u64,
        first_ns: t1 - t0,
        again_ns: t2 - t1,
    })
}

/// Overwrites `bytes` of a file whose pages are all cached already.
fn overwrite_cached(path: &Path, bytes: u64, buf: &AlignedBuf) -> std::io::Result<OverwriteProbe> {
    let mut f = File::create(path)?;
    let mut left = bytes;
    while left > 0 {
        f.write_all(buf.as_slice())?;
        left = left.saturating_sub(buf.as_slice().len() as u64);
    }
    f.sync_all()?;
    let t0 = monotonic_ns();
    let mut off = 0u64;
    while off < bytes {
        f.write_all_at(buf.as_slice(), off)?;
        off += buf.as_slice().len() as u64;
    }
    let secs = (monotonic_ns() - t0) as f64 / 1e9;
    f.sync_all()?;
    drop(f);
    std::fs::remove_file(path)?;
    Ok(OverwriteProbe { bytes, secs })
}

/// Every mode and block size, `plan.samples` times each; stops a mode the file
/// system refuses (O_DIRECT on tmpfs) and says why.
fn write_cells(
    plan: &Plan,
    ctx: &mut Context,
    scratch: &Scratch,
    device: Option<&str>,
) -> Result<(Vec<Cell>, Option<String>), LabError> {
    let cells: Vec<(Mode, u64)> = MODES
        .iter()
        .flat_map(|m| plan.block_sizes.iter().map(move |b| (*m, *b)))
        .collect();
    let total = cells.len() * plan.samples;
    let (mut out, mut refused, mut done) = (Vec::new(), None, 0);
    for (mode, bs) in cells {
        let bytes = plan.bytes_for(mode, bs);
        let buf = AlignedBuf::new(bs as usize, ctx.config.seed + bs);
        let path = scratch.file(&format!("write-{}-{}.dat", mode.name(), bs_label(bs)));
        let mut runs = Vec::new();
        for _ in 0..plan.samples {
            ctx.progress.stage(&format!(
                "{} {} x {}",
                mode.name(),
                bs_label(bs),
                human_bytes(bytes)
            ));
            match one_write(&path, mode, bs as usize, bytes, &buf, device) {
                Ok(r) => runs.push(r),
                Err(e) if mode == Mode::Direct && e.kind() == std::io::ErrorKind::InvalidInput => {
                    refused = Some(format!("the file system refuses O_DIRECT ({e})"));
                    let _ = std::fs::remove_file(&path);
                    break;
                }
                Err(e) => {
                    return Err(LabError::Failed(format!(
                        "{} write of {}: {e}",
                        mode.name(),
                        path.display()
                    )));
                }
            }
            done += 1;
            ctx.progress.fraction(done as f64 / total as f64);
        }
        out.push(Cell {
            mode: mode.name().into(),
            block: bs,
            runs,
        });
    }
    Ok((out, refused))
}

pub fn measure(plan: &Plan, ctx: &mut Context) -> Result<Raw, LabError> {
    let scratch = Scratch::create(&ctx.config.scratch_dir, META.id, plan.size + (64 << 20))?;
    let disk = disk_facts(scratch.dir());
    let device = disk.as_ref().map(|d| d.device.clone());
    let sampler = Sampler::start(Duration::from_millis(100));
    let (cells, refused) = write_cells(plan, ctx, &scratch, device.as_deref())?;
    ctx.progress.stage("probes: first touch, overwrite");
    let probe_len = plan.size.min(PROBE_MAX);
    let touch = first_touch(probe_len as usize)?;
    let big = AlignedBuf::new(1 << 20, ctx.config.seed);
    let overwrite = overwrite_cached(&scratch.file("overwrite.dat"), probe_len, &big)
        .map_err(|e| LabError::Failed(format!("overwrite probe: {e}")))?;
    let snapshots = sampler.stop_snapshots();
    drop(scratch);
    Ok(Raw {
        disk,
        page_bytes: oslab_sys::machine::page_size(),
        cells,
        refused,
        touch,
        overwrite,
        snapshots,
    })
}
