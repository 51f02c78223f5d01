//! `mem.tlb`: TLB reach, and what huge pages change.
//!
//! What: ns per access touching one cache line per page over P pages, P from 16 to
//! 16,384 (quick) or 65,536, on 4 KiB pages and on transparent huge pages at the
//! same footprint; the knees of each curve, the knees of their ratio (the TLB
//! levels' reach), the page-walk cost at the largest P, and CPUID's TLB sizes
//! beside.
//!
//! Method: the pages are chased in one random cycle (Sattolo's algorithm), one
//! word per page at a pseudo-random line within it (a hash of the page number),
//! so the lines spread over the cache sets; a rotation tied to the page number
//! would put every line in a few sets once the pages are physically contiguous
//! (huge pages) and measure set conflicts instead of the TLB. The knees of each
//! curve are mostly the caches, which one line per page still fills, and they
//! show with both page sizes; the TLB is in the ratio of the two curves: flat
//! while 4 KiB translations hit, rising at each TLB level's reach. What the kernel
//! backed with huge pages is read back from /proc/self/smaps (AnonHugePages).
//!
//! Pitfalls: transparent huge pages are a request (MADV_HUGEPAGE), not a promise:
//! with THP set to never, or memory fragmented, the buffer stays on 4 KiB pages and
//! the comparison says nothing (the claim is then not testable). In a guest, a
//! huge page of the guest may sit on small pages of the host, so the walk the
//! hardware does (guest and host tables) stays long. CPUID's TLB leaves can be
//! hidden or invented by a hypervisor.
//!
//! References: material section 2 (TLB), Documentation/admin-guide/mm/transhuge.rst,
//! madvise(2), proc(5) (smaps); Intel SDM CPUID leaf 0x18, AMD CPUID
//! 0x80000005/0x80000006.

mod judge;
mod measure;

use oslab_model::Environment;
use serde::{Deserialize, Serialize};

use crate::mem::common::sweep::{Chased, log_sizes};
use oslab_harness::{Context, LabError, Meta, Needs, Output};
use oslab_harness::{Experiment, Measured, Planner};

pub struct MemTlb;

static META: Meta = Meta {
    id: "mem.tlb",
    title: "TLB reach: one line per page, 4 KiB vs huge pages",
    section: "2",
    summary: "ns per access vs pages touched; detected TLB knees vs CPUID; page-walk cost",
    needs: Needs {
        root: false,
        min_cpus: 1,
        free_disk_bytes: 0,
    },
    quick_s: 6.0,
    full_s: 40.0,
    internal: false,
    full_lab_only: false,
};

pub const PAGE: usize = 4096;
/// The fewest pages touched.
const MIN_PAGES: u64 = 16;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Plan {
    /// Samples per page count.
    pub samples: usize,
    /// The most pages touched.
    pub max_pages: u64,
    /// Page counts per octave.
    pub per_octave: u32,
}

impl Plan {
    /// The page counts, ascending.
    pub fn pages(&self) -> Vec<u64> {
        // log_sizes rounds to 64-byte lines: sweep 64 "bytes" per page
        log_sizes(MIN_PAGES * 64, self.max_pages * 64, self.per_octave)
            .into_iter()
            .map(|p| p / 64)
            .collect()
    }
}

/// One TLB as CPUID describes it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CpuidTlb {
    /// "data", "instruction", "unified", "load", "store".
    pub kind: String,
    pub level: u32,
    /// Page sizes it holds: "4K", "2M", "4M", "1G".
    pub pages: Vec<String>,
    pub entries: u32,
    /// 0 for fully associative.
    pub ways: u32,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Raw {
    /// Per page count on 4 KiB pages (bytes = pages x 4 KiB), ascending.
    pub small: Vec<Chased>,
    /// The same on huge pages, with what the kernel granted.
    pub huge: Vec<Chased>,
    /// The TLBs CPUID reports (empty when it reports none).
    pub cpuid: Vec<CpuidTlb>,
}

impl Experiment for MemTlb {
    type Plan = Plan;
    type Raw = Raw;

    fn meta(&self) -> &Meta {
        &META
    }
    fn headline(&self) -> &'static str {
        "page_walk_ns"
    }

    fn plan(&self, p: &mut Planner) -> Plan {
        let quick = p.quick();
        Plan {
            samples: p.samples(3, 5),
            max_pages: if quick { 16384 } else { 65536 },
            per_octave: if quick { 2 } else { 4 },
        }
    }

    fn measure(&self, plan: &Plan, ctx: &mut Context) -> Result<Measured<Raw>, LabError> {
        measure::measure(plan, ctx)
    }

    fn judge(&self, plan: &Plan, raw: &Raw, env: &Environment) -> Output {
        judge::judge(plan, raw, env)
    }
}
