//! The probe that shows the kernel's estimates for an idle device: one page
//! written in a scratch folder on it and its file system synced, so that the
//! device's flusher makes one pass; the writeback tracepoints read
//! write_bandwidth, avg_write_bandwidth and dirty_ratelimit off the device's
//! bdi_writeback as the pass begins (writeback_start), before the page's own
//! completion moves them. A throttled writer elsewhere on the device during the
//! probe shows a newer dirty_ratelimit (bdi_dirty_ratelimit), taken instead.

use std::io::Write;
use std::path::Path;

use oslab_trace::analysis::Captured;
use oslab_trace::{Tracer, Watch, WritebackOptions};

use super::Traced;
use oslab_harness::scratch::Scratch;

/// One page of the probe file (written whole, so the pass has one to write).
const PROBE_BYTES: usize = 4096;

/// The estimates of `bdi` ("MAJ:MIN") as one flusher pass on the file system
/// of `dir` showed them, or why they could not be read.
pub fn trace_a_pass(dir: &Path, bdi: &str) -> Result<Traced, String> {
    let tracer = Tracer::writeback(&WritebackOptions {
        watch: Watch::Pids(vec![std::process::id()]),
        ..WritebackOptions::default()
    })
    .map_err(|e| format!("no tracing: {e}"))?;
    let written = write_and_sync(dir);
    let captured = tracer.finish(0);
    written?;
    estimates_of(&captured, bdi).ok_or_else(|| {
        format!("the probe's flusher pass on {bdi} was not seen (no writeback_start record)")
    })
}

/// Writes one page in a fresh scratch folder under `dir` and syncs the file
/// system; the folder is removed after.
fn write_and_sync(dir: &Path) -> Result<(), String> {
    let scratch = Scratch::create(dir, "sim.live", 1 << 20).map_err(|e| e.to_string())?;
    let path = scratch.file("probe.dat");
    let mut f = std::fs::File::create_new(&path)
        .map_err(|e| format!("the probe file {}: {e}", path.display()))?;
    f.write_all(&[0x5a; PROBE_BYTES])
        .map_err(|e| format!("the probe write: {e}"))?;
    oslab_sys::process::syncfs(&f).map_err(|e| format!("the probe's syncfs: {e}"))
}

/// The first flusher pass on `bdi` in `c` (its estimates as it began), and the
/// last dirty_ratelimit a throttled writer on it showed, else the pass's;
/// bytes per second. A pass recorded without its dirty_ratelimit (0: a record
/// from before it was kept; the kernel never lets it fall under a page a
/// second) shows none.
pub fn estimates_of(c: &Captured, bdi: &str) -> Option<Traced> {
    let page = c.page_size.max(1) as f64;
    let pass = c.flushes.iter().find(|f| f.bdi == bdi)?;
    let ratelimit = c
        .bandwidth
        .iter()
        .rev()
        .find(|b| b.bdi == bdi)
        .map(|b| b.dirty_ratelimit)
        .or((pass.dirty_ratelimit > 0).then_some(pass.dirty_ratelimit))
        .map(|pages| pages as f64 * page);
    Some(Traced {
        write_bw: Some(pass.write_bw as f64 * page),
        avg_write_bw: Some(pass.avg_write_bw as f64 * page),
        dirty_ratelimit: ratelimit,
    })
}
