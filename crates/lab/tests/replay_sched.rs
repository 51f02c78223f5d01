//! Replay of the scheduler experiments' raw fixtures (see replay.rs), captured with
//! `oslab run ID --quick --save-raw` on a 2-vCPU KVM guest (6.18, EEVDF, HZ 250)
//! that other programs shared.

mod common;
use common::{finding, judged, raw_file, verdict};
use oslab_model::Verdict;

#[test]
fn sched_multiload() {
    let r = judged("sched.multiload");
    assert_eq!(
        verdict(&r, "past-the-cpus-only-turnaround-grows"),
        Verdict::Holds
    );
    // one CPU: N processes of 0.1 s each end after about N x 0.1 s
    for n in 1..=4 {
        let real = finding(&r, &format!("one_cpu.n{n}"));
        assert!(
            (0.09 * n as f64..0.12 * n as f64).contains(&real),
            "{n}: {real}"
        );
    }
    // all CPUs: flat up to the 2 CPUs, then twice as long
    assert!((0.09..0.12).contains(&finding(&r, "all_cpus.n2")));
    assert!((0.18..0.22).contains(&finding(&r, "all_cpus.n4")));
    // every process's own real, user and sys
    let p = r.finding("one_cpu.n4.p4").unwrap();
    assert!(p.detail.contains("user 0.10"), "{}", p.detail);
    assert_eq!(r.params["ns"], serde_json::json!([1, 2, 3, 4]));
}

#[test]
fn sched_scaling() {
    let r = judged("sched.scaling");
    assert_eq!(
        verdict(&r, "past-the-cpus-only-turnaround-grows"),
        Verdict::Holds
    );
    let (n1, n8) = (finding(&r, "one_cpu.n1"), finding(&r, "one_cpu.n8"));
    // eight processes share one CPU: each takes about eight times as long
    assert!((7.5..8.5).contains(&(n8 / n1)), "{n1} {n8}");
    // and two CPUs: about four times
    let all8 = finding(&r, "all_cpus.n8");
    assert!((0.35..0.45).contains(&all8), "{all8}");
    assert_eq!(r.plots.len(), 2);
    // no per-process findings: that is multiload's
    assert!(r.finding("one_cpu.n2.p1").is_none());
}

#[test]
fn sched_slices() {
    let r = judged("sched.slices");
    assert_eq!(verdict(&r, "slice-is-tick-bound"), Verdict::Holds);
    // one 4 ms tick per turn at N = 2 and 4
    for n in ["n2", "n4"] {
        let s = finding(&r, n);
        assert!((3.8..4.1).contains(&s), "{n}: {s}");
    }
    let hz = finding(&r, "timer_hz");
    assert!((245.0..260.0).contains(&hz), "{hz}");
    assert!(r.finding("timer_hz").unwrap().detail.contains("agrees"));
    let w = &r.finding("n4").unwrap().detail;
    assert!(w.contains("wait median 12.03 ms (predicted 12.00)"), "{w}");
    assert_eq!(r.measurement("slice_ms.n2").unwrap().samples.len(), 281);
    let c = r.claim("slice-is-tick-bound").unwrap();
    assert!(
        c.observed
            .contains("se.slice 1.40 ms, tick 4.00 ms (HZ 250)")
    );
}

#[test]
fn sched_nice() {
    let r = judged("sched.nice");
    assert_eq!(verdict(&r, "nice-shares-follow-weights"), Verdict::Holds);
    let s5 = finding(&r, "share.nice0_vs_5");
    let s10 = finding(&r, "share.nice0_vs_10");
    assert!((0.74..0.77).contains(&s5), "{s5}");
    assert!((0.89..0.91).contains(&s10), "{s10}");
    // nice k runs one tick per turn, nice 0 w(0) / w(k) times as long
    let tk = finding(&r, "turn_ms.nice10");
    assert!((3.9..4.1).contains(&tk), "{tk}");
    let t0 = finding(&r, "turn_ms.nice0_vs_10");
    assert!((34.0..38.0).contains(&t0), "{t0}");
    // the run between gaps is shorter and said why
    let d = &r.finding("turn_ms.nice0_vs_10").unwrap().detail;
    assert!(
        d.contains("median 3.05 ms") && d.contains("no slice"),
        "{d}"
    );
    // the intervals' shares are samples; the plan is in the params
    assert_eq!(
        r.measurement("interval_share.nice0_vs_10")
            .unwrap()
            .samples
            .len(),
        9
    );
    assert_eq!(r.params["ks"], serde_json::json!([5, 10]));
    assert_eq!(r.params["interval_ms"], serde_json::json!(100.0));
}

#[test]
fn sched_smt() {
    let r = judged("sched.smt");
    assert_eq!(verdict(&r, "smt-gives-20-30-percent"), Verdict::NotTestable);
    let why = &r.claim("smt-gives-20-30-percent").unwrap().why;
    assert!(
        why.contains("cpu0: core 0, no SMT sibling; cpu1: core 1, no SMT sibling"),
        "{why}"
    );
    // the fixture records the topology it saw
    let raw = raw_file("sched.smt").recorded.raw.unwrap();
    assert_eq!(raw["topology"].as_array().unwrap().len(), 2);
    assert_eq!(raw["smt_control"], "notsupported");
}
