//! The context-switch experiments end to end on a tiny configuration: structure and
//! invariants only, never a time threshold.

mod common;
use common::{json_output, named as find};

fn run_json(args: &[&str]) -> serde_json::Value {
    let mut cmd = common::oslab();
    cmd.env(
        "OSLAB_JOURNAL_DIR",
        common::journal_dir("oslab-ctxsw-tests"),
    )
    .args(args);
    json_output(&mut cmd)["results"][0].clone()
}

#[test]
fn ctxsw_matrix_is_complete_and_every_handoff_switched() {
    let r = run_json(&[
        "run",
        "cpu.ctxsw",
        "--quick",
        "--repeat",
        "2",
        "--set",
        "launches=1",
        "--set",
        "round_trips=1000",
    ]);
    assert_eq!(r["status"]["state"], "completed");
    let ms = &r["measurements"];
    for tasks in ["processes", "threads"] {
        for mech in ["futex", "pipe"] {
            for place in ["same-cpu", "unpinned"] {
                let key = format!("{tasks}.{mech}.{place}");
                let m = find(ms, &format!("ns.{key}"));
                let samples = m["samples"].as_array().unwrap();
                assert_eq!(samples.len(), 2, "{key}: one sample per batch");
                assert!(samples.iter().all(|s| s.as_f64().unwrap() > 0.0));
                let f = find(&r["findings"], &format!("switches_per_round_trip.{key}"));
                if place == "same-cpu" {
                    // one switch per side per round trip: the peer must run for the
                    // waker to be woken back
                    assert!(
                        f["value"].as_f64().unwrap() >= 1.999,
                        "{key}: {}",
                        f["detail"]
                    );
                }
            }
        }
    }
    for m in ["ns.futex_wake_no_waiter", "ns.futex_wait_mismatch"] {
        find(ms, m);
    }
    // every unpinned cell says whether its samples are one figure or two modes
    for key in [
        "processes.futex",
        "processes.pipe",
        "threads.futex",
        "threads.pipe",
    ] {
        let f = find(&r["findings"], &format!("unpinned_modes.{key}"));
        assert!([1.0, 2.0].contains(&f["value"].as_f64().unwrap()), "{f}");
    }
    // perf's ratio always says whether it is an agreement check
    for f in r["findings"].as_array().unwrap() {
        if f["name"].as_str().unwrap().starts_with("ours_over_perf.") {
            assert!(
                f["detail"].as_str().unwrap().contains("agreement check"),
                "{f}"
            );
        }
    }
    let claims = common::strings(&r["claims"], "id");
    assert!(claims.contains(&"pinning-cheaper") && claims.contains(&"threads-cheaper"));
    // both placements were measured: the claims are judged, whatever the
    // verdict, unless other programs' work was more than they tolerate
    for c in r["claims"].as_array().unwrap() {
        if c["id"] != "vm-dearer" {
            assert_ne!(common::verdict_or_disturbed(c), "not_judged", "{c}");
        }
    }
    assert_eq!(
        r["plots"][0]["series"][0]["points"]
            .as_array()
            .unwrap()
            .len(),
        r["plots"][0]["x_labels"].as_array().unwrap().len()
    );
}

#[test]
fn ctxsw_ws_sweeps_every_size_for_every_placement() {
    let r = run_json(&[
        "run",
        "cpu.ctxsw-ws",
        "--quick",
        "--repeat",
        "2",
        "--set",
        "max_ws=64KiB",
    ]);
    assert_eq!(r["status"]["state"], "completed");
    for place in ["same-cpu", "unpinned"] {
        for w in [0, 4096, 16384, 65536] {
            let m = find(&r["measurements"], &format!("ns.{place}.{w}"));
            assert_eq!(m["samples"].as_array().unwrap().len(), 2);
        }
        find(&r["findings"], &format!("rise_at.{place}"));
    }
    let plot = &r["plots"][0];
    assert_eq!(plot["x"]["scale"], "log2");
    for s in plot["series"].as_array().unwrap() {
        assert_eq!(
            s["points"].as_array().unwrap().len(),
            3,
            "W = 0 is not on a log axis"
        );
    }
}
