//! Synthetic matrices judged: every verdict of every claim, the notes and the
//! figures' text; and an environment for judging synthetic raw data of the
//! write-back experiments.

use oslab_model::{Claim, Environment, Verdict};
use oslab_wbsim::policy::Policy;

use oslab_services::cells::record::{
    CHUNK, Content, GovernorRaw, GroupCount, PERIOD_MS, POLICIES, WriterRaw,
};

mod claims;

use super::judge::{judge, stats_text};
use super::writers::{WriterKind, writers_for};
use super::*;
use oslab_services::timed_writer::{Poll, WriterTrace};
use oslab_services::write_latency::latency_stats;

/// The captured 2-CPU KVM guest of the sys fixtures, with the hypervisor named
/// `hv` (None: bare metal).
pub(crate) fn env(hv: Option<&str>) -> Environment {
    let mut env = oslab_harness::testing::captured_env_in(hv, "/tmp");
    env.timer = "CLOCK_MONOTONIC".into();
    env
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
        device_bytes: None,
        content: Content::Intact,
    }];
    if Scenario::CONTESTED.contains(&s) {
        for name in ["a", "b"] {
            writers.push(WriterRaw {
                name: name.into(),
                trace: WriterTrace::default(),
                // what reached the device over the first writer's 2 s span
                device_bytes: Some(competitor_writes as u64 * CHUNK),
                content: Content::Intact,
            });
        }
    }
    let governor = (p != Policy::Vanilla).then(|| GovernorRaw {
        passes: 100,
        pass_mean_us: 100.0,
        pass_max_us: 400.0,
        cpu_percent: 0.5,
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
        start: Start::Late,
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
        coordinator_killed_at_s: None,
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
        testbed_cap: Default::default(),
        testbed_bdi: Some("7:9".into()),
        testbed_measured_bytes_s: 40.0 * MIB as f64,
        dirty_bytes: 64 * MIB,
        dirty_background_bytes: 32 * MIB,
        page_reporting: false,
        first_touch: None,
        cells,
        teardown_errors: vec![],
    }
}

fn plan_of(raw: &Raw) -> Plan {
    let (scenarios, policies) = super::matrix::Matrix::new(&raw.cells).present();
    Plan {
        bandwidth: 40 * MIB,
        writes: 100,
        runs: 1,
        scenarios,
        policies,
        starts: vec![Start::Late],
        head_start_s: 2.0,
        alone_governed: true,
        high_cmd: None,
        competitor_cmd: None,
        kill_coordinator: false,
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
            ("no-byte-lost", Verdict::Holds),
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
    assert_eq!(out.claims.len(), 6);
    let judged_ids: Vec<&str> = out
        .claims
        .iter()
        .filter(|c| c.verdict != Verdict::NotJudged)
        .map(|c| c.id.as_str())
        .collect();
    assert_eq!(judged_ids, ["competitors-not-starved", "no-byte-lost"]);
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
    let note = |hv: Option<&str>, reporting: bool, touch: Option<FirstTouch>| {
        let mut r = r.clone();
        r.page_reporting = reporting;
        r.first_touch = touch;
        judge::memory_note(&r, &env(hv))
    };
    assert!(note(Some("KVM"), true, None).contains("free page reporting"));
    assert!(note(Some("KVM"), true, None).contains("--recycle"));
    assert!(note(Some("KVM"), false, None).contains("without free page reporting"));
    assert!(note(None, false, None).contains("shows no hypervisor"));
    let touch = FirstTouch {
        bytes: 256 << 20,
        first_ns_per_page: 12_000.0,
        again_ns_per_page: 150.0,
    };
    let n = note(Some("KVM"), true, Some(touch));
    assert!(
        n.starts_with(
            "touching 256 MiB of fresh memory took 12.00 µs a page the first time and 0.15 µs again"
        ),
        "{n}"
    );
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
    let mut plan = plan_of(&matrix());
    plan.writes = 700;
    let kind = |w: &super::writers::WriterPlan| match &w.kind {
        WriterKind::Paced {
            fifo,
            count,
            bytes,
            nice,
            ..
        } => (*fifo, *count, *bytes, *nice),
        _ => (99, 0, 0, 0),
    };
    let w = writers_for(Scenario::RtLow, &plan);
    assert_eq!(w.len(), 3);
    // RT-55 writes 512 KiB every 20 ms; the RT-45 competitors 1 MiB every 10 ms
    assert_eq!(kind(&w[0]), (55, 700, CHUNK, 0));
    assert_eq!((kind(&w[1]).0, kind(&w[1]).2), (45, 2 * CHUNK));
    let b = writers_for(Scenario::Bulk, &plan);
    assert_eq!(b[1].kind, WriterKind::Dd, "bulk writers are dd");
    let f = writers_for(Scenario::Fig7, &plan);
    assert_eq!(kind(&f[0]), (0, 1000, CHUNK, 4));
    plan.high_cmd = Some("mywriter {file}".into());
    plan.competitor_cmd = Some("dd of={file}".into());
    let u = writers_for(Scenario::Bulk, &plan);
    assert_eq!(u[0].kind, WriterKind::User("mywriter {file}".into()));
    assert_eq!(u[2].kind, WriterKind::User("dd of={file}".into()));
}

#[test]
fn the_simulated_writers_are_the_cells_writers_as_started() {
    use oslab_wbsim::{Class, Kind};
    let raw = matrix();
    let plan = plan_of(&raw);
    let mut c = cell(
        Policy::Vanilla,
        Scenario::RtLow,
        lat(100, 1.0, 0, 0.0),
        30,
        30,
    );
    // the high writer's first write 2 s after the competitors started (late)
    for t in &mut c.writers[0].trace.start_s {
        *t += 2.0;
    }
    let w = super::predict::writer_cfgs(&plan, &c).unwrap();
    assert_eq!(w.len(), 3);
    assert_eq!(w[0].start_ms, 2000.0);
    assert_eq!(w[0].stop_ms, None);
    assert_eq!(w[0].class, Class::Rt { priority: 55 });
    assert_eq!(
        w[0].kind,
        Kind::Periodic {
            bytes: CHUNK,
            period_ms: PERIOD_MS,
            count: 100
        }
    );
    // the RT-45 writers: 1 MiB every 10 ms from the cell's start to the end of
    // the simulation, however long the model keeps the high writer
    for x in &w[1..] {
        assert_eq!(x.class, Class::Rt { priority: 45 });
        assert_eq!(x.start_ms, 0.0);
        assert_eq!(x.stop_ms, None);
        assert!(matches!(x.kind, Kind::Periodic { bytes, period_ms, .. }
            if bytes == 2 * CHUNK && period_ms == PERIOD_MS / 2.0));
    }
    // dd: a bulk writer of 1 MiB blocks, not real-time
    let bulk = cell(
        Policy::Vanilla,
        Scenario::Bulk,
        lat(100, 1.0, 0, 0.0),
        30,
        30,
    );
    let w = super::predict::writer_cfgs(&plan, &bulk).unwrap();
    assert_eq!(w[1].kind, Kind::Bulk { chunk: 1 << 20 });
    assert_eq!(w[1].class, Class::Normal { nice: 0 });
    // a user's program: the model would be guessing its workload
    let user = Plan {
        competitor_cmd: Some("my-writer {file}".into()),
        ..plan
    };
    assert!(super::predict::writer_cfgs(&user, &bulk).is_none());
}

#[test]
fn no_prediction_without_the_kernels_state() {
    // the synthetic cells carry no kernel trace: nothing to start the model from
    let out = judged(&matrix());
    assert!(
        out.findings.iter().all(|f| !f.name.starts_with("sim.")),
        "{:?}",
        out.findings.iter().map(|f| &f.name).collect::<Vec<_>>()
    );
}

fn planned(mode: oslab_model::Mode) -> Plan {
    let config = oslab_harness::RunConfig {
        mode,
        repeat: None,
        seed: 1,
        scratch_dir: "/tmp".into(),
        sets: Default::default(),
        // planning starts no program
        oslab_exe: "/nonexistent/oslab".into(),
    };
    let machine = env(None).machine;
    let mut p = oslab_harness::Planner::new("wb.wcall", &config, &machine);
    Experiment::plan(&WbWcall, &mut p)
}

#[test]
fn a_quick_run_has_the_cells_every_claim_needs_and_says_what_the_full_run_adds() {
    let quick = planned(oslab_model::Mode::Quick);
    assert_eq!(quick.starts, [Start::Late]);
    assert!(!quick.alone_governed);
    assert_eq!(quick.scenarios.len(), 4);
    assert_eq!(quick.policies.len(), 3);
    let full = planned(oslab_model::Mode::Full);
    assert_eq!(full.starts, [Start::Late, Start::Together]);
    assert!(full.alone_governed);
    // every claim is judged on a quick run's cells (none is "not judged")
    let mut raw = matrix();
    raw.cells
        .retain(|c| c.scenario != Scenario::Alone || c.policy == Policy::Vanilla);
    let out = judge(&quick, &raw, &env(Some("KVM")));
    for c in &out.claims {
        assert_ne!(c.verdict, Verdict::NotJudged, "{}: {}", c.id, c.why);
    }
    let adds = out
        .notes
        .iter()
        .find(|n| n.starts_with("a full run (without --quick, default settings) adds"))
        .expect("the note of what a full run adds");
    assert!(
        adds.contains("start together") && adds.contains("alone under the governed policies"),
        "{adds}"
    );
    // a full run adds nothing
    let full_out = judge(&full, &raw, &env(Some("KVM")));
    assert!(!full_out.notes.iter().any(|n| n.contains("a full run")));
    // only what this run's scenarios and policies would get
    let only_vanilla_bulk = Plan {
        scenarios: vec![Scenario::Bulk],
        policies: vec![Policy::Vanilla],
        ..quick
    };
    let out = judge(&only_vanilla_bulk, &raw, &env(Some("KVM")));
    let adds = out
        .notes
        .iter()
        .find(|n| n.starts_with("a full run"))
        .unwrap();
    assert!(
        adds.contains("start together") && !adds.contains("alone"),
        "{adds}"
    );
}
