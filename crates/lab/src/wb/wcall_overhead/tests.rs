use super::*;
use oslab_model::Verdict;

fn plan() -> Plan {
    Plan {
        samples: 2,
        batches: 5,
        per_batch: 100,
    }
}

/// Every write counted unless `lost`.
fn raw(plain: f64, governed: f64, lost: u64) -> Raw {
    Raw {
        plain_ns: vec![plain; 10],
        governed_ns: vec![governed; 10],
        warmup_calls: WARMUP_CALLS,
        writes_counted: 2 * (500 + WARMUP_CALLS) - lost,
        file: "/tmp/x/overhead.dat".into(),
    }
}

fn env(clocksource: &str) -> Environment {
    let mut e = crate::wb::wcall::tests::env(None);
    e.machine.kernel.clocksource = Some(clocksource.into());
    e
}

#[test]
fn every_verdict() {
    let j = |r: &Raw, cs: &str| judge::judge(&plan(), r, &env(cs)).claims.remove(0);
    let c = j(&raw(900.0, 930.0, 0), "tsc");
    assert_eq!(c.verdict, Verdict::Holds, "{c:?}");
    assert_eq!(
        c.expectation,
        "median overhead below 1000 ns, and writes the governor counted exactly 3000"
    );
    let c = j(&raw(900.0, 2500.0, 0), "hpet");
    assert_eq!(c.verdict, Verdict::Differs);
    assert!(
        c.why.contains("hpet") && c.why.contains("system call"),
        "{}",
        c.why
    );
    let c = j(&raw(900.0, 2500.0, 0), "tsc");
    assert!(c.why.contains("no other load was seen"), "{}", c.why);
    let mut busy = env("tsc");
    busy.load.warning = Some("other programs kept about 90 % of the CPUs busy".into());
    let c = judge::judge(&plan(), &raw(900.0, 2500.0, 0), &busy)
        .claims
        .remove(0);
    assert!(
        c.why
            .ends_with("the run's load: other programs kept about 90 % of the CPUs busy"),
        "{}",
        c.why
    );
    let c = j(&raw(900.0, 930.0, 7), "tsc");
    assert_eq!(c.verdict, Verdict::Differs);
    assert!(c.why.contains("2993 writes"), "{}", c.why);
    let mut none = raw(900.0, 930.0, 0);
    none.governed_ns.clear();
    let c = j(&none, "tsc");
    assert_eq!(c.verdict, Verdict::NotJudged);
    assert!(c.why.contains("no timed batch"), "{}", c.why);
}

#[test]
fn findings() {
    let out = judge::judge(&plan(), &raw(900.0, 930.0, 0), &env("tsc"));
    let f = |n: &str| out.findings.iter().find(|f| f.name == n).unwrap().value;
    assert_eq!(f("overhead_ns"), 30.0);
    assert!((f("ratio") - 930.0 / 900.0).abs() < 1e-12);
    assert_eq!(f("writes_counted"), 3000.0);
}
