//! `oslab sim advise`: the dirty limits and the policy that meet the user's
//! objective, found by simulating the user's writers at each candidate. The
//! objective is the user's: bounds on the protected writers (a writer or a group:
//! its p99, its writes over 200 ms), a floor on the others' throughput, and what
//! to prefer among the candidates that meet them. The ranking is a list of keys,
//! and the same keys say why the first candidate beats the runner-up.

use std::cmp::Ordering;

use oslab_wbsim::config::MIB;
use oslab_wbsim::{Config, Policy, simulate};
use serde::Serialize;

use super::write_latency::latency_stats;

/// What the user asks of the candidates.
#[derive(Debug, Clone, Serialize)]
pub struct Objective {
    /// The writer, or the group of writers, whose latency is bounded (None: the
    /// first writer).
    pub protect: Option<String>,
    pub p99_ms: f64,
    /// At most this many of the protected writes over 200 ms.
    pub max_over_200: Option<usize>,
    /// The other writers together get at least this many bytes per second.
    pub others_floor_bytes_s: Option<f64>,
    pub prefer: Prefer,
}

/// What decides among the candidates that meet the bounds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Prefer {
    /// The most throughput for the other writers.
    Throughput,
    /// The lowest p99 for the protected writers.
    Latency,
    /// The smallest dirty limit (the least memory at risk in a crash).
    Memory,
}

impl Prefer {
    pub const NAMES: [&'static str; 3] = ["throughput", "latency", "memory"];

    pub fn parse(s: &str) -> Option<Prefer> {
        match s {
            "throughput" => Some(Prefer::Throughput),
            "latency" => Some(Prefer::Latency),
            "memory" => Some(Prefer::Memory),
            _ => None,
        }
    }
}

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
    /// The other writers' bytes per second over the protected writers' span.
    pub competitors_bytes_s: Option<f64>,
    pub meets: bool,
    /// The bounds it misses, in words.
    pub misses: Vec<String>,
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

/// The writers `protect` names (a writer's name, else a group's), or the first.
/// None when it names neither.
pub fn protected(c: &Config, protect: Option<&str>) -> Option<Vec<usize>> {
    let Some(name) = protect else {
        return Some(vec![0]);
    };
    if let Some(i) = c.writers.iter().position(|w| w.name == name) {
        return Some(vec![i]);
    }
    let group: Vec<usize> = (0..c.writers.len())
        .filter(|i| c.writers[*i].group_name() == name)
        .collect();
    (!group.is_empty()).then_some(group)
}

fn mib_s(b: f64) -> String {
    format!("{:.1} MiB/s", b / MIB as f64)
}

fn candidate(c: &Config, dirty: u64, policy: Policy, ob: &Objective, mine: &[usize]) -> Candidate {
    let mut c = c.clone();
    c.sysctls.dirty_bytes = dirty;
    c.sysctls.dirty_background_bytes = dirty / 2;
    c.policy = policy;
    let o = simulate(&c);
    let latencies: Vec<f64> = mine
        .iter()
        .flat_map(|i| o.writers[*i].latency_ms.iter().copied())
        .collect();
    let st = latency_stats(&latencies);
    let others = competitors(&o, mine);
    let mut misses = Vec::new();
    if st.writes == 0 {
        misses.push("the protected writers wrote nothing".to_string());
    }
    if st.p99 > ob.p99_ms {
        misses.push(format!("p99 {:.1} ms > {} ms", st.p99, ob.p99_ms));
    }
    if let Some(n) = ob.max_over_200.filter(|n| st.over_200 > *n) {
        misses.push(format!("{} writes over 200 ms > {n}", st.over_200));
    }
    if let Some(floor) = ob
        .others_floor_bytes_s
        .filter(|f| others.unwrap_or(0.0) < *f)
    {
        misses.push(format!(
            "others get {} < {}",
            others.map_or("nothing".into(), mib_s),
            mib_s(floor)
        ));
    }
    Candidate {
        dirty_bytes: dirty,
        dirty_background_bytes: dirty / 2,
        policy,
        p50_ms: st.p50,
        p90_ms: st.p90,
        p99_ms: st.p99,
        max_ms: st.max,
        over_200: st.over_200,
        competitors_bytes_s: others,
        meets: misses.is_empty(),
        misses,
    }
}

/// The other writers' bytes per second, counting their writes issued within the
/// protected writers' span (from 0 to their last write).
fn competitors(o: &oslab_wbsim::Outcome, mine: &[usize]) -> Option<f64> {
    let span = mine
        .iter()
        .filter_map(|i| o.writers[*i].issue_s.last().copied())
        .fold(0.0, f64::max);
    let rest: Vec<&oslab_wbsim::WriterResult> = (0..o.writers.len())
        .filter(|i| !mine.contains(i))
        .map(|i| &o.writers[i])
        .collect();
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

/// One key of the ranking: how two candidates compare on it, and in words why
/// the better one wins on it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Key {
    Meets,
    Others,
    Latency,
    Memory,
    NoGovernor,
}

/// The keys in order: the bounds, what the user prefers, then the rest.
fn keys(prefer: Prefer) -> Vec<Key> {
    let mut v = vec![Key::Meets, Key::preferred(prefer)];
    for k in [Key::NoGovernor, Key::Others, Key::Memory, Key::Latency] {
        if !v.contains(&k) {
            v.push(k);
        }
    }
    v
}

impl Key {
    /// Less: `a` ranks before `b`. Predictions within 1 % of each other tie:
    /// the model is not that exact, and the words could not tell them apart.
    fn compare(self, a: &Candidate, b: &Candidate) -> Ordering {
        let others = |c: &Candidate| c.competitors_bytes_s.unwrap_or(0.0);
        let close = |x: f64, y: f64| (x - y).abs() <= 0.01 * x.abs().max(y.abs());
        match self {
            // fewer bounds missed first: a candidate that meets them all misses none
            Key::Meets => a.misses.len().cmp(&b.misses.len()),
            Key::Others if close(others(a), others(b)) => Ordering::Equal,
            Key::Others => others(b).total_cmp(&others(a)),
            Key::Latency if close(a.p99_ms, b.p99_ms) => Ordering::Equal,
            Key::Latency => a.p99_ms.total_cmp(&b.p99_ms),
            Key::Memory => a.dirty_bytes.cmp(&b.dirty_bytes),
            Key::NoGovernor => (a.policy != Policy::Vanilla).cmp(&(b.policy != Policy::Vanilla)),
        }
    }

    /// The key `prefer` puts right after the bounds.
    fn preferred(prefer: Prefer) -> Key {
        match prefer {
            Prefer::Throughput => Key::Others,
            Prefer::Latency => Key::Latency,
            Prefer::Memory => Key::Memory,
        }
    }

    /// Why `a` beats `b` on this key (they differ on it), ranked for `prefer`.
    fn why(self, a: &Candidate, b: &Candidate, prefer: Prefer) -> String {
        let others = |c: &Candidate| c.competitors_bytes_s.map_or("nothing".into(), mib_s);
        let why = match self {
            Key::Meets if a.misses.is_empty() => {
                return format!(
                    "the runner-up misses the objective ({})",
                    b.misses.join(", ")
                );
            }
            Key::Meets => {
                return format!(
                    "it misses fewer bounds ({}) than the runner-up ({})",
                    a.misses.join(", "),
                    b.misses.join(", ")
                );
            }
            Key::Others => format!(
                "it leaves the other writers {} against {}",
                others(a),
                others(b)
            ),
            Key::Latency => format!("its p99 is {:.1} ms against {:.1} ms", a.p99_ms, b.p99_ms),
            Key::Memory => format!(
                "it holds at most {} dirty against {}",
                oslab_units::human_bytes(a.dirty_bytes),
                oslab_units::human_bytes(b.dirty_bytes)
            ),
            Key::NoGovernor => format!(
                "it needs no governor ({} against {})",
                a.policy.name(),
                b.policy.name()
            ),
        };
        if self == Key::preferred(prefer) {
            let what = match prefer {
                Prefer::Throughput => "the others' throughput",
                Prefer::Latency => "the protected writers' latency",
                Prefer::Memory => "less memory at risk",
            };
            format!("{why} (you prefer {what})")
        } else {
            format!("{why}, and the keys before it tie")
        }
    }
}

/// Every candidate for the scenario `c` (its writers, device and rules), ranked
/// for `ob`; None when `ob.protect` names no writer or group of the scenario.
pub fn advise(c: &Config, ob: &Objective) -> Option<Vec<Candidate>> {
    let mine = protected(c, ob.protect.as_deref())?;
    let mut v: Vec<Candidate> = DIRTY_LIMITS
        .iter()
        .flat_map(|d| {
            [Policy::Vanilla, Policy::Wcall, Policy::WcallFair]
                .into_iter()
                .map(move |p| (*d, p))
        })
        .map(|(d, p)| candidate(c, d, p, ob, &mine))
        .collect();
    rank(&mut v, ob.prefer);
    Some(v)
}

/// Sorts candidates by the ranking's keys for `prefer`.
fn rank(v: &mut [Candidate], prefer: Prefer) {
    let order = keys(prefer);
    v.sort_by(|a, b| {
        order
            .iter()
            .map(|k| k.compare(a, b))
            .find(|o| o.is_ne())
            .unwrap_or(Ordering::Equal)
    });
}

/// Why the first candidate ranks before the second, in the objective's terms.
pub fn why_first(ranked: &[Candidate], prefer: Prefer) -> Option<String> {
    let (a, b) = (ranked.first()?, ranked.get(1)?);
    let key = keys(prefer).into_iter().find(|k| k.compare(a, b).is_ne());
    Some(match key {
        Some(k) => k.why(a, b, prefer),
        None => "the runner-up predicts the same on every key".into(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn objective(p99_ms: f64, prefer: Prefer) -> Objective {
        Objective {
            protect: None,
            p99_ms,
            max_over_200: None,
            others_floor_bytes_s: None,
            prefer,
        }
    }

    fn candidate(policy: Policy, dirty: u64, p99: f64, others: f64) -> Candidate {
        Candidate {
            dirty_bytes: dirty,
            dirty_background_bytes: dirty / 2,
            policy,
            p50_ms: 0.0,
            p90_ms: 0.0,
            p99_ms: p99,
            max_ms: p99,
            over_200: 0,
            competitors_bytes_s: Some(others),
            meets: true,
            misses: vec![],
        }
    }

    #[test]
    fn the_ranking_puts_a_met_target_first() {
        let c = oslab_wbsim::scenario::find("testbed-fig2").unwrap().config;
        let v = advise(&c, &objective(5.0, Prefer::Throughput)).unwrap();
        assert_eq!(v.len(), DIRTY_LIMITS.len() * 3);
        let first_miss = v.iter().position(|x| !x.meets).unwrap_or(v.len());
        assert!(
            v[first_miss..]
                .iter()
                .all(|x| !x.meets && !x.misses.is_empty())
        );
        assert!(v[..first_miss].iter().all(|x| x.p99_ms <= 5.0));
        // an impossible target: nothing meets it
        let none = advise(&c, &objective(0.0, Prefer::Throughput)).unwrap();
        assert!(none.iter().all(|x| !x.meets));
        assert!(
            advise(
                &c,
                &Objective {
                    protect: Some("nobody".into()),
                    ..objective(5.0, Prefer::Latency)
                }
            )
            .is_none()
        );
    }

    #[test]
    fn the_preference_decides_between_candidates_that_meet_the_bounds_and_says_so() {
        // hand-made: vanilla at 512 MiB with p99 47.7 ms leaves the others 43.7
        // MiB/s; wcall-fair at 512 MiB, p99 0.3 ms, leaves them 30.5
        let vanilla = candidate(Policy::Vanilla, 512 * MIB, 47.7, 43.7 * MIB as f64);
        let fair = candidate(Policy::WcallFair, 512 * MIB, 0.3, 30.5 * MIB as f64);
        let rank = |prefer| {
            let mut v = vec![vanilla.clone(), fair.clone()];
            rank(&mut v, prefer);
            v
        };
        let by_throughput = rank(Prefer::Throughput);
        assert_eq!(by_throughput[0].policy, Policy::Vanilla);
        assert_eq!(
            why_first(&by_throughput, Prefer::Throughput).unwrap(),
            "it leaves the other writers 43.7 MiB/s against 30.5 MiB/s (you prefer the others' throughput)"
        );
        let by_latency = rank(Prefer::Latency);
        assert_eq!(by_latency[0].policy, Policy::WcallFair);
        assert!(
            why_first(&by_latency, Prefer::Latency)
                .unwrap()
                .starts_with("its p99 is 0.3 ms against 47.7 ms")
        );
        // the same memory and latency: the one without a governor
        let twin = candidate(Policy::Wcall, 512 * MIB, 47.7, 43.7 * MIB as f64);
        let v = vec![vanilla.clone(), twin];
        assert!(
            why_first(&v, Prefer::Memory)
                .unwrap()
                .starts_with("it needs no governor")
        );
        // a miss is named
        let mut missed = fair.clone();
        missed.meets = false;
        missed.misses = vec!["p99 60.0 ms > 50 ms".into()];
        assert_eq!(
            why_first(&[vanilla.clone(), missed], Prefer::Latency).unwrap(),
            "the runner-up misses the objective (p99 60.0 ms > 50 ms)"
        );
        // a tie-break is not called the user's preference, and 0.5 % apart ties
        let governed = candidate(Policy::Wcall, 256 * MIB, 47.9, 40.0 * MIB as f64);
        let v = vec![vanilla, governed];
        assert_eq!(
            why_first(&v, Prefer::Latency).unwrap(),
            "it needs no governor (vanilla against wcall), and the keys before it tie"
        );
    }

    #[test]
    fn a_group_is_protected_as_a_whole() {
        let c = oslab_wbsim::scenario::find("testbed-fig2").unwrap().config;
        assert_eq!(protected(&c, Some("rt45b")), Some(vec![2]));
        assert_eq!(protected(&c, Some("rt-low")), Some(vec![1, 2]));
        assert_eq!(protected(&c, None), Some(vec![0]));
    }
}
