//! The whole pipeline on the null experiment's known samples: statistics, claims and
//! every output format, compared with reviewed snapshots.

use std::path::Path;

use oslab_lab::experiment::NoProgress;
use oslab_lab::{Context, Experiment, RunConfig, runner};
use oslab_model::{Environment, ExperimentResult, LoadRecord, Mode, ResultSet, SCHEMA_VERSION};
use oslab_sys::fsread::Root;
use oslab_sys::machine::{self, LiveProbes};

fn null_result() -> ExperimentResult {
    let root =
        Root::at(Path::new(env!("CARGO_MANIFEST_DIR")).join("../sys/tests/fixtures/smt8-3level"));
    let probes = LiveProbes {
        cpuid_hypervisor: None,
        is_root: false,
        scratch_dir: "/tmp".into(),
        scratch_dev: None,
        scratch_free_bytes: Some(1 << 30),
        page_bytes: 4096,
    };
    let machine = machine::collect(&root, &probes);
    let cfg = RunConfig {
        mode: Mode::Quick,
        repeat: None,
        seed: 7,
        scratch_dir: "/tmp".into(),
        sets: Default::default(),
    };
    let exp = oslab_lab::null::Null;
    let mut ctx = Context {
        config: &cfg,
        machine: &machine,
        progress: &NoProgress,
        params: Default::default(),
    };
    let outcome = exp.run(&mut ctx);
    let env = Environment {
        oslab_version: "test".into(),
        machine: machine.clone(),
        timer: "test clock".into(),
        load: LoadRecord {
            loadavg_before: [0.1, 0.2, 0.3],
            loadavg_after: [0.2, 0.2, 0.3],
            cpu_busy_fraction: 0.125,
            steal_fraction: 0.0,
            warning: None,
        },
        seed: 7,
    };
    let params = ctx.params;
    runner::assemble(&exp, &cfg, env, 1_795_342_800.0, 0.5, params, outcome)
}

#[test]
fn statistics_of_the_known_samples() {
    let r = null_result();
    let m = r.measurement("latency").unwrap();
    let s = m.summary.as_ref().unwrap();
    assert_eq!(m.samples, oslab_lab::null::SAMPLES.to_vec());
    assert_eq!(s.n, 10);
    assert_eq!(s.median, 100.0);
    assert_eq!((s.min, s.max), (97.0, 150.0));
    assert_eq!(s.outliers, vec![8], "150 ns is the one outlier");
    assert!(s.ci95.low <= 100.0 && s.ci95.high >= 100.0);
    assert_eq!(r.started_at, "2026-11-22T10:20:00Z");
    assert_eq!(r.claims.len(), 3);
}

#[test]
fn terminal_table() {
    insta::assert_snapshot!(oslab_report::table::render_result(&null_result()));
}

#[test]
fn json_round_trips_and_matches() {
    let set = ResultSet {
        schema_version: SCHEMA_VERSION,
        oslab_version: "test".into(),
        command: "oslab run null".into(),
        results: vec![null_result()],
    };
    let text = oslab_report::json::to_json(&set);
    let back = oslab_report::json::from_json(&text).unwrap();
    assert_eq!(back, set);
    // The machine section is checked by the fixture tests; keep the snapshot readable.
    let mut v: serde_json::Value = serde_json::from_str(&text).unwrap();
    v["results"][0]["environment"]["machine"] = serde_json::json!("<machine: smt8-3level fixture>");
    insta::assert_snapshot!(serde_json::to_string_pretty(&v).unwrap());
}

#[test]
fn csv_files() {
    let files = oslab_report::csv_out::files(&null_result());
    let names: Vec<&str> = files.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(
        names,
        vec![
            "null.samples.csv",
            "null.summary.csv",
            "null.findings.csv",
            "null.claims.csv"
        ]
    );
    let all: String = files
        .iter()
        .map(|(n, b)| format!("--- {n}\n{}", String::from_utf8_lossy(b)))
        .collect();
    insta::assert_snapshot!(all);
}

#[test]
fn svg_plot() {
    let r = null_result();
    let svg = oslab_report::svg::render(&r.plots[0]);
    assert!(svg.starts_with("<svg") && svg.trim_end().ends_with("</svg>"));
    assert_eq!(svg.matches("<circle").count(), 10, "one point per sample");
    assert!(svg.contains("L1d 32 KiB"), "the marker is labelled");
    insta::assert_snapshot!(svg);
}
