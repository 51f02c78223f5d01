//! Replay of the throttling and WCALL experiments' raw fixtures (see replay.rs):
//! wb.throttle, wb.wcall-overhead and wb.wcall, captured on this machine (a quiet
//! 2-vCPU KVM guest) by `oslab run all --quick --save-raw` with a release build.

mod common;
use common::{finding, judged, verdict};
use oslab_model::Verdict;
use oslab_wbsim::config::Kernel;

#[test]
fn wb_throttle() {
    let r = judged("wb.throttle");
    assert_eq!(verdict(&r, "writers-throttled"), Verdict::Holds);
    let claim = r.claim("writers-throttled").unwrap();
    // every condition the verdict uses is in the expectation, the p99 included
    assert_eq!(
        claim.expectation,
        "peak Dirty + Writeback at least 48 MiB, and the longest write() at least 100 ms, and write() p99 at least 20 ms"
    );
    assert!(claim.why.contains("balance_dirty_pages()"), "{}", claim.why);
    let (p99, max) = (finding(&r, "p99_ms"), finding(&r, "max_ms"));
    assert!((100.0..200.0).contains(&p99), "{p99}");
    assert!(max >= p99 && (100.0..200.0).contains(&max), "{max}");
    assert_eq!(finding(&r, "writes_over_200ms"), 0.0);
    let peak = finding(&r, "peak_dirty_plus_writeback_mib");
    assert!((60.0..70.0).contains(&peak), "{peak}");
    let bw = finding(&r, "testbed_measured_mib_s");
    assert!((9.0..10.5).contains(&bw), "{bw}");
    assert_eq!(r.measurements.len(), 2);
    assert_eq!(r.plots.len(), 2);
}

#[test]
fn wb_wcall_overhead() {
    let r = judged("wb.wcall-overhead");
    assert_eq!(verdict(&r, "overhead-under-1us"), Verdict::Holds);
    let o = finding(&r, "overhead_ns");
    assert!((10.0..100.0).contains(&o), "{o}");
    assert_eq!(finding(&r, "writes_counted"), 303_000.0);
    assert_eq!(
        r.claim("overhead-under-1us").unwrap().expectation,
        "median overhead below 1000 ns, and writes the governor counted exactly 303000"
    );
}

#[test]
fn wb_wcall_every_claim_is_judged() {
    let r = judged("wb.wcall");
    for (id, v) in [
        // two RT-45 writers pushed the RT-55 writer's p99 past 100 ms, a write past 200
        ("vanilla-stalls-the-high-writer", Verdict::Holds),
        // Algorithm 1 held the RT-55 writer's own group for HZ/10
        ("wcall-keeps-latency", Verdict::Differs),
        ("wcall-fair-keeps-latency", Verdict::Holds),
        ("competitors-not-starved", Verdict::Holds),
        ("fig7-no-overhead", Verdict::Holds),
        ("no-byte-lost", Verdict::Holds),
    ] {
        assert_eq!(verdict(&r, id), v, "{id}");
    }
    assert_eq!(r.measurements.len(), 12);
    let f = |n: &str| finding(&r, n);
    assert!((0.1..2.0).contains(&f("p99_ms.vanilla.alone")));
    assert!((100.0..250.0).contains(&f("p99_ms.vanilla.rt45x2")));
    assert!((0.1..0.5).contains(&f("p99_ms.wcall-fair.rt45x2")));
    // bandwidth at the device, not bytes handed to write(): below the cap
    for p in ["vanilla", "wcall", "wcall-fair"] {
        for s in ["rt45x2", "bulkx2"] {
            let bw = f(&format!("competitors_mib_s.{p}.{s}"));
            assert!((20.0..40.0).contains(&bw), "{p} {s}: {bw}");
        }
    }
    assert!((39.0..41.0).contains(&f("testbed_measured_mib_s")));
    // the machine's first-touch cost, measured on its own
    assert!(f("machine.first_touch_us_per_page") > 0.0);
    // the kernel's account of the high writer's slow writes, per cell
    assert_eq!(f("kernel.wcall-fair.rt45x2.writes_over_20ms"), 0.0);
    assert!(f("kernel.vanilla.rt45x2.writes_over_20ms") > 100.0);
    // the simulator beside every cell, each started from the state the kernel
    // carried into it: it sees the stall regime where the kernel paused the
    // writer and none where the governor kept it out
    for s in ["rt45x2", "bulkx2"] {
        for p in ["vanilla", "wcall"] {
            let sim = f(&format!("sim.p99_ms.{p}.{s}"));
            assert!(sim >= 20.0, "{p} {s}: {sim}");
        }
        let sim = f(&format!("sim.p99_ms.wcall-fair.{s}"));
        assert!(sim < 3.0, "wcall-fair {s}: {sim}");
    }
    let detail = &r.finding("sim.p99_ms.vanilla.rt45x2").unwrap().detail;
    assert!(
        detail.contains("state the kernel carried") && detail.contains("measured p99"),
        "{detail}"
    );
    assert!(r.finding("sim.p99_ms.vanilla.fig7-nice4").is_some());
}

#[test]
fn wb_wcall_whys_follow_the_outcome() {
    let r = judged("wb.wcall");
    let why = |id: &str| r.claim(id).unwrap().why.clone();
    let w = why("vanilla-stalls-the-high-writer");
    assert!(
        w.contains("global dirty limit throttles every writer"),
        "{w}"
    );
    // wcall held the RT-55 writer's own group; wcall-fair never did
    let w = why("wcall-keeps-latency");
    assert!(
        w.contains("own group 800 ms") && w.contains("Algorithm 1"),
        "{w}"
    );
    let w = why("wcall-fair-keeps-latency");
    assert!(
        w.contains("over-share groups waited") && w.contains("not throttled"),
        "{w}"
    );
    let w = why("fig7-no-overhead");
    assert!(w.starts_with("a lone group is not held back"), "{w}");
    // every late and together cell is named in the runs' account
    let o = &r.claim("wcall-fair-keeps-latency").unwrap().observed;
    for cell in [
        "rt45x2 late",
        "rt45x2 together",
        "bulkx2 late",
        "bulkx2 together",
    ] {
        assert!(o.contains(cell), "{cell}: {o}");
    }
    // a maximum never prints below its p99
    for f in r.findings.iter().filter(|f| f.name.starts_with("p99_ms.")) {
        let read = |key: &str| -> f64 {
            let at = f.detail.find(key).unwrap() + key.len();
            f.detail[at..]
                .split([',', ' '])
                .next()
                .unwrap()
                .parse()
                .unwrap()
        };
        assert!(read("max ") >= read("p99 "), "{}", f.detail);
    }
}

#[test]
fn wb_wcall_notes_count_what_ran() {
    let r = judged("wb.wcall");
    assert!(
        r.notes
            .iter()
            .any(|n| n.starts_with("1 run(s) x 4 scenarios x 3 policies; 150 writes")),
        "{:?}",
        r.notes
    );
    assert_eq!(r.params["runs"], 1);
    assert_eq!(
        r.params["scenarios"],
        serde_json::json!(["alone", "rt45x2", "bulkx2", "fig7-nice4"])
    );
}

/// The recorded run's plan and raw data, typed.
fn recorded() -> (oslab_lab::wb::wcall::Plan, oslab_lab::wb::wcall::Raw) {
    let f = common::raw_file("wb.wcall");
    let plan = serde_json::from_value(f.recorded.plan).unwrap();
    let raw = serde_json::from_value(f.recorded.raw.unwrap()).unwrap();
    (plan, raw)
}

#[test]
fn every_traced_cell_is_simulated_unless_its_governor_was_killed() {
    use oslab_lab::wb::wcall::predict::simulate;
    let (plan, raw) = recorded();
    // recorded before the testbed's bdi was kept: found from the flusher's
    // records, which one calm cell (the nice-4 writer under wcall-fair) lacks
    assert!(raw.testbed_bdi.is_none());
    let mut simulated = 0;
    for c in &raw.cells {
        let flushed = c.kernel.captured().is_some_and(|k| !k.flushes.is_empty());
        let o = simulate(&plan, &raw, c, Kernel::default());
        assert_eq!(o.is_some(), flushed, "{:?} {:?}", c.policy, c.scenario);
        if let Some(o) = o {
            // every write of the first writer finished inside the simulation
            assert_eq!(o.writers[0].latency_ms.len(), c.first().latency_ms.len());
            simulated += 1;
        }
    }
    assert_eq!(simulated, raw.cells.len() - 1);
    // the model has no governor that dies mid-cell
    let mut killed = raw.cells[0].clone();
    killed.coordinator_killed_at_s = Some(1.0);
    assert!(simulate(&plan, &raw, &killed, Kernel::default()).is_none());
}

/// wb.throttle checks the simulator: its blind prediction of the two bulk
/// writers (96 / 108 / 120 ms) lands within the stall targets of the measured
/// 92 / 112 / 132 ms.
#[test]
fn wb_throttle_checks_the_simulator_blind() {
    let r = judged("wb.throttle");
    assert_eq!(
        verdict(&r, "simulator-predicts-this-machine"),
        Verdict::Holds
    );
    for f in ["model.p50_ms", "model.p90_ms", "model.p99_ms"] {
        assert!(finding(&r, f) > 50.0, "{f}: the writers are throttled");
    }
}

/// Regression: cells the run never measured (a quick run measures the governed
/// policies alone only with `alone_governed`) were findings of 0 ms "(per run: )"
/// and Fig. 6 bars at 0; they are no figure (NaN: "-" in tables and plots, null
/// in JSON) that says it was not measured. `wb.wcall.quick.raw.json.gz`: a quick
/// run on this guest.
#[test]
fn wb_wcall_cells_never_measured_are_no_figure_not_zero() {
    let r = common::judged_fixture("wb.wcall.quick", "wb.wcall");
    for p in ["wcall", "wcall-fair"] {
        let f = r.finding(&format!("p99_ms.{p}.alone")).unwrap();
        assert!(f.value.is_nan(), "{p}: {}", f.value);
        assert!(f.detail.starts_with("not measured"), "{}", f.detail);
        assert!(!f.detail.contains("per run"), "{}", f.detail);
    }
    assert!(finding(&r, "p99_ms.vanilla.alone") > 0.0);
    let fig6 = r.plots.iter().find(|p| p.id == "fig6-mean").unwrap();
    let bar = |label: &str| {
        let i = fig6.x_labels.iter().position(|l| l == label).unwrap();
        fig6.series[0].points[i][1]
    };
    assert!(bar("wcall.alone").is_nan());
    assert!(bar("vanilla.alone") > 0.0);
    let json = serde_json::to_value(&r).unwrap();
    let alone = json["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["name"] == "p99_ms.wcall.alone")
        .unwrap();
    assert!(alone["value"].is_null(), "{alone}");
}
