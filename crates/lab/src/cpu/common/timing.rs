//! Timing building blocks shared by the CPU probes.
//!
//! A probe is timed in batches: one sample is the time of a batch of `n` calls
//! divided by `n`, so the timer's own cost and resolution vanish into the batch. The
//! batch size is calibrated until a batch takes at least [`MIN_BATCH_NS`]. Probes of
//! one experiment are interleaved round by round, so a change of CPU speed or steal
//! during the run touches all of them alike instead of biasing the last one.

use std::hint::black_box;

use oslab_sys::clock::now_ns;

/// A batch must last at least this long (the clock's cost is about 20 ns).
pub const MIN_BATCH_NS: u64 = 200_000;

/// Nanoseconds for `n` runs of `f`.
#[inline(never)]
pub fn time_batch<F: FnMut()>(n: u64, f: &mut F) -> u64 {
    let start = now_ns();
    for _ in 0..n {
        f();
    }
    now_ns() - start
}

/// The smallest power-of-two batch (at least 64) that lasts `min_ns`.
pub fn calibrate<F: FnMut()>(f: &mut F, min_ns: u64) -> u64 {
    let mut n = 64u64;
    loop {
        if time_batch(n, f) >= min_ns || n >= 1 << 30 {
            return n;
        }
        n *= 2;
    }
}

/// An empty loop body: what the loop itself costs per iteration.
#[inline(never)]
pub fn empty_body() {
    black_box(());
}

/// Subtracts a per-iteration overhead from per-call samples, never below zero.
pub fn subtract(samples: &[f64], overhead: f64) -> Vec<f64> {
    samples.iter().map(|s| (s - overhead).max(0.0)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn subtract_clamps_at_zero() {
        assert_eq!(subtract(&[5.0, 1.0], 2.0), vec![3.0, 0.0]);
    }

    #[test]
    fn calibration_grows_until_the_batch_is_long_enough() {
        let mut count = 0u64;
        let mut f = || count += 1;
        let n = calibrate(&mut f, 1_000);
        assert!(n >= 64 && n.is_power_of_two());
    }
}
