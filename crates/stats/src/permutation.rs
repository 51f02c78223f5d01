//! Two-sample permutation test on the difference of medians.
//!
//! Under the null hypothesis that both samples come from one distribution, every
//! split of the pooled samples into groups of the original sizes is equally likely.
//! The p-value is the share of splits whose |median(B) - median(A)| is at least the
//! observed one (Good, "Permutation, Parametric and Bootstrap Tests of Hypotheses",
//! ch. 3). Small samples are enumerated exactly; larger ones are estimated from random
//! shuffles with the (count + 1) / (shuffles + 1) estimate of Phipson and Smyth
//! (2010), which never reports an impossible p of zero. Medians rather than means,
//! because timings on a shared machine have heavy right tails.

use rand::rngs::Xoshiro256PlusPlus;
use rand::{RngExt, SeedableRng};
use serde::{Deserialize, Serialize};

/// Splits enumerated exactly up to this many; beyond, random shuffles.
pub const EXACT_LIMIT: u64 = 20_000;

/// Work cap for the shuffled test: shuffles x pooled samples.
const SHUFFLE_WORK: usize = 50_000_000;

#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct PermutationTest {
    /// |median(b) - median(a)| of the samples as given.
    pub observed: f64,
    pub p_value: f64,
    /// True when every split was enumerated.
    pub exact: bool,
    /// Splits enumerated, or shuffles drawn.
    pub permutations: u64,
    /// The smallest p-value this test could have given (1 / splits for an exact test,
    /// two splits being extreme by symmetry when the groups have equal sizes).
    pub min_p_value: f64,
}

fn median_of(buf: &mut [f64]) -> f64 {
    let n = buf.len();
    let mid = n / 2;
    let (_, hi, _) = buf.select_nth_unstable_by(mid, f64::total_cmp);
    let hi = *hi;
    if n % 2 == 1 {
        hi
    } else {
        let lo = buf[..mid].iter().copied().fold(f64::NEG_INFINITY, f64::max);
        (lo + hi) / 2.0
    }
}

/// Number of ways to choose k of n, saturating.
fn choose(n: u64, k: u64) -> u64 {
    let k = k.min(n - k);
    let mut c: u128 = 1;
    for i in 0..k {
        c = c * (n - i) as u128 / (i + 1) as u128;
        if c > u64::MAX as u128 {
            return u64::MAX;
        }
    }
    c as u64
}

fn statistic(pooled: &[f64], in_a: &[bool], a: &mut Vec<f64>, b: &mut Vec<f64>) -> f64 {
    a.clear();
    b.clear();
    for (v, &ia) in pooled.iter().zip(in_a) {
        if ia { a.push(*v) } else { b.push(*v) }
    }
    (median_of(b) - median_of(a)).abs()
}

/// Tests whether `a` and `b` differ in location; `None` when either is empty or holds
/// a non-finite value.
pub fn median_difference(
    a: &[f64],
    b: &[f64],
    shuffles: usize,
    seed: u64,
) -> Option<PermutationTest> {
    if a.is_empty() || b.is_empty() || a.iter().chain(b).any(|v| !v.is_finite()) {
        return None;
    }
    let pooled: Vec<f64> = a.iter().chain(b).copied().collect();
    let (n, k) = (pooled.len(), a.len());
    let observed = (median_of(&mut b.to_vec()) - median_of(&mut a.to_vec())).abs();
    // Ties in floating point: a split counts as extreme when it reaches the observed
    // value up to rounding.
    let threshold = observed - 1e-12 * observed.abs().max(1e-300);
    let (mut xa, mut xb) = (Vec::with_capacity(k), Vec::with_capacity(n - k));
    let splits = choose(n as u64, k as u64);
    if splits <= EXACT_LIMIT {
        let mut idx: Vec<usize> = (0..k).collect();
        let mut in_a = vec![false; n];
        let mut extreme = 0u64;
        loop {
            in_a.iter_mut().for_each(|f| *f = false);
            for &i in &idx {
                in_a[i] = true;
            }
            if statistic(&pooled, &in_a, &mut xa, &mut xb) >= threshold {
                extreme += 1;
            }
            // Next combination in lexicographic order.
            let mut i = k;
            while i > 0 && idx[i - 1] == n - k + i - 1 {
                i -= 1;
            }
            if i == 0 {
                break;
            }
            idx[i - 1] += 1;
            for j in i..k {
                idx[j] = idx[j - 1] + 1;
            }
        }
        return Some(PermutationTest {
            observed,
            p_value: extreme as f64 / splits as f64,
            exact: true,
            permutations: splits,
            min_p_value: if 2 * k == n { 2.0 } else { 1.0 } / splits as f64,
        });
    }
    let shuffles = shuffles.min(SHUFFLE_WORK / n).max(200);
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
    let mut perm = pooled.clone();
    let mut extreme = 0u64;
    for _ in 0..shuffles {
        // Partial Fisher-Yates: the first k slots become a uniform random group A.
        for i in 0..k {
            let j = rng.random_range(i..n);
            perm.swap(i, j);
        }
        xa.clear();
        xa.extend_from_slice(&perm[..k]);
        xb.clear();
        xb.extend_from_slice(&perm[k..]);
        if (median_of(&mut xb) - median_of(&mut xa)).abs() >= threshold {
            extreme += 1;
        }
    }
    Some(PermutationTest {
        observed,
        p_value: (extreme + 1) as f64 / (shuffles as f64 + 1.0),
        exact: false,
        permutations: shuffles as u64,
        min_p_value: 1.0 / (shuffles as f64 + 1.0),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fully_separated_triples_give_the_hand_computed_exact_p() {
        // 20 splits of 1..6 into three and three; the median of three is its middle
        // value. |median B - median A| = |5 - 2| = 3 is reached by A = {1,2,3},
        // {1,2,4} and their mirrors {4,5,6}, {3,5,6}: p = 4/20.
        let t = median_difference(&[1.0, 2.0, 3.0], &[4.0, 5.0, 6.0], 1000, 1).unwrap();
        assert!(t.exact);
        assert_eq!(t.permutations, 20);
        assert_eq!(t.observed, 3.0);
        assert!((t.p_value - 0.2).abs() < 1e-12, "{}", t.p_value);
        assert!((t.min_p_value - 0.1).abs() < 1e-12);
    }

    #[test]
    fn identical_samples_are_never_significant() {
        let a = [5.0, 5.1, 4.9, 5.0, 5.2, 4.8];
        let t = median_difference(&a, &a, 1000, 1).unwrap();
        assert_eq!(t.observed, 0.0);
        assert_eq!(t.p_value, 1.0);
    }

    #[test]
    fn a_large_shift_in_large_samples_is_found_by_shuffling() {
        let a: Vec<f64> = (0..40).map(|i| 100.0 + (i % 7) as f64).collect();
        let b: Vec<f64> = (0..40).map(|i| 130.0 + (i % 5) as f64).collect();
        let t = median_difference(&a, &b, 2000, 7).unwrap();
        assert!(!t.exact);
        assert_eq!(t.permutations, 2000);
        // No shuffle reaches a 30-unit gap between disjoint ranges: p is the floor.
        assert!((t.p_value - 1.0 / 2001.0).abs() < 1e-12);
    }

    #[test]
    fn overlapping_draws_from_one_distribution_are_not_significant() {
        // Two interleaved halves of one arithmetic sequence.
        let a: Vec<f64> = (0..30).map(|i| (2 * i) as f64).collect();
        let b: Vec<f64> = (0..30).map(|i| (2 * i + 1) as f64).collect();
        let t = median_difference(&a, &b, 2000, 3).unwrap();
        assert!(t.p_value > 0.5, "{}", t.p_value);
    }

    #[test]
    fn the_exact_p_of_an_unequal_split_counts_only_one_tail_when_it_is_unique() {
        // a = [10], b = [1, 2]: splits {10},{1},{2}: stats |1.5-10|=8.5, |6-1|=5,
        // |5.5-2|=3.5; only the observed reaches 8.5: p = 1/3.
        let t = median_difference(&[10.0], &[1.0, 2.0], 100, 1).unwrap();
        assert!(t.exact);
        assert!((t.p_value - 1.0 / 3.0).abs() < 1e-12);
    }

    #[test]
    fn empty_or_non_finite_input_gives_none() {
        assert!(median_difference(&[], &[1.0], 10, 1).is_none());
        assert!(median_difference(&[f64::NAN], &[1.0], 10, 1).is_none());
    }

    #[test]
    fn choose_matches_pascal() {
        assert_eq!(choose(6, 3), 20);
        assert_eq!(choose(20, 10), 184_756);
        assert_eq!(choose(5, 0), 1);
    }
}
