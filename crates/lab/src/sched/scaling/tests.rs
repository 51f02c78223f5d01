//! Synthetic raw data through the scaling judge: every verdict of its claim.

use oslab_model::Verdict;
use oslab_sys::parse::procstat::CpuTimes;

use super::*;
use crate::sched::common::testenv::env;

fn plan() -> Plan {
    Plan {
        work: 0.1,
        ns: vec![1, 2, 3, 4],
        cpus: 2,
        gap_ns: GAP_NS,
    }
}

/// A round whose processes end `real` s after the common start, 0.1 s user each;
/// `steal` jiffies of 1000 stolen.
fn round(real: &[f64], steal: u64) -> Round {
    Round {
        n: real.len(),
        workers: real
            .iter()
            .map(|r| Worker {
                start_ns: 1_000,
                end_ns: 1_000 + (r * 1e9) as u64,
                user_ns: 100_000_000,
                sys_ns: 1_000_000,
                ..Default::default()
            })
            .collect(),
        stat_before: Some(CpuTimes::default()),
        stat_after: Some(CpuTimes {
            user: 1000 - steal,
            steal,
            ..Default::default()
        }),
    }
}

/// One CPU: N x 0.1 s (`one_n2` for N = 2); all CPUs: flat to 2, then 2x.
fn raw(one_n2: f64, all_n2: f64, steal: u64) -> Raw {
    Raw {
        cpu0: 0,
        one_cpu: vec![
            round(&[0.1], steal),
            round(&[one_n2; 2], steal),
            round(&[0.3; 3], steal),
            round(&[0.4; 4], steal),
        ],
        all_cpus: vec![
            round(&[0.1], steal),
            round(&[all_n2; 2], steal),
            round(&[0.2, 0.2, 0.15], steal),
            round(&[0.2; 4], steal),
        ],
    }
}

fn judged(multiload: bool, raw: &Raw, hv: Option<&str>) -> Output {
    judge::judge(multiload, &plan(), raw, &env(Some(250), hv))
}

#[test]
fn the_books_curves_hold() {
    let out = judged(true, &raw(0.2, 0.1, 0), None);
    let c = &out.claims[0];
    assert_eq!(c.verdict, Verdict::Holds, "{c:?}");
    assert!(
        c.expectation
            .starts_with("one CPU, N=2: mean real within 35 % of 0.200 s"),
        "{}",
        c.expectation
    );
    assert!(
        c.expectation
            .contains("all CPUs, N=2: mean real below 0.135 s")
    );
    assert!(c.expectation.contains("all CPUs, N=4: throughput above 14"));
    let f = |n: &str| out.findings.iter().find(|f| f.name == n).map(|f| f.value);
    assert_eq!(f("one_cpu.n4"), Some(0.4));
    assert_eq!(f("all_cpus.n3.p3"), Some(0.15));
    assert_eq!(out.plots.len(), 2);
    // scaling has no per-process findings
    let out = judged(false, &raw(0.2, 0.1, 0), None);
    assert!(out.findings.iter().all(|f| !f.name.contains(".p")));
}

#[test]
fn a_slow_round_differs_and_names_the_steal() {
    let out = judged(false, &raw(0.4, 0.1, 0), None);
    let c = &out.claims[0];
    assert_eq!(c.verdict, Verdict::Differs);
    assert!(
        c.why.starts_with("off: one CPU, N=2: mean real"),
        "{}",
        c.why
    );
    assert!(c.why.contains("stole only 0.0 %"), "{}", c.why);
    let c = &judged(false, &raw(0.2, 0.2, 100), Some("KVM")).claims[0];
    assert_eq!(c.verdict, Verdict::Differs);
    assert!(c.why.contains("all CPUs, N=2"), "{}", c.why);
    assert!(
        c.why.contains("under KVM the host stole 10.0 %"),
        "{}",
        c.why
    );
}

#[test]
fn without_a_process_alone_it_is_not_judged() {
    let mut r = raw(0.2, 0.1, 0);
    r.one_cpu.remove(0);
    let c = &judged(false, &r, None).claims[0];
    assert_eq!(c.verdict, Verdict::NotJudged);
    assert!(c.why.contains("reference is missing"), "{}", c.why);
}

#[test]
fn a_point_by_hand() {
    let p = point(2, &[1.0, 2.0], &[0.5, 0.5], &[0.0, 0.1]);
    assert_eq!((p.real_mean, p.real_max, p.throughput), (1.5, 2.0, 1.0));
    assert!((p.sys_mean - 0.05).abs() < 1e-12);
}
