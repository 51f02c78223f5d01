//! Replay of the CPU experiments' raw fixtures (see replay.rs).

mod common;
use common::{finding, judged, verdict};
use oslab_model::Verdict;

#[test]
fn cpu_syscall() {
    let r = judged("cpu.syscall");
    assert_eq!(verdict(&r, "syscall-is-mode-switch"), Verdict::Holds);
    // this guest pays for Spectre mitigations: gettid above the material's band
    assert_eq!(verdict(&r, "syscall-cost-tens-of-ns"), Verdict::Differs);
    let g = finding(&r, "gettid_ns");
    assert!((160.0..180.0).contains(&g), "{g}");
    assert!(finding(&r, "gettid_uncorrected_ns") > g);
    assert!(
        r.claim("syscall-cost-tens-of-ns")
            .unwrap()
            .why
            .contains("mitigations")
    );
}

#[test]
fn cpu_ctxsw() {
    // captured with --set launches=1 --set round_trips=2000 --repeat 3 while other
    // programs kept the 2-vCPU KVM guest about 86 % busy
    let r = judged("cpu.ctxsw");
    // the unpinned futex pair fell into two modes, both on cpu0: judged by the lower
    // one, which costs about what the pinned pair does
    assert_eq!(verdict(&r, "pinning-cheaper"), Verdict::Differs);
    let pin = r.claim("pinning-cheaper").unwrap();
    assert!(
        pin.expectation.contains("unpinned (lower mode)"),
        "{}",
        pin.expectation
    );
    assert!(pin.why.contains("kept both tasks on cpu0"), "{}", pin.why);
    assert!(pin.why.contains("disturbed by other work"), "{}", pin.why);
    assert_eq!(finding(&r, "unpinned_modes.processes.futex"), 2.0);
    // this CPU has PCID: threads cost what processes do
    assert_eq!(verdict(&r, "threads-cheaper"), Verdict::Differs);
    assert!(r.claim("threads-cheaper").unwrap().why.contains("PCID"));
    assert_eq!(verdict(&r, "vm-dearer"), Verdict::NotTestable);
    assert!(
        r.claim("vm-dearer")
            .unwrap()
            .observed
            .starts_with("running under KVM")
    );
    let same = finding(&r, "estimate.switch_alone.futex");
    assert!((1500.0..2000.0).contains(&same), "{same}");
    // one switch per side per round trip on one CPU
    for key in [
        "processes.futex",
        "threads.futex",
        "processes.pipe",
        "threads.pipe",
    ] {
        let s = finding(&r, &format!("switches_per_round_trip.{key}.same-cpu"));
        assert!((1.99..2.01).contains(&s), "{key}: {s}");
    }
    // perf beside ours: an agreement check only where both are steady
    let detail = |n: &str| r.finding(n).unwrap().detail.clone();
    assert!(detail("ours_over_perf.processes.same-cpu").contains("no agreement check"));
    assert!(detail("ours_over_perf.threads.same-cpu").contains("is an agreement check"));
    assert!(detail("ours_over_perf.threads.unpinned").contains("no agreement check"));
    assert!(
        r.notes
            .iter()
            .any(|n| n.starts_with("perf_bench.threads.unpinned"))
    );
}

#[test]
fn cpu_ctxsw_ws() {
    // quick defaults on the same loaded guest (L2 1 MiB): the same-CPU cost rises at
    // 256 KiB, a quarter of L2, and pinning keeps it far below two CPUs'
    let r = judged("cpu.ctxsw-ws");
    assert_eq!(verdict(&r, "working-set-rise"), Verdict::Holds);
    assert_eq!(finding(&r, "rise_at.same-cpu"), 262_144.0);
    assert_eq!(finding(&r, "rise_at.cross-cpu.same-l3"), 1_048_576.0);
    assert!(finding(&r, "rise_at.unpinned").is_nan());
    let c = r.claim("working-set-rise").unwrap();
    assert!(
        c.expectation
            .contains("same-CPU / cross-cpu.same-l3 cost at 4 MiB below 0.500x"),
        "{}",
        c.expectation
    );
    let m = r.measurement("ns.same-cpu.4194304").unwrap();
    let median = m.summary.as_ref().unwrap().median;
    assert!((50_000.0..70_000.0).contains(&median), "{median}");
    // the unpinned batches at W = 0 fell into two modes
    assert!(
        r.notes
            .iter()
            .any(|n| n.starts_with("unpinned: the batches at 0 B"))
    );
}
