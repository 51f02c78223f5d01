//! The scheduler experiments end to end on short runs: structure, invariants and the
//! Chrome trace parsed back; never a time threshold.

// A test here tells one scenario from start to end: longer than 80 lines.
#![allow(clippy::too_many_lines)]

mod common;
use common::{experiment_ids, json_output, named};

#[test]
fn scheduler_family_runs_and_exports_a_trace() {
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("slices.json");
    let mut cmd = common::oslab();
    cmd.args([
        "run",
        "sched",
        "--quick",
        "--set",
        "duration=300ms",
        "--set",
    ])
    .arg(format!("trace={}", trace.display()));
    let r = json_output(&mut cmd)["results"].clone();
    let ids = experiment_ids(&r);
    assert_eq!(
        ids,
        [
            "sched.multiload",
            "sched.slices",
            "sched.nice",
            "sched.scaling",
            "sched.smt"
        ]
    );
    let smt = &r[4]["claims"][0];
    assert!(
        ["holds", "differs", "not_testable", "disturbed"]
            .contains(&common::verdict_or_disturbed(smt))
    );
    // the topology is written for people, not in debug formatting
    let note = r[4]["notes"][0].as_str().unwrap();
    assert!(note.starts_with("topology: cpu"), "{note}");
    assert!(!note.contains("Some(") && !note.contains('['), "{note}");
    // multiload: every process's own real, user and sys
    named(&r[0]["findings"], "one_cpu.n2.p2");
    let r = serde_json::Value::Array(r.as_array().unwrap()[1..].to_vec());
    for x in r.as_array().unwrap() {
        assert_eq!(x["status"]["state"], "completed", "{}", x["experiment"]);
    }
    // two processes on one CPU took turns: complete slices were recorded
    assert!(
        !named(&r[0]["measurements"], "slice_ms.n2")["samples"]
            .as_array()
            .unwrap()
            .is_empty()
    );
    // shares are fractions, overall and per interval; turns are run times
    let nice = &r[1];
    for f in nice["findings"].as_array().unwrap() {
        let v = f["value"].as_f64().unwrap();
        if f["name"].as_str().unwrap().starts_with("share.") {
            assert!((0.0..=1.0).contains(&v), "{f}");
        } else {
            assert!(v > 0.0, "{f}");
        }
    }
    for m in nice["measurements"].as_array().unwrap() {
        assert!(m["name"].as_str().unwrap().starts_with("interval_share."));
        for s in m["samples"].as_array().unwrap() {
            assert!((0.0..=1.0).contains(&s.as_f64().unwrap()), "{m}");
        }
    }
    // the plan is the result's parameters
    assert_eq!(nice["params"]["ks"], serde_json::json!([5, 10]));
    // the trace: Chrome trace-event JSON with one complete event per run, 4 workers
    let t: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&trace).unwrap()).unwrap();
    let ev = t["traceEvents"].as_array().unwrap();
    let tids: std::collections::BTreeSet<u64> = ev
        .iter()
        .filter(|e| e["ph"] == "X")
        .map(|e| e["tid"].as_u64().unwrap())
        .collect();
    assert_eq!(tids.len(), 4);
    assert!(
        ev.iter()
            .filter(|e| e["ph"] == "X")
            .all(|e| e["dur"].as_f64().unwrap() > 0.0 && e["ts"].as_f64().unwrap() >= 0.0)
    );
    // the Trace Event Format, on CLOCK_MONOTONIC (microseconds since boot)
    let uptime_us = std::fs::read_to_string("/proc/uptime")
        .unwrap()
        .split_whitespace()
        .next()
        .unwrap()
        .parse::<f64>()
        .unwrap()
        * 1e6;
    let faults = common::trace_format::faults(&t, Some(uptime_us + 1e6));
    assert!(faults.is_empty(), "{}", faults.join("\n"));
    // real processes, named as they were: never all under pid 1
    let pids: std::collections::BTreeSet<u64> = ev
        .iter()
        .filter(|e| e["ph"] == "X")
        .map(|e| e["pid"].as_u64().unwrap())
        .collect();
    assert!(pids.len() >= 2 && !pids.contains(&1), "{pids:?}");
    assert!(
        ev.iter()
            .any(|e| e["ph"] == "M" && e["name"] == "process_name"),
        "processes are named"
    );
    // one CPU: N processes of equal work finish in N x the time of one, roughly; at
    // least, more processes never finish sooner
    let one: Vec<f64> = ["one_cpu.n1", "one_cpu.n2", "one_cpu.n4"]
        .iter()
        .map(|k| named(&r[2]["findings"], k)["value"].as_f64().unwrap())
        .collect();
    assert!(one[0] < one[1] && one[1] < one[2], "{one:?}");
}
