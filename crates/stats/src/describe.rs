//! Location and spread of a sample.
//!
//! Quantiles use linear interpolation between order statistics (Hyndman and Fan
//! type 7, the default of R and NumPy), so `quantile(x, 0.5)` is the usual median.

/// Returns a sorted copy of `data` with NaNs removed.
pub fn sorted(data: &[f64]) -> Vec<f64> {
    let mut v: Vec<f64> = data.iter().copied().filter(|x| !x.is_nan()).collect();
    v.sort_by(f64::total_cmp);
    v
}

/// Quantile `q` in [0, 1] of already sorted data; `None` when empty.
pub fn quantile_sorted(sorted: &[f64], q: f64) -> Option<f64> {
    if sorted.is_empty() {
        return None;
    }
    let q = q.clamp(0.0, 1.0);
    let h = (sorted.len() - 1) as f64 * q;
    let lo = h.floor() as usize;
    let hi = h.ceil() as usize;
    Some(sorted[lo] + (h - lo as f64) * (sorted[hi] - sorted[lo]))
}

/// Quantile `q` in [0, 1]; `None` when there is no data.
pub fn quantile(data: &[f64], q: f64) -> Option<f64> {
    quantile_sorted(&sorted(data), q)
}

/// The median; `None` when there is no data.
pub fn median(data: &[f64]) -> Option<f64> {
    quantile(data, 0.5)
}

/// Arithmetic mean; `None` when there is no data.
pub fn mean(data: &[f64]) -> Option<f64> {
    if data.is_empty() {
        None
    } else {
        Some(data.iter().sum::<f64>() / data.len() as f64)
    }
}

/// Sample standard deviation (n - 1 in the denominator); `None` below two values.
pub fn stddev(data: &[f64]) -> Option<f64> {
    if data.len() < 2 {
        return None;
    }
    let m = mean(data)?;
    let ss: f64 = data.iter().map(|x| (x - m) * (x - m)).sum();
    Some((ss / (data.len() - 1) as f64).sqrt())
}

/// Median absolute deviation from the median, unscaled.
///
/// Multiply by 1.4826 to estimate the standard deviation of normal data.
pub fn mad(data: &[f64]) -> Option<f64> {
    let m = median(data)?;
    let dev: Vec<f64> = data.iter().map(|x| (x - m).abs()).collect();
    median(&dev)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn median_of_odd_and_even_counts() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), Some(2.0));
        assert_eq!(median(&[4.0, 1.0, 3.0, 2.0]), Some(2.5));
        assert_eq!(median(&[]), None);
    }

    #[test]
    fn quantiles_interpolate_linearly() {
        let x = [1.0, 2.0, 3.0, 4.0, 5.0];
        assert_eq!(quantile(&x, 0.0), Some(1.0));
        assert_eq!(quantile(&x, 1.0), Some(5.0));
        assert_eq!(quantile(&x, 0.25), Some(2.0));
        assert_eq!(quantile(&x, 0.1), Some(1.4));
        // NumPy: np.percentile([10, 20, 30, 40], 90) == 37.0
        let y = [10.0, 20.0, 30.0, 40.0];
        assert!((quantile(&y, 0.9).unwrap() - 37.0).abs() < 1e-12);
    }

    #[test]
    fn mean_and_sample_stddev() {
        let x = [2.0, 4.0, 4.0, 4.0, 5.0, 5.0, 7.0, 9.0];
        assert_eq!(mean(&x), Some(5.0));
        // population sd is 2; sample sd is sqrt(32/7)
        assert!((stddev(&x).unwrap() - (32.0f64 / 7.0).sqrt()).abs() < 1e-12);
        assert_eq!(stddev(&[1.0]), None);
    }

    #[test]
    fn mad_of_known_data() {
        // deviations from median 2: 1 1 0 0 2 4 7 -> median 1
        let x = [1.0, 1.0, 2.0, 2.0, 4.0, 6.0, 9.0];
        assert_eq!(mad(&x), Some(1.0));
    }

    #[test]
    fn nan_is_ignored_by_order_statistics() {
        assert_eq!(median(&[f64::NAN, 1.0, 3.0]), Some(2.0));
    }
}
