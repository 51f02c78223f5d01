//! The latency figures of one writer's write() calls, ms.

/// Latency figures of one writer.
#[derive(Debug, Clone, Copy, Default)]
pub struct LatencyStats {
    pub mean: f64,
    pub p50: f64,
    pub p90: f64,
    pub p99: f64,
    pub max: f64,
    pub over_200: usize,
    pub writes: usize,
}

pub fn latency_stats(lat: &[f64]) -> LatencyStats {
    // no write measured is no figure (NaN: "-" in tables, null in JSON), never 0 ms
    let q = |p| oslab_stats::quantile(lat, p).unwrap_or(f64::NAN);
    LatencyStats {
        mean: oslab_stats::mean(lat).unwrap_or(f64::NAN),
        p50: q(0.5),
        p90: q(0.9),
        p99: q(0.99),
        max: q(1.0),
        over_200: lat.iter().filter(|l| **l > 200.0).count(),
        writes: lat.len(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn latency_stats_by_hand() {
        let lat: Vec<f64> = (1..=100).map(|x| x as f64).chain([250.0, 300.0]).collect();
        let r = latency_stats(&lat);
        assert_eq!((r.max, r.over_200, r.writes), (300.0, 2, 102));
        assert!((r.mean - (5050.0 + 550.0) / 102.0).abs() < 1e-9);
    }

    #[test]
    fn no_write_is_no_figure_not_zero() {
        let r = latency_stats(&[]);
        assert!(
            [r.mean, r.p50, r.p90, r.p99, r.max]
                .iter()
                .all(|x| x.is_nan())
        );
        assert_eq!((r.over_200, r.writes), (0, 0));
    }
}
