use super::*;
use oslab_harness::check::Rule;
use oslab_model::Verdict;

/// Arrays whose column walk costs `ratios[k]` row walks (rows 1 ns/element).
fn raw(ratios: [f64; 4]) -> Raw {
    Raw {
        arrays: SIDES
            .iter()
            .zip(ratios)
            .map(|(&side, r)| {
                let t = |ns_per: f64| Timed {
                    reps: 2,
                    ns: vec![(ns_per * 2.0 * (side * side) as f64) as u64; 3],
                };
                ArrayRaw {
                    side,
                    rows: t(1.0),
                    cols: t(r),
                }
            })
            .collect(),
    }
}

fn judged(ratios: [f64; 4], llc: u64) -> Output {
    judge::judge(
        &raw(ratios),
        &crate::mem::common::test_env::test_env(None, &[("L3", llc)]),
    )
}

#[test]
fn every_verdict_of_the_claim() {
    let out = judged([1.2, 10.0, 40.0, 30.0], 32 << 20);
    assert_eq!(out.claims[0].verdict, Verdict::Holds);
    assert_eq!(
        out.claims[0].expectation,
        format!(
            "{}, and {}",
            Rule::Above(4.0).describe("column/row time at 256 MiB", "x"),
            Rule::Above(3.0).describe("ratio at 256 MiB / ratio at 16 KiB", "x")
        )
    );
    assert!(!out.claims[0].why.contains("vectorise"));
    let f = |o: &Output, n: &str| o.findings.iter().find(|f| f.name == n).unwrap().value;
    assert!((f(&out, "ratio.256MiB") - 30.0).abs() < 1e-3);
    assert!((f(&out, "ratio.16KiB") - 1.2).abs() < 1e-3);
    // SIMD inside L1 is named when the small ratio shows it
    let simd = judged([2.2, 15.0, 46.0, 34.0], 32 << 20);
    assert!(
        simd.claims[0].why.contains("vectorise"),
        "{}",
        simd.claims[0].why
    );
    // beyond the caches too cheap
    let flat = judged([1.0, 2.0, 3.0, 3.5], 32 << 20);
    assert_eq!(flat.claims[0].verdict, Verdict::Differs);
    assert!(flat.claims[0].why.contains("prefetcher"));
    // large enough, but already as large inside L1
    let early = judged([3.0, 5.0, 6.0, 6.0], 32 << 20);
    assert_eq!(early.claims[0].verdict, Verdict::Differs);
    assert!(
        early.claims[0].why.contains("inside L1"),
        "{}",
        early.claims[0].why
    );
    // a last-level cache of 480 MiB: 256 MiB is not beyond it
    let big = judged([1.2, 10.0, 40.0, 30.0], 480 << 20);
    assert_eq!(big.claims[0].verdict, Verdict::NotTestable);
    assert!(
        big.claims[0].why.contains("480 MiB"),
        "{}",
        big.claims[0].why
    );
    assert_eq!(big.claims[0].expectation, out.claims[0].expectation);
}

#[test]
fn measurements_per_order_and_size() {
    let out = judged([1.2, 10.0, 40.0, 30.0], 32 << 20);
    let names: Vec<&str> = out.measurements.iter().map(|m| m.name.as_str()).collect();
    assert_eq!(names[..2], ["ns.rows.16KiB", "ns.cols.16KiB"]);
    assert_eq!(names.len(), 8);
    assert!((out.measurements[1].samples[0] - 1.2).abs() < 1e-3);
    let empty = judge::judge(
        &Raw { arrays: vec![] },
        &crate::mem::common::test_env::test_env(None, &[]),
    );
    assert_eq!(empty.claims[0].verdict, Verdict::NotJudged);
}

#[test]
fn a_quick_run_shrinks_its_largest_array_only_where_the_cache_leaves_room() {
    let mib = 1u64 << 20;
    // 8 MiB of L3: 64 MiB is 8x that
    assert_eq!(
        super::sides(true, Some(8 * mib), None),
        [64, 512, 2048, 4096]
    );
    // a bigger cache, no cache known, or a full run: 256 MiB
    assert_eq!(super::sides(true, Some(16 * mib), None), SIDES);
    assert_eq!(super::sides(true, None, None), SIDES);
    assert_eq!(super::sides(false, Some(8 * mib), None), SIDES);
}

/// Regression: a guest shown the host's 480 MiB L3 measured 256 MiB arrays and
/// was always "not testable", and no setting enlarged them.
#[test]
fn the_largest_array_outgrows_a_large_last_level_cache_or_is_set() {
    let mib = 1u64 << 20;
    // 480 MiB of L3: 1 GiB is more than twice that
    assert_eq!(
        super::sides(false, Some(480 * mib), None),
        [64, 512, 2048, 16_384]
    );
    assert_eq!(
        super::sides(true, Some(480 * mib), None),
        [64, 512, 2048, 16_384]
    );
    // 3 GiB: 4 GiB is the most it grows to (the claim then says not testable)
    assert_eq!(
        super::sides(false, Some(3 << 30), None).last(),
        Some(&32_768)
    );
    // given: the largest power-of-two square that fits
    assert_eq!(
        super::sides(false, Some(480 * mib), Some(64 * mib)),
        [64, 512, 2048, 4096]
    );
    assert_eq!(
        super::sides(false, None, Some(2 << 30)).last(),
        Some(&16_384)
    );
    assert_eq!(super::sides(false, None, Some(2 * mib)), [64, 512]);
}
