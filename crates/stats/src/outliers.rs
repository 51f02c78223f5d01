//! Outlier marking by the modified Z-score.
//!
//! M_i = 0.6745 (x_i - median) / MAD; |M_i| > 3.5 marks an outlier (Iglewicz and
//! Hoaglin, "How to Detect and Handle Outliers", 1993). The median and MAD are
//! robust, so one wild sample cannot hide itself by inflating the spread. Outliers
//! are only marked, never dropped: the raw samples are always kept.

use serde::Serialize;

use crate::describe::{mad, median};

/// The rule used to mark outliers, kept in results so a reader knows the method.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct OutlierRule {
    pub method: &'static str,
    pub threshold: f64,
}

impl Default for OutlierRule {
    fn default() -> Self {
        Self {
            method: "modified z-score (Iglewicz-Hoaglin)",
            threshold: 3.5,
        }
    }
}

/// Indices of the samples whose modified Z-score exceeds `rule.threshold`.
///
/// When the MAD is zero (more than half the samples identical), any sample that
/// differs from the median is marked.
pub fn mark_outliers(data: &[f64], rule: OutlierRule) -> Vec<usize> {
    let (Some(m), Some(d)) = (median(data), mad(data)) else {
        return Vec::new();
    };
    data.iter()
        .enumerate()
        .filter(|(_, x)| {
            if d == 0.0 {
                **x != m
            } else {
                (0.6745 * (**x - m) / d).abs() > rule.threshold
            }
        })
        .map(|(i, _)| i)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_wild_value_is_marked() {
        let mut x: Vec<f64> = (0..20).map(|i| 100.0 + (i % 5) as f64).collect();
        x.push(1000.0);
        assert_eq!(mark_outliers(&x, OutlierRule::default()), vec![20]);
    }

    #[test]
    fn well_behaved_data_has_none() {
        let x: Vec<f64> = (0..50).map(|i| 10.0 + (i % 7) as f64 * 0.1).collect();
        assert!(mark_outliers(&x, OutlierRule::default()).is_empty());
    }

    #[test]
    fn zero_mad_marks_every_differing_value() {
        let x = [5.0, 5.0, 5.0, 5.0, 6.0];
        assert_eq!(mark_outliers(&x, OutlierRule::default()), vec![4]);
    }
}
