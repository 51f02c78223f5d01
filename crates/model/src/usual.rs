//! A figure against this machine's history: what it usually measures there, and
//! whether a new value lies further from that than the figure's noise. `oslab
//! run` says so after a result, `oslab history` marks the row.
//!
//! The usual value is the median of the same figure in the machine's last
//! [`RUNS`] results of the experiment (at least [`MIN_RUNS`]); the noise is the
//! widest of three: three robust standard deviations of those results (1.4826 x
//! their MAD), the new value's own 95 % interval, and the run-to-run floor
//! `compare` uses ([`crate::compare::MIN_EFFECT`] of the usual value), so one
//! rule says what "beyond noise" means everywhere.

use serde::Serialize;

/// How many earlier results make the usual value.
pub const RUNS: usize = 10;
/// Fewer earlier results say nothing usual.
pub const MIN_RUNS: usize = 3;

/// What a figure usually measures on a machine.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Usual {
    pub median: f64,
    /// Three robust standard deviations of the earlier results.
    pub spread: f64,
    /// How many earlier results it comes from.
    pub runs: usize,
}

/// The usual value of `earlier` (newest first; only the first [`RUNS`] finite
/// ones count), or None with fewer than [`MIN_RUNS`].
pub fn usual(earlier: &[f64]) -> Option<Usual> {
    let values: Vec<f64> = earlier
        .iter()
        .copied()
        .filter(|v| v.is_finite())
        .take(RUNS)
        .collect();
    if values.len() < MIN_RUNS {
        return None;
    }
    let median = oslab_stats::median(&values)?;
    let deviations: Vec<f64> = values.iter().map(|v| (v - median).abs()).collect();
    let mad = oslab_stats::median(&deviations)?;
    Some(Usual {
        median,
        spread: 3.0 * 1.4826 * mad,
        runs: values.len(),
    })
}

/// How far `value` (with its 95 % interval, if any) lies from the usual value,
/// in words, when that is beyond the noise; None when it is within.
pub fn beyond(value: f64, ci95: Option<[f64; 2]>, u: &Usual, unit: &str) -> Option<String> {
    if !value.is_finite() {
        return None;
    }
    let own = ci95.map_or(0.0, |[lo, hi]| (hi - lo).abs() / 2.0);
    let floor = crate::compare::MIN_EFFECT * u.median.abs();
    let noise = u.spread.max(own).max(floor);
    let off = value - u.median;
    if off.abs() <= noise {
        return None;
    }
    let how = if u.median != 0.0 {
        format!(
            "{:.0} % {}",
            (off / u.median).abs() * 100.0,
            if off > 0.0 { "above" } else { "below" }
        )
    } else {
        (if off > 0.0 { "above" } else { "below" }).to_string()
    };
    Some(format!(
        "{how} this machine's usual {} {unit} (median of its last {} results; the noise is {} {unit})",
        short(u.median),
        u.runs,
        short(noise)
    ))
}

fn short(v: f64) -> String {
    match v.abs() {
        a if a >= 100.0 || a == 0.0 => format!("{v:.0}"),
        a if a >= 10.0 => format!("{v:.1}"),
        a if a >= 1.0 => format!("{v:.2}"),
        _ => format!("{v:.3}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Regression: gettid took 131.7 ns beside other work and 73.4 ns alone; the
    /// claim held both times and nothing said the first was far from usual.
    #[test]
    fn a_figure_far_from_its_machines_usual_value_is_said_so() {
        let u = usual(&[73.4, 72.9, 74.1, 73.0, 75.2]).unwrap();
        assert_eq!((u.median, u.runs), (73.4, 5));
        let said = beyond(131.7, Some([129.0, 134.0]), &u, "ns/call").unwrap();
        assert!(
            said.starts_with(
                "79 % above this machine's usual 73.4 ns/call (median of its last 5 results"
            ),
            "{said}"
        );
        // within the spread, the floor or its own interval: nothing to say
        assert_eq!(beyond(74.5, None, &u, "ns/call"), None);
        assert_eq!(beyond(76.0, None, &u, "ns/call"), None, "under 5 %");
        assert_eq!(beyond(82.0, Some([70.0, 94.0]), &u, "ns/call"), None);
        assert!(beyond(60.0, None, &u, "ns/call").unwrap().contains("below"));
    }

    #[test]
    fn too_few_earlier_results_say_nothing_usual() {
        assert_eq!(usual(&[1.0, f64::NAN, 2.0]), None);
        let u = usual(&[1.0; 30]).unwrap();
        assert_eq!(u.runs, RUNS);
    }
}
