//! Percentile bootstrap confidence interval of the median.
//!
//! Resample with replacement `resamples` times, take the median of each resample,
//! and report the (alpha/2, 1 - alpha/2) quantiles of those medians (Efron and
//! Tibshirani, "An Introduction to the Bootstrap", ch. 13). The generator is
//! Xoshiro256++ seeded explicitly, so the interval is the same for the same seed
//! on every platform.
//!
//! The data are sorted once, so a resample is known by how often it drew each
//! position: the median is found by counting, not by sorting every resample. The
//! draws and the medians are those of sorting the drawn values, and the work grows
//! linearly with the samples (resamples x samples).

use rand::SeedableRng;
use rand::distr::uniform::SampleRange;
use rand::rngs::Xoshiro256PlusPlus;
use serde::{Deserialize, Serialize};

use crate::describe::{quantile_sorted, sorted};

/// A two-sided confidence interval.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct BootstrapCi {
    pub low: f64,
    pub high: f64,
    /// Confidence level, e.g. 0.95.
    pub level: f64,
    pub resamples: usize,
}

/// Bootstrap CI of the median at `level` (e.g. 0.95); `None` when `data` is empty.
pub fn median_ci(data: &[f64], level: f64, resamples: usize, seed: u64) -> Option<BootstrapCi> {
    let data = sorted(data);
    if data.is_empty() {
        return None;
    }
    let resamples = resamples.max(1);
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
    let n = data.len();
    let mut draws = Tally::new(n);
    let mut medians = Vec::with_capacity(resamples);
    for _ in 0..resamples {
        draws.clear();
        for _ in 0..n {
            // random_range(0..n) without its wrapper, which is not marked inline:
            // the same draw, inlined in this loop (twice as fast)
            draws.add((0..n).sample_single(&mut rng).expect("n > 0"));
        }
        count_work(2 * n);
        medians.push(resample_median(&data, &draws));
    }
    medians.sort_by(f64::total_cmp);
    let alpha = (1.0 - level).clamp(0.0, 1.0);
    Some(BootstrapCi {
        low: quantile_sorted(&medians, alpha / 2.0).expect("non-empty"),
        high: quantile_sorted(&medians, 1.0 - alpha / 2.0).expect("non-empty"),
        level,
        resamples,
    })
}

/// How often a resample drew each position. A position is drawn about once
/// (Poisson with mean 1), so a byte each holds the count and the rare count
/// beyond 255 is kept aside: the counts of a million samples fit in 1 MiB, near
/// the CPU where four-byte counts would not, and the random increments stay
/// cheap as the samples grow.
struct Tally {
    bytes: Vec<u8>,
    beyond: std::collections::HashMap<usize, u64>,
}

impl Tally {
    fn new(n: usize) -> Tally {
        Tally {
            bytes: vec![0; n],
            beyond: Default::default(),
        }
    }

    fn clear(&mut self) {
        self.bytes.fill(0);
        self.beyond.clear();
    }

    #[inline]
    fn add(&mut self, i: usize) {
        match self.bytes[i] {
            u8::MAX => *self.beyond.entry(i).or_default() += 1,
            _ => self.bytes[i] += 1,
        }
    }

    /// The position whose value is at `rank` (from 0) in the resample sorted: the
    /// first whose draws, with those before it, exceed `rank`. The bytes are
    /// summed a block at a time (which the compiler turns into vector additions),
    /// and only the block that holds the rank is walked.
    fn position_of(&self, rank: u64) -> usize {
        const BLOCK: usize = 256;
        let mut drawn = 0u64;
        for (b, block) in self.bytes.chunks(BLOCK).enumerate() {
            // with nothing kept aside, a byte is its whole count
            let sum: u64 = if self.beyond.is_empty() {
                block.iter().map(|&x| u64::from(x)).sum()
            } else {
                (0..block.len()).map(|k| self.get(b * BLOCK + k)).sum()
            };
            if drawn + sum <= rank {
                drawn += sum;
                continue;
            }
            for k in 0..block.len() {
                drawn += self.get(b * BLOCK + k);
                if drawn > rank {
                    return b * BLOCK + k;
                }
            }
        }
        unreachable!("a resample draws data.len() positions, more than any rank")
    }

    fn get(&self, i: usize) -> u64 {
        match self.bytes[i] {
            u8::MAX => 255 + self.beyond.get(&i).copied().unwrap_or(0),
            b => u64::from(b),
        }
    }
}

/// The median of a resample of sorted `data` that drew each position as often
/// as `draws` says: the value `quantile_sorted` gives for the resample sorted,
/// found by counting.
fn resample_median(data: &[f64], draws: &Tally) -> f64 {
    // the two ranks quantile_sorted interpolates between, and how far
    let h = (data.len() - 1) as f64 * 0.5;
    let (lo, hi) = (h.floor() as u64, h.ceil() as u64);
    let (a, b) = (draws.position_of(lo), draws.position_of(hi));
    count_work(b + 1);
    data[a] + (h - lo as f64) * (data[b] - data[a])
}

#[cfg(test)]
thread_local! {
    /// Elements touched by the resampling on this thread (tests run side by side).
    static WORK: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

/// Counts elements touched, in tests only: the work is checked to grow linearly.
#[inline]
fn count_work(_elements: usize) {
    #[cfg(test)]
    WORK.with(|w| w.set(w.get() + _elements as u64));
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::describe::median;
    use rand::RngExt;

    #[test]
    fn constant_data_has_a_zero_width_interval() {
        let ci = median_ci(&[7.0; 20], 0.95, 500, 1).unwrap();
        assert_eq!((ci.low, ci.high), (7.0, 7.0));
    }

    #[test]
    fn interval_contains_the_median_and_is_reproducible() {
        let data: Vec<f64> = (0..101).map(|i| ((i * 37) % 101) as f64).collect();
        let a = median_ci(&data, 0.95, 1000, 42).unwrap();
        let b = median_ci(&data, 0.95, 1000, 42).unwrap();
        assert_eq!(a, b);
        let m = median(&data).unwrap();
        assert!(a.low <= m && m <= a.high, "{a:?} vs {m}");
        // the median of 0..=100 is 50 and a 95 % interval of n = 101 spans about
        // +-1.96 * sqrt(n)/2 ranks, i.e. roughly 40..60
        assert!(a.low >= 35.0 && a.high <= 65.0, "{a:?}");
    }

    #[test]
    fn different_seeds_may_differ_but_stay_sane() {
        let data: Vec<f64> = (1..=50).map(f64::from).collect();
        for seed in 0..10 {
            let ci = median_ci(&data, 0.9, 300, seed).unwrap();
            assert!(ci.low <= ci.high);
            assert!(ci.low >= 1.0 && ci.high <= 50.0);
        }
    }

    /// The interval as it was computed before counting: each resample's values
    /// sorted and their median taken.
    fn by_sorting(data: &[f64], level: f64, resamples: usize, seed: u64) -> BootstrapCi {
        let data = sorted(data);
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
        let n = data.len();
        let mut medians: Vec<f64> = (0..resamples)
            .map(|_| {
                let mut buf: Vec<f64> = (0..n).map(|_| data[rng.random_range(0..n)]).collect();
                buf.sort_by(f64::total_cmp);
                quantile_sorted(&buf, 0.5).unwrap()
            })
            .collect();
        medians.sort_by(f64::total_cmp);
        let alpha = 1.0 - level;
        BootstrapCi {
            low: quantile_sorted(&medians, alpha / 2.0).unwrap(),
            high: quantile_sorted(&medians, 1.0 - alpha / 2.0).unwrap(),
            level,
            resamples,
        }
    }

    /// Counting gives the very interval sorting gave, bit for bit: odd and even
    /// sizes, ties, negative values and one sample.
    #[test]
    fn counting_gives_the_interval_sorting_gave() {
        for n in [1usize, 2, 3, 10, 11, 64, 101, 1000] {
            for seed in 0..4u64 {
                let data: Vec<f64> = (0..n)
                    .map(|i| ((i as u64 * 7919 + seed * 31) % 97) as f64 * 0.37 - 9.0)
                    .collect();
                let got = median_ci(&data, 0.95, 200, seed).unwrap();
                let want = by_sorting(&data, 0.95, 200, seed);
                assert_eq!(got.low.to_bits(), want.low.to_bits(), "n {n} seed {seed}");
                assert_eq!(got.high.to_bits(), want.high.to_bits(), "n {n} seed {seed}");
            }
        }
    }

    fn work_for(n: usize) -> u64 {
        let data: Vec<f64> = (0..n).map(|i| ((i * 7919) % 1009) as f64).collect();
        WORK.with(|w| w.set(0));
        median_ci(&data, 0.95, 100, 3).unwrap();
        WORK.with(|w| w.get())
    }

    /// The resampling touches each sample a bounded number of times per resample,
    /// so twice the samples is at most twice the work (sorting every resample was
    /// n log n: about 10 n at these sizes, and 2.2 times the work for 2 n).
    #[test]
    fn the_work_grows_linearly_with_the_samples() {
        for n in [1000usize, 4000, 16000] {
            let (one, two) = (work_for(n), work_for(2 * n));
            assert!(one <= 3 * 100 * n as u64, "n {n}: {one} elements touched");
            assert!(
                two as f64 <= 2.05 * one as f64,
                "n {n}: {one} elements, 2n: {two}"
            );
        }
    }

    /// A count beyond a byte is kept whole (a position drawn 1000 times).
    #[test]
    fn a_tally_counts_past_255() {
        let mut t = Tally::new(3);
        for _ in 0..1000 {
            t.add(1);
        }
        t.add(2);
        assert_eq!((t.get(0), t.get(1), t.get(2)), (0, 1000, 1));
        let data = [1.0, 2.0, 3.0];
        assert_eq!(resample_median(&data, &t), 2.0);
        t.clear();
        assert_eq!(t.get(1), 0);
    }

    #[test]
    fn empty_data_has_no_interval() {
        assert_eq!(median_ci(&[], 0.95, 100, 0), None);
    }
}
