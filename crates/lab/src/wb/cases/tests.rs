//! wb.cases judged on synthetic raw data.

use oslab_model::Verdict;

use super::judge::episodes;
use super::*;
use oslab_harness::testing::captured_env as test_env;
use oslab_services::sawtooth::testing::{saw_raw, sawtooth_polls};

#[test]
fn episodes_and_stretches() {
    let r = [0.0, 5.0, 6.0, 0.0, 0.0, 7.0, 0.0, 9.0, 9.0, 9.0];
    let (n, longest) = episodes(&r, 0.1, 1.0);
    assert_eq!(n, 3);
    assert!((longest - 0.3).abs() < 1e-9);
}

fn plan() -> Plan {
    Plan {
        rate: 8 << 20,
        bandwidth: 20 << 20,
        duration: 25.0,
    }
}

/// Case 1 flushing 51 MiB at a time, case 2 5 MiB at a time (or the other way).
fn raw(swapped: bool) -> Raw {
    let late = saw_raw(sawtooth_polls(8.0, 51.2, 0.0, 25.0), 0);
    let often = saw_raw(sawtooth_polls(8.0, 5.12, 0.0, 25.0), 0);
    Raw {
        testbed: TestbedFacts {
            device: "loop0".into(),
            dev: "7:0".into(),
            size_bytes: 1 << 30,
            bandwidth_bytes_s: 20 << 20,
            cap: Some(Default::default()),
            measured_bytes_s: 20.0 * (1 << 20) as f64,
        },
        cases: if swapped {
            vec![often, late]
        } else {
            vec![late, often]
        },
    }
}

#[test]
fn every_verdict() {
    let out = judge::judge(&plan(), &raw(false), &test_env(None));
    let c = &out.claims[0];
    assert_eq!(c.verdict, Verdict::Holds, "{c:?}");
    assert!(
        c.expectation.contains("episodes minus case 1's at least 0"),
        "{}",
        c.expectation
    );
    let f = |n: &str| out.findings.iter().find(|f| f.name == n).unwrap().value;
    assert!(f("case2.flushes") > f("case1.flushes"));
    assert!(f("case1.peak_dirty_mib") > 50.0);
    assert_eq!(f("testbed_measured_mib_s"), 20.0);
    let testbed = out
        .findings
        .iter()
        .find(|f| f.name == "testbed_measured_mib_s")
        .unwrap();
    assert!(
        testbed.detail.contains("cgroup v1 blkio throttle"),
        "the slow device's kind is said: {}",
        testbed.detail
    );
    let out = judge::judge(&plan(), &raw(true), &test_env(None));
    let c = &out.claims[0];
    assert_eq!(c.verdict, Verdict::Differs);
    assert!(c.why.contains("did not lower peak Dirty"), "{}", c.why);
    assert!(c.why.contains("fewer write-back episodes"), "{}", c.why);
    let mut one = raw(false);
    one.cases.pop();
    let out = judge::judge(&plan(), &one, &test_env(None));
    assert_eq!(out.claims[0].verdict, Verdict::NotJudged);
}
