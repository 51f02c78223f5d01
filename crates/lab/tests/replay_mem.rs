//! Replay of the memory experiments' raw fixtures (see replay.rs): captured on this
//! machine (a 2-vCPU KVM guest on an AMD EPYC: L1d 32 KiB, L2 1 MiB, L3 32 MiB by
//! sysfs, TSC known at 2596 MHz) with `oslab run ID --quick --save-raw`.

mod common;
use common::{finding, judged, verdict};
use oslab_harness::check::Rule;
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
    // from the last size under 1.5x the plateau to the first from which the
    // curve stays at 2x: 608.8 KiB to 1 MiB, 0.77x of sysfs at the middle
    let [lo, hi] = l2.range.expect("the L2 edge's range");
    assert!((600.0 * 1024.0..620.0 * 1024.0).contains(&lo), "{lo}");
    assert_eq!(hi, 1048576.0);
    let ratio = finding(&r, "ratio.L2");
    assert!((0.55..0.85).contains(&ratio), "{ratio}");
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

/// Five quick runs back to back on a 2-vCPU KVM guest of an AMD EPYC (sysfs L1d
/// 32 KiB, L2 512 KiB, L3 8 MiB), 2026-11-28: the same verdict, and the L3 found
/// in each, its edge a range of sampled sizes no wider than a factor 2, every
/// run's range overlapping every other's; `compare` calls any two of them alike.
#[test]
fn five_quick_runs_agree_on_the_l3() {
    let runs: Vec<_> = (1..=5)
        .map(|i| common::judged_fixture(&format!("mem.latency.epyc{i}"), "mem.latency"))
        .collect();
    let mut ranges = Vec::new();
    for r in &runs {
        assert_eq!(verdict(r, "latency-jumps-per-level"), Verdict::Holds);
        let edge = r.finding("edge.L3").expect("an L3 edge in every run");
        let [lo, hi] = edge.range.expect("the edge's range");
        assert!(lo <= edge.value && edge.value <= hi, "{edge:?}");
        assert!(hi / lo <= 2.0, "{edge:?}");
        // this guest's L3 ends near 2-3 MiB, far below the 8 MiB sysfs claims
        assert!((1.5e6..3.5e6).contains(&edge.value), "{edge:?}");
        assert_eq!(r.finding("effective.L3").unwrap().range, edge.range);
        ranges.push([lo, hi]);
    }
    for a in &ranges {
        for b in &ranges {
            assert!(
                a[0] <= b[1] && b[0] <= a[1],
                "{a:?} and {b:?} do not overlap"
            );
        }
    }
    for b in &runs[1..] {
        let c = oslab_model::compare::compare(
            oslab_model::compare::side("A", &runs[..1]),
            &runs[..1],
            oslab_model::compare::side("B", std::slice::from_ref(b)),
            std::slice::from_ref(b),
            1,
        );
        let l3 = c
            .figures
            .iter()
            .find(|f| f.name == "edge.L3")
            .expect("edge.L3 compared");
        assert_eq!(l3.noise, oslab_model::compare::Noise::Within, "{l3:?}");
    }
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
