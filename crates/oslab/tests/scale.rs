//! The figures in docs/reports.md ("Many machines, one history"): how long storing a
//! whole quick run takes in each database, and how long `history` and `compare
//! --machine` take on 10,000 stored runs. A measurement, not a test: it asserts
//! nothing about time and is left out of the default run. With a release build:
//!
//! ```text
//! target/release/oslab judge crates/lab/tests/fixtures/raw/*.raw.json* --json /tmp/quick.json
//! OSLAB_BIN=target/release/oslab OSLAB_SCALE_RESULTS=/tmp/quick.json \
//!     cargo test --release -p oslab --test scale -- --ignored --nocapture
//! ```
//!
//! The PostgreSQL server here keeps its default durability (fsync, synchronous
//! commit) and is reached through a Unix socket.

mod common;

use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, Instant};

use oslab_model::{ExperimentResult, ResultSet};
use oslab_store::testing::PgServer;
use oslab_store::{RunMeta, Store, Target};

const RUNS: usize = 10_000;
const MACHINES: usize = 20;
const REPEATS: usize = 7;

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn ms(d: Duration) -> String {
    format!("{:.1} ms", d.as_secs_f64() * 1e3)
}

/// One result per experiment of the quick run (the last of each where the
/// fixtures hold a busy and a quiet one).
fn quick_run() -> Vec<ExperimentResult> {
    let path = std::env::var("OSLAB_SCALE_RESULTS").expect("OSLAB_SCALE_RESULTS=FILE");
    let set: ResultSet = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let mut out: Vec<ExperimentResult> = Vec::new();
    for r in set.results {
        out.retain(|o| o.experiment != r.experiment);
        out.push(r);
    }
    out
}

fn meta(i: usize) -> RunMeta {
    RunMeta {
        started_at: format!(
            "2026-{:02}-{:02}T{:02}:{:02}:00Z",
            1 + i / 2400 % 12,
            1 + i / 96 % 25,
            i / 4 % 24,
            i % 4 * 15
        ),
        machine: format!("m{:02}", i % MACHINES),
        kernel: "6.18.0".into(),
        cpu_model: "Generated CPU".into(),
        oslab_version: "scale".into(),
        command: format!("oslab run generated #{i}"),
        label: None,
    }
}

/// Stores the quick run as a live run does (one transaction per result); the time
/// of each of REPEATS runs.
fn store_quick_runs(t: &Target, quick: &[ExperimentResult]) -> Vec<Duration> {
    let mut s = Store::open_or_create(t).unwrap();
    (0..REPEATS)
        .map(|i| {
            let start = Instant::now();
            let run = s.begin_run(&meta(RUNS + i)).unwrap();
            for (p, r) in quick.iter().enumerate() {
                s.add_result(run, p, r).unwrap();
            }
            s.finish_run(run, "2026-12-01T00:00:00Z").unwrap();
            start.elapsed()
        })
        .collect()
}

/// RUNS runs over MACHINES machines, each with one result of the quick run (in
/// turn) and the null experiment's.
fn generate(t: &Target, quick: &[ExperimentResult]) -> Duration {
    let null: ExperimentResult =
        serde_json::from_str(include_str!("../../store/tests/fixtures/null-result.json")).unwrap();
    let mut s = Store::open_or_create(t).unwrap();
    let start = Instant::now();
    for i in 0..RUNS {
        let results = [quick[i % quick.len()].clone(), null.clone()];
        s.import_run(&meta(i), "complete", None, &results).unwrap();
    }
    start.elapsed()
}

fn oslab_bin() -> PathBuf {
    std::env::var_os("OSLAB_BIN")
        .map_or_else(|| assert_cmd::cargo::cargo_bin("oslab"), PathBuf::from)
}

/// The median wall-clock time of an oslab command, process start included.
fn time_command(db: &str, args: &[&str]) -> Duration {
    median(
        (0..REPEATS)
            .map(|_| {
                let start = Instant::now();
                let out = Command::new(oslab_bin())
                    .env("OSLAB_DB", db)
                    .args(args)
                    .output()
                    .unwrap();
                let took = start.elapsed();
                assert!(
                    out.status.success(),
                    "{args:?}: {}",
                    String::from_utf8_lossy(&out.stderr)
                );
                took
            })
            .collect(),
    )
}

fn measure(name: &str, t: &Target, db: &str, quick: &[ExperimentResult]) {
    let stored = store_quick_runs(t, quick);
    let bytes: usize = quick
        .iter()
        .map(|r| serde_json::to_string(r).unwrap().len())
        .sum();
    println!(
        "{name}: storing the quick run ({} results, {:.1} MB of JSON): median {} (min {}, max {}) of {REPEATS}",
        quick.len(),
        bytes as f64 / 1e6,
        ms(median(stored.clone())),
        ms(*stored.iter().min().unwrap()),
        ms(*stored.iter().max().unwrap()),
    );
    let took = generate(t, quick);
    println!(
        "{name}: {RUNS} generated runs stored in {:.0} s",
        took.as_secs_f64()
    );
    for args in [
        &["history"][..],
        &["history", "--machine", "m07"],
        &["history", "--experiment", "mem.latency"],
        &["compare", "--machine", "m03", "--machine", "m04"],
        &[
            "compare",
            "--machine",
            "m03",
            "--machine",
            "m04",
            "--json",
            "-",
        ],
    ] {
        println!(
            "{name}: oslab {}: median {} of {REPEATS}",
            args.join(" "),
            ms(time_command(db, args))
        );
    }
}

#[test]
#[ignore = "a measurement for the docs: see the module's comment"]
fn history_and_compare_on_ten_thousand_runs() {
    let quick = quick_run();
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let file = dir.path().join("scale.db");
    measure(
        "SQLite",
        &Target::File(file.clone()),
        file.to_str().unwrap(),
        &quick,
    );
    let server = PgServer::start_with(&[]).expect("a PostgreSQL server");
    let url = server.create_database("scale").unwrap();
    measure("PostgreSQL", &Target::Postgres(url.clone()), &url, &quick);
}
