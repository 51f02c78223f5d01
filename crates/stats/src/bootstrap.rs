//! Percentile bootstrap confidence interval of the median.
//!
//! Resample with replacement `resamples` times, take the median of each resample,
//! and report the (alpha/2, 1 - alpha/2) quantiles of those medians (Efron and
//! Tibshirani, "An Introduction to the Bootstrap", ch. 13). The generator is
//! Xoshiro256++ seeded explicitly, so the interval is the same for the same seed
//! on every platform.

use rand::rngs::Xoshiro256PlusPlus;
use rand::{RngExt, SeedableRng};
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
    let mut buf = vec![0.0; n];
    let mut medians = Vec::with_capacity(resamples);
    for _ in 0..resamples {
        for slot in buf.iter_mut() {
            *slot = data[rng.random_range(0..n)];
        }
        buf.sort_by(f64::total_cmp);
        medians.push(quantile_sorted(&buf, 0.5).expect("non-empty"));
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::describe::median;

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

    #[test]
    fn empty_data_has_no_interval() {
        assert_eq!(median_ci(&[], 0.95, 100, 0), None);
    }
}
