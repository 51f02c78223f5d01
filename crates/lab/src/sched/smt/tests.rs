use super::*;
use crate::sched::common::testenv::env;
use oslab_model::Verdict;

fn topo(smt: bool) -> Vec<CpuSeen> {
    let sib = |c: u32| if smt { vec![c % 2, c % 2 + 2] } else { vec![c] };
    (0..4)
        .map(|c| CpuSeen {
            cpu: c,
            core_id: Some(c % 2),
            siblings: sib(c),
        })
        .collect()
}

fn worker(readings: u64) -> Worker {
    Worker {
        start_ns: 0,
        end_ns: 1_000_000_000,
        readings,
        ..Default::default()
    }
}

/// One thread does 100 readings per second in all; siblings `s`, cores `c`.
fn raw(s: u64, c: u64) -> Raw {
    Raw {
        topology: topo(true),
        smt_control: Some("on".into()),
        sibling_pair: Some((0, 2)),
        separate_pair: Some((0, 1)),
        runs: Some(Runs {
            one_thread: vec![worker(50), worker(50)],
            siblings: vec![worker(s / 2), worker(s / 2)],
            cores: vec![worker(c / 2), worker(c / 2)],
        }),
    }
}

#[test]
fn every_verdict() {
    let e = env(Some(250), None);
    let v = |r: &Raw| judge::judge(r, &e).claims[0].clone();
    assert_eq!(v(&raw(124, 200)).verdict, Verdict::Holds);
    let c = v(&raw(180, 200));
    assert_eq!(c.verdict, Verdict::Differs);
    assert!(c.why.contains("more than"), "{}", c.why);
    let c = v(&raw(102, 200));
    assert_eq!(c.verdict, Verdict::Differs);
    assert!(c.why.contains("compete"), "{}", c.why);
    let kvm = env(Some(250), Some("KVM"));
    assert!(
        judge::judge(&raw(102, 200), &kvm).claims[0]
            .why
            .contains("KVM")
    );
    let c = v(&raw(124, 140));
    assert_eq!(c.verdict, Verdict::Differs);
    assert!(c.why.contains("second core"), "{}", c.why);
    assert!(
        c.expectation
            .starts_with("gain of a sibling thread between 10")
            && c.expectation
                .contains("and gain of a second core at least 70"),
        "{}",
        c.expectation
    );
    let out = judge::judge(&raw(124, 200), &e);
    let g = out.findings.iter().find(|f| f.name == "smt_gain").unwrap();
    assert!((g.value - 0.24).abs() < 1e-9);
}

#[test]
fn without_smt_it_is_not_testable_and_says_the_topology() {
    let r = Raw {
        topology: topo(false),
        smt_control: Some("notsupported".into()),
        sibling_pair: None,
        separate_pair: Some((0, 1)),
        runs: None,
    };
    let out = judge::judge(&r, &env(Some(250), None));
    let c = &out.claims[0];
    assert_eq!(c.verdict, Verdict::NotTestable);
    assert!(c.why.contains("cpu0: core 0, no SMT sibling"), "{}", c.why);
    assert!(c.why.contains("notsupported"), "{}", c.why);
    assert_eq!(
        describe(&topo(true)[..2]),
        "cpu0: core 0, sibling cpu2; cpu1: core 1, sibling cpu3"
    );
    assert_eq!(
        describe(&[CpuSeen {
            cpu: 3,
            core_id: None,
            siblings: vec![3, 7, 11]
        }]),
        "cpu3: core unknown, siblings cpu7, cpu11"
    );
}
