//! The findings of a latency sweep: where each level ends, its cycles, its ratio
//! to sysfs, and the effective last-level cache.

use oslab_model::Finding;
use oslab_units::human_bytes;

use super::claims::RATIO_LOW;
use super::curve::{self, GONE_RATIO, LEFT_RATIO};
use super::judging::{Judging, bytes, edge_words, shared_why};
use oslab_harness::finding;

/// Samples at one size spreading wider than this near an edge are bimodal.
const BIMODAL_SPREAD: f64 = 1.5;

/// Per plateau: where it ends and, with the TSC's rate known, its cycles.
pub(super) fn level_findings(j: &Judging) -> Vec<Finding> {
    let sizes: Vec<u64> = j.raw.small.iter().map(|c| c.bytes).collect();
    let samples: Vec<Vec<f64>> = j.raw.small.iter().map(|c| c.ns.clone()).collect();
    let mut out = Vec::new();
    for p in &j.reading.plateaus {
        if let Some(e) = &p.edge {
            let spread = curve::edge_spread(&sizes, &samples, e.bytes);
            let place = if e.range {
                format!(
                    "{:.2} ns; the plateau ends between {} ({:.2} ns, the last size before the curve first reaches {LEFT_RATIO}x that) and {} ({:.2} ns, the first from which it stays at {GONE_RATIO}x or past the step's middle): the plateau's last size and the next plateau's first lie {:.2} octaves apart, too far to interpolate, so the figure is the range's geometric middle",
                    p.ns,
                    bytes(e.below.bytes),
                    e.below.ns,
                    bytes(e.above.bytes),
                    e.above.ns,
                    e.gap_octaves
                )
            } else {
                format!(
                    "{:.2} ns up to about {} (between the sampled {} at {:.2} ns and {} at {:.2} ns)",
                    p.ns,
                    bytes(e.bytes),
                    bytes(e.below.bytes),
                    e.below.ns,
                    bytes(e.above.bytes),
                    e.above.ns
                )
            };
            out.push(
                finding(
                    &format!("edge.{}", p.name),
                    e.bytes,
                    "bytes",
                    format!(
                        "{place}; the next plateau is {:.1}x slower; samples within half an octave of the edge spread up to {spread:.2}x{}",
                        e.step,
                        if spread > BIMODAL_SPREAD {
                            " (bimodal: the cache may be shared or partitioned)"
                        } else {
                            ""
                        }
                    ),
                )
                .within(e.below.bytes, e.above.bytes),
            );
        }
        if let Some(mhz) = j.mhz {
            out.push(finding(
                &format!("cycles.{}", p.name),
                p.ns * mhz / 1000.0,
                "cycles",
                format!(
                    "{:.2} ns at the TSC's {mhz:.0} MHz (cycles of the TSC; the core's own clock may differ)",
                    p.ns
                ),
            ));
        }
    }
    out
}

/// Per sysfs level: the ratio of its edge to its size and the effective size; then
/// the effective last level.
pub(super) fn sysfs_findings(j: &Judging) -> Vec<Finding> {
    let mut out = Vec::new();
    let mut effective = Vec::new();
    for (i, l) in j.sysfs.iter().enumerate() {
        let edge = j.reading.of_sysfs(i).and_then(|p| p.edge.as_ref());
        if let Some(e) = edge {
            let (r, lo, hi) = e.ratio(l.bytes);
            let size = l.bytes as f64;
            out.push(finding(
                &format!("ratio.{}", l.name),
                r,
                "x",
                if e.range {
                    format!(
                        "the {} edge over its sysfs size ({}): between {lo:.2}x and {hi:.2}x ({}), {r:.2}x at the middle",
                        l.name,
                        human_bytes(l.bytes),
                        edge_words(e)
                    )
                } else {
                    format!(
                        "the {} edge ({}) over its sysfs size ({})",
                        l.name,
                        edge_words(e),
                        human_bytes(l.bytes)
                    )
                },
            ).within(e.below.bytes / size, e.above.bytes / size));
        }
        let f = finding(
            &format!("effective.{}", l.name),
            edge.map_or(f64::NAN, |e| e.bytes),
            "bytes",
            match edge {
                Some(e) => format!(
                    "sysfs {}, effective {} ({:.2}x)",
                    human_bytes(l.bytes),
                    edge_words(e),
                    e.ratio(l.bytes).0
                ),
                None => format!(
                    "sysfs {}, no edge matched it{}",
                    human_bytes(l.bytes),
                    if l.bytes > j.plan.max_size {
                        format!(
                            " (beyond the largest size swept, {})",
                            human_bytes(j.plan.max_size)
                        )
                    } else {
                        String::new()
                    }
                ),
            },
        );
        effective.push(match edge {
            Some(e) => f.within(e.below.bytes, e.above.bytes),
            None => f,
        });
    }
    out.extend(effective);
    out.push(last_level(j));
    out
}

/// Where the caches this program could use end: in every run, "-" with the reason
/// where the curve never settled at memory's latency within the sizes measured.
fn last_level(j: &Judging) -> Finding {
    let found = j
        .reading
        .memory_entry
        .as_ref()
        .zip(j.sysfs.last())
        .zip(j.reading.memory());
    let Some(((e, last), mem)) = found else {
        return last_level_not_reached(j);
    };
    let r = e.bytes / last.bytes as f64;
    let cache = j
        .reading
        .plateaus
        .iter()
        .rev()
        .find(|p| p.sysfs.is_some())
        .map_or_else(String::new, |p| {
            format!(" (the last cache level found is {})", p.shown())
        });
    finding(
        "effective.last_level",
        e.bytes,
        "bytes",
        format!(
            "the curve reaches memory's latency ({:.0} ns) between {} ({:.1} ns) and {} ({:.1} ns): the caches this program could use end there{cache}; sysfs says the last level, {}, is {}: {r:.2}x of it{}",
            mem.ns,
            bytes(e.below.bytes),
            e.below.ns,
            bytes(e.above.bytes),
            e.above.ns,
            last.name,
            human_bytes(last.bytes),
            if r < RATIO_LOW {
                format!(
                    "; this program could use far less than sysfs describes: {}",
                    shared_why(j.hypervisor.as_deref())
                )
            } else {
                String::new()
            }
        ),
    )
    .within(e.below.bytes, e.above.bytes)
}

/// The last level when the curve did not reach memory's latency: not found, and
/// why, with what sysfs describes and the setting that measures further.
fn last_level_not_reached(j: &Judging) -> Finding {
    let sysfs = j.sysfs.last().map_or_else(
        || "sysfs describes no cache".to_string(),
        |l| {
            format!(
                "sysfs says the last level, {}, is {}",
                l.name,
                human_bytes(l.bytes)
            )
        },
    );
    finding(
        "effective.last_level",
        f64::NAN,
        "bytes",
        format!(
            "not found in this run: the curve did not settle at memory's latency up to the largest size measured, {} (the caches this program could use end beyond it, or the largest sizes were disturbed); {sysfs}; --set max_size=SIZE measures further",
            human_bytes(j.plan.max_size)
        ),
    )
}
