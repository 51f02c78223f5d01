//! io.read's claims: a warm read is served from memory, and the page cache grows by
//! the file.

use oslab_model::Claim;
use oslab_units::human_bytes;

use super::Raw;
use super::figures::{Figures, MIB};
use oslab_harness::check::{Check, Condition, Rule};

pub(super) const WARM_FASTER: Check = Check {
    id: "warm-read-faster",
    tolerates: &oslab_harness::interference::TIMES,
    text: "A warm read is many times faster than a cold one and causes no device reads",
    source: "S. Takeuchi, \"Linux no Shikumi\", ch. \"Memory hierarchy\" (a reader's run on a Surface Pro 7, in a 2021 blog summary of the book: cold 1.117 s, warm 0.134 s for 1 GiB)",
};

pub(super) const CACHE_GROWS: Check = Check {
    id: "cache-grows-once",
    tolerates: &oslab_harness::interference::TIMES,
    text: "buff/cache grows by about the file size during the first read and not during the second",
    source: "S. Takeuchi, \"Linux no Shikumi\", ch. \"Memory hierarchy\" (page cache)",
};

/// "Many times faster": at least this ratio of cold to warm time.
pub(super) const MIN_SPEEDUP: f64 = 3.0;

/// "No device reads": under this many bytes per byte of the file.
pub(super) const MAX_WARM_DEVICE: f64 = 0.05;

/// "About the file size": at least this share of it.
pub(super) const MIN_GROWTH: f64 = 0.9;

/// Eviction that leaves more than this share cached made the cold read partly warm.
pub(super) const EVICTED_ENOUGH: f64 = 0.05;

pub(super) fn pct(x: f64) -> String {
    format!("{:.0} %", x * 100.0)
}

pub(super) fn warm_faster(raw: &Raw, f: &Figures) -> Claim {
    let conditions = [
        Condition::new(
            "cold over warm read time",
            "x",
            Rule::AtLeast(MIN_SPEEDUP),
            f.speedup,
        ),
        Condition::new(
            "device bytes read during the warm read over the file size",
            "x",
            Rule::Below(MAX_WARM_DEVICE),
            f.warm_dev / f.size as f64,
        ),
    ];
    let context = format!(
        "cold {:.3} s, warm {:.3} s; device read {} cold, {} warm",
        f.cold_s,
        f.warm_s,
        human_bytes(f.cold_dev.max(0.0) as u64),
        human_bytes(f.warm_dev.max(0.0) as u64)
    );
    WARM_FASTER.judge(&conditions, &context, |o| {
        if o.holds() {
            "the second read was served from the page cache".into()
        } else if o.failed(1) {
            match f.after_cold.is_finite() {
                true => format!(
                    "the warm read still went to the device: only {} of the file was cached after the cold read (memory pressure?)",
                    pct(f.after_cold)
                ),
                false => "the warm read still went to the device: the file did not stay cached (memory pressure?)".into(),
            }
        } else if raw.disk.is_none() {
            "the scratch directory is on no block device: the 'cold' read came from memory as well".into()
        } else if f.host_cached() {
            format!(
                "the cold read ran at {:.0} MB/s by the device counters, faster than a disk: under {} the host caches this virtual disk, so 'cold' is only cold for the guest",
                f.cold_dev_rate,
                f.hypervisor.as_deref().unwrap_or("the hypervisor")
            )
        } else if f.before_cold > EVICTED_ENOUGH {
            format!(
                "eviction left {} of the file cached, so the cold read was partly warm",
                pct(f.before_cold)
            )
        } else {
            format!(
                "cold and warm reads ran at similar speed: the device delivered {:.0} MB/s",
                f.cold_dev_rate
            )
        }
    })
}

pub(super) fn cache_grows(f: &Figures) -> Claim {
    let size_mib = f.size as f64 / MIB;
    let conditions = [
        Condition::new(
            "Buffers + Cached growth during the cold read",
            "MiB",
            Rule::AtLeast(MIN_GROWTH * size_mib),
            f.grow_cold / MIB,
        ),
        Condition::new(
            "its change during the warm read (either way)",
            "MiB",
            Rule::Below(MAX_WARM_DEVICE * size_mib),
            f.grow_warm.abs() / MIB,
        ),
    ];
    let context = format!("file {}", human_bytes(f.size));
    CACHE_GROWS.judge(&conditions, &context, |o| {
        if o.holds() {
            "the first read filled the page cache; the second found it there".into()
        } else if o.failed(0) && f.after_cold.is_finite() && f.after_cold < MIN_GROWTH {
            format!(
                "the cache did not keep the file: {} of its pages were cached after the cold read",
                pct(f.after_cold)
            )
        } else if o.failed(0) {
            format!(
                "the file was cached after the cold read ({} of its pages) yet Buffers + Cached grew less: the counter is global, and other programs' cache shrank at the same time",
                if f.after_cold.is_finite() { pct(f.after_cold) } else { "residency unknown".into() }
            )
        } else {
            "the warm read found the file cached, yet Buffers + Cached moved: the counter is global, and other activity changed it at the same time".into()
        }
    })
}
