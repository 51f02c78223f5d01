//! cpu.syscall judged on synthetic raw data: every verdict of both claims.
use super::judge::judge;
use super::*;
use oslab_model::Verdict;

/// A synthetic run: the loop costs 1 ns, gettid `gettid_ns` more.
fn raw(gettid_ns: f64, voluntary: u64, mitigations: &[&str]) -> Raw {
    let probe = |name: &str, ns: f64| ProbeRaw {
        name: name.into(),
        batch: 1000,
        ns_per_call: vec![ns; 5],
    };
    Raw {
        cpu: 0,
        ran_on: Some(0),
        probes: vec![
            probe("loop", 1.0),
            probe("gettid", gettid_ns + 1.0),
            probe("getppid", gettid_ns + 2.0),
            probe("clock_gettime_vdso", 21.0),
        ],
        voluntary_switches: voluntary,
        involuntary_switches: 3,
        mitigations: mitigations.iter().map(|m| m.to_string()).collect(),
    }
}

fn verdicts(r: &Raw) -> (Verdict, Verdict, String) {
    let out = judge(&Plan { samples: 5 }, r, 1);
    (
        out.claims[0].verdict,
        out.claims[1].verdict,
        out.claims[1].why.clone(),
    )
}

#[test]
fn every_verdict_of_both_claims() {
    // 20,000 calls: one switch is 50 per million, none is 0
    assert_eq!(verdicts(&raw(50.0, 0, &[])).0, Verdict::Holds);
    assert_eq!(verdicts(&raw(50.0, 1, &[])).0, Verdict::Differs);
    let (_, cost, _) = verdicts(&raw(50.0, 0, &[]));
    assert_eq!(cost, Verdict::Holds);
    let (_, cost, why) = verdicts(&raw(400.0, 0, &["spectre_v2: Mitigation: Retpolines"]));
    assert_eq!(cost, Verdict::Differs);
    assert!(why.contains("Retpolines"), "{why}");
    let (_, _, why) = verdicts(&raw(400.0, 0, &[]));
    assert!(why.contains("no mitigation"), "{why}");
    let (_, cost, why) = verdicts(&raw(5.0, 0, &[]));
    assert_eq!(cost, Verdict::Differs);
    assert!(why.contains("cheaper"), "{why}");
}

#[test]
fn the_loop_is_subtracted_and_reported_beside() {
    let out = judge(&Plan { samples: 5 }, &raw(50.0, 0, &[]), 1);
    let f = |n: &str| out.findings.iter().find(|f| f.name == n).unwrap().value;
    assert_eq!(f("gettid_ns"), 50.0);
    assert_eq!(f("gettid_uncorrected_ns"), 51.0);
    assert_eq!(f("loop_overhead_ns"), 1.0);
    assert_eq!(out.params["batch_gettid"], 1000);
}
