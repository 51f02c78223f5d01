//! Replay of the memory experiments' raw fixtures (see replay.rs): captured on this
//! machine (a 2-vCPU KVM guest on an AMD EPYC: L1d 32 KiB, L2 1 MiB, L3 32 MiB by
//! sysfs, TSC known at 2596 MHz) with `oslab run ID --quick --save-raw`.

mod common;
use common::{finding, judged, verdict};
use oslab_lab::harness::check::Rule;
use oslab_model::Verdict;

#[test]
fn mem_latency() {
    let r = judged("mem.latency");
    assert_eq!(verdict(&r, "latency-jumps-per-level"), Verdict::Holds);
    // levels named by what they are, stable across modes: L1d, L2, the L3 shoulder
    // and memory
    let names: Vec<&str> = r.measurements.iter().map(|m| m.name.as_str()).collect();
    assert_eq!(names, ["ns.L1d", "ns.L2", "ns.L3", "ns.memory"]);
    let l1 = finding(&r, "ratio.L1d");
    assert!((1.0..1.2).contains(&l1), "{l1}");
    // L2 leaves its plateau gradually: a range of sampled sizes, not one size
    let l2 = r.finding("edge.L2").unwrap();
    assert!(
        l2.detail.contains("ends between 608.8 KiB"),
        "{}",
        l2.detail
    );
    let ratio = finding(&r, "ratio.L2");
    assert!((0.55..0.75).contains(&ratio), "{ratio}");
    // this guest sees far less L3 than sysfs claims: the caches end near 8-9.5 MiB
    let l3 = finding(&r, "ratio.L3");
    assert!((0.2..0.35).contains(&l3), "{l3}");
    let last = r.finding("effective.last_level").unwrap();
    assert!((8.0e6..1.0e7).contains(&last.value), "{}", last.value);
    assert!(
        last.detail.contains("under KVM")
            || r.claim("latency-jumps-per-level")
                .unwrap()
                .why
                .contains("under KVM")
    );
    // the TSC's rate is known here: cycles per access
    let c = finding(&r, "cycles.L1d");
    assert!((2.5..3.2).contains(&c), "{c}");
    let m = finding(&r, "cycles.memory");
    assert!((350.0..500.0).contains(&m), "{m}");
    let claim = r.claim("latency-jumps-per-level").unwrap();
    assert!(
        claim
            .expectation
            .contains(&Rule::Range(0.5, 2.0).describe("L1d edge / sysfs size", "x"))
    );
    assert!(
        claim
            .expectation
            .contains(&Rule::AtMost(2.0).describe("L2 edge range high / sysfs size", "x"))
    );
}

#[test]
fn mem_bandwidth() {
    let r = judged("mem.bandwidth");
    assert!(r.claims.is_empty());
    let small = finding(&r, "read_gb_s.small");
    let large = finding(&r, "read_gb_s.large");
    assert!(small > large && large > 1.0, "{small} {large}");
    assert!(finding(&r, "write_gb_s.large") > 1.0);
}

#[test]
fn mem_tlb() {
    let r = judged("mem.tlb");
    assert_eq!(verdict(&r, "huge-pages-extend-reach"), Verdict::Holds);
    assert_eq!(finding(&r, "thp_granted"), 1.0);
    assert!(finding(&r, "page_walk_ns") > 5.0);
    assert_eq!(finding(&r, "cpuid.l1.data"), 72.0);
    assert_eq!(finding(&r, "cpuid.l2.data"), 3072.0);
    // the 4 KiB / huge-page ratio rises at two TLB reaches
    let reach = finding(&r, "tlb_reach1.pages");
    assert!((1500.0..3500.0).contains(&reach), "{reach}");
    assert!(finding(&r, "tlb_reach2.pages") > reach);
    assert!(finding(&r, "knee3.pages") > 1000.0);
}

#[test]
fn mem_locality() {
    let r = judged("mem.locality");
    assert_eq!(
        verdict(&r, "loop-order-matters-out-of-cache"),
        Verdict::Holds
    );
    let large = finding(&r, "ratio.256MiB");
    assert!(large > 10.0, "{large}");
    assert!(finding(&r, "ratio.16KiB") < large / 3.0);
    // vectorised row loop: loop order shows even inside L1
    assert!(
        r.claim("loop-order-matters-out-of-cache")
            .unwrap()
            .why
            .contains("SIMD")
    );
}
