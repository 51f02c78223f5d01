//! mem.locality's measurement: each array summed by rows and by columns, timed.

use super::{ArrayRaw, Plan, Raw, SAMPLE_NS, Timed};
use oslab_harness::Measured;
use oslab_harness::{Context, LabError};

pub(super) fn measure(plan: &Plan, ctx: &mut Context) -> Result<Measured<Raw>, LabError> {
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

#[inline(never)]
pub(super) fn sum_rows(a: &[u32], n: usize) -> u64 {
    let mut s = 0u64;
    for r in 0..n {
        for c in 0..n {
            s = s.wrapping_add(a[r * n + c] as u64);
        }
    }
    s
}

#[inline(never)]
pub(super) fn sum_cols(a: &[u32], n: usize) -> u64 {
    let mut s = 0u64;
    for c in 0..n {
        for r in 0..n {
            s = s.wrapping_add(a[r * n + c] as u64);
        }
    }
    s
}

/// `samples` timings of `f` over an n x n array, each of >= 2 ms.
pub(super) fn time_it(a: &[u32], n: usize, samples: usize, f: fn(&[u32], usize) -> u64) -> Timed {
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
