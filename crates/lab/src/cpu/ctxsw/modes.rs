//! Whether a figure is one figure: samples that fall into two modes far apart (the
//! scheduler placed the tasks on one CPU for some batches and on two for others)
//! have a median that lands in either mode by chance, and a CV that says only
//! "noisy". Such samples are split into their modes and judged by them.

use oslab_stats::summary::NOISY_CV;

/// Two modes are at least this factor apart (the smallest sample of the upper mode
/// over the largest of the lower).
pub const MODE_GAP: f64 = 2.0;

/// Two modes of a set of samples.
#[derive(Debug, Clone, PartialEq)]
pub struct Modes {
    /// Indices, into the samples given, of the lower and of the upper mode.
    pub lower: Vec<usize>,
    pub upper: Vec<usize>,
    pub lower_median: f64,
    pub upper_median: f64,
    /// The smallest upper sample over the largest lower one.
    pub gap: f64,
}

/// Splits `samples` at the widest gap between neighbours in log space, when that
/// gap is at least [`MODE_GAP`] and wider than the spread (in log space) on either
/// side of it; None when the samples are one mode (or fewer than two are positive).
pub fn split(samples: &[f64]) -> Option<Modes> {
    let mut idx: Vec<usize> = (0..samples.len())
        .filter(|&i| samples[i].is_finite() && samples[i] > 0.0)
        .collect();
    if idx.len() < 2 {
        return None;
    }
    idx.sort_by(|&a, &b| samples[a].total_cmp(&samples[b]));
    let logs: Vec<f64> = idx.iter().map(|&i| samples[i].ln()).collect();
    let (k, gap) = (1..logs.len())
        .map(|k| (k, logs[k] - logs[k - 1]))
        .max_by(|a, b| a.1.total_cmp(&b.1))?;
    let below = logs[k - 1] - logs[0];
    let above = logs[logs.len() - 1] - logs[k];
    if gap < MODE_GAP.ln() || gap <= below || gap <= above {
        return None;
    }
    let median_of = |ix: &[usize]| {
        let v: Vec<f64> = ix.iter().map(|&i| samples[i]).collect();
        oslab_stats::median(&v).unwrap_or(f64::NAN)
    };
    let (mut lower, mut upper) = (idx[..k].to_vec(), idx[k..].to_vec());
    let (lower_median, upper_median) = (median_of(&lower), median_of(&upper));
    lower.sort_unstable();
    upper.sort_unstable();
    Some(Modes {
        lower,
        upper,
        lower_median,
        upper_median,
        gap: gap.exp(),
    })
}

/// What a set of samples looks like, for deciding whether its median can be
/// compared with another figure.
#[derive(Debug, Clone, PartialEq)]
pub enum Spread {
    /// One mode, CV at most 10 %.
    Steady {
        cv: f64,
    },
    /// One mode, CV above 10 %.
    Noisy {
        cv: f64,
    },
    Bimodal(Modes),
    /// Fewer than two samples: the spread cannot be seen.
    Unknown,
}

impl Spread {
    pub fn of(samples: &[f64]) -> Spread {
        if let Some(m) = split(samples) {
            return Spread::Bimodal(m);
        }
        match (oslab_stats::mean(samples), oslab_stats::stddev(samples)) {
            (Some(mean), Some(sd)) if mean != 0.0 => {
                let cv = sd / mean.abs();
                if cv > NOISY_CV {
                    Spread::Noisy { cv }
                } else {
                    Spread::Steady { cv }
                }
            }
            _ => Spread::Unknown,
        }
    }

    pub fn steady(&self) -> bool {
        matches!(self, Spread::Steady { .. })
    }

    /// "one mode, CV 3 %", "two modes: 6 of 9 at 1100 ns, 3 at 30500 ns".
    pub fn describe(&self, n: usize) -> String {
        match self {
            Spread::Steady { cv } | Spread::Noisy { cv } => {
                format!("one mode, CV {:.0} %", cv * 100.0)
            }
            Spread::Bimodal(m) => format!(
                "two modes {:.1}x apart: {} of {n} at {:.0} ns, {} at {:.0} ns",
                m.gap,
                m.lower.len(),
                m.lower_median,
                m.upper.len(),
                m.upper_median
            ),
            Spread::Unknown => format!("{n} sample(s): spread unknown"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn two_placements_are_two_modes() {
        let s = [1100.0, 31000.0, 1050.0, 29000.0, 1200.0, 30500.0, 1150.0];
        let m = split(&s).expect("bimodal");
        assert_eq!(m.lower, vec![0, 2, 4, 6]);
        assert_eq!(m.upper, vec![1, 3, 5]);
        assert_eq!(m.lower_median, 1125.0);
        assert_eq!(m.upper_median, 30500.0);
        assert!((m.gap - 29000.0 / 1200.0).abs() < 1e-9);
        assert!(matches!(Spread::of(&s), Spread::Bimodal(_)));
    }

    #[test]
    fn one_mode_stays_one() {
        // steady, noisy but continuous, and a spread wider than its widest gap
        assert_eq!(split(&[1000.0, 1010.0, 990.0, 1005.0]), None);
        assert_eq!(split(&[1000.0, 1500.0, 2100.0, 3000.0, 4400.0]), None);
        assert_eq!(split(&[100.0, 400.0, 800.0, 1500.0, 2500.0]), None);
        assert!(Spread::of(&[1000.0, 1010.0, 990.0]).steady());
        assert!(matches!(
            Spread::of(&[1000.0, 1500.0, 2100.0, 3000.0, 4400.0]),
            Spread::Noisy { .. }
        ));
        assert_eq!(Spread::of(&[1000.0]), Spread::Unknown);
    }

    #[test]
    fn a_lone_sample_far_off_is_a_mode_of_its_own() {
        let m = split(&[1000.0, 1020.0, 990.0, 5000.0]).expect("bimodal");
        assert_eq!(m.upper, vec![3]);
        assert!(split(&[f64::NAN, 1000.0]).is_none());
        assert!(
            Spread::of(&[1000.0, 1020.0, 990.0, 5000.0])
                .describe(4)
                .starts_with("two modes")
        );
    }
}
