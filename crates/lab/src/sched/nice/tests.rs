//! Synthetic raw data through `sched.nice`'s judge: every verdict of its claim and
//! every reason given.

use oslab_model::Verdict;
use oslab_sys::parse::pidsched::PidSched;
use oslab_sys::parse::procstat::CpuTimes;

use super::*;
use crate::sched::common::testenv::{env, round_robin};

fn plan(ks: &[i32]) -> Plan {
    Plan {
        duration: 1.0,
        ks: ks.to_vec(),
        interval_ms: 100.0,
        gap_ns: GAP_NS,
    }
}

fn stat(steal: u64) -> CpuTimes {
    CpuTimes {
        user: 1000 - steal,
        steal,
        ..Default::default()
    }
}

/// Nice 0 runs `t0` ms per turn, nice k 4 ms, for 1 s; `cut`: nice 0's turns are
/// interrupted; the kernel's weights as the table says unless `weight_k` is given;
/// `steal` jiffies of 1000 stolen.
fn pair(k: i32, t0: f64, cut: bool, weight_k: Option<u64>, steal: u64) -> Pair {
    let sched = |nice: i32, w: u64| PidSched {
        slice_ns: Some(1_400_000),
        load_weight: Some(w << 10),
        prio: Some(120 + i64::from(nice)),
    };
    Pair {
        k,
        workers: round_robin(2, &[t0, 4.0], 1000.0, if cut { &[0] } else { &[] }),
        sched: vec![sched(0, 1024), sched(k, weight_k.unwrap_or(weight(k)))],
        stat_before: Some(CpuTimes::default()),
        stat_after: Some(stat(steal)),
        kernel: Default::default(),
    }
}

fn judged(pairs: Vec<Pair>, hv: Option<&str>) -> Output {
    let ks: Vec<i32> = pairs.iter().map(|p| p.k).collect();
    judge::judge(&plan(&ks), &Raw { cpu: 0, pairs }, &env(Some(250), hv))
}

fn value(out: &Output, name: &str) -> f64 {
    out.findings.iter().find(|f| f.name == name).unwrap().value
}

fn detail<'a>(out: &'a Output, name: &str) -> &'a str {
    &out.findings.iter().find(|f| f.name == name).unwrap().detail
}

#[test]
fn shares_by_the_weights_hold() {
    // 4 ms of nice k against 4 x w(0) / w(k) of nice 0
    let r = |k: i32| 4.0 * 1024.0 / weight(k) as f64;
    let out = judged(
        vec![
            pair(5, r(5), false, None, 0),
            pair(10, r(10), false, None, 0),
        ],
        None,
    );
    let c = &out.claims[0];
    assert_eq!(c.verdict, Verdict::Holds, "{c:?}");
    assert_eq!(
        c.expectation,
        "k=5: run time of nice 0 over nice 5 within 15 % of 3.06x, and k=10: run time of nice 0 over nice 10 within 15 % of 9.31x"
    );
    assert!((value(&out, "share.nice0_vs_10") - predicted_share(10)).abs() < 0.01);
    assert!((value(&out, "turn_ms.nice0_vs_10") - r(10)).abs() < 0.01);
    assert_eq!(value(&out, "turn_ms.nice10"), 4.0);
    assert!(detail(&out, "turn_ms.nice10").contains("only enforced at a tick (4.00 ms at HZ 250)"));
    assert!(detail(&out, "turn_ms.nice0_vs_10").contains("no gap inside its turns"));
    let m = &out.measurements[1];
    assert_eq!(m.name, "interval_share.nice0_vs_10");
    assert!(m.samples.len() >= 4, "{:?}", m.samples);
    assert!(
        m.samples.iter().all(|s| (0.85..0.95).contains(s)),
        "{:?}",
        m.samples
    );
    assert_eq!(out.plots[0].id, "nice");
}

#[test]
fn nice_19_at_15_to_1_differs() {
    // 0.936 of the CPU is within 0.05 of the table's 0.986, but 15:1 is no 68:1
    let out = judged(vec![pair(19, 62.0, false, None, 0)], None);
    let c = &out.claims[0];
    assert_eq!(c.verdict, Verdict::Differs, "{c:?}");
    let share = value(&out, "share.nice0_vs_19");
    assert!((share - predicted_share(19)).abs() <= 0.05, "{share}");
    assert!(c.why.contains(":1 instead of 68.3:1"), "{}", c.why);
}

#[test]
fn each_reason_for_a_difference_comes_from_the_raw_data() {
    let why = |p: Pair, hv: Option<&str>| judged(vec![p], hv).claims[0].why.clone();
    let w = why(pair(10, 10.0, false, Some(1024), 0), None);
    assert!(w.contains("did not take"), "{w}");
    let w = why(pair(10, 10.0, false, None, 200), Some("KVM"));
    assert!(w.contains("stole 20 %") && w.contains("KVM"), "{w}");
    let w = why(pair(10, 10.0, true, None, 0), None);
    assert!(w.contains("another task"), "{w}");
    // interrupted turns: the run between gaps is explained, the turn reported
    let out = judged(vec![pair(10, 37.2, true, None, 0)], None);
    assert_eq!(out.claims[0].verdict, Verdict::Holds);
    let d = detail(&out, "turn_ms.nice0_vs_10");
    assert!(d.contains("no slice of the scheduler's"), "{d}");
    assert!(d.contains("(other tasks or interrupts took it)"), "{d}");
    let kvm = judged(vec![pair(10, 37.2, true, None, 10)], Some("KVM"));
    let d = detail(&kvm, "turn_ms.nice0_vs_10");
    assert!(
        d.contains("the KVM host took it; the host stole 1.0 %"),
        "{d}"
    );
    assert!((value(&out, "turn_ms.nice0_vs_10") - 37.0).abs() < 0.01);
}

#[test]
fn a_starved_or_silent_pair() {
    // nice k never ran: as far from the table as can be
    let mut p = pair(19, 50.0, false, None, 0);
    p.workers[1] = Default::default();
    let out = judged(vec![p], None);
    assert_eq!(out.claims[0].verdict, Verdict::Differs);
    // neither ran: not judged, with the reason
    let mut p = pair(19, 50.0, false, None, 0);
    p.workers = vec![Default::default(), Default::default()];
    let c = &judged(vec![p], None).claims[0];
    assert_eq!(c.verdict, Verdict::NotJudged);
    assert!(c.why.contains("neither worker ran"), "{}", c.why);
    // no k at all
    assert_eq!(judged(vec![], None).claims[0].verdict, Verdict::NotJudged);
}

/// Regression (found by the raw file fuzz run): a worker's last clock reading
/// changed to near the end of time made the judge split the window into billions
/// of intervals, each walking every run; a window longer than a run holds is not
/// split, and an honest one is split as before.
#[test]
fn a_window_no_run_could_hold_is_not_split() {
    let honest = judged(vec![pair(5, 4.0, false, None, 0)], None);
    let shares = |out: &Output| {
        out.measurements
            .iter()
            .find(|m| m.name == "interval_share.nice0_vs_5")
            .map(|m| m.samples.len())
    };
    assert_eq!(
        shares(&honest),
        Some(9),
        "whole 100 ms intervals of the common window"
    );
    let mut damaged = pair(5, 4.0, false, None, 0);
    for w in &mut damaged.workers {
        w.end_ns = u64::MAX - 1;
    }
    assert_eq!(shares(&judged(vec![damaged], None)), None);
}
