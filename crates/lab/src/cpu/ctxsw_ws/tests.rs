//! Synthetic raw data through `cpu.ctxsw-ws`'s judge: every verdict of its claim.

use oslab_model::Verdict;

use super::judge::{Curve, working_set_claim};
use super::*;
use crate::cpu::ctxsw::{LaunchRaw, Placement};

const L2: u64 = 2 << 20;

#[test]
fn sizes_start_at_zero_and_double() {
    assert_eq!(sizes(1024, 8192, false), vec![0, 1024, 2048, 4096, 8192]);
    assert_eq!(
        sizes(4096, 1 << 20, true),
        vec![0, 4096, 16384, 65536, 262144, 1 << 20]
    );
}

#[test]
fn rise_point_needs_a_lasting_rise() {
    let c = [
        (0, 1000.0),
        (1024, 1100.0),
        (2048, 1600.0),
        (4096, 1200.0),
        (8192, 3000.0),
        (16384, 9000.0),
    ];
    assert_eq!(
        rise_point(&c, 1.5),
        Some(8192),
        "a single spike is not a rise"
    );
    let flat = [(0, 1000.0), (1024, 1000.0)];
    assert_eq!(rise_point(&flat, 1.5), None);
    let last_only = [(0, 1000.0), (1024, 1000.0), (2048, 5000.0)];
    assert_eq!(rise_point(&last_only, 1.5), Some(2048));
}

fn curves(same: &[f64], cross: &[f64]) -> Vec<Curve> {
    let at = |v: &[f64]| -> Vec<(u64, f64)> {
        [0, 1 << 19, 1 << 20, 1 << 21, 1 << 22]
            .into_iter()
            .zip(v.iter().copied())
            .collect()
    };
    vec![
        ("same-cpu".into(), at(same)),
        ("cross-cpu.same-l3".into(), at(cross)),
        ("unpinned".into(), at(cross)),
    ]
}

const FAR: [f64; 5] = [30e3, 40e3, 60e3, 90e3, 150e3];

#[test]
fn the_claim_holds_with_a_rise_near_l2_and_pinning_far_lower() {
    let same = [900.0, 1000.0, 3000.0, 6000.0, 9000.0];
    let c = working_set_claim(&curves(&same, &FAR), Some(L2), 4 << 20);
    assert_eq!(c.verdict, Verdict::Holds, "{}", c.observed);
    assert!(
        c.expectation
            .starts_with("same-CPU rise point / L2 between 0.250x and 2x")
    );
    assert!(
        c.expectation.contains("cross-cpu.same-l3"),
        "{}",
        c.expectation
    );
    // pinning not far lower
    let near = [1800.0, 2000.0, 6000.0, 9000.0, 14e3];
    let c = working_set_claim(&curves(&same, &near), Some(L2), 4 << 20);
    assert_eq!(c.verdict, Verdict::Differs);
    assert!(c.why.contains("pinning did not keep"), "{}", c.why);
    // a rise far below L2/4
    let early = [900.0, 3000.0, 6000.0, 9000.0, 12e3];
    let c = working_set_claim(&curves(&early, &FAR), Some(8 << 20), 4 << 20);
    assert_eq!(c.verdict, Verdict::Differs);
    assert!(c.why.contains("below a quarter of L2"), "{}", c.why);
    let late = [900.0, 950.0, 1000.0, 1000.0, 9000.0];
    let c = working_set_claim(&curves(&late, &FAR), Some(1 << 20), 4 << 20);
    assert!(c.why.contains("past twice L2"), "{}", c.why);
}

#[test]
fn no_rise_differs_past_twice_l2_and_is_not_judged_before() {
    let flat = [900.0, 950.0, 1000.0, 1000.0, 1100.0];
    let c = working_set_claim(&curves(&flat, &FAR), Some(L2), 4 << 20);
    assert_eq!(c.verdict, Verdict::Differs, "{}", c.expectation);
    assert!(c.expectation.contains("with no working set above 1.50x"));
    assert!(c.why.contains("never rose"), "{}", c.why);
    let c = working_set_claim(&curves(&flat, &FAR), Some(8 << 20), 4 << 20);
    assert_eq!(c.verdict, Verdict::NotJudged);
    assert!(c.why.contains("max_ws"), "{}", c.why);
    assert_eq!(
        working_set_claim(&[], None, 4 << 20).verdict,
        Verdict::NotTestable
    );
    // one CPU: nothing to compare pinning with
    let mut one = curves(&[900.0, 1000.0, 3000.0, 6000.0, 9000.0], &FAR);
    one.retain(|c| c.0 == "same-cpu");
    let c = working_set_claim(&one, Some(L2), 4 << 20);
    assert_eq!(c.verdict, Verdict::NotJudged);
    assert!(c.why.contains("one CPU"), "{}", c.why);
}

fn point(place: &str, ws: u64, ns: &[f64], write: f64) -> PointRaw {
    let rts = 100;
    let n = rts * ns.len() as u64;
    PointRaw {
        ws,
        write_only_ns: vec![write; 3],
        cell: CellRaw {
            tasks: "processes".into(),
            mechanism: "futex".into(),
            placement: place.into(),
            launches: vec![LaunchRaw {
                round_trips: rts,
                warmup: 125,
                batch_ns: ns.iter().map(|x| (x * 2.0 * rts as f64) as u64).collect(),
                own_voluntary: n,
                own_involuntary: 0,
                peer_voluntary: n + 125,
                peer_involuntary: 0,
                own_cpus: 1,
                peer_cpus: if place == "same-cpu" { 1 } else { 2 },
            }],
            stat_before: None,
            stat_after: None,
        },
    }
}

#[test]
fn the_judge_subtracts_the_write_and_names_a_mixed_unpinned_curve() {
    let places = ["same-cpu", "cross-cpu.same-l3", "unpinned"];
    let plan = Plan {
        max_ws: 4096,
        samples: 3,
        sizes: vec![0, 4096],
        placements: places
            .iter()
            .map(|n| Placement {
                name: n.to_string(),
                own: None,
                peer: None,
            })
            .collect(),
        target_batch_ns: 20e6,
    };
    let raw = Raw {
        points: vec![
            point("same-cpu", 0, &[1000.0; 3], 0.0),
            point("same-cpu", 4096, &[1500.0; 3], 200.0),
            point("cross-cpu.same-l3", 0, &[30e3; 3], 0.0),
            point("cross-cpu.same-l3", 4096, &[31e3; 3], 200.0),
            point("unpinned", 0, &[1000.0, 30e3, 31e3], 0.0),
            point("unpinned", 4096, &[31e3; 3], 200.0),
        ],
    };
    let env = crate::cpu::ctxsw::tests::env(Some("KVM"), 0.3);
    let out = judge::judge(&plan, &raw, &env);
    let m = out
        .measurements
        .iter()
        .find(|m| m.name == "ns.same-cpu.4096")
        .unwrap();
    assert_eq!(m.samples, vec![1300.0; 3]);
    assert_eq!(out.measurements.len(), 6);
    for p in places {
        assert!(
            out.findings
                .iter()
                .any(|f| f.name == format!("rise_at.{p}"))
        );
    }
    assert!(
        out.notes
            .iter()
            .any(|n| n.starts_with("unpinned: the batches at 0 B")),
        "{:?}",
        out.notes
    );
    assert_eq!(
        out.plots[0].series[0].points.len(),
        1,
        "W = 0 is not on a log axis"
    );
}
