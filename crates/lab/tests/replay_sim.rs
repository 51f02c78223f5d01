//! Replay of `sim.validate`'s raw fixture: the testbed workloads recorded on this
//! machine (a quiet 2-vCPU KVM guest, kernel 6.18, HZ 250; `oslab sim validate --set
//! writes=200 --set runs=1 --set sweep=false --save-raw`, release build), every cell
//! with the kernel's trace, judged against today's simulator with the error
//! targets: the RT-55 writer's p50, p90 and p99 within 30 % (1 ms below 3 ms),
//! writes over 200 ms within 3, the competitors' throughput within 15 %; the
//! kernel's pauses and dirty_ratelimit within 30 % as well where it paused anyone
//! (under wcall-fair, with the governor of issue 19, neither side pauses anyone).

mod common;
use common::{finding, judged, verdict};
use oslab_model::Verdict;

const WORKLOADS: [&str; 3] = ["alone", "rt45x2", "bulkx2"];
const POLICIES: [&str; 3] = ["vanilla", "wcall", "wcall-fair"];

#[test]
fn the_model_meets_the_targets_on_the_recorded_testbed() {
    let r = judged("sim.validate");
    // from the kernel's state every figure but one is within target: the
    // governed RT-55 writer's p99 behind RT-45 writers, over 200 writes the
    // second slowest, was one of the governor's 100 ms holds in the kernel's
    // run and is not in the model's (56 ms; on every full run the same figure
    // is within target)
    assert_eq!(verdict(&r, "sim-predicts-testbed"), Verdict::Differs);
    let why = &r.claim("sim-predicts-testbed").unwrap().why;
    assert!(why.contains("missed: rt45x2.wcall p99_ms"), "{why}");
    // the headline is blind, and it is the first claim: 40 of 42 figures (95.2 %)
    // meet the 95 % it asks for, every miss named
    assert_eq!(r.claims[0].id, "sim-predicts-testbed-blind");
    assert_eq!(verdict(&r, "sim-predicts-testbed-blind"), Verdict::Holds);
    let why = &r.claim("sim-predicts-testbed-blind").unwrap().why;
    assert!(
        why.contains("within the share; missed: bulkx2.vanilla p50_ms"),
        "{why}"
    );
    for w in WORKLOADS {
        for p in POLICIES {
            let err = |fig: &str| finding(&r, &format!("{w}.{p}.{fig}"));
            // in the stall regime every quantile is within 30 % (but the one
            // above); below 3 ms the target is 1 ms, which the claim above checks
            // against the real figures
            if w != "alone" && p != "wcall-fair" {
                for fig in ["p50_ms", "p90_ms", "p99_ms"] {
                    if (w, p, fig) == ("rt45x2", "wcall", "p99_ms") {
                        continue;
                    }
                    assert!(err(fig).abs() <= 30.0, "{w} {p} {fig}: {} %", err(fig));
                }
            }
            assert!(err("writes_over_200ms").abs() <= 3.0, "{w} {p}");
            if w != "alone" {
                assert!(err("competitors_mib_s").abs() <= 15.0, "{w} {p}");
            }
        }
    }
}

#[test]
fn the_kernels_own_throttling_is_compared_where_it_throttled() {
    let r = judged("sim.validate");
    for w in ["rt45x2", "bulkx2"] {
        for p in ["vanilla", "wcall"] {
            for fig in ["pause_p50_ms", "pause_p90_ms", "dirty_ratelimit_mib_s"] {
                let e = finding(&r, &format!("{w}.{p}.{fig}"));
                assert!(e.abs() <= 30.0, "{w} {p} {fig}: {e} %");
            }
        }
        // wcall-fair keeps every writer under the free-run ceiling: the kernel
        // paused nobody and the model pauses nobody, so there is nothing to compare
        for fig in ["pause_p50_ms", "pause_p90_ms"] {
            let name = format!("{w}.wcall-fair.{fig}");
            assert!(r.finding(&name).is_none(), "{name}");
        }
    }
    // one latency plot per contested workload and policy, one dirty_ratelimit plot
    // where the kernel refreshed it for a throttled writer (not under wcall-fair)
    assert_eq!(r.plots.len(), 10);
    assert!(
        r.notes.iter().any(|n| n.contains("kernel tracing: on")),
        "{:?}",
        r.notes
    );
    assert!(
        r.notes
            .iter()
            .any(|n| n.contains("simulated from the state the kernel carried")),
        "{:?}",
        r.notes
    );
}

#[test]
fn the_blind_prediction_is_reported_beside_the_seeded_one() {
    let r = judged("sim.validate");
    // every targeted figure of every cell is predicted a second time, blind
    for w in WORKLOADS {
        for p in POLICIES {
            for fig in ["p50_ms", "p90_ms", "p99_ms", "writes_over_200ms"] {
                let name = format!("blind.{w}.{p}.{fig}");
                assert!(r.finding(&name).is_some(), "{name}");
            }
            let name = format!("blind.{w}.{p}.competitors_mib_s");
            assert_eq!(r.finding(&name).is_some(), w != "alone", "{name}");
        }
    }
    // the count of figures within target, blind and seeded, is in one note; the
    // seeded side matches the claim above (every figure but one within target)
    let note = r
        .notes
        .iter()
        .find(|n| n.contains("the model's accuracy without the kernel's state"))
        .expect("the blind note");
    // the counts docs/sim-scenarios.md quotes
    assert!(
        note.contains("40 of 42 targeted figures within target, against 41 of 42"),
        "{note}"
    );
    // without the kernel's state the model still finds the stall regime: the
    // contested vanilla writer waits tens of ms at p90 on both sides
    let detail = &r.finding("blind.rt45x2.vanilla.p90_ms").unwrap().detail;
    assert!(detail.contains("within target"), "{detail}");
}
