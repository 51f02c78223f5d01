//! The figures the findings, the notes and the claims read: the medians of a
//! cell, the probes' figures, the disk's flags.

use oslab_model::Environment;
use oslab_units::human_bytes;

use super::{Cell, Raw, WriteRun};
use oslab_services::disk_probe::mb_s;

/// The block size both claims compare at.
pub(super) const BIG: u64 = 1 << 20;

fn med(v: &[f64]) -> f64 {
    oslab_stats::median(v).unwrap_or(f64::NAN)
}

/// The medians of one cell.
pub(super) struct CellFigures {
    pub(super) write_rate: f64,
    pub(super) synced_rate: f64,
    /// Device bytes during / after the calls over the bytes written.
    pub(super) during: f64,
    pub(super) after: f64,
    pub(super) during_bytes: f64,
    pub(super) after_bytes: f64,
    pub(super) dirty: Option<f64>,
    pub(super) writeback: Option<f64>,
}

pub(super) fn cell_figures(c: &Cell) -> CellFigures {
    let col = |f: fn(&WriteRun) -> f64| -> Vec<f64> { c.runs.iter().map(f).collect() };
    let bytes = c.runs[0].bytes as f64;
    let during_bytes = med(&col(|r| r.dev_during as f64));
    let after_bytes = med(&col(|r| r.dev_after as f64));
    let opt = |v: Vec<Option<u64>>| -> Option<f64> {
        let v: Option<Vec<f64>> = v.into_iter().map(|x| x.map(|x| x as f64)).collect();
        v.and_then(|v| oslab_stats::median(&v))
    };
    CellFigures {
        write_rate: med(&col(|r| mb_s(r.bytes, r.write_s))),
        synced_rate: med(&col(|r| mb_s(r.bytes, r.write_s + r.sync_s.unwrap_or(0.0)))),
        during: during_bytes / bytes,
        after: after_bytes / bytes,
        during_bytes,
        after_bytes,
        dirty: opt(c.runs.iter().map(|r| r.dirty_after).collect()),
        writeback: opt(c.runs.iter().map(|r| r.writeback_after).collect()),
    }
}

pub(super) fn opt_bytes(v: Option<f64>) -> String {
    v.map_or_else(|| "unknown".into(), |b| human_bytes(b.max(0.0) as u64))
}

/// The probes' figures: ns per fresh page, ns per page again, the MB/s of new pages
/// that first cost allows, the overwrite rate.
pub(super) struct Probes {
    pub(super) touch_new_ns: f64,
    pub(super) touch_again_ns: f64,
    pub(super) page_limit_mb_s: f64,
    pub(super) overwrite_mb_s: f64,
}

pub(super) fn probes(raw: &Raw) -> Probes {
    let pages = (raw.touch.bytes / raw.page_bytes.max(1)).max(1) as f64;
    let touch_new_ns = raw.touch.first_ns as f64 / pages;
    Probes {
        touch_new_ns,
        touch_again_ns: raw.touch.again_ns as f64 / pages,
        page_limit_mb_s: if touch_new_ns > 0.0 {
            raw.page_bytes as f64 / touch_new_ns * 1e9 / 1e6
        } else {
            f64::NAN
        },
        overwrite_mb_s: mb_s(raw.overwrite.bytes, raw.overwrite.secs),
    }
}

/// The device's write cache and rotational flags: read during the run, else as the
/// environment recorded them for the same disk.
pub(super) fn disk_flags(raw: &Raw, env: &Environment) -> (Option<String>, Option<bool>) {
    let Some(d) = &raw.disk else {
        return (None, None);
    };
    let recorded = env.machine.block_devices.iter().find(|b| b.name == d.disk);
    (
        d.write_cache
            .clone()
            .or_else(|| recorded.and_then(|b| b.write_cache.clone())),
        d.rotational.or_else(|| recorded.and_then(|b| b.rotational)),
    )
}
