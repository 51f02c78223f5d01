use super::judge::*;
use super::*;
use oslab_model::Verdict;

fn raw(latency_ms: Vec<f64>, peak_mib: u64) -> Raw {
    let start_s = (0..latency_ms.len()).map(|i| i as f64 * 0.1).collect();
    Raw {
        testbed_device: "/dev/loop9".into(),
        testbed_cap: Default::default(),
        testbed_measured_bytes_s: 10.0 * (1 << 20) as f64,
        dirty_bytes: HARD,
        dirty_background_bytes: BACKGROUND,
        chunk_bytes: CHUNK as u64,
        traces: vec![WriterTrace {
            bytes: latency_ms.len() as u64 * CHUNK as u64,
            start_s,
            latency_ms,
            error: None,
            tid: 0,
            tgid: 0,
        }],
        polls: vec![Poll {
            t_s: 1.0,
            dirty_bytes: (peak_mib << 20) / 2,
            writeback_bytes: (peak_mib << 20) / 2,
            ..Default::default()
        }],
        testbed_dev: "7:9".into(),
        kernel: TraceOutcome::default(),
    }
}

fn judged(r: &Raw) -> oslab_model::Claim {
    let plan = Plan {
        bandwidth: 10 << 20,
        writers: 1,
        duration: 15.0,
    };
    judge(&plan, r, 1).claims.remove(0)
}

/// 100 writes: `slow` of them take `ms`, the rest 1 ms.
fn lat(slow: usize, ms: f64) -> Vec<f64> {
    (0..100).map(|i| if i < slow { ms } else { 1.0 }).collect()
}

#[test]
fn every_verdict() {
    let c = judged(&raw(lat(10, 150.0), 60));
    assert_eq!(c.verdict, Verdict::Holds, "{c:?}");
    assert!(c.expectation.contains("p99 at least 20 ms"), "{c:?}");
    // the limit never reached
    let c = judged(&raw(lat(10, 150.0), 40));
    assert_eq!(c.verdict, Verdict::Differs);
    assert!(c.why.contains("below the free-run point"), "{}", c.why);
    // one long write, but the p99 a page-cache copy: differs on the p99 alone
    let c = judged(&raw(lat(1, 150.0), 60));
    assert_eq!(c.verdict, Verdict::Differs);
    assert!(c.why.contains("stayed short"), "{}", c.why);
    // nothing written
    let c = judged(&raw(vec![], 60));
    assert_eq!(c.verdict, Verdict::NotJudged);
    assert_eq!(c.why, "no write() completed");
}

#[test]
fn findings_per_writer() {
    let plan = Plan {
        bandwidth: 10 << 20,
        writers: 1,
        duration: 15.0,
    };
    let out = judge(&plan, &raw(lat(10, 250.0), 60), 1);
    let f = |n: &str| out.findings.iter().find(|f| f.name == n).unwrap().value;
    assert_eq!(f("max_ms"), 250.0);
    assert_eq!(f("writes_over_200ms"), 10.0);
    assert_eq!(f("peak_dirty_plus_writeback_mib"), 60.0);
    assert_eq!(out.measurements[0].name, "latency.writer0");
    assert!(out.notes[0].contains("/dev/loop9"));
}
