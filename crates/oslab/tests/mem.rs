//! The memory-hierarchy experiments end to end on small sweeps: structure and
//! invariants, never timings.

mod common;
use common::{experiment_ids, json_output, named};

fn run(args: &[&str]) -> serde_json::Value {
    let mut cmd = common::oslab();
    cmd.args(args);
    json_output(&mut cmd)["results"].clone()
}

#[test]
fn memory_family_runs_and_reports_levels() {
    let r = run(&[
        "run",
        "mem",
        "--quick",
        "--repeat",
        "1",
        "--set",
        "max_size=8MiB",
    ]);
    let ids = experiment_ids(&r);
    assert_eq!(
        ids,
        ["mem.latency", "mem.bandwidth", "mem.tlb", "mem.locality"]
    );
    for x in r.as_array().unwrap() {
        assert_eq!(x["status"]["state"], "completed", "{}", x["experiment"]);
    }
    let lat = &r[0];
    let plot = &lat["plots"][0];
    assert_eq!(plot["x"]["scale"], "log2");
    let small = plot["series"][0]["points"].as_array().unwrap();
    assert_eq!(small.len(), 53, "1 KiB to 8 MiB at 4 points per octave");
    assert!(small.iter().all(|p| p[1].as_f64().unwrap() > 0.0));
    // levels are named by what they are: the measurements follow the levels found,
    // and the first cache level's edge is found on any machine
    let levels: Vec<String> = lat["params"]["levels"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| format!("ns.{}", l.as_str().unwrap()))
        .collect();
    assert_eq!(common::strings(&lat["measurements"], "name"), levels);
    named(&lat["measurements"], "ns.L1d");
    assert!(
        named(&lat["findings"], "ratio.L1d")["value"]
            .as_f64()
            .unwrap()
            > 0.0
    );
    assert!(
        lat["claims"][0]["expectation"]
            .as_str()
            .unwrap()
            .contains("L1d edge")
    );
    assert!(
        lat["findings"]
            .as_array()
            .unwrap()
            .iter()
            .any(|f| f["name"].as_str().unwrap().starts_with("effective."))
    );
    let loc = &r[3];
    // the largest array is 64 MiB in a quick run where sysfs's last-level cache
    // is at most 8 MiB, else 256 MiB
    let ratios: Vec<&str> = common::strings(&loc["findings"], "name")
        .into_iter()
        .filter(|n| n.starts_with("ratio."))
        .collect();
    assert_eq!(ratios.len(), 4, "{ratios:?}");
    assert_eq!(ratios[0], "ratio.16KiB");
    assert!(
        ["ratio.64MiB", "ratio.256MiB"].contains(&ratios[3]),
        "{ratios:?}"
    );
    for n in [ratios[0], ratios[3]] {
        assert!(named(&loc["findings"], n)["value"].as_f64().unwrap() > 0.0);
    }
    assert!(named(&r[2]["findings"], "page_walk_ns")["value"].is_number());
}
