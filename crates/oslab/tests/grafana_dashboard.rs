//! The Grafana dashboard in `dashboards/oslab-grafana.json`, checked three ways:
//! against Grafana's own dashboard schema (a copy in tests/fixtures/grafana, read by
//! Python's jsonschema; no Grafana server can be installed from the package
//! registries this project uses: Debian has no grafana package, PyPI and npm only
//! clients and libraries); every metric its queries name is one `oslab watch
//! --prometheus` serves on this machine, counters only under rate() and gauges
//! never; and its panels tile the grid without covering each other.

use std::path::{Path, PathBuf};
use std::process::Command;

use oslab_sys::fsread::Root;
use oslab_sys::sar::snapshot;

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn dashboard() -> serde_json::Value {
    let text = std::fs::read_to_string(repo().join("dashboards/oslab-grafana.json")).unwrap();
    serde_json::from_str(&text).unwrap()
}

fn exprs(d: &serde_json::Value) -> Vec<String> {
    let mut out: Vec<String> = d["panels"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|p| p["targets"].as_array().unwrap().iter())
        .map(|t| t["expr"].as_str().unwrap().to_string())
        .collect();
    for v in d["templating"]["list"].as_array().unwrap() {
        if v["type"] == "query" {
            out.push(v["query"].as_str().unwrap().to_string());
        }
    }
    out
}

/// Validates `doc` against Grafana's schema with Python's jsonschema: Ok(None) when
/// valid, Ok(Some(error)) when not, Err when the validator cannot run here.
fn validate(doc: &serde_json::Value) -> Result<Option<String>, String> {
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("dashboard.json");
    std::fs::write(&file, doc.to_string()).unwrap();
    let schema = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/grafana/dashboard.jsonschema.json");
    let script = "import json, sys\n\
try:\n    import jsonschema\nexcept ImportError:\n    sys.exit(3)\n\
s = json.load(open(sys.argv[1])); d = json.load(open(sys.argv[2]))\n\
try:\n    jsonschema.validate(d, s)\nexcept jsonschema.ValidationError as e:\n    print(e.message); sys.exit(1)\n";
    let out = Command::new("python3")
        .args(["-c", script])
        .arg(&schema)
        .arg(&file)
        .output()
        .map_err(|e| format!("no python3: {e}"))?;
    match out.status.code() {
        Some(0) => Ok(None),
        Some(1) => Ok(Some(String::from_utf8_lossy(&out.stdout).into_owned())),
        Some(3) => Err("python3 has no jsonschema (Debian: python3-jsonschema)".into()),
        _ => Err(String::from_utf8_lossy(&out.stderr).into_owned()),
    }
}

#[test]
fn the_dashboard_follows_grafanas_schema() {
    let d = dashboard();
    match validate(&d) {
        Err(why) => eprintln!("skipped: {why}"),
        Ok(None) => {
            // and the validator does catch a broken dashboard
            let mut bad = d.clone();
            bad["panels"][0]["gridPos"]["w"] = serde_json::json!(30);
            let err = validate(&bad).unwrap();
            assert!(err.is_some(), "a 30-column panel passed");
        }
        Ok(Some(e)) => panic!("not a valid Grafana dashboard: {e}"),
    }
}

/// The metric names in a PromQL expression, each with whether it sits directly
/// inside rate( ... ).
fn metrics_in(expr: &str) -> Vec<(String, bool)> {
    let mut out = Vec::new();
    let mut rest = expr;
    while let Some(at) = rest.find("oslab_") {
        let name: String = rest[at..]
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect();
        let before = rest[..at].trim_end();
        out.push((name.clone(), before.ends_with("rate(")));
        rest = &rest[at + name.len()..];
    }
    out
}

#[test]
fn every_metric_the_dashboard_queries_is_served_and_used_as_its_type() {
    let served = oslab_report::watch::openmetrics(
        &snapshot(&Root::live()),
        "test",
        oslab_sys::machine::page_size(),
    );
    let samples: Vec<&str> = served
        .lines()
        .filter(|l| !l.starts_with('#'))
        .map(|l| l.split(['{', ' ']).next().unwrap())
        .collect();
    let d = dashboard();
    let mut seen = 0;
    for e in exprs(&d) {
        for (name, in_rate) in metrics_in(&e) {
            seen += 1;
            // device metrics exist only on a machine with a device that did I/O
            if name.starts_with("oslab_device_") && !served.contains("oslab_device_") {
                continue;
            }
            assert!(
                samples.contains(&name.as_str()),
                "{name} is not served: {e}"
            );
            let counter = name.ends_with("_total");
            if !e.starts_with("label_values") {
                assert_eq!(
                    counter, in_rate,
                    "{name}: counters under rate(), gauges not: {e}"
                );
            }
        }
    }
    assert!(seen >= 30, "{seen} metric uses");
}

#[test]
fn the_panels_tile_the_grid() {
    let d = dashboard();
    let boxes: Vec<(i64, i64, i64, i64)> = d["panels"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            let g = &p["gridPos"];
            let n = |k: &str| g[k].as_i64().unwrap();
            (n("x"), n("y"), n("w"), n("h"))
        })
        .collect();
    for (i, a) in boxes.iter().enumerate() {
        assert!(a.0 + a.2 <= 24, "panel {i} is wider than the grid");
        for b in &boxes[i + 1..] {
            let apart =
                a.0 + a.2 <= b.0 || b.0 + b.2 <= a.0 || a.1 + a.3 <= b.1 || b.1 + b.3 <= a.1;
            assert!(apart, "panels {a:?} and {b:?} overlap");
        }
    }
}
