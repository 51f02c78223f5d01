//! mem.bandwidth's measurement: each size read and written, timed.

use oslab_probe::memprobe::{Buffer, ReadSweep, write_sweep};

use super::{MIN_SIZE, Plan, Raw, SAMPLE_NS, SizeRaw, Timed};
use crate::mem::common::sweep::{log_sizes, shuffled};
use oslab_harness::Measured;
use oslab_harness::{Context, LabError};

pub(super) fn measure(plan: &Plan, ctx: &mut Context) -> Result<Measured<Raw>, LabError> {
    let sizes = log_sizes(MIN_SIZE, plan.max_size, plan.per_octave);
    let reader = ReadSweep::for_this_cpu();
    let mut out: Vec<Option<SizeRaw>> = vec![None; sizes.len()];
    for (n, i) in shuffled(sizes.len(), ctx.config.seed)
        .into_iter()
        .enumerate()
    {
        let mut b =
            Buffer::new(sizes[i] as usize, false).map_err(|e| LabError::Failed(e.to_string()))?;
        let read = timed(plan.samples, || {
            std::hint::black_box((reader.sweep)(b.as_slice()));
        });
        let write = timed(plan.samples, || write_sweep(b.as_mut_slice(), 1));
        out[i] = Some(SizeRaw {
            bytes: b.len() as u64,
            read,
            write,
        });
        ctx.progress.fraction((n + 1) as f64 / sizes.len() as f64);
    }
    Ok(Measured::Raw(Raw {
        sizes: out.into_iter().flatten().collect(),
        read_load_bytes: reader.load_bytes,
    }))
}

/// `samples` timings of `op`, each of enough passes to last [`SAMPLE_NS`].
pub(super) fn timed(samples: usize, mut op: impl FnMut()) -> Timed {
    let now = oslab_sys::clock::monotonic_ns;
    op();
    let t0 = now();
    op();
    let once = (now() - t0).max(1);
    let passes = (SAMPLE_NS / once).clamp(1, 100_000);
    let ns = (0..samples)
        .map(|_| {
            let t0 = now();
            for _ in 0..passes {
                op();
            }
            now() - t0
        })
        .collect();
    Timed { passes, ns }
}
