//! What a write into the page cache costs on this machine, per page: into new
//! pages (the copy and the page's allocation; on a VM that reports free memory,
//! the host's fault on first touch) and over pages already cached (the copy
//! alone). sim.validate probes it before its cells; `oslab sim calibrate` keeps it
//! in the machine profile.

use std::io::{Seek, SeekFrom, Write};
use std::path::Path;

use oslab_sys::clock::monotonic_ns;
use serde::{Deserialize, Serialize};

use crate::cells::record::{CHUNK, PERIOD_MS};
use crate::cells::sim_config::DEFAULT_COPY_BYTES_S;
use crate::timed_writer;
use oslab_harness::LabError;

/// What a write cost per page in free run, ns: into new page-cache pages (copy
/// and allocation) and over pages already cached (the copy alone).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct PageCosts {
    pub fresh_ns_per_page: Vec<f64>,
    pub cached_ns_per_page: Vec<f64>,
}

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
pub fn probe(dir: &Path) -> Result<PageCosts, LabError> {
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

/// The copy rate (bytes per second, from the median write over cached pages) and
/// what each probe write into new pages cost beyond it, ns per page.
pub fn costs(c: &PageCosts) -> (f64, Vec<f64>) {
    let cached = oslab_stats::median(&c.cached_ns_per_page).unwrap_or(0.0);
    let copy = if cached > 0.0 {
        4096.0 / cached * 1e9
    } else {
        DEFAULT_COPY_BYTES_S
    };
    let alloc = c
        .fresh_ns_per_page
        .iter()
        .map(|f| (f - cached).max(0.0))
        .collect();
    (copy, alloc)
}
