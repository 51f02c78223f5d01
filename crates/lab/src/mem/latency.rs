//! `mem.latency`: load-to-use latency vs working-set size, every cache level found
//! from the measurement alone and held against sysfs.
//!
//! Method: a dependent pointer chase through one random cycle of the cache lines of
//! the working set (Sattolo's algorithm), so no prefetcher can guess the next line;
//! sizes visited in a shuffled order; 4 KiB pages (MADV_NOHUGEPAGE) and, separately,
//! transparent huge pages (MADV_HUGEPAGE, with what the kernel granted read back
//! from /proc/self/smaps). The 4 KiB curve is segmented into plateaus
//! (`oslab_stats::levels`); each plateau is a level, its edge the capacity the
//! program could use. Sequential sweeps like the book's cache.c measure throughput
//! and the prefetcher hides L2 and L3 in them; that is `mem.bandwidth`.

use oslab_model::{Axis, Claim, Marker, Plot, Scale, Series, SeriesStyle, Verdict};
use oslab_stats::levels::{self, Level};
use oslab_sys::parse::size::human_bytes;

use super::sweep::{chase_size, dense_around, log_sizes, merged, shuffled, sysfs_levels};
use crate::experiment::{
    Context, Experiment, LabError, Meta, Needs, Outcome, Output, finding, measurement,
};
use crate::settings::{AnySetting, Bytes, Declared, Setting};

pub struct MemLatency;

static META: Meta = Meta {
    id: "mem.latency",
    title: "Memory latency vs working set: the cache levels, found by measurement",
    section: "1",
    summary: "random pointer chase from 1 KiB up, 4 KiB pages and huge pages; detected levels vs sysfs",
    needs: Needs {
        root: false,
        min_cpus: 1,
        free_disk_bytes: 0,
    },
    quick_s: 15.0,
    full_s: 240.0,
    internal: false,
};

static MAX_SIZE: Setting<Bytes> = Setting {
    name: "max_size",
    help: "largest working set",
    quick: 256 << 20,
    full: 1 << 30,
    bounds: Some((64 << 10, 16 << 30)),
    names: &[],
};
static SETTINGS: [&dyn AnySetting; 1] = [&MAX_SIZE];

/// How a sysfs level compares with what was measured.
#[derive(Debug, Clone, PartialEq)]
pub struct Match {
    pub name: String,
    pub sysfs: u64,
    /// The detected edge within 2x of sysfs, if any.
    pub matched: Option<f64>,
}

/// Each sysfs level against the detected edges: matched when one is within 2x.
pub fn match_levels(sysfs: &[(String, u64)], found: &[Level]) -> Vec<Match> {
    sysfs
        .iter()
        .map(|(name, s)| Match {
            name: name.clone(),
            sysfs: *s,
            matched: found
                .iter()
                .filter_map(|l| l.edge_x)
                .filter(|e| *e >= *s as f64 / 2.0 && *e <= *s as f64 * 2.0)
                .min_by(|a, b| {
                    (a / *s as f64)
                        .ln()
                        .abs()
                        .total_cmp(&(b / *s as f64).ln().abs())
                }),
        })
        .collect()
}

/// The largest max/min ratio of the samples at one size, over the sizes within half
/// an octave of `edge`: a wide spread at an edge means the same size sometimes fit
/// and sometimes did not (a cache shared with others, or partitioned).
pub fn edge_spread(sizes: &[u64], samples: &[Vec<f64>], edge: f64) -> f64 {
    sizes
        .iter()
        .zip(samples)
        .filter(|(s, _)| (**s as f64 / edge).log2().abs() <= 0.5)
        .filter_map(|(_, v)| {
            let lo = v.iter().copied().fold(f64::INFINITY, f64::min);
            let hi = v.iter().copied().fold(0.0, f64::max);
            (lo > 0.0 && lo.is_finite()).then_some(hi / lo)
        })
        .fold(1.0, f64::max)
}

/// Medians per size, in size order, from samples measured in any order.
fn curve(sizes: &[u64], samples: &[Vec<f64>]) -> (Vec<f64>, Vec<f64>) {
    let x = sizes.iter().map(|s| *s as f64).collect();
    let y = samples
        .iter()
        .map(|v| oslab_stats::median(v).unwrap_or(f64::NAN))
        .collect();
    (x, y)
}

fn sweep(
    ctx: &Context,
    sizes: &[u64],
    huge: bool,
    samples: usize,
    done: &mut usize,
    total: usize,
) -> Result<(Vec<Vec<f64>>, Vec<f64>), LabError> {
    let mut out = vec![Vec::new(); sizes.len()];
    let mut huge_frac = vec![0.0; sizes.len()];
    for i in shuffled(sizes.len(), ctx.config.seed + huge as u64) {
        let (v, h) = chase_size(sizes[i], 64, |_| 0, huge, samples, ctx.config.seed)?;
        out[i] = v;
        huge_frac[i] = h;
        *done += 1;
        ctx.progress.fraction(*done as f64 / total as f64);
    }
    Ok((out, huge_frac))
}

impl Experiment for MemLatency {
    fn meta(&self) -> &Meta {
        &META
    }

    fn settings(&self) -> Declared {
        &SETTINGS
    }

    fn run(&self, ctx: &mut Context) -> Result<Outcome, LabError> {
        let quick = ctx.config.quick();
        let max = ctx.get(&MAX_SIZE);
        let samples = ctx.samples(3, 5);
        let sysfs = sysfs_levels(ctx.machine);
        let sizes = if quick {
            log_sizes(1024, max, 4)
        } else {
            let near: Vec<u64> = sysfs.iter().map(|l| l.1).filter(|s| *s <= max).collect();
            merged([log_sizes(1024, max, 8), dense_around(&near, max)].concat())
        };
        let huge_sizes = log_sizes(64 << 10, max, if quick { 2 } else { 4 });
        let total = sizes.len() + huge_sizes.len();
        let mut done = 0;
        ctx.progress.stage("4 KiB pages");
        let (small, _) = sweep(ctx, &sizes, false, samples, &mut done, total)?;
        ctx.progress.stage("huge pages");
        let (huge, huge_frac) = sweep(ctx, &huge_sizes, true, samples, &mut done, total)?;

        let (x, y) = curve(&sizes, &small);
        let found = levels::detect(&x, &y, levels::Options::default());
        let matches = match_levels(&sysfs, &found);
        let (hx, hy) = curve(&huge_sizes, &huge);
        let granted = {
            let big: Vec<f64> = huge_sizes
                .iter()
                .zip(&huge_frac)
                .filter(|(s, _)| **s >= 4 << 20)
                .map(|(_, f)| *f)
                .collect();
            oslab_stats::median(&big).unwrap_or(0.0)
        };
        let seed = ctx.config.seed;

        let mut measurements = Vec::new();
        let mut findings = Vec::new();
        for (k, l) in found.iter().enumerate() {
            let pooled: Vec<f64> = sizes
                .iter()
                .zip(&small)
                .filter(|(s, _)| **s as f64 >= l.from_x && **s as f64 <= l.to_x)
                .flat_map(|(_, v)| v.clone())
                .collect();
            let what = if l.edge_x.is_none() {
                "memory (last plateau)".to_string()
            } else {
                format!("level {}", k + 1)
            };
            measurements.push(measurement(
                &format!("ns.level{}", k + 1),
                &format!(
                    "{what}: {} to {}",
                    human_bytes(l.from_x as u64),
                    human_bytes(l.to_x as u64)
                ),
                "ns",
                pooled,
                seed,
                None,
            ));
            if let Some(e) = l.edge_x {
                let spread = edge_spread(&sizes, &small, e);
                findings.push(finding(
                    &format!("edge.level{}", k + 1),
                    e,
                    "bytes",
                    format!(
                        "{:.2} ns up to about {}; the next plateau is {:.1}x slower; edge width {:.2} octaves; samples within half an octave of the edge spread up to {:.2}x{}",
                        l.value,
                        human_bytes(e as u64),
                        l.step.unwrap_or(f64::NAN),
                        l.edge_width_octaves.unwrap_or(f64::NAN),
                        spread,
                        if spread > 1.5 { " (bimodal: the cache may be shared or partitioned)" } else { "" }
                    ),
                ));
            }
        }
        for m in &matches {
            findings.push(finding(
                &format!("effective.{}", m.name),
                m.matched.unwrap_or(f64::NAN),
                "bytes",
                match m.matched {
                    Some(e) => format!(
                        "sysfs {}, effective {} (measured edge within 2x: matches)",
                        human_bytes(m.sysfs),
                        human_bytes(e as u64)
                    ),
                    None => format!(
                        "sysfs {}, no edge within 2x of it{}",
                        human_bytes(m.sysfs),
                        if m.sysfs > max {
                            format!(" (beyond the largest size swept, {})", human_bytes(max))
                        } else {
                            String::new()
                        }
                    ),
                },
            ));
        }
        let last_edge = found.iter().filter_map(|l| l.edge_x).fold(0.0, f64::max);
        if let (Some((name, size)), true) = (sysfs.last(), last_edge > 0.0) {
            findings.push(finding(
                "effective.last_level",
                last_edge,
                "bytes",
                format!(
                    "the last edge before memory ({:.0} ns) is at {}; sysfs says {name} is {}{}",
                    found.last().map(|l| l.value).unwrap_or(f64::NAN),
                    human_bytes(last_edge as u64),
                    human_bytes(*size),
                    if (*size as f64) > 2.0 * last_edge {
                        ": this program could use far less than sysfs describes (in a VM the host's cache is shared with other guests or partitioned)"
                    } else {
                        ""
                    }
                ),
            ));
        }
        findings.push(finding(
            "thp_granted",
            granted,
            "fraction",
            "median share of the huge-page buffers (4 MiB and up) the kernel backed with huge pages (AnonHugePages)",
        ));
        let mut notes = vec![format!(
            "{} sizes with 4 KiB pages, {} with huge pages, {samples} samples each, visited in a shuffled order; cycles per access are not given: the TSC frequency is not read here",
            sizes.len(),
            huge_sizes.len()
        )];
        if last_edge > 0.0 && (max as f64) < 8.0 * last_edge {
            notes.push(format!("the sweep ends at {}, less than 8x the last edge found ({}): memory latency may be understated", human_bytes(max), human_bytes(last_edge as u64)));
        }
        if quick {
            notes.push("quick mode: 4 points per octave, so edges are located to within about a quarter octave (19 %)".into());
        }
        if granted < 0.5 {
            notes.push(format!("huge pages were not granted (only {:.0} % of the buffer): the huge-page curve is not a TLB comparison", granted * 100.0));
        }

        let matched_small = matches
            .iter()
            .filter(|m| m.sysfs <= 4 << 20)
            .all(|m| m.matched.is_some());
        let steps_ok = found.len() >= 3;
        let claim = Claim {
            id: "latency-jumps-per-level".into(),
            text: "Access time jumps each time the working set outgrows a cache level".into(),
            source: "material 1 (the book's memory mountain; seed 000)".into(),
            expectation: "at least two cache plateaus and memory found by measurement, the small levels within 2x of sysfs".into(),
            observed: format!(
                "{} plateaus: {}; {}",
                found.len(),
                found.iter().map(|l| format!("{:.1} ns to {}", l.value, l.edge_x.map(|e| human_bytes(e as u64)).unwrap_or_else(|| "end".into()))).collect::<Vec<_>>().join(", "),
                matches.iter().map(|m| format!("{} sysfs {} -> {}", m.name, human_bytes(m.sysfs), m.matched.map(|e| human_bytes(e as u64)).unwrap_or_else(|| "not found".into()))).collect::<Vec<_>>().join(", ")
            ),
            verdict: if steps_ok && matched_small { Verdict::Holds } else { Verdict::Differs },
            why: if steps_ok && matched_small {
                "each level's plateau ends near its size, and the next one is slower".into()
            } else {
                "some level did not show as a step where sysfs puts it (a shared or partitioned cache in a VM shows less than CPUID describes)".into()
            },
        };
        let mut markers: Vec<Marker> = sysfs
            .iter()
            .filter(|(_, s)| *s <= max * 2)
            .map(|(n, s)| Marker {
                x: *s as f64,
                label: format!("sysfs {n} {}", human_bytes(*s)),
            })
            .collect();
        markers.extend(found.iter().enumerate().filter_map(|(k, l)| {
            l.edge_x.map(|e| Marker {
                x: e,
                label: format!("edge {} {}", k + 1, human_bytes(e as u64)),
            })
        }));
        let pts = |x: &[f64], y: &[f64]| {
            x.iter()
                .zip(y)
                .filter(|(_, b)| b.is_finite())
                .map(|(a, b)| [*a, *b])
                .collect()
        };
        Ok(Outcome::Completed(Output {
            measurements,
            findings,
            claims: vec![claim],
            plots: vec![Plot {
                id: "latency".into(),
                title: "load-to-use latency vs working set (random chase)".into(),
                x: Axis::new("working set", "bytes", Scale::Log2),
                y: Axis::new("latency", "ns", Scale::Log10),
                series: vec![
                    Series {
                        name: "4 KiB pages".into(),
                        style: SeriesStyle::LinePoints,
                        points: pts(&x, &y),
                    },
                    Series {
                        name: "huge pages".into(),
                        style: SeriesStyle::LinePoints,
                        points: pts(&hx, &hy),
                    },
                ],
                markers,
                x_labels: vec![],
            }],
            notes,
            ..Default::default()
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn level(edge: Option<f64>) -> Level {
        Level {
            value: 1.0,
            from_x: 0.0,
            to_x: 0.0,
            edge_x: edge,
            step: None,
            edge_width_octaves: None,
        }
    }

    #[test]
    fn spread_at_an_edge() {
        let sizes = [1 << 20, 2 << 20, 8 << 20];
        let samples = vec![vec![1.0, 1.1], vec![1.0, 3.0], vec![10.0, 50.0]];
        assert_eq!(
            edge_spread(&sizes, &samples, (2 << 20) as f64),
            3.0,
            "8 MiB is two octaves away"
        );
        assert_eq!(edge_spread(&sizes, &samples, 1e12), 1.0, "nothing near");
    }

    #[test]
    fn sysfs_levels_match_edges_within_2x() {
        let sysfs = vec![
            ("L1d".to_string(), 48 << 10),
            ("L2".to_string(), 2 << 20),
            ("L3".to_string(), 480 << 20),
        ];
        let found = vec![
            level(Some(40e3)),
            level(Some(1.5e6)),
            level(Some(30e6)),
            level(None),
        ];
        let m = match_levels(&sysfs, &found);
        assert_eq!(m[0].matched, Some(40e3));
        assert_eq!(m[1].matched, Some(1.5e6));
        assert_eq!(m[2].matched, None, "30 MB is not within 2x of 480 MiB");
    }
}
