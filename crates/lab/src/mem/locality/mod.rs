//! `mem.locality`: what loop order costs, inside and outside the caches.
//!
//! What: a square 2-D array of u32 summed row by row (in memory order) and column
//! by column (a stride of one row), at 16 KiB, 1 MiB, 16 MiB and a largest array
//! beyond the caches (64, 512, 2048 and 8192 or more on a side): ns per element
//! both ways and their ratio. The largest array is 256 MiB, grown (to 1 GiB, 4 GiB)
//! until it is at least twice the last-level cache sysfs describes (a cloud
//! guest may be shown the host's 480 MiB), or shrunk to 64 MiB in a quick run
//! where that is 8x the cache; `--set largest=SIZE` chooses it.
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

use crate::mem::common::sweep::sysfs_of;
use crate::settings::{AnySetting, Bytes, Declared, Setting};
use oslab_harness::{Context, LabError, Meta, Needs, Output};
use oslab_harness::{Experiment, Measured, Planner};

pub struct MemLocality;

static META: Meta = Meta {
    id: "mem.locality",
    title: "Locality: row-major vs column-major traversal of a 2-D array",
    section: "1",
    summary: "ns per element both ways at 16 KiB, 1 MiB, 16 MiB and an array beyond the last-level cache",
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
/// The largest side grown to meet the claim's [`claims::BEYOND_LLC`]: 4 GiB.
const MAX_SIDE: usize = 32_768;

static LARGEST: Setting<Bytes> = Setting {
    name: "largest",
    help: "the largest array (default: 256 MiB, or at least twice the last-level cache sysfs describes)",
    quick: 256 << 20,
    full: 256 << 20,
    bounds: Some((1 << 20, 16 << 30)),
    names: &[],
};
static SETTINGS: [&dyn AnySetting; 1] = [&LARGEST];

/// The sides of a run: 64, 512 and 2048, and the largest array's: `largest`
/// bytes where it was given, else 8192 on a side, grown until it is at least
/// [`claims::BEYOND_LLC`] times the last-level cache (`llc` bytes, from sysfs),
/// or in a quick run 4096 where the cache leaves room.
fn sides(quick: bool, llc: Option<u64>, largest: Option<u64>) -> Vec<usize> {
    let bytes = |side: usize| (side * side * ELEMENT) as u64;
    let side = match largest {
        Some(b) => {
            // the largest power of two whose square array fits in `b`
            let mut side = 64;
            while bytes(side * 2) <= b {
                side *= 2;
            }
            side
        }
        None => {
            let mut side = SIDES[3];
            let beyond =
                |s: usize| llc.is_none_or(|c| bytes(s) as f64 >= claims::BEYOND_LLC * c as f64);
            while !beyond(side) && side < MAX_SIDE {
                side *= 2;
            }
            if quick && llc.is_some_and(|c| c.saturating_mul(QUICK_BEYOND_LLC) <= bytes(4096)) {
                side = 4096;
            }
            side
        }
    };
    let mut out: Vec<usize> = SIDES[..3].iter().copied().filter(|s| *s < side).collect();
    out.push(side);
    out
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

    fn settings(&self) -> Declared {
        &SETTINGS
    }

    fn plan(&self, p: &mut Planner) -> Plan {
        let largest = p.given(&LARGEST);
        Plan {
            samples: p.samples(3, 5),
            sides: sides(
                p.quick(),
                sysfs_of!(p.machine).last().map(|l| l.bytes),
                largest,
            ),
        }
    }

    fn measure(&self, plan: &Plan, ctx: &mut Context) -> Result<Measured<Raw>, LabError> {
        measure::measure(plan, ctx)
    }

    fn judge(&self, _plan: &Plan, raw: &Raw, env: &Environment) -> Output {
        judge::judge(raw, env)
    }
}
