//! `mem.locality`: what loop order costs, inside and outside the caches.
//!
//! What: a square 2-D array of u32 summed row by row (in memory order) and column
//! by column (a stride of one row), at 16 KiB, 1 MiB, 16 MiB and 256 MiB (64, 512,
//! 2048 and 8192 on a side): ns per element both ways and their ratio. A quick run
//! takes 64 MiB (4096) as its largest where that is at least 8x the last-level
//! cache sysfs describes.
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

mod claims;
mod judge;
mod measure;
#[cfg(test)]
mod tests;

use oslab_model::Environment;
use serde::{Deserialize, Serialize};

use crate::harness::{Context, LabError, Meta, Needs, Output};
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
    full_lab_only: false,
};

/// Elements on a side: 16 KiB, 1 MiB, 16 MiB and 256 MiB of u32.
const SIDES: [usize; 4] = [64, 512, 2048, 8192];
/// A quick run's largest array: 4096 on a side (64 MiB) where that is at least
/// this many times the last-level cache sysfs describes, else 8192 (256 MiB).
const QUICK_BEYOND_LLC: u64 = 8;

/// The sides of a run: all of [`SIDES`], or in a quick run a smaller largest
/// array where the last-level cache (`llc` bytes, from sysfs) leaves room.
fn sides(quick: bool, llc: Option<u64>) -> Vec<usize> {
    let mut sides = SIDES.to_vec();
    let side = 4096;
    if quick
        && llc.is_some_and(|c| c.saturating_mul(QUICK_BEYOND_LLC) <= (side * side * ELEMENT) as u64)
    {
        *sides.last_mut().expect("sides") = side;
    }
    sides
}
const ELEMENT: usize = 4;
/// A sample lasts at least this long.
const SAMPLE_NS: u64 = 2_000_000;

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

impl Experiment for MemLocality {
    type Plan = Plan;
    type Raw = Raw;

    fn meta(&self) -> &Meta {
        &META
    }
    fn headline(&self) -> &'static str {
        "ratio.16MiB"
    }

    fn plan(&self, p: &mut Planner) -> Plan {
        Plan {
            samples: p.samples(3, 5),
            sides: sides(p.quick(), sysfs_of!(p.machine).last().map(|l| l.bytes)),
        }
    }

    fn measure(&self, plan: &Plan, ctx: &mut Context) -> Result<Measured<Raw>, LabError> {
        measure::measure(plan, ctx)
    }

    fn judge(&self, _plan: &Plan, raw: &Raw, env: &Environment) -> Output {
        judge::judge(raw, env)
    }
}
