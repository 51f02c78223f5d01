//! `mem.locality`: what loop order costs, inside and outside the caches.
//!
//! What: a square 2-D array of u32 summed row by row (in memory order) and column
//! by column (a stride of one row), at 16 KiB, 1 MiB, 16 MiB and 256 MiB (64, 512,
//! 2048 and 8192 on a side): ns per element both ways and their ratio.
//!
//! Method: both sums are computed once and compared (a traversal that skipped
//! elements would show); each sample repeats the traversal until it lasts at least
//! 2 ms and is kept as its time and repetitions; the two orders alternate size by
//! size.
//!
//! Pitfalls: the row loop runs through consecutive elements, so the compiler can
//! vectorise it (SIMD) while the column loop cannot: even inside L1 the ratio is
//! above 1. The hardware prefetcher follows a constant stride, so a column walk
//! over a large array is not as slow as one miss per element. "Beyond the caches"
//! holds only while the largest array is well above the last-level cache, which
//! the claim checks against sysfs.
//!
//! References: material section 1 (locality), the book's row/column sum example.

use oslab_model::{Axis, Claim, Environment, Plot, Scale, Series, SeriesStyle};
use oslab_sys::parse::size::human_bytes;
use serde::{Deserialize, Serialize};

use crate::harness::check::{Check, Condition, Rule};
use crate::harness::{Context, LabError, Meta, Needs, Output, finding, measurement};
use crate::harness::{Experiment, Measured, Planner};
use crate::mem::common::sweep::sysfs_of;

pub struct MemLocality;

static META: Meta = Meta {
    id: "mem.locality",
    title: "Locality: row-major vs column-major traversal of a 2-D array",
    section: "1",
    summary: "ns per element both ways at 16 KiB, 1 MiB, 16 MiB and 256 MiB arrays",
    needs: Needs {
        root: false,
        min_cpus: 1,
        free_disk_bytes: 0,
    },
    quick_s: 4.0,
    full_s: 12.0,
    internal: false,
};

/// Elements on a side: 16 KiB, 1 MiB, 16 MiB and 256 MiB of u32.
const SIDES: [usize; 4] = [64, 512, 2048, 8192];
const ELEMENT: usize = 4;
/// A sample lasts at least this long.
const SAMPLE_NS: u64 = 2_000_000;
/// Beyond the caches the column walk costs more than this many row walks ...
pub const LARGE_RATIO_ABOVE: f64 = 4.0;
/// ... and more than this many times its ratio inside L1.
pub const GROWTH_ABOVE: f64 = 3.0;
/// The largest array must be at least this many times the last-level cache.
pub const BEYOND_LLC: f64 = 2.0;

pub const ORDER: Check = Check {
    id: "loop-order-matters-out-of-cache",
    text: "Loop order hardly matters while the array fits in the cache and matters a lot once it does not",
    source: "material 1 (locality; seed 000)",
};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Plan {
    pub samples: usize,
    /// Elements on a side of each array.
    pub sides: Vec<usize>,
}

/// Samples of one traversal: each the time of `reps` traversals.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Timed {
    pub reps: u64,
    pub ns: Vec<u64>,
}

impl Timed {
    /// ns per element of each sample over an n x n array.
    pub fn per_element(&self, side: usize) -> Vec<f64> {
        let elements = (self.reps * (side * side) as u64).max(1) as f64;
        self.ns.iter().map(|ns| *ns as f64 / elements).collect()
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ArrayRaw {
    pub side: usize,
    pub rows: Timed,
    pub cols: Timed,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Raw {
    pub arrays: Vec<ArrayRaw>,
}

#[inline(never)]
fn sum_rows(a: &[u32], n: usize) -> u64 {
    let mut s = 0u64;
    for r in 0..n {
        for c in 0..n {
            s = s.wrapping_add(a[r * n + c] as u64);
        }
    }
    s
}

#[inline(never)]
fn sum_cols(a: &[u32], n: usize) -> u64 {
    let mut s = 0u64;
    for c in 0..n {
        for r in 0..n {
            s = s.wrapping_add(a[r * n + c] as u64);
        }
    }
    s
}

/// `samples` timings of `f` over an n x n array, each of >= 2 ms.
fn time_it(a: &[u32], n: usize, samples: usize, f: fn(&[u32], usize) -> u64) -> Timed {
    let now = oslab_sys::clock::monotonic_ns;
    std::hint::black_box(f(a, n));
    let t0 = now();
    std::hint::black_box(f(a, n));
    let once = (now() - t0).max(1);
    let reps = (SAMPLE_NS / once).clamp(1, 10_000);
    let ns = (0..samples)
        .map(|_| {
            let t0 = now();
            for _ in 0..reps {
                std::hint::black_box(f(std::hint::black_box(a), n));
            }
            now() - t0
        })
        .collect();
    Timed { reps, ns }
}

impl Experiment for MemLocality {
    type Plan = Plan;
    type Raw = Raw;

    fn meta(&self) -> &Meta {
        &META
    }

    fn plan(&self, p: &mut Planner) -> Plan {
        Plan {
            samples: p.samples(3, 5),
            sides: SIDES.to_vec(),
        }
    }

    fn measure(&self, plan: &Plan, ctx: &mut Context) -> Result<Measured<Raw>, LabError> {
        let mut arrays = Vec::new();
        for (k, &n) in plan.sides.iter().enumerate() {
            let a: Vec<u32> = (0..n * n).map(|i| (i % 7) as u32).collect();
            if sum_rows(&a, n) != sum_cols(&a, n) {
                return Err(LabError::Failed(
                    "the two traversals disagree on the sum".into(),
                ));
            }
            arrays.push(ArrayRaw {
                side: n,
                rows: time_it(&a, n, plan.samples, sum_rows),
                cols: time_it(&a, n, plan.samples, sum_cols),
            });
            ctx.progress
                .fraction((k + 1) as f64 / plan.sides.len() as f64);
        }
        Ok(Measured::Raw(Raw { arrays }))
    }

    fn judge(&self, _plan: &Plan, raw: &Raw, env: &Environment) -> Output {
        judge(raw, env)
    }
}

fn bytes_of(side: usize) -> u64 {
    (side * side * ELEMENT) as u64
}

fn judge(raw: &Raw, env: &Environment) -> Output {
    let mut out = Output::default();
    let mut ratios = Vec::new();
    for a in &raw.arrays {
        let bytes = bytes_of(a.side);
        let name = human_bytes(bytes).replace(' ', "");
        let (rows, cols) = (a.rows.per_element(a.side), a.cols.per_element(a.side));
        let med = |v: &[f64]| oslab_stats::median(v).unwrap_or(f64::NAN);
        let ratio = med(&cols) / med(&rows).max(1e-12);
        let n = a.side;
        out.measurements.push(measurement(
            &format!("ns.rows.{name}"),
            &format!("row by row, {n} x {n}"),
            "ns",
            rows,
            env.seed,
            None,
        ));
        out.measurements.push(measurement(
            &format!("ns.cols.{name}"),
            &format!("column by column, {n} x {n}"),
            "ns",
            cols,
            env.seed,
            None,
        ));
        out.findings.push(finding(
            &format!("ratio.{name}"),
            ratio,
            "x",
            format!("column-major / row-major time at {}", human_bytes(bytes)),
        ));
        ratios.push((bytes, ratio));
    }
    let llc = sysfs_of!(env.machine)
        .last()
        .map(|l| (l.name.clone(), l.bytes));
    out.claims.push(claim(&ratios, llc));
    out.notes.push(format!(
        "arrays of u32; {} samples per order and size, each repeating the traversal for at least {} ms",
        raw.arrays.first().map_or(0, |a| a.rows.ns.len()),
        SAMPLE_NS / 1_000_000
    ));
    out.plots.push(Plot {
        id: "locality".into(),
        title: "column-major / row-major time vs array size".into(),
        x: Axis::new("array", "bytes", Scale::Log2),
        y: Axis::new("ratio", "x", Scale::Linear),
        series: vec![Series {
            name: "cols / rows".into(),
            style: SeriesStyle::LinePoints,
            points: ratios.iter().map(|(b, r)| [*b as f64, *r]).collect(),
        }],
        markers: vec![],
        x_labels: vec![],
    });
    out
}

/// The claim on the ratios (bytes, ratio), smallest array first, with the
/// last-level cache sysfs describes.
fn claim(ratios: &[(u64, f64)], llc: Option<(String, u64)>) -> Claim {
    let (Some(&(small_b, small)), Some(&(large_b, large))) = (ratios.first(), ratios.last()) else {
        return ORDER.not_judged(
            "column/row ratios inside and beyond the caches",
            "no array was measured",
        );
    };
    let (s, l) = (human_bytes(small_b), human_bytes(large_b));
    let conditions = [
        Condition::new(
            format!("column/row time at {l}"),
            "x",
            Rule::Above(LARGE_RATIO_ABOVE),
            large,
        ),
        Condition::new(
            format!("ratio at {l} / ratio at {s}"),
            "x",
            Rule::Above(GROWTH_ABOVE),
            large / small,
        ),
    ];
    if let Some((name, llc)) = &llc
        && (large_b as f64) < BEYOND_LLC * *llc as f64
    {
        let expectation = conditions
            .iter()
            .map(|c| c.rule.describe(&c.subject, &c.unit))
            .collect::<Vec<_>>()
            .join(", and ");
        return ORDER.not_testable(
            &expectation,
            format!(
                "the largest array ({l}) is not beyond the caches here: sysfs describes a {} {name}, and it should be at least {BEYOND_LLC}x that",
                human_bytes(*llc)
            ),
        );
    }
    let context = ratios
        .iter()
        .map(|(b, r)| format!("{}: {r:.2}x", human_bytes(*b)))
        .collect::<Vec<_>>()
        .join(", ");
    ORDER.judge(&conditions, &context, |o| {
        if o.holds() {
            format!(
                "a column walk uses one element of each line it loads; in the cache the line stays for the next column, out of it every access is a miss{}",
                if small >= 1.5 {
                    format!(". Even inside L1 the ratio is {small:.1}x here: the row loop runs through consecutive elements, which the compiler can vectorise (SIMD), and a stride of one row cannot be")
                } else {
                    String::new()
                }
            )
        } else if o.failed(0) {
            format!("beyond the caches a column walk costs only {large:.1}x a row walk: the prefetcher keeps up with its constant stride here, or the row walk is as slow per element (an unoptimised loop)")
        } else {
            format!("inside L1 the ratio is already {small:.1}x, so loop order costs nearly as much in the cache as out of it")
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use oslab_model::Verdict;

    /// Arrays whose column walk costs `ratios[k]` row walks (rows 1 ns/element).
    fn raw(ratios: [f64; 4]) -> Raw {
        Raw {
            arrays: SIDES
                .iter()
                .zip(ratios)
                .map(|(&side, r)| {
                    let t = |ns_per: f64| Timed {
                        reps: 2,
                        ns: vec![(ns_per * 2.0 * (side * side) as f64) as u64; 3],
                    };
                    ArrayRaw {
                        side,
                        rows: t(1.0),
                        cols: t(r),
                    }
                })
                .collect(),
        }
    }

    fn judged(ratios: [f64; 4], llc: u64) -> Output {
        judge(
            &raw(ratios),
            &crate::mem::common::test_env::test_env(None, &[("L3", llc)]),
        )
    }

    #[test]
    fn every_verdict_of_the_claim() {
        let out = judged([1.2, 10.0, 40.0, 30.0], 32 << 20);
        assert_eq!(out.claims[0].verdict, Verdict::Holds);
        assert_eq!(
            out.claims[0].expectation,
            format!(
                "{}, and {}",
                Rule::Above(4.0).describe("column/row time at 256 MiB", "x"),
                Rule::Above(3.0).describe("ratio at 256 MiB / ratio at 16 KiB", "x")
            )
        );
        assert!(!out.claims[0].why.contains("vectorise"));
        let f = |o: &Output, n: &str| o.findings.iter().find(|f| f.name == n).unwrap().value;
        assert!((f(&out, "ratio.256MiB") - 30.0).abs() < 1e-3);
        assert!((f(&out, "ratio.16KiB") - 1.2).abs() < 1e-3);
        // SIMD inside L1 is named when the small ratio shows it
        let simd = judged([2.2, 15.0, 46.0, 34.0], 32 << 20);
        assert!(
            simd.claims[0].why.contains("vectorise"),
            "{}",
            simd.claims[0].why
        );
        // beyond the caches too cheap
        let flat = judged([1.0, 2.0, 3.0, 3.5], 32 << 20);
        assert_eq!(flat.claims[0].verdict, Verdict::Differs);
        assert!(flat.claims[0].why.contains("prefetcher"));
        // large enough, but already as large inside L1
        let early = judged([3.0, 5.0, 6.0, 6.0], 32 << 20);
        assert_eq!(early.claims[0].verdict, Verdict::Differs);
        assert!(
            early.claims[0].why.contains("inside L1"),
            "{}",
            early.claims[0].why
        );
        // a last-level cache of 480 MiB: 256 MiB is not beyond it
        let big = judged([1.2, 10.0, 40.0, 30.0], 480 << 20);
        assert_eq!(big.claims[0].verdict, Verdict::NotTestable);
        assert!(
            big.claims[0].why.contains("480 MiB"),
            "{}",
            big.claims[0].why
        );
        assert_eq!(big.claims[0].expectation, out.claims[0].expectation);
    }

    #[test]
    fn measurements_per_order_and_size() {
        let out = judged([1.2, 10.0, 40.0, 30.0], 32 << 20);
        let names: Vec<&str> = out.measurements.iter().map(|m| m.name.as_str()).collect();
        assert_eq!(names[..2], ["ns.rows.16KiB", "ns.cols.16KiB"]);
        assert_eq!(names.len(), 8);
        assert!((out.measurements[1].samples[0] - 1.2).abs() < 1e-3);
        let empty = judge(
            &Raw { arrays: vec![] },
            &crate::mem::common::test_env::test_env(None, &[]),
        );
        assert_eq!(empty.claims[0].verdict, Verdict::NotJudged);
    }
}
