//! `oslab sim advise`: the dirty limits and the policy that keep the first writer's
//! p99 under a target, found by simulating the user's writers at each candidate.
//! Candidates that meet the target rank first; among them no governor (vanilla)
//! before one, then the competitors' throughput, then the smaller dirty limit (less
//! memory at risk).

use oslab_wbsim::config::MIB;
use oslab_wbsim::{Config, Policy, simulate};
use serde::Serialize;

use super::write_latency::{LatencyStats, latency_stats};

/// One candidate's prediction.
#[derive(Debug, Clone, Serialize)]
pub struct Candidate {
    pub dirty_bytes: u64,
    pub dirty_background_bytes: u64,
    pub policy: Policy,
    pub p50_ms: f64,
    pub p90_ms: f64,
    pub p99_ms: f64,
    pub max_ms: f64,
    pub over_200: usize,
    /// The other writers' bytes per second over the first writer's span.
    pub competitors_bytes_s: Option<f64>,
    pub meets: bool,
}

/// The hard limits tried, bytes; each with the background limit at half.
pub const DIRTY_LIMITS: [u64; 6] = [
    16 * MIB,
    32 * MIB,
    64 * MIB,
    128 * MIB,
    256 * MIB,
    512 * MIB,
];

fn candidate(c: &Config, dirty: u64, policy: Policy, target_ms: f64) -> Candidate {
    let mut c = c.clone();
    c.sysctls.dirty_bytes = dirty;
    c.sysctls.dirty_background_bytes = dirty / 2;
    c.policy = policy;
    let o = simulate(&c);
    let st: LatencyStats = latency_stats(o.writers.first().map_or(&[][..], |w| &w.latency_ms));
    Candidate {
        dirty_bytes: dirty,
        dirty_background_bytes: dirty / 2,
        policy,
        p50_ms: st.p50,
        p90_ms: st.p90,
        p99_ms: st.p99,
        max_ms: st.max,
        over_200: st.over_200,
        competitors_bytes_s: competitors(&o),
        meets: st.writes > 0 && st.p99 <= target_ms,
    }
}

/// The other writers' bytes per second, counting their writes issued within the
/// first writer's span (its first to its last write).
fn competitors(o: &oslab_wbsim::Outcome) -> Option<f64> {
    let (first, rest) = o.writers.split_first()?;
    let span = *first.issue_s.last()?;
    if rest.is_empty() || span <= 0.0 {
        return None;
    }
    let bytes: f64 = rest
        .iter()
        .map(|w| {
            let per_write = w.bytes as f64 / w.issue_s.len().max(1) as f64;
            w.issue_s.iter().filter(|t| **t <= span).count() as f64 * per_write
        })
        .sum();
    Some(bytes / span)
}

/// Every candidate for the scenario `c` (its writers, device and rules), ranked.
pub fn advise(c: &Config, target_p99_ms: f64) -> Vec<Candidate> {
    let mut v: Vec<Candidate> = DIRTY_LIMITS
        .iter()
        .flat_map(|d| {
            [Policy::Vanilla, Policy::Wcall, Policy::WcallFair]
                .into_iter()
                .map(move |p| (*d, p))
        })
        .map(|(d, p)| candidate(c, d, p, target_p99_ms))
        .collect();
    v.sort_by(|a, b| {
        b.meets
            .cmp(&a.meets)
            .then((a.policy != Policy::Vanilla).cmp(&(b.policy != Policy::Vanilla)))
            .then(
                b.competitors_bytes_s
                    .unwrap_or(0.0)
                    .total_cmp(&a.competitors_bytes_s.unwrap_or(0.0)),
            )
            .then(a.dirty_bytes.cmp(&b.dirty_bytes))
            .then(a.p99_ms.total_cmp(&b.p99_ms))
    });
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_ranking_puts_a_met_target_first() {
        let c = oslab_wbsim::scenario::find("testbed-fig2").unwrap().config;
        let v = advise(&c, 5.0);
        assert_eq!(v.len(), DIRTY_LIMITS.len() * 3);
        let first_miss = v.iter().position(|x| !x.meets).unwrap_or(v.len());
        assert!(v[first_miss..].iter().all(|x| !x.meets));
        assert!(v[..first_miss].iter().all(|x| x.p99_ms <= 5.0));
        // an impossible target: nothing meets it, and the order is by policy first
        let none = advise(&c, 0.0);
        assert!(none.iter().all(|x| !x.meets));
    }
}
