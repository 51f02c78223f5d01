//! The chunk a background flush writes: the one the sawtooth's period implies,
//! and the write bandwidth estimates for which the kernel's rule gives a chunk.

use oslab_stats::sawtooth::Sawtooth;

use super::{MIB, Plan};

/// The chunk each flush wrote: the median period times the writer's rate, MiB.
pub(super) fn implied_chunk_mib(plan: &Plan, saw: &Sawtooth) -> Option<f64> {
    saw.period.map(|p| p * plan.rate as f64 / MIB)
}

/// The write bandwidth estimates (MiB/s) for which the rule gives chunks of
/// `chunk_mib` (a multiple of 4): round_down(bw / 2 + 4, 4) = chunk.
pub(super) fn bandwidth_for_chunk(chunk_mib: f64) -> (f64, f64) {
    let c = (chunk_mib / 4.0).round().max(1.0) * 4.0;
    (2.0 * (c - 4.0), 2.0 * c)
}
