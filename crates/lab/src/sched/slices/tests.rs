//! Synthetic raw data through `sched.slices`' judge: every verdict of its claim.

use oslab_model::Verdict;
use oslab_sys::parse::pidsched::PidSched;
use oslab_sys::parse::schedstat::SchedStat;

use super::*;
use crate::sched::common::testenv::{env, round_robin};

fn plan() -> Plan {
    Plan {
        duration: 1.0,
        trace: None,
        ns: vec![1, 2, 4],
        gap_ns: GAP_NS,
    }
}

/// Rounds of 1, 2 and 4 workers taking turns of `turn` ms for 1 s, se.slice 1.4
/// ms (or unknown), 250 timer interrupts in the 0.5 s window.
fn raw(turn: f64, se_slice: Option<u64>, cut: &[usize]) -> Raw {
    let rounds = [1usize, 2, 4]
        .iter()
        .map(|&n| Round {
            n,
            workers: round_robin(n, &[turn], 1000.0, cut),
            kernel: Default::default(),
            first_sched: PidSched {
                slice_ns: se_slice,
                load_weight: Some(1_048_576),
                prio: Some(120),
            },
            window: Window {
                ns: 500_000_000,
                timer_before: Some(1000),
                timer_after: Some(1125),
                schedstat_before: Some(SchedStat::default()),
                schedstat_after: Some(SchedStat {
                    run_ns: 250_000_000,
                    wait_ns: 250_000_000,
                    timeslices: 62,
                }),
            },
        })
        .collect();
    Raw { cpu: 0, rounds }
}

fn judged(raw: &Raw, hz: Option<u32>) -> Output {
    judge::judge(&plan(), raw, &env(hz, Some("KVM")))
}

fn value(out: &Output, name: &str) -> f64 {
    out.findings.iter().find(|f| f.name == name).unwrap().value
}

#[test]
fn tick_long_turns_hold() {
    let out = judged(&raw(4.0, Some(1_400_000), &[]), Some(250));
    let c = &out.claims[0];
    assert_eq!(c.verdict, Verdict::Holds, "{c:?}");
    assert!(
        c.expectation.contains("N=2: median slice within 50 % of 4"),
        "{}",
        c.expectation
    );
    assert!(c.why.contains("tick"), "{}", c.why);
    assert_eq!(value(&out, "n2"), 4.0);
    assert_eq!(value(&out, "timer_hz"), 250.0);
    assert!(out.findings.iter().any(|f| f.name == "recording_ns"));
    let m: Vec<&str> = out.measurements.iter().map(|m| m.name.as_str()).collect();
    assert_eq!(m, ["slice_ms.n2", "slice_ms.n4"]);
    let d = &out.findings.iter().find(|f| f.name == "n4").unwrap().detail;
    assert!(d.contains("wait median 12.00 ms (predicted 12.00)"), "{d}");
    assert!(d.contains("ran 0.500 of the time in 62 timeslices"), "{d}");
    assert_eq!(out.plots.len(), 3);
}

#[test]
fn short_runs_differ_and_the_gaps_are_counted() {
    // every turn of every worker split in two: runs of about 2 ms
    let out = judged(&raw(4.0, Some(1_400_000), &[0, 1, 2, 3]), Some(250));
    let c = &out.claims[0];
    assert_eq!(c.verdict, Verdict::Differs, "{c:?}");
    assert!(c.why.contains("N=2, N=4"), "{}", c.why);
    assert!(c.why.contains("KVM"), "{}", c.why);
    // far too long a slice differs too (no gaps to blame)
    let out = judged(&raw(20.0, Some(1_400_000), &[]), Some(250));
    assert_eq!(out.claims[0].verdict, Verdict::Differs);
    assert!(!out.claims[0].why.contains("KVM"), "{}", out.claims[0].why);
}

#[test]
fn without_a_prediction_or_a_slice_it_is_not_judged() {
    let out = judged(&raw(4.0, None, &[]), None);
    assert_eq!(out.claims[0].verdict, Verdict::NotJudged);
    assert!(
        out.claims[0].why.contains("nothing predicts"),
        "{}",
        out.claims[0].why
    );
    // se.slice alone predicts: 1.4 ms, and 1.5 ms turns hold
    let out = judged(&raw(1.5, Some(1_400_000), &[]), None);
    assert_eq!(out.claims[0].verdict, Verdict::Holds, "{:?}", out.claims[0]);
    // a turn longer than the window leaves no complete slice
    let out = judged(&raw(600.0, Some(1_400_000), &[]), Some(250));
    assert_eq!(out.claims[0].verdict, Verdict::NotJudged);
    assert!(
        out.claims[0].why.contains("no complete slice"),
        "{}",
        out.claims[0].why
    );
}

#[test]
fn a_worker_never_switched_in_again_ran_in_one_stretch() {
    let mut r = raw(4.0, Some(1_400_000), &[]);
    for round in &mut r.rounds {
        round.window.schedstat_after = Some(SchedStat {
            run_ns: 499_000_000,
            wait_ns: 0,
            timeslices: 0,
        });
    }
    let out = judged(&r, Some(250));
    let d = &out.findings.iter().find(|f| f.name == "n4").unwrap().detail;
    assert!(d.contains("ran 0.998 of the time in one stretch"), "{d}");
    assert!(!d.contains("0 timeslices"), "{d}");
}
