//! Sawtooth detection: the peaks, troughs and period of a series that climbs and
//! then drops, such as Dirty memory between write-back flushes.
//!
//! A drop is a fall of at least `min_drop` below the highest value since the last
//! trough; its peak is that highest value. The trough is the lowest value after the
//! peak, confirmed once the series climbs `min_drop / 2` above it (or the series
//! ends). The period is the median time between consecutive peaks.

use serde::{Deserialize, Serialize};

use crate::describe::median;

#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Sawtooth {
    /// (time, value) of every peak.
    pub peaks: Vec<[f64; 2]>,
    /// (time, value) of every trough after a peak.
    pub troughs: Vec<[f64; 2]>,
    pub peak_median: Option<f64>,
    pub trough_median: Option<f64>,
    /// Median time between consecutive peaks.
    pub period: Option<f64>,
    /// Time of the first peak.
    pub first_peak_t: Option<f64>,
}

/// What one pass over a series finds.
#[derive(Default)]
struct Scan {
    peaks: Vec<[f64; 2]>,
    /// Troughs confirmed by the climb after them.
    troughs: Vec<[f64; 2]>,
    /// When each trough was confirmed.
    confirmed_at: Vec<f64>,
    /// The trough still unconfirmed where the series ends falling.
    pending: Option<(f64, f64)>,
}

fn scan(t: &[f64], y: &[f64], min_drop: f64) -> Scan {
    let n = t.len().min(y.len());
    let mut out = Scan::default();
    if n == 0 {
        return out;
    }
    let mut hi = (t[0], y[0]);
    let mut lo: Option<(f64, f64)> = None; // set while falling after a peak
    for i in 1..n {
        let (ti, yi) = (t[i], y[i]);
        match lo {
            None => {
                if yi > hi.1 {
                    hi = (ti, yi);
                } else if yi <= hi.1 - min_drop {
                    out.peaks.push([hi.0, hi.1]);
                    lo = Some((ti, yi));
                }
            }
            Some(l) => {
                if yi < l.1 {
                    lo = Some((ti, yi));
                } else if yi >= l.1 + min_drop / 2.0 {
                    out.troughs.push([l.0, l.1]);
                    out.confirmed_at.push(ti);
                    lo = None;
                    hi = (ti, yi);
                }
            }
        }
    }
    out.pending = lo;
    out
}

/// How many drops of `(t[i], y[i])` have a confirmed trough: whole cycles seen so
/// far, for a run that stops once it has enough.
pub fn confirmed_cycles(t: &[f64], y: &[f64], min_drop: f64) -> usize {
    scan(t, y, min_drop).troughs.len()
}

/// When the `n`th whole cycle of `(t[i], y[i])` was confirmed (`n` from 1): where
/// a run that stops after `n` cycles ends.
pub fn cycle_confirmed_at(t: &[f64], y: &[f64], min_drop: f64, n: usize) -> Option<f64> {
    let at = scan(t, y, min_drop).confirmed_at;
    n.checked_sub(1).and_then(|i| at.get(i).copied())
}

/// Finds the sawtooth in `(t[i], y[i])`; `t` must be increasing.
pub fn sawtooth(t: &[f64], y: &[f64], min_drop: f64) -> Sawtooth {
    let Scan {
        peaks,
        mut troughs,
        pending,
        ..
    } = scan(t, y, min_drop);
    if let Some(l) = pending {
        troughs.push([l.0, l.1]);
    }
    let pv: Vec<f64> = peaks.iter().map(|p| p[1]).collect();
    let tv: Vec<f64> = troughs.iter().map(|p| p[1]).collect();
    let gaps: Vec<f64> = peaks.windows(2).map(|w| w[1][0] - w[0][0]).collect();
    Sawtooth {
        peak_median: median(&pv),
        trough_median: median(&tv),
        period: median(&gaps),
        first_peak_t: peaks.first().map(|p| p[0]),
        peaks,
        troughs,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Climbs at `rate` from `start` to `top`, drops to `bottom`, repeats.
    fn saw(rate: f64, top: f64, bottom: f64, dt: f64, until: f64) -> (Vec<f64>, Vec<f64>) {
        let (mut t, mut y) = (vec![], vec![]);
        let mut v = 0.0;
        let mut now = 0.0;
        while now <= until {
            t.push(now);
            y.push(v);
            v += rate * dt;
            if v > top {
                v = bottom;
            }
            now += dt;
        }
        (t, y)
    }

    #[test]
    fn clean_sawtooth() {
        // 4 MiB/s up to 32, back to 20: 3 s period after the first peak at 8 s
        let (t, y) = saw(4.0, 32.0, 20.0, 0.1, 40.0);
        let s = sawtooth(&t, &y, 4.0);
        assert!((s.first_peak_t.unwrap() - 8.0).abs() < 0.15, "{s:?}");
        assert!((s.peak_median.unwrap() - 32.0).abs() < 0.5);
        assert!((s.trough_median.unwrap() - 20.0).abs() < 0.5);
        assert!((s.period.unwrap() - 3.1).abs() < 0.2, "{:?}", s.period);
        assert!(s.peaks.len() >= 10);
    }

    #[test]
    fn noise_below_the_threshold_is_ignored() {
        let t: Vec<f64> = (0..100).map(|i| i as f64 * 0.1).collect();
        let y: Vec<f64> = (0..100).map(|i| 10.0 + (i % 3) as f64 * 0.5).collect();
        let s = sawtooth(&t, &y, 2.0);
        assert!(s.peaks.is_empty() && s.period.is_none());
    }

    #[test]
    fn a_single_drop_to_zero() {
        let t: Vec<f64> = (0..50).map(f64::from).collect();
        let y: Vec<f64> = (0..50)
            .map(|i| if i <= 30 { i as f64 } else { 0.0 })
            .collect();
        let s = sawtooth(&t, &y, 5.0);
        assert_eq!(s.peaks, vec![[30.0, 30.0]]);
        assert_eq!(s.troughs, vec![[31.0, 0.0]]);
        assert_eq!(s.period, None);
    }

    #[test]
    fn a_cycle_counts_once_its_trough_is_confirmed() {
        // a single drop to zero: its trough shows in the sawtooth at once (the
        // series ends falling) but is a whole cycle only once the series climbs
        // half a drop above it
        let t: Vec<f64> = (0..40).map(f64::from).collect();
        let falling: Vec<f64> = (0..40)
            .map(|i| if i <= 30 { i as f64 } else { 0.0 })
            .collect();
        assert_eq!(sawtooth(&t, &falling, 5.0).troughs.len(), 1);
        assert_eq!(confirmed_cycles(&t, &falling, 5.0), 0);
        let climbed: Vec<f64> = (0..40)
            .map(|i| if i <= 30 { i as f64 } else { (i - 31) as f64 })
            .collect();
        // 0 at 31 s, 2.5 (half of 5) reached at 34 s
        assert_eq!(confirmed_cycles(&t[..34], &climbed[..34], 5.0), 0);
        assert_eq!(confirmed_cycles(&t[..35], &climbed[..35], 5.0), 1);
        assert_eq!(cycle_confirmed_at(&t, &climbed, 5.0, 1), Some(34.0));
        assert_eq!(cycle_confirmed_at(&t, &climbed, 5.0, 2), None);
        assert_eq!(cycle_confirmed_at(&t, &climbed, 5.0, 0), None);
        // the clean sawtooth: 3.1 s cycles after the first peak at 8 s
        let (t, y) = saw(4.0, 32.0, 20.0, 0.1, 40.0);
        let full = sawtooth(&t, &y, 4.0);
        let confirmed = confirmed_cycles(&t, &y, 4.0);
        assert!(confirmed == full.troughs.len() || confirmed + 1 == full.troughs.len());
        assert!(confirmed >= 10, "{confirmed}");
    }
}
