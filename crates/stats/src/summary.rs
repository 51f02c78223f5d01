//! One summary per measured quantity, as stored in every result.

use serde::{Deserialize, Serialize};

use crate::bootstrap::{BootstrapCi, median_ci};
use crate::describe::{mad, mean, quantile_sorted, sorted, stddev};
use crate::outliers::{OutlierRule, mark_outliers};

/// Coefficient of variation above which a measurement is called noisy.
pub const NOISY_CV: f64 = 0.10;

/// The fewest samples that get a confidence interval and a noise verdict.
pub const MIN_CI_SAMPLES: usize = 5;

/// Whether the spread of the samples lets a reader trust the median.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum NoiseVerdict {
    /// CV at or below [`NOISY_CV`].
    Steady,
    /// CV above [`NOISY_CV`]: compare medians with care.
    Noisy,
    /// Fewer than [`MIN_CI_SAMPLES`] samples: no verdict, and no interval (from
    /// two or three samples a 95 % interval is the range in disguise).
    TooFewSamples,
}

/// Descriptive statistics of one set of samples.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    pub n: usize,
    pub median: f64,
    pub mean: f64,
    pub min: f64,
    pub max: f64,
    pub p10: f64,
    pub p90: f64,
    pub stddev: f64,
    /// Median absolute deviation (unscaled).
    pub mad: f64,
    /// Coefficient of variation: stddev / mean.
    pub cv: f64,
    /// 95 % bootstrap confidence interval of the median; none below
    /// [`MIN_CI_SAMPLES`] samples.
    #[serde(default)]
    pub ci95: Option<BootstrapCi>,
    /// Indices of samples marked as outliers (kept, not dropped).
    pub outliers: Vec<usize>,
    pub noise: NoiseVerdict,
}

/// Number of bootstrap resamples used for a summary of fewer than
/// [`LARGE_SAMPLE`] samples.
pub const RESAMPLES: usize = 2000;
/// From this many samples on, a summary's interval takes [`RESAMPLES_LARGE`]
/// resamples: each resample draws every sample, so judging a million samples spent
/// its time here (2000 x 1M draws), while an interval of the median that large is
/// narrow and 1000 resamples, the usual floor for a 95 % percentile interval, place
/// its ends well within it. No recorded experiment comes near (their largest
/// series holds a few hundred samples); the interval names its resamples.
pub const LARGE_SAMPLE: usize = 100_000;
pub const RESAMPLES_LARGE: usize = 1000;

/// The resamples a summary of `n` samples takes.
pub fn resamples_for(n: usize) -> usize {
    if n >= LARGE_SAMPLE {
        RESAMPLES_LARGE
    } else {
        RESAMPLES
    }
}

/// Summarises `data`; `None` when it holds no numbers.
pub fn summarize(data: &[f64], seed: u64) -> Option<Summary> {
    let s = sorted(data);
    if s.is_empty() {
        return None;
    }
    let mean = mean(&s)?;
    let sd = stddev(&s).unwrap_or(0.0);
    let cv = if mean != 0.0 { sd / mean.abs() } else { 0.0 };
    let noise = if s.len() < MIN_CI_SAMPLES {
        NoiseVerdict::TooFewSamples
    } else if cv > NOISY_CV {
        NoiseVerdict::Noisy
    } else {
        NoiseVerdict::Steady
    };
    Some(Summary {
        n: s.len(),
        median: quantile_sorted(&s, 0.5)?,
        mean,
        min: s[0],
        max: s[s.len() - 1],
        p10: quantile_sorted(&s, 0.1)?,
        p90: quantile_sorted(&s, 0.9)?,
        stddev: sd,
        mad: mad(&s)?,
        cv,
        ci95: if s.len() >= MIN_CI_SAMPLES {
            Some(median_ci(&s, 0.95, resamples_for(s.len()), seed)?)
        } else {
            None
        },
        outliers: mark_outliers(data, OutlierRule::default()),
        noise,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_large_sample_takes_fewer_resamples_and_says_so() {
        let small: Vec<f64> = (0..1000).map(f64::from).collect();
        let ci = summarize(&small, 1).unwrap().ci95.unwrap();
        assert_eq!(ci.resamples, RESAMPLES);
        let large: Vec<f64> = (0..LARGE_SAMPLE as u32).map(f64::from).collect();
        let ci = summarize(&large, 1).unwrap().ci95.unwrap();
        assert_eq!(ci.resamples, RESAMPLES_LARGE);
        let median = (LARGE_SAMPLE as f64 - 1.0) / 2.0;
        assert!(ci.low <= median && median <= ci.high, "{ci:?}");
    }

    #[test]
    fn summary_of_known_data() {
        let x: Vec<f64> = (1..=9).map(f64::from).collect();
        let s = summarize(&x, 7).unwrap();
        assert_eq!(s.n, 9);
        assert_eq!(s.median, 5.0);
        assert_eq!(s.mean, 5.0);
        assert_eq!((s.min, s.max), (1.0, 9.0));
        assert_eq!(s.mad, 2.0);
        assert!((s.p10 - 1.8).abs() < 1e-12);
        let ci = s.ci95.unwrap();
        assert!(ci.low <= 5.0 && ci.high >= 5.0);
        assert_eq!(s.noise, NoiseVerdict::Noisy); // cv = 2.74 / 5
    }

    #[test]
    fn steady_data_is_called_steady() {
        let x: Vec<f64> = (0..30).map(|i| 100.0 + (i % 3) as f64).collect();
        let s = summarize(&x, 1).unwrap();
        assert_eq!(s.noise, NoiseVerdict::Steady);
        assert!(s.outliers.is_empty());
    }

    #[test]
    fn outlier_indices_refer_to_the_original_order() {
        let x = [10.0, 10.5, 9.5, 500.0, 10.2, 9.8, 10.1];
        let s = summarize(&x, 1).unwrap();
        assert_eq!(s.outliers, vec![3]);
    }

    /// Regression: a "95 % interval" of two or three samples was their range.
    #[test]
    fn fewer_than_five_samples_get_no_interval_and_no_verdict() {
        for n in 1..MIN_CI_SAMPLES {
            let x: Vec<f64> = (0..n).map(|i| i as f64).collect();
            let s = summarize(&x, 0).unwrap();
            assert_eq!(s.noise, NoiseVerdict::TooFewSamples, "n = {n}");
            assert_eq!(s.ci95, None, "n = {n}");
        }
        assert!(
            summarize(&[1.0, 2.0, 3.0, 4.0, 5.0], 0)
                .unwrap()
                .ci95
                .is_some()
        );
        assert!(summarize(&[], 0).is_none());
    }
}
