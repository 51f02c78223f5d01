//! The results database end to end: runs kept, listed, compared, exported and
//! reported; bad databases refused with one sentence; a killed run loses nothing.

// A test here tells one scenario from start to end: longer than 80 lines.
#![allow(clippy::too_many_lines)]

mod common;

use std::ffi::OsStr;
use std::path::Path;
use std::process::{Command, Output};

fn oslab_db(db: impl AsRef<OsStr>) -> Command {
    let mut c = common::oslab();
    c.env("OSLAB_DB", db);
    c
}

fn ok(out: Output) -> String {
    assert!(
        out.status.success(),
        "exit {:?}: {}",
        out.status.code(),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// One sentence on stderr, the given exit code, no panic.
fn refused(out: Output, code: i32) -> String {
    let err = String::from_utf8_lossy(&out.stderr).to_string();
    assert_eq!(out.status.code(), Some(code), "{err}");
    assert!(
        !err.contains("panicked") && !err.contains("RUST_BACKTRACE"),
        "{err}"
    );
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    err
}

fn run_null(db: impl AsRef<OsStr>, label: &str) {
    ok(oslab_db(db)
        .args(["run", "null", "--label", label])
        .output()
        .unwrap());
}

#[test]
fn runs_are_kept_listed_compared_exported_and_reported() {
    let dir = tempfile::tempdir().unwrap();
    kept_listed_compared_exported_and_reported(
        dir.path().join("history.db").as_os_str(),
        dir.path(),
    );
}

/// The same commands on a PostgreSQL database named by a URL in OSLAB_DB.
#[test]
fn on_postgres_runs_are_kept_listed_compared_exported_and_reported() {
    let Some(url) = oslab_store::testing::fresh_database("history") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    kept_listed_compared_exported_and_reported(OsStr::new(&url), dir.path());
}

fn kept_listed_compared_exported_and_reported(db: &OsStr, dir: &Path) {
    run_null(db, "before");
    run_null(db, "after");

    let text = ok(oslab_db(db).arg("history").output().unwrap());
    let first = text.lines().nth(2).unwrap_or_default();
    assert!(
        first.trim_start().starts_with('2') && first.contains("after"),
        "newest first:\n{text}"
    );
    assert!(text.contains("complete"), "{text}");

    let runs: serde_json::Value = serde_json::from_str(&ok(oslab_db(db)
        .args(["history", "--json", "-"])
        .output()
        .unwrap()))
    .unwrap();
    assert_eq!(runs.as_array().unwrap().len(), 2);
    assert_eq!(runs[0]["results"][0][0], "null");

    let by_exp = ok(oslab_db(db)
        .args(["history", "--experiment", "null"])
        .output()
        .unwrap());
    assert!(
        by_exp.contains("latency (ns)") && by_exp.contains("100"),
        "{by_exp}"
    );

    // The null experiment's samples are fixed: two runs are the same within noise.
    let cmp: serde_json::Value = serde_json::from_str(&ok(oslab_db(db)
        .args(["compare", "1", "2", "--json", "-"])
        .output()
        .unwrap()))
    .unwrap();
    let latency = cmp["figures"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["name"] == "latency")
        .unwrap();
    assert_eq!(latency["noise"], "within");
    assert_eq!(latency["ratio"], 1.0);

    let host = runs[0]["machine"].as_str().unwrap().to_string();
    let html = dir.join("cmp.html");
    let by_machine = ok(oslab_db(db)
        .args(["compare", "--machine", &host, "--machine", &host, "--html"])
        .arg(&html)
        .output()
        .unwrap());
    assert!(by_machine.contains("latency"), "{by_machine}");
    assert!(
        std::fs::read_to_string(&html)
            .unwrap()
            .contains("<table class=\"comparison\"")
    );

    let csv = ok(oslab_db(db)
        .args([
            "export", "--format", "csv", "--table", "samples", "--run", "2",
        ])
        .output()
        .unwrap());
    let mut lines = csv.lines();
    assert!(lines.next().unwrap().starts_with(
        "run_id,machine,machine_id,kernel,label,experiment,mode,started_at,measurement,index,value,unit"
    ));
    let rows: Vec<&str> = lines.collect();
    assert_eq!(rows.len(), oslab_lab::null::SAMPLES.len());
    assert!(
        rows.iter()
            .all(|r| r.starts_with("2,") && r.contains(",after,null,"))
    );
    // machines are told apart by more than the host name where there is a machine id
    if std::fs::read_to_string("/etc/machine-id").is_ok_and(|id| !id.trim().is_empty()) {
        let id = rows[0].split(',').nth(2).unwrap();
        assert!(
            id.len() == 16 && id.chars().all(|c| c.is_ascii_hexdigit()),
            "{id}"
        );
    }

    // the curves are rows too: the null experiment's plot, point by point
    let series = ok(oslab_db(db)
        .args([
            "export", "--format", "csv", "--table", "series", "--run", "2",
        ])
        .output()
        .unwrap());
    let mut lines = series.lines();
    assert!(
        lines
            .next()
            .unwrap()
            .ends_with(",experiment,mode,started_at,plot,series,x,y,x_unit,y_unit")
    );
    // one point per sample and the median's two ends
    let rows: Vec<&str> = lines.collect();
    assert_eq!(rows.len(), oslab_lab::null::SAMPLES.len() + 2);
    assert!(rows[0].ends_with(",bytes,ns"), "{}", rows[0]);
    let summary = ok(oslab_db(db)
        .args([
            "export", "--format", "csv", "--table", "summary", "--run", "2",
        ])
        .output()
        .unwrap());
    assert!(
        summary
            .lines()
            .next()
            .unwrap()
            .contains(",ci95_low,ci95_high,noise,"),
        "{summary}"
    );
    assert!(
        summary.lines().nth(1).unwrap().contains(",noisy,"),
        "{summary}"
    );

    let json: serde_json::Value =
        serde_json::from_str(&ok(oslab_db(db).args(["export"]).output().unwrap())).unwrap();
    assert_eq!(json["runs"].as_array().unwrap().len(), 2);
    assert_eq!(json["runs"][0]["label"], "before", "oldest first");
    assert_eq!(json["runs"][1]["results"][0]["experiment"], "null");

    let page = dir.join("report.html");
    let o = oslab_db(db)
        .args(["report", "2", "--html"])
        .arg(&page)
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&o.stderr).matches("wrote ").count();
    assert_eq!(said, 1, "where the page went, said once");
    ok(o);
    let page = std::fs::read_to_string(&page).unwrap();
    assert!(page.contains("id=\"null\"") && page.contains("run 2"));
    let latest: serde_json::Value = serde_json::from_str(&ok(oslab_db(db)
        .args(["compare", "1", "latest", "--json", "-"])
        .output()
        .unwrap()))
    .unwrap();
    assert_eq!(latest["b"]["label"], "run 2", "latest is the newest run");

    // The same report from the JSON a run writes.
    let results = dir.join("r.json");
    ok(oslab_db(db)
        .args(["run", "null", "--no-db", "--json"])
        .arg(&results)
        .output()
        .unwrap());
    let tables = ok(oslab_db(db).arg("report").arg(&results).output().unwrap());
    assert!(tables.contains("== null"), "{tables}");
    let mixed = ok(oslab_db(db)
        .arg("compare")
        .arg(&results)
        .arg("1")
        .output()
        .unwrap());
    assert!(mixed.contains("latency"), "{mixed}");
    let after = serde_json::from_str::<serde_json::Value>(&ok(oslab_db(db)
        .args(["history", "--json", "-"])
        .output()
        .unwrap()))
    .unwrap();
    assert_eq!(after.as_array().unwrap().len(), 2, "--no-db kept nothing");
}

#[test]
fn the_default_database_is_in_the_data_directory_and_no_db_skips_it() {
    let dir = tempfile::tempdir().unwrap();
    let mut c = common::oslab();
    c.env_remove("OSLAB_DB").env("XDG_DATA_HOME", dir.path());
    ok(c.args(["run", "null", "--no-db"]).output().unwrap());
    assert!(!dir.path().join("oslab").exists());
    let mut c = common::oslab();
    c.env_remove("OSLAB_DB").env("XDG_DATA_HOME", dir.path());
    let out = c.args(["run", "null"]).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr).to_string();
    ok(out);
    assert!(dir.path().join("oslab/results.db").is_file());
    assert!(err.contains("kept as run 1"), "{err}");
}

#[test]
fn bad_databases_and_sources_get_one_sentence() {
    let dir = tempfile::tempdir().unwrap();
    let text = dir.path().join("notes.txt");
    std::fs::write(
        &text,
        "not a database at all, just some words in a file\n".repeat(40),
    )
    .unwrap();
    let err = refused(oslab_db(&text).arg("history").output().unwrap(), 1);
    assert!(err.contains("not an SQLite database"), "{err}");
    // A run told to keep results there refuses before measuring anything.
    let err = refused(
        common::oslab()
            .args(["run", "null", "--db"])
            .arg(&text)
            .output()
            .unwrap(),
        2,
    );
    assert!(err.contains("not an SQLite database"), "{err}");

    let missing = dir.path().join("missing.db");
    let err = refused(oslab_db(&missing).arg("history").output().unwrap(), 1);
    assert!(err.contains("does not exist"), "{err}");
    assert!(!missing.exists(), "reading commands create nothing");

    let db = dir.path().join("h.db");
    run_null(&db, "x");
    // nothing found is a failure at run time (exit 1), as grep's no match
    let err = refused(
        oslab_db(&db).args(["compare", "1", "7"]).output().unwrap(),
        1,
    );
    assert!(err.contains("no run 7"), "{err}");
    let err = refused(oslab_db(&db).args(["compare", "1"]).output().unwrap(), 2);
    assert!(err.contains("two"), "{err}");
    let err = refused(
        oslab_db(&db).args(["report", "nonsense"]).output().unwrap(),
        2,
    );
    assert!(err.contains("neither a results file nor a run id"), "{err}");
    let err = refused(oslab_db(&db).arg("report").arg(&text).output().unwrap(), 2);
    assert!(err.contains("not an oslab results file"), "{err}");
    let err = refused(
        oslab_db(&db)
            .args(["compare", "--machine", "nowhere", "--machine", "x"])
            .output()
            .unwrap(),
        1,
    );
    assert!(err.contains("machine nowhere"), "{err}");
}

#[test]
fn a_damaged_database_is_reported_not_panicked_on() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("h.db");
    for i in 0..6 {
        run_null(&db, &format!("r{i}"));
    }
    let mut bytes = std::fs::read(&db).unwrap();
    let end = bytes.len() - 1024;
    for b in &mut bytes[2048..end] {
        *b ^= 0x5A;
    }
    std::fs::write(&db, &bytes).unwrap();
    let _ = std::fs::remove_file(db.with_extension("db-wal"));
    let out = oslab_db(&db).args(["export"]).output().unwrap();
    let err = refused(out, 1);
    assert!(
        err.contains("damaged") || err.contains("not an SQLite"),
        "{err}"
    );
}

#[test]
fn a_killed_run_keeps_what_it_finished_and_earlier_runs() {
    let dir = tempfile::tempdir().unwrap();
    killed_run_keeps_what_it_finished(dir.path().join("h.db").as_os_str());
}

#[test]
fn on_postgres_a_killed_run_keeps_what_it_finished_and_earlier_runs() {
    if let Some(url) = oslab_store::testing::fresh_database("killed") {
        killed_run_keeps_what_it_finished(OsStr::new(&url));
    }
}

fn killed_run_keeps_what_it_finished(db: &OsStr) {
    run_null(db, "earlier");
    // null finishes at once; cpu.ctxsw takes seconds: kill the run inside it.
    let mut child = oslab_db(db)
        .args(["run", "null", "cpu.ctxsw", "--quick"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    loop {
        let out = oslab_db(db)
            .args(["history", "--json", "-"])
            .output()
            .unwrap();
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap_or_default();
        if v[0]["id"] == 2 && v[0]["results"].as_array().is_some_and(|r| r.len() == 1) {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the first result never appeared"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    child.kill().unwrap();
    child.wait().unwrap();

    let runs: serde_json::Value = serde_json::from_str(&ok(oslab_db(db)
        .args(["history", "--json", "-"])
        .output()
        .unwrap()))
    .unwrap();
    assert_eq!(runs[0]["state"], "running", "never marked complete");
    assert_eq!(runs[0]["results"].as_array().unwrap().len(), 1);
    assert_eq!(runs[1]["state"], "complete");
    let text = ok(oslab_db(db).arg("history").output().unwrap());
    assert!(text.contains("unfinished"), "{text}");
    let cmp = ok(oslab_db(db).args(["compare", "1", "2"]).output().unwrap());
    assert!(cmp.contains("latency"), "{cmp}");
    // And the database takes new runs.
    run_null(db, "later");
}
