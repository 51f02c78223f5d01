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
    // `oslab run all --quick` (release build) on the quiet 2-vCPU KVM guest
    let r = judged("cpu.ctxsw");
    // unpinned, the tasks ran on both CPUs: every handoff is a cross-CPU wake-up
    // (a VM exit under KVM), so pinning saves far more than the material's 45-70 %
    assert_eq!(verdict(&r, "pinning-cheaper"), Verdict::Differs);
    let pin = r.claim("pinning-cheaper").unwrap();
    assert_eq!(
        pin.expectation,
        "saving of pinned vs unpinned between 45 % and 70 %"
    );
    assert!(pin.why.contains("ran on two CPUs"), "{}", pin.why);
    assert!(pin.why.contains("under KVM"), "{}", pin.why);
    assert_eq!(finding(&r, "unpinned_modes.processes.futex"), 1.0);
    assert_eq!(finding(&r, "unpinned_modes.threads.futex"), 2.0);
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
    assert!(detail("ours_over_perf.processes.same-cpu").contains("is an agreement check"));
    assert!(detail("ours_over_perf.threads.same-cpu").contains("is an agreement check"));
    assert!(detail("ours_over_perf.processes.unpinned").contains("no agreement check"));
    assert!(detail("ours_over_perf.threads.unpinned").contains("no agreement check"));
    let agreement = finding(&r, "ours_over_perf.processes.same-cpu");
    assert!((0.95..1.05).contains(&agreement), "{agreement}");
    assert!(
        r.notes
            .iter()
            .any(|n| n.starts_with("perf_bench.threads.unpinned"))
    );
}

#[test]
fn cpu_ctxsw_ws() {
    // quick defaults (up to 4 MiB) on the quiet guest, L2 1 MiB per core: the
    // same-CPU cost did not rise 1.5x within the sweep, and pinning kept it far
    // below the two-CPU placement's
    let r = judged("cpu.ctxsw-ws");
    assert_eq!(verdict(&r, "working-set-rise"), Verdict::Differs);
    let c = r.claim("working-set-rise").unwrap();
    assert_eq!(
        c.expectation,
        "same-CPU cost at 4 MiB / with no working set above 1.50x, and same-CPU / cross-cpu.same-l3 cost at 4 MiB below 0.500x"
    );
    assert!(c.why.contains("never rose 1.5x"), "{}", c.why);
    assert!(finding(&r, "rise_at.same-cpu").is_nan());
    assert_eq!(finding(&r, "rise_at.cross-cpu.same-l3"), 1_048_576.0);
    let m = r.measurement("ns.same-cpu.4194304").unwrap();
    let median = m.summary.as_ref().unwrap().median;
    assert!((3_000.0..4_500.0).contains(&median), "{median}");
    assert!(
        r.notes
            .iter()
            .any(|n| n.starts_with("unpinned: the batches at 16 KiB, 64 KiB"))
    );
}
