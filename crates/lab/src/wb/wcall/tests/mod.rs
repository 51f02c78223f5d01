//! Synthetic matrices judged: every verdict of every claim, the notes and the
//! figures' text; and an environment for judging synthetic raw data of the
//! write-back experiments.

use std::path::Path;

use oslab_model::{Claim, Environment, LoadRecord, Verdict};
use oslab_sys::fsread::Root;
use oslab_sys::machine::{self, LiveProbes};
use oslab_wbsim::policy::Policy;

mod claims;

use super::judge::{judge, stats_text};
use super::run::writers_for;
use super::*;
use crate::simrun::latency_stats;
use crate::wb::trace::{Poll, WriterTrace};

/// The captured 2-CPU KVM guest of the sys fixtures, with the hypervisor named
/// `hv` (None: bare metal).
pub(crate) fn env(hv: Option<&str>) -> Environment {
    let root =
        Root::at(Path::new(env!("CARGO_MANIFEST_DIR")).join("../sys/tests/fixtures/kvm-xeon-2cpu"));
    let mut m = machine::collect(
        &root,
        &LiveProbes {
            scratch_dir: "/tmp".into(),
            page_bytes: 4096,
            ..Default::default()
        },
    );
    m.hypervisor.name = hv.map(str::to_string);
    Environment {
        oslab_version: "test".into(),
        machine: m,
        timer: "CLOCK_MONOTONIC".into(),
        load: LoadRecord {
            loadavg_before: [0.0; 3],
            loadavg_after: [0.0; 3],
            cpu_busy_fraction: 0.0,
            steal_fraction: 0.0,
            warning: None,
        },
        seed: 1,
    }
}

const MIB: u64 = 1 << 20;

fn trace(lat: Vec<f64>, span_s: f64) -> WriterTrace {
    let n = lat.len().max(1) as f64;
    WriterTrace {
        start_s: (0..lat.len()).map(|i| i as f64 * span_s / n).collect(),
        bytes: lat.len() as u64 * CHUNK,
        latency_ms: lat,
        error: None,
        tid: 0,
        tgid: 0,
    }
}

/// `n` writes of `ms`, the first `slow` of them taking `slow_ms` instead.
fn lat(n: usize, ms: f64, slow: usize, slow_ms: f64) -> Vec<f64> {
    (0..n)
        .map(|i| if i < slow { slow_ms } else { ms })
        .collect()
}

/// A cell: the first writer's latencies over 2 s, two competitors with
/// `competitor_writes` each in that span, one poll of `peak_mib` Dirty +
/// Writeback, and (governed) the RT-55 group held `high_held_ms`.
fn cell(p: Policy, s: Scenario, first: Vec<f64>, competitor_writes: usize, peak_mib: u64) -> Cell {
    let mut writers = vec![WriterRaw {
        name: "rt55".into(),
        trace: trace(first, 2.0),
    }];
    if Scenario::CONTESTED.contains(&s) {
        for name in ["a", "b"] {
            writers.push(WriterRaw {
                name: name.into(),
                trace: trace(vec![1.0; competitor_writes], 1.9),
            });
        }
    }
    let governor = (p != Policy::Vanilla).then(|| GovernorRaw {
        passes: 100,
        pass_mean_us: 100.0,
        pass_max_us: 400.0,
        groups: ["rt-high", "rt-low", "normal"]
            .iter()
            .map(|g| GroupCount {
                group: g.to_string(),
                writes: 100,
                delayed_writes: 0,
                held_ms: 0.0,
            })
            .collect(),
    });
    Cell {
        policy: p,
        scenario: s,
        run: 0,
        writers,
        polls: vec![Poll {
            t_s: 1.0,
            dirty_bytes: peak_mib * MIB / 2,
            writeback_bytes: peak_mib * MIB / 2,
            ..Default::default()
        }],
        groups: vec![],
        governor,
        kernel: Default::default(),
    }
}

/// The full matrix: vanilla stalls with competitors (five writes of 250 ms),
/// every governed cell calm, the competitors at 15 MiB/s (all that is left of
/// 40 MiB/s), Fig. 7 alike everywhere.
fn matrix() -> Raw {
    let mut cells = Vec::new();
    for s in Scenario::ALL {
        for p in POLICIES {
            let stalled = p == Policy::Vanilla && Scenario::CONTESTED.contains(&s);
            let first = lat(100, 1.0, if stalled { 5 } else { 0 }, 250.0);
            cells.push(cell(p, s, first, 30, if stalled { 64 } else { 30 }));
        }
    }
    Raw {
        testbed_device: "/dev/loop9".into(),
        testbed_measured_bytes_s: 40.0 * MIB as f64,
        dirty_bytes: 64 * MIB,
        dirty_background_bytes: 32 * MIB,
        page_reporting: false,
        cells,
        teardown_errors: vec![],
    }
}

fn plan_of(raw: &Raw) -> Plan {
    let (scenarios, policies) = judge::Matrix::new(&raw.cells).present();
    Plan {
        bandwidth: 40 * MIB,
        writes: 100,
        runs: 1,
        scenarios,
        policies,
        coordinator_fifo: 50,
        backed_memory: true,
    }
}

fn judged(raw: &Raw) -> Output {
    judge(&plan_of(raw), raw, &env(Some("KVM")))
}

fn claim(raw: &Raw, id: &str) -> Claim {
    judged(raw)
        .claims
        .into_iter()
        .find(|c| c.id == id)
        .unwrap_or_else(|| panic!("claim {id}"))
}

fn set(raw: &mut Raw, p: Policy, s: Scenario, c: Cell) {
    let i = raw
        .cells
        .iter()
        .position(|x| x.policy == p && x.scenario == s)
        .unwrap();
    raw.cells[i] = c;
}

fn without(raw: &mut Raw, p: Policy, s: Scenario) {
    raw.cells.retain(|c| !(c.policy == p && c.scenario == s));
}

#[test]
fn the_full_matrix_judges_every_claim() {
    let out = judged(&matrix());
    let verdicts: Vec<(&str, Verdict)> = out
        .claims
        .iter()
        .map(|c| (c.id.as_str(), c.verdict))
        .collect();
    assert_eq!(
        verdicts,
        [
            ("vanilla-stalls-the-high-writer", Verdict::Holds),
            ("wcall-keeps-latency", Verdict::Holds),
            ("wcall-fair-keeps-latency", Verdict::Holds),
            ("competitors-not-starved", Verdict::Holds),
            ("fig7-no-overhead", Verdict::Holds),
        ]
    );
    assert_eq!(out.measurements.len(), 12);
    let plots: Vec<&str> = out.plots.iter().map(|p| p.id.as_str()).collect();
    assert_eq!(
        plots,
        [
            "fig4-vanilla",
            "fig5-wcall",
            "fig5-wcall-fair",
            "fig6-mean",
            "fig7-nice4",
            "dirty-vanilla",
            "dirty-wcall",
            "dirty-wcall-fair"
        ]
    );
    assert!(
        out.notes
            .iter()
            .any(|n| n.starts_with("1 run(s) x 4 scenarios x 3 policies; 100 writes")),
        "{:?}",
        out.notes
    );
}

#[test]
fn part_of_the_matrix_is_counted_as_run() {
    let mut r = matrix();
    r.cells
        .retain(|c| c.policy == Policy::WcallFair && c.scenario == Scenario::RtLow);
    let out = judged(&r);
    assert_eq!(out.claims.len(), 5);
    let judged_ids: Vec<&str> = out
        .claims
        .iter()
        .filter(|c| c.verdict != Verdict::NotJudged)
        .map(|c| c.id.as_str())
        .collect();
    assert_eq!(judged_ids, ["competitors-not-starved"]);
    assert!(
        out.notes
            .iter()
            .any(|n| n
                .starts_with("1 run(s) x 1 scenario of 4 (rt45x2) x 1 policy of 3 (wcall-fair);")),
        "{:?}",
        out.notes
    );
}

#[test]
fn a_max_never_prints_below_its_p99() {
    let r = latency_stats(&[0.29, 0.3, 0.31, 0.32]);
    let t = stats_text(&r);
    assert!(t.ends_with("p99 0.320, max 0.320 ms"), "{t}");
    let out = judged(&matrix());
    let f = out
        .findings
        .iter()
        .find(|f| f.name == "p99_ms.vanilla.rt45x2")
        .unwrap();
    assert!(f.detail.contains("p99 250, max 250 ms"), "{}", f.detail);
}

#[test]
fn the_memory_note_follows_the_machine() {
    let r = matrix();
    let note = |hv: Option<&str>, reporting: bool| {
        let mut r = r.clone();
        r.page_reporting = reporting;
        judge::memory_note(true, &r, &env(hv))
    };
    assert!(note(Some("KVM"), true).contains("free page reporting is loaded"));
    assert!(note(Some("KVM"), false).contains("runs under KVM without free page reporting"));
    assert!(note(None, false).contains("shows no hypervisor"));
}

#[test]
fn the_latency_target() {
    let calm: Vec<f64> = vec![2.0; 100];
    assert!(meets_latency_target(3.0, &calm));
    let mut spiky = calm.clone();
    spiky.push(201.0);
    assert!(
        !meets_latency_target(3.0, &spiky),
        "one write over 200 ms fails it"
    );
    let slow: Vec<f64> = vec![7.0; 100];
    assert!(
        !meets_latency_target(3.0, &slow),
        "p99 over 2x alone fails it"
    );
}

#[test]
fn the_paper_workloads() {
    let w = writers_for(Scenario::RtLow, 700);
    assert_eq!(w.len(), 3);
    assert_eq!(
        (w[0].fifo, w[1].fifo, w[2].fifo),
        (Some(55), Some(45), Some(45))
    );
    assert!(w.iter().all(|x| x.count == Some(700)));
    let b = writers_for(Scenario::Bulk, 700);
    assert_eq!(b[1].count, None, "bulk writers write back to back");
    assert!((b[1].duration_s - 14.0).abs() < 1e-9);
    let f = writers_for(Scenario::Fig7, 700);
    assert_eq!((f[0].nice, f[0].count), (Some(4), Some(1000)));
}
