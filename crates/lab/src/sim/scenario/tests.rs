use super::claims::protects_claim;
use crate::services::write_latency::{LatencyStats, latency_stats};
use oslab_model::Verdict;

/// 700 writes of 10 ms, `slow` of them 250 ms.
fn stats(slow: usize) -> LatencyStats {
    let lat: Vec<f64> = (0..700)
        .map(|i| if i < slow { 250.0 } else { 10.0 })
        .collect();
    latency_stats(&lat)
}

#[test]
fn wcall_must_at_least_halve_the_spikes_to_largely_remove_them() {
    // 66 -> 54, what the testbed-fig2 scenario gives: not "largely"
    assert_eq!(
        protects_claim("rt55", &stats(66), &stats(54)).verdict,
        Verdict::Differs
    );
    assert_eq!(
        protects_claim("rt55", &stats(66), &stats(33)).verdict,
        Verdict::Holds
    );
    assert_eq!(
        protects_claim("rt55", &stats(66), &stats(0)).verdict,
        Verdict::Holds
    );
    // no spike under vanilla: nothing to remove
    let c = protects_claim("rt55", &stats(0), &stats(0));
    assert_eq!(c.verdict, Verdict::Differs);
    assert!(c.why.contains("nothing to remove"), "{}", c.why);
}
