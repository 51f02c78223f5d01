//! Every verdict branch of every claim, on synthetic matrices.

use oslab_model::Verdict;
use oslab_wbsim::policy::Policy;

use super::{MIB, cell, claim, env, lat, matrix, plan_of, set, without};
use crate::wb::wcall::judge::judge;
use oslab_services::cells::record::{Content, Scenario};

#[test]
fn vanilla_stalls_every_branch() {
    let id = "vanilla-stalls-the-high-writer";
    let mut r = matrix();
    let c = claim(&r, id);
    assert_eq!(c.verdict, Verdict::Holds);
    assert_eq!(
        c.expectation,
        "the RT-55 writer's worst p99 with competitors at least 100 ms, or its writes over 200 ms above 0"
    );
    // one write over 200 ms is a stall though the p99 is low
    for s in Scenario::CONTESTED {
        set(
            &mut r,
            Policy::Vanilla,
            s,
            cell(Policy::Vanilla, s, lat(100, 1.0, 1, 250.0), 30, 64),
        );
    }
    assert_eq!(claim(&r, id).verdict, Verdict::Holds);
    // throttled, but short of the marks
    for s in Scenario::CONTESTED {
        set(
            &mut r,
            Policy::Vanilla,
            s,
            cell(Policy::Vanilla, s, lat(100, 1.0, 5, 50.0), 30, 64),
        );
    }
    let c = claim(&r, id);
    assert_eq!(c.verdict, Verdict::Differs);
    assert!(
        c.why.contains("did throttle") && c.why.contains("100 writes (2 s)"),
        "{}",
        c.why
    );
    // not throttled: the device kept up, or the pauses fell on the others
    for (peak, says) in [(30, "kept up"), (60, "fell on the other writers")] {
        for s in Scenario::CONTESTED {
            set(
                &mut r,
                Policy::Vanilla,
                s,
                cell(Policy::Vanilla, s, lat(100, 1.0, 0, 0.0), 30, peak),
            );
        }
        let c = claim(&r, id);
        assert_eq!(c.verdict, Verdict::Differs);
        assert!(c.why.contains(says), "{}", c.why);
    }
    for s in Scenario::CONTESTED {
        without(&mut r, Policy::Vanilla, s);
    }
    let c = claim(&r, id);
    assert_eq!(c.verdict, Verdict::NotJudged);
    assert_eq!(
        c.why,
        "no vanilla cell with competitors (rt45x2, bulkx2) was run: this run asked for scenarios=alone,rt45x2,bulkx2,fig7-nice4 and policies=vanilla,wcall,wcall-fair"
    );
}

#[test]
fn keeps_latency_every_branch() {
    let mut r = matrix();
    // wcall: the RT-55 writer held by its own group's share
    let mut slow = cell(
        Policy::Wcall,
        Scenario::RtLow,
        lat(100, 1.0, 5, 50.0),
        30,
        30,
    );
    slow.governor.as_mut().unwrap().groups[0].held_ms = 100.0;
    set(&mut r, Policy::Wcall, Scenario::RtLow, slow);
    let c = claim(&r, "wcall-keeps-latency");
    assert_eq!(c.verdict, Verdict::Differs);
    assert!(
        c.why.contains("50x its p99 alone (run 1 rt45x2)")
            && c.why.contains("own group 100 ms")
            && c.why.contains("Algorithm 1"),
        "{}",
        c.why
    );
    assert!(c.observed.contains("0 of 1 runs met it"), "{}", c.observed);
    // wcall-fair: one write past 200 ms among 1000 (p99 unchanged); the kernel throttled
    let spike = cell(
        Policy::WcallFair,
        Scenario::Bulk,
        lat(1000, 1.0, 1, 250.0),
        30,
        60,
    );
    set(&mut r, Policy::WcallFair, Scenario::Bulk, spike);
    let c = claim(&r, "wcall-fair-keeps-latency");
    assert_eq!(c.verdict, Verdict::Differs);
    assert!(
        c.why
            .starts_with("1 of its writes took over 200 ms; the governor never held")
            && c.why.contains("the kernel throttled it")
            && !c.why.contains("Algorithm 1"),
        "{}",
        c.why
    );
    // past the free-run point, but the kernel's trace shows it never paused the
    // RT-55 writer: it did not throttle it
    let mut traced = cell(
        Policy::WcallFair,
        Scenario::Bulk,
        lat(1000, 1.0, 1, 250.0),
        30,
        60,
    );
    traced.kernel = serde_json::from_value(serde_json::json!({
        "status": "traced", "lost": 0, "undecoded": 0, "hz": 250, "page_size": 4096
    }))
    .unwrap();
    set(&mut r, Policy::WcallFair, Scenario::Bulk, traced);
    let why = claim(&r, "wcall-fair-keeps-latency").why;
    assert!(
        why.contains("no balance_dirty_pages sleep of the RT-55 writer")
            && !why.contains("so the kernel throttled it"),
        "{why}"
    );
    // neither the governor nor the kernel
    let slow = cell(
        Policy::WcallFair,
        Scenario::Bulk,
        lat(100, 1.0, 5, 50.0),
        30,
        30,
    );
    set(&mut r, Policy::WcallFair, Scenario::Bulk, slow);
    assert!(
        claim(&r, "wcall-fair-keeps-latency")
            .why
            .contains("waited elsewhere")
    );
    // the reference left out, then the governed cells
    let mut r = matrix();
    without(&mut r, Policy::Vanilla, Scenario::Alone);
    let c = claim(&r, "wcall-keeps-latency");
    assert_eq!(c.verdict, Verdict::NotJudged);
    assert!(
        c.why
            .starts_with("the reference cell (vanilla, alone) was not run"),
        "{}",
        c.why
    );
    let mut r = matrix();
    for s in Scenario::CONTESTED {
        without(&mut r, Policy::WcallFair, s);
    }
    let c = claim(&r, "wcall-fair-keeps-latency");
    assert_eq!(c.verdict, Verdict::NotJudged);
    assert_eq!(c.why.matches("was run").count(), 1, "{}", c.why);
    assert_eq!(claim(&r, "wcall-keeps-latency").verdict, Verdict::Holds);
}

#[test]
fn competitors_every_branch() {
    let id = "competitors-not-starved";
    let mut r = matrix();
    let c = claim(&r, id);
    assert_eq!(c.verdict, Verdict::Holds);
    assert!(
        c.observed
            .contains("worst 15.0 MiB/s written back of 15.0 MiB/s left"),
        "{}",
        c.observed
    );
    // 10 MiB/s of 15: two thirds
    let starved = cell(
        Policy::WcallFair,
        Scenario::RtLow,
        lat(100, 1.0, 0, 0.0),
        20,
        30,
    );
    set(&mut r, Policy::WcallFair, Scenario::RtLow, starved);
    let c = claim(&r, id);
    assert_eq!(c.verdict, Verdict::Differs);
    assert!(c.why.contains("more than the device needed"), "{}", c.why);
    // nothing left: the device no faster than the RT-55 writer
    r.testbed_measured_bytes_s = 20.0 * MIB as f64;
    let c = claim(&r, id);
    assert_eq!(c.verdict, Verdict::NotJudged);
    assert!(c.why.contains("nothing to share"), "{}", c.why);
    for s in Scenario::CONTESTED {
        without(&mut r, Policy::WcallFair, s);
    }
    let c = claim(&r, id);
    assert_eq!(c.verdict, Verdict::NotJudged);
    assert!(c.why.starts_with("no wcall-fair cell"), "{}", c.why);
}

#[test]
fn fig7_why_follows_the_outcome() {
    let mut r = matrix();
    let c = claim(&r, "fig7-no-overhead");
    assert_eq!(c.verdict, Verdict::Holds);
    assert!(
        c.why.starts_with("a lone group is not held back"),
        "{}",
        c.why
    );
    let slower = cell(
        Policy::WcallFair,
        Scenario::Fig7,
        lat(100, 2.0, 0, 0.0),
        0,
        30,
    );
    set(&mut r, Policy::WcallFair, Scenario::Fig7, slower.clone());
    let c = claim(&r, "fig7-no-overhead");
    assert_eq!(c.verdict, Verdict::Differs);
    assert!(
        c.why.starts_with(
            "slower than vanilla beyond the allowance: wcall-fair: the governor never held"
        ),
        "{}",
        c.why
    );
    assert!(
        !c.why.contains("wcall:"),
        "only the failing policy: {}",
        c.why
    );
    let mut busy = env(None);
    busy.load.warning = Some("other programs kept about 94 % of the CPUs busy".into());
    let c = judge(&plan_of(&r), &r, &busy)
        .claims
        .into_iter()
        .find(|c| c.id == "fig7-no-overhead")
        .unwrap();
    assert!(
        c.why
            .ends_with("during the run other programs kept about 94 % of the CPUs busy"),
        "{}",
        c.why
    );
    let mut held = slower;
    held.governor.as_mut().unwrap().groups[2].held_ms = 300.0;
    set(&mut r, Policy::WcallFair, Scenario::Fig7, held);
    assert!(
        claim(&r, "fig7-no-overhead")
            .why
            .contains("held the lone writer's group 300 ms")
    );
    without(&mut r, Policy::Vanilla, Scenario::Fig7);
    let c = claim(&r, "fig7-no-overhead");
    assert_eq!(c.verdict, Verdict::NotJudged);
    assert!(
        c.why.starts_with("the vanilla fig7-nice4 cell was not run"),
        "{}",
        c.why
    );
}

#[test]
fn a_file_that_lost_bytes_fails_the_claim_and_is_named() {
    let mut raw = matrix();
    let i = raw
        .cells
        .iter()
        .position(|c| c.policy == Policy::WcallFair && c.scenario == Scenario::RtLow)
        .unwrap();
    raw.cells[i].coordinator_killed_at_s = Some(1.5);
    raw.cells[i].writers[1].content = Content::Wrong("block 7 holds 3, not 7".into());
    let c = claim(&raw, "no-byte-lost");
    assert_eq!(c.verdict, Verdict::Differs);
    assert!(
        c.why.contains("wcall-fair rt45x2") && c.why.contains("block 7 holds 3"),
        "{}",
        c.why
    );
    assert!(
        c.observed
            .contains("killed (SIGKILL) mid-cell in 1 of them"),
        "{}",
        c.observed
    );
}

#[test]
fn no_byte_lost_is_judged_on_governed_cells_only() {
    let mut raw = matrix();
    // a vanilla file is no evidence about the governor
    for c in raw.cells.iter_mut() {
        for w in c.writers.iter_mut() {
            if c.policy != Policy::Vanilla {
                w.content = Content::NotChecked;
            } else {
                w.content = Content::Wrong("not the governor's doing".into());
            }
        }
    }
    let c = claim(&raw, "no-byte-lost");
    assert_eq!(c.verdict, Verdict::NotJudged);
    assert!(
        c.why.contains("no governed writer's file was checked"),
        "{}",
        c.why
    );
}
