//! `mem.bandwidth`: sequential read and write bandwidth vs working-set size, the
//! book's stride-1 sweep.
//!
//! What: GB/s reading every 8-byte word of a buffer in order (summed with 32-byte
//! loads where the CPU has AVX2, so that the loop's instructions do not hold the
//! reads under what the caches give), and writing every byte of it (memset), for
//! buffers from 4 KiB to 256 MiB (quick) or 1 GiB, one thread.
//!
//! Method: sizes visited in a shuffled order; each size on its own 4 KiB-page
//! buffer (MADV_NOHUGEPAGE), prefaulted; one pass untimed, one timed to choose how
//! many passes make a sample of at least 2 ms, then the samples. Every sample is
//! kept as the time of its passes.
//!
//! Pitfalls: the prefetcher streams lines ahead of the loop, so this curve shows
//! the levels far less than `mem.latency` does (that is its lesson): it measures
//! throughput, not latency. A write of a line not in the cache may first read it
//! (read for ownership) unless the CPU uses streaming stores, so write bandwidth
//! beyond the caches is not the memory's raw write rate; glibc's memset writes
//! large buffers with rep stosb, which on CPUs with fast strings (ERMS) can store
//! whole lines without that read, so there writing can outrun reading. One thread
//! cannot saturate the memory of a large machine. In a guest the host's other
//! guests share the memory bus.
//!
//! References: material section 1 (CPU caches: the cache sweep), madvise(2).

mod judge;
mod measure;
#[cfg(test)]
mod tests;

use oslab_model::Environment;
use serde::{Deserialize, Serialize};

use oslab_harness::{Context, LabError, Meta, Needs, Output};
use oslab_harness::{Experiment, Measured, Planner};

pub struct MemBandwidth;

static META: Meta = Meta {
    id: "mem.bandwidth",
    title: "Sequential read and write bandwidth vs working set",
    section: "1",
    summary: "GB/s reading and writing W bytes in order, W from 4 KiB up",
    needs: Needs {
        root: false,
        min_cpus: 1,
        free_disk_bytes: 0,
    },
    quick_s: 5.0,
    full_s: 30.0,
    internal: false,
    full_lab_only: false,
};

/// A sample lasts at least this long.
const SAMPLE_NS: u64 = 2_000_000;
/// The smallest buffer, and the size the "small" findings read.
const MIN_SIZE: u64 = 4096;
const SMALL: u64 = 16 << 10;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Plan {
    pub samples: usize,
    /// The largest buffer.
    pub max_size: u64,
    /// Sizes per octave.
    pub per_octave: u32,
}

/// Samples of one operation over one buffer: each the time of `passes` passes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Timed {
    pub passes: u64,
    pub ns: Vec<u64>,
}

impl Timed {
    /// GB/s of each sample over `bytes`.
    pub fn gb_s(&self, bytes: u64) -> Vec<f64> {
        self.ns
            .iter()
            .map(|ns| (bytes as f64 * self.passes as f64) / (*ns).max(1) as f64)
            .collect()
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SizeRaw {
    /// The buffer's length (the size asked for, rounded up to whole pages).
    pub bytes: u64,
    pub read: Timed,
    pub write: Timed,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Raw {
    /// Every size, ascending.
    pub sizes: Vec<SizeRaw>,
    /// The width of the read loop's loads, bytes. Recordings made before this field
    /// existed used the baseline build's loads: 16 bytes on x86-64 and aarch64.
    #[serde(default = "sixteen")]
    pub read_load_bytes: u32,
}

fn sixteen() -> u32 {
    16
}

impl Experiment for MemBandwidth {
    type Plan = Plan;
    type Raw = Raw;

    fn meta(&self) -> &Meta {
        &META
    }
    fn headline(&self) -> &'static str {
        "read_gb_s.large"
    }

    fn plan(&self, p: &mut Planner) -> Plan {
        let quick = p.quick();
        Plan {
            samples: p.samples(3, 5),
            max_size: if quick { 256 << 20 } else { 1 << 30 },
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
