//! Axes of a plot: the data range, the mapping to pixels, and ticks at "nice" values
//! with labels a reader can take in at a glance (0.2 not 0.200, 4K not 4096, whole
//! numbers on an axis of counts, milliseconds rather than 0.004 s).

use oslab_model::Scale;

/// Maps data values to pixel positions along one axis.
#[derive(Debug, Clone, Copy)]
pub struct Mapper {
    pub scale: Scale,
    pub lo: f64,
    pub hi: f64,
    pub px_lo: f64,
    pub px_hi: f64,
}

impl Mapper {
    fn t(&self, v: f64) -> f64 {
        match self.scale {
            Scale::Linear => v,
            Scale::Log2 => v.log2(),
            Scale::Log10 => v.log10(),
        }
    }

    pub fn px(&self, v: f64) -> f64 {
        let (a, b) = (self.t(self.lo), self.t(self.hi));
        let f = if b > a {
            (self.t(v) - a) / (b - a)
        } else {
            0.5
        };
        self.px_lo + f * (self.px_hi - self.px_lo)
    }
}

pub fn usable(scale: Scale, v: f64) -> bool {
    v.is_finite() && (scale == Scale::Linear || v > 0.0)
}

/// The data range along one axis, padded, with 0 included for linear axes that
/// start near it (so bars and costs are read against zero).
pub fn range(values: &[f64], scale: Scale, include_zero: bool) -> (f64, f64) {
    let vals: Vec<f64> = values
        .iter()
        .copied()
        .filter(|v| usable(scale, *v))
        .collect();
    if vals.is_empty() {
        return if scale == Scale::Linear {
            (0.0, 1.0)
        } else {
            (1.0, 10.0)
        };
    }
    let mut lo = vals.iter().copied().fold(f64::INFINITY, f64::min);
    let mut hi = vals.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    match scale {
        Scale::Linear => {
            if include_zero && lo > 0.0 {
                lo = 0.0;
            }
            if hi == lo {
                hi = lo + 1.0;
            }
            let pad = (hi - lo) * 0.05;
            let lo = if lo == 0.0 { 0.0 } else { lo - pad };
            (lo.max(f64::MIN), (hi + pad).min(f64::MAX))
        }
        Scale::Log2 | Scale::Log10 => {
            if hi == lo {
                lo /= 2.0;
                hi *= 2.0;
            }
            let (lo, hi) = (lo / 1.15, (hi * 1.15).min(f64::MAX));
            if scale == Scale::Log10 {
                // out to the 1-2-5 values around the data, so the lowest points
                // stand clear of the axis (a second 15 % below them) and both ends
                // carry a label
                (nice_125(lo / 1.15, false), nice_125(hi, true))
            } else {
                (lo, hi)
            }
        }
    }
}

/// The nearest of 1, 2 and 5 x 10^k below `v` (above it when `up`); `v` itself
/// when it is not a finite positive number or has no finite neighbour.
fn nice_125(v: f64, up: bool) -> f64 {
    if !(v.is_finite() && v > 0.0) {
        return v;
    }
    let mag = 10f64.powf(v.log10().floor());
    let steps = [1.0, 2.0, 5.0, 10.0].map(|m| m * mag);
    let nice = if up {
        steps.into_iter().find(|s| *s >= v * (1.0 - 1e-12))
    } else {
        steps.into_iter().rev().find(|s| *s <= v * (1.0 + 1e-12))
    };
    nice.filter(|n| n.is_finite() && *n > 0.0).unwrap_or(v)
}

/// The step of "nice" linear ticks (1, 2, 5 x 10^k) for about six of them over
/// `span`; at least 1 on an axis of whole numbers.
fn nice_step(span: f64, integer: bool) -> f64 {
    let raw = span / 6.0;
    let mag = 10f64.powf(raw.log10().floor());
    let step = [1.0, 2.0, 5.0, 10.0]
        .iter()
        .map(|m| m * mag)
        .find(|s| span / s <= 8.0)
        .unwrap_or(10.0 * mag);
    if integer { step.max(1.0).round() } else { step }
}

/// Linear ticks covering [lo, hi] at multiples of a nice step.
pub fn linear_ticks(lo: f64, hi: f64, integer: bool) -> Vec<f64> {
    let span = hi - lo;
    if span <= 0.0 || !span.is_finite() {
        return vec![lo];
    }
    let step = nice_step(span, integer);
    let first = (lo / step).ceil() as i64;
    let last = (hi / step + 1e-9).floor() as i64;
    (first..=last)
        .map(|k| {
            let t = k as f64 * step;
            if t.abs() < step * 1e-9 { 0.0 } else { t }
        })
        .collect()
}

/// Powers of `base` within [lo, hi], at most twelve of them; none when either end
/// is not a finite positive number (a damaged results file's axis ran to infinity,
/// and casting its exponent to a whole number asked for 2^31 powers: 16 GiB).
pub fn log_ticks(lo: f64, hi: f64, base: f64) -> Vec<f64> {
    let (a, b) = ((lo.log(base) - 1e-9).ceil(), (hi.log(base) + 1e-9).floor());
    if !(a.is_finite() && b.is_finite()) || b < a {
        return Vec::new();
    }
    // finite doubles span fewer than 2,100 powers of two
    let (a, n) = (a as i32, (b - a) as usize + 1);
    let every = n.div_ceil(12).max(1);
    (0..n)
        .step_by(every)
        .map(|k| base.powi(a + k as i32))
        .collect()
}

/// Ticks of a log10 axis: 1, 2 and 5 x 10^k where the axis spans few enough
/// decades for them to be told apart (a reader cannot read 1.2 ns off an axis
/// labelled only 10 and 100), else the powers of ten.
pub fn log10_ticks(lo: f64, hi: f64) -> Vec<f64> {
    let powers = log_ticks(lo, hi, 10.0);
    if (hi / lo).log10() > 3.5 {
        return powers;
    }
    let mut out: Vec<f64> = log_ticks(lo / 10.0, hi, 10.0)
        .iter()
        .flat_map(|p| [1.0, 2.0, 5.0].map(|m| m * p))
        .filter(|t| *t >= lo * (1.0 - 1e-9) && *t <= hi * (1.0 + 1e-9))
        .collect();
    out.dedup();
    if out.len() < 2 { powers } else { out }
}

/// Unlabelled minor ticks of a log10 axis: 2 to 9 x 10^k within the range, those
/// without a label of their own; none over more than six decades (they would
/// blur into a band).
pub fn log10_minor_ticks(lo: f64, hi: f64, labelled: &[f64]) -> Vec<f64> {
    if !(lo > 0.0 && hi.is_finite() && (hi / lo).log10() <= 6.0) {
        return Vec::new();
    }
    log_ticks(lo / 10.0, hi, 10.0)
        .iter()
        .flat_map(|p| (2..10).map(move |m| f64::from(m) * p))
        .filter(|t| *t >= lo && *t <= hi)
        .filter(|t| !labelled.iter().any(|l| (l / t - 1.0).abs() < 1e-9))
        .collect()
}

/// How an axis shows its values: a factor applied to data values and the unit the
/// reader sees ("ms" for an axis in seconds that never reaches one second).
#[derive(Debug, Clone, PartialEq)]
pub struct Display {
    pub factor: f64,
    pub unit: String,
    /// Every value on the axis is a whole number (a count of processes, a CPU).
    pub integer: bool,
}

impl Display {
    pub fn of(unit: &str, max_abs: f64, integer: bool) -> Display {
        let (factor, shown) = match unit {
            "s" if max_abs > 0.0 && max_abs < 1e-3 => (1e6, "µs"),
            "s" if max_abs > 0.0 && max_abs < 1.0 => (1e3, "ms"),
            "ms" if max_abs > 0.0 && max_abs < 1.0 => (1e3, "µs"),
            "ms" if max_abs >= 10_000.0 => (1e-3, "s"),
            _ => (1.0, unit),
        };
        Display {
            factor,
            unit: shown.to_string(),
            integer: integer && factor == 1.0,
        }
    }
}

/// The ticks of one axis in data units.
pub fn ticks(m: &Mapper, d: &Display) -> Vec<f64> {
    match m.scale {
        Scale::Linear => linear_ticks(m.lo * d.factor, m.hi * d.factor, d.integer)
            .into_iter()
            .map(|t| t / d.factor)
            .collect(),
        Scale::Log2 => log_ticks(m.lo, m.hi, 2.0),
        Scale::Log10 => log10_ticks(m.lo, m.hi),
    }
}

fn bytes_label(v: f64) -> String {
    for (s, m) in [("G", 1u64 << 30), ("M", 1 << 20), ("K", 1 << 10)] {
        let m = m as f64;
        if v >= m {
            let x = v / m;
            return if x.fract() == 0.0 {
                format!("{x:.0}{s}")
            } else {
                format!("{x:.1}{s}")
            };
        }
    }
    format!("{v:.0}")
}

/// Decimals that tell ticks `step` apart and no more.
fn decimals(step: f64) -> usize {
    if step <= 0.0 || !step.is_finite() {
        return 0;
    }
    (-(step.log10() + 1e-9).floor()).clamp(0.0, 6.0) as usize
}

/// Labels for `ticks` (data units) as the axis shows them.
pub fn labels(ticks: &[f64], unit: &str, d: &Display) -> Vec<String> {
    if unit == "bytes" {
        return ticks.iter().map(|v| bytes_label(*v)).collect();
    }
    let shown: Vec<f64> = ticks.iter().map(|t| t * d.factor).collect();
    let step = shown
        .windows(2)
        .map(|w| (w[1] - w[0]).abs())
        .fold(f64::INFINITY, f64::min);
    let top = shown.iter().fold(0f64, |a, v| a.max(v.abs()));
    let (div, suffix) = magnitude(top);
    // powers, or 1-2-5 steps: each value shown in its own magnitude
    let logarithmic = shown.len() > 1
        && shown.iter().all(|v| *v > 0.0)
        && step.is_finite()
        && shown.windows(2).all(|w| w[1] / w[0] >= 2.0 - 1e-9);
    shown
        .iter()
        .map(|&v| {
            if v == 0.0 {
                return "0".into();
            }
            let (div, suffix) = if logarithmic {
                magnitude(v.abs())
            } else {
                (div, suffix)
            };
            let x = v / div;
            let places = if logarithmic {
                decimals(x.abs())
            } else if step.is_finite() {
                decimals(step / div)
            } else {
                decimals(x.abs() / 10.0)
            };
            format!("{x:.places$}{suffix}")
        })
        .collect()
}

/// The divisor and suffix for a value as large as `top`.
fn magnitude(top: f64) -> (f64, &'static str) {
    match top {
        t if t >= 1e9 => (1e9, "G"),
        t if t >= 1e6 => (1e6, "M"),
        t if t >= 1e4 => (1e3, "k"),
        _ => (1.0, ""),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn display(unit: &str, top: f64, integer: bool) -> Display {
        Display::of(unit, top, integer)
    }

    #[test]
    fn linear_ticks_are_round() {
        assert_eq!(
            linear_ticks(0.0, 10.0, false),
            vec![0.0, 2.0, 4.0, 6.0, 8.0, 10.0]
        );
        let t = linear_ticks(0.0, 0.7, false);
        assert!(t.len() >= 4 && t.len() <= 9, "{t:?}");
    }

    #[test]
    fn counts_get_whole_ticks() {
        // 1..4 processes: never 2.5 processes
        let t = linear_ticks(0.85, 4.15, true);
        assert_eq!(t, vec![1.0, 2.0, 3.0, 4.0]);
        let d = display("processes", 4.0, true);
        assert_eq!(labels(&t, "processes", &d), ["1", "2", "3", "4"]);
    }

    #[test]
    fn labels_carry_only_the_decimals_the_step_needs() {
        let d = display("x", 1.2, false);
        let t = linear_ticks(0.0, 1.25, false);
        assert_eq!(
            labels(&t, "x", &d),
            ["0", "0.2", "0.4", "0.6", "0.8", "1.0", "1.2"]
        );
        let t = linear_ticks(0.0, 5.0, false);
        assert_eq!(labels(&t, "x", &d), ["0", "1", "2", "3", "4", "5"]);
    }

    #[test]
    fn seconds_below_one_read_as_milliseconds() {
        let d = display("s", 0.012, false);
        assert_eq!(d.unit, "ms");
        let m = Mapper {
            scale: Scale::Linear,
            lo: 0.0,
            hi: 0.012,
            px_lo: 0.0,
            px_hi: 100.0,
        };
        let t = ticks(&m, &d);
        assert_eq!(labels(&t, "s", &d)[..3], ["0", "2", "4"]);
    }

    #[test]
    fn large_values_get_a_suffix() {
        let d = display("ops", 50_000.0, false);
        let t = linear_ticks(0.0, 50_000.0, false);
        assert_eq!(labels(&t, "ops", &d).last().unwrap(), "50k");
    }

    #[test]
    fn an_axis_that_runs_to_the_largest_double_has_few_ticks() {
        // found by the results reader's fuzz run: a value of 1e308 on a log axis
        let (lo, hi) = range(&[1024.0, 1e308], Scale::Log2, false);
        assert!(hi.is_finite());
        let t = log_ticks(lo, hi, 2.0);
        assert!(!t.is_empty() && t.len() <= 12, "{t:?}");
        assert!(log_ticks(1024.0, f64::INFINITY, 2.0).is_empty());
        assert!(log_ticks(0.0, 10.0, 10.0).is_empty());
        let (lo, hi) = range(&[-1e308, 1e308], Scale::Linear, false);
        assert!(lo.is_finite() && hi.is_finite());
    }

    #[test]
    fn log2_ticks_are_powers_of_two_and_read_as_sizes() {
        let t = log_ticks(1000.0, 70_000.0, 2.0);
        assert_eq!(
            t,
            vec![1024.0, 2048.0, 4096.0, 8192.0, 16384.0, 32768.0, 65536.0]
        );
        let d = display("bytes", 70_000.0, false);
        assert_eq!(labels(&t, "bytes", &d)[5], "32K");
        assert_eq!(bytes_label(3.0 * 1024.0 * 1024.0 * 1024.0), "3G");
    }

    #[test]
    fn a_log10_axis_over_few_decades_reads_at_1_2_and_5() {
        // mem.latency's axis: L1 at 1.06 ns up to memory at 190 ns
        let (lo, hi) = range(&[1.06, 190.0], Scale::Log10, true);
        assert_eq!((lo, hi), (0.5, 500.0));
        let t = log10_ticks(lo, hi);
        assert_eq!(
            t,
            vec![0.5, 1.0, 2.0, 5.0, 10.0, 20.0, 50.0, 100.0, 200.0, 500.0]
        );
        let d = display("ns", hi, false);
        assert_eq!(
            labels(&t, "ns", &d),
            ["0.5", "1", "2", "5", "10", "20", "50", "100", "200", "500"]
        );
        let minor = log10_minor_ticks(lo, hi, &t);
        assert_eq!(minor.len(), 4 + 6 + 6 + 2, "{minor:?}");
        assert!(minor.iter().all(|m| !t.contains(m)));
        // over many decades: the powers alone, and no minor ticks beyond six
        assert_eq!(log10_ticks(1.0, 1e6), log_ticks(1.0, 1e6, 10.0));
        assert!(log10_minor_ticks(1.0, 1e7, &[]).is_empty());
        assert!(log10_minor_ticks(0.0, 10.0, &[]).is_empty());
    }

    #[test]
    fn log10_labels_keep_small_powers_apart() {
        let t = log_ticks(0.001, 20.0, 10.0);
        let d = display("x", 20.0, false);
        assert_eq!(labels(&t, "x", &d), ["0.001", "0.01", "0.1", "1", "10"]);
        let t = log_ticks(1.0, 2e6, 10.0);
        assert_eq!(
            labels(&t, "x", &d),
            ["1", "10", "100", "1000", "10k", "100k", "1M"]
        );
    }
}
