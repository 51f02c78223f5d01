//! `mem.latency`: load-to-use latency vs working-set size, every cache level found
//! from the measurement alone and held against sysfs.
//!
//! What: ns per dependent load for working sets from 1 KiB to `max_size`, on 4 KiB
//! pages and, separately, on transparent huge pages; the plateaus of the 4 KiB
//! curve are the cache levels and memory, each named after the sysfs cache its
//! edge matched (L1d, L2, L3) or "memory" for the last plateau beyond the caches,
//! so a name means the same level in quick and in full mode.
//!
//! Method: a dependent pointer chase through one random cycle of the cache lines
//! of the working set (Sattolo's algorithm), so no prefetcher can guess the next
//! line; sizes visited in a shuffled order, so a drift of the machine's speed does
//! not look like an edge; 4 KiB pages (MADV_NOHUGEPAGE) and huge pages
//! (MADV_HUGEPAGE, with what the kernel granted read back from /proc/self/smaps).
//! The curve is segmented into plateaus (`oslab_stats::levels`). Where a plateau
//! ends is interpolated between the two sampled sizes around the crossing of the
//! geometric middle to the next plateau, unless the sampled sizes of the two
//! plateaus lie more than an octave apart: then the curve leaves the plateau
//! gradually and the edge is a range, from the last sampled size before the curve
//! first reaches 1.5x the plateau's latency to the first from which it stays at
//! 2x or more (or past the middle of a smaller step), each with the latency
//! measured there (never one interpolated size far past where the curve already
//! rose). A shared last-level cache's edge wanders from run to run and its samples
//! there are bimodal: the range spans that whole transition, so runs agree.
//! Either way each edge's finding carries the two sampled sizes around it as its
//! `range`, the resolution the sweep has there, which `compare` uses: two runs
//! whose ranges overlap found the same edge.
//! Edges are matched to the sysfs levels in order: an edge can be a level's when
//! it lies above the previous level's size and at most 4x the level's own, and
//! among those the largest latency jumps win (a spurious step, such as the TLB's
//! reach, is small). Each matched level gets the ratio of its edge to its sysfs
//! size; the claim holds the small (private) levels to 0.5-2x. Where the curve
//! reaches memory's latency is the effective end of the caches, which in a guest
//! can be far below the last-level size sysfs (CPUID) claims.
//! With the TSC's frequency known to the kernel (tsc_known_freq), latencies are
//! also given in cycles at that frequency.
//!
//! Pitfalls: sequential sweeps like the book's cache.c measure throughput and the
//! prefetcher hides L2 and L3 in them (that is `mem.bandwidth`). With 4 KiB pages
//! the chase also misses the TLB from a few MiB on, which adds a page walk to the
//! memory plateau (the huge-page curve shows how much). The last-level cache is
//! shared: with other cores, other processes and, in a guest, other guests, so its
//! edge moves from run to run and its samples can be bimodal. The cycle figures
//! count TSC cycles: a core running above or below the TSC's rate (turbo, power
//! saving) spends a different number of its own cycles. An unoptimised (debug)
//! build spends several ns per step of the chase loop itself, which hides L1
//! inside L2: measure with a release build.
//!
//! References: material section 1 (CPU caches; the book's memory mountain),
//! Documentation/ABI/testing/sysfs-devices-system-cpu (cache/indexN),
//! Documentation/admin-guide/mm/transhuge.rst, madvise(2), proc(5) (smaps).

mod claims;
mod curve;
mod findings;
mod judge;
mod judging;
mod measure;
#[cfg(test)]
mod tests;

use oslab_model::Environment;
use serde::{Deserialize, Serialize};

use crate::mem::common::sweep::{Chased, dense_around, log_sizes, merged, sysfs_of};
use crate::settings::{AnySetting, Bytes, Declared, Setting};
use oslab_harness::{Context, LabError, Meta, Needs, Output};
use oslab_harness::{Experiment, Measured, Planner};

pub use curve::{Edge, Plateau, Reading, assign, edge_spread};

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
    full_lab_only: false,
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

/// The smallest working set.
const MIN_SIZE: u64 = 1024;
/// The smallest huge-page working set.
const MIN_HUGE_SIZE: u64 = 64 << 10;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Plan {
    /// The largest working set.
    pub max_size: u64,
    /// Samples per size.
    pub samples: usize,
    /// Sizes per octave on 4 KiB pages, and on huge pages.
    pub per_octave: u32,
    pub huge_per_octave: u32,
    /// Cache sizes (sysfs) swept densely around, 16 sizes per octave from half to
    /// twice each (full mode).
    pub dense_around: Vec<u64>,
}

impl Plan {
    /// The working sets on 4 KiB pages, ascending.
    pub fn sizes(&self) -> Vec<u64> {
        merged(
            [
                log_sizes(MIN_SIZE, self.max_size, self.per_octave),
                dense_around(&self.dense_around, self.max_size),
            ]
            .concat(),
        )
    }

    /// The working sets on huge pages, ascending.
    pub fn huge_sizes(&self) -> Vec<u64> {
        log_sizes(MIN_HUGE_SIZE, self.max_size, self.huge_per_octave)
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Raw {
    /// Every 4 KiB-page size with its samples, ascending.
    pub small: Vec<Chased>,
    /// Every huge-page size with its samples and what the kernel granted.
    pub huge: Vec<Chased>,
}

impl Experiment for MemLatency {
    type Plan = Plan;
    type Raw = Raw;

    fn meta(&self) -> &Meta {
        &META
    }
    fn headline(&self) -> &'static str {
        "ns.memory"
    }

    fn settings(&self) -> Declared {
        &SETTINGS
    }

    fn plan(&self, p: &mut Planner) -> Plan {
        let quick = p.quick();
        let max_size = p.get(&MAX_SIZE);
        Plan {
            max_size,
            samples: p.samples(3, 5),
            per_octave: if quick { 4 } else { 8 },
            huge_per_octave: if quick { 2 } else { 4 },
            dense_around: if quick {
                Vec::new()
            } else {
                sysfs_of!(p.machine)
                    .iter()
                    .map(|l| l.bytes)
                    .filter(|s| *s <= max_size)
                    .collect()
            },
        }
    }

    fn measure(&self, plan: &Plan, ctx: &mut Context) -> Result<Measured<Raw>, LabError> {
        measure::measure(plan, ctx)
    }

    fn judge(&self, plan: &Plan, raw: &Raw, env: &Environment) -> Output {
        judge::judge(plan, raw, env)
    }
}
