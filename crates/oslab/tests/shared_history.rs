//! One history for many machines: oslab processes on eight "machines"
//! (OSLAB_MACHINE) writing at once, a run whose database cannot be reached, and
//! `oslab import` of result files and of an SQLite history into PostgreSQL. Each on
//! a real PostgreSQL server (skipped with the reason where none can be started),
//! the concurrent writers on SQLite too.

mod common;

use std::ffi::OsStr;
use std::path::Path;
use std::process::{Command, Output};

use oslab_store::testing::fresh_database;

fn oslab_db(db: impl AsRef<OsStr>) -> Command {
    let mut c = common::oslab();
    c.env("OSLAB_DB", db).env_remove("OSLAB_MACHINE");
    c
}

fn ok(out: Output) -> (String, String) {
    let err = String::from_utf8_lossy(&out.stderr).to_string();
    assert!(out.status.success(), "exit {:?}: {err}", out.status.code());
    (String::from_utf8(out.stdout).unwrap(), err)
}

fn history(db: &OsStr) -> Vec<serde_json::Value> {
    let (out, _) = ok(oslab_db(db)
        .args(["history", "--json", "-", "--limit", "1000"])
        .output()
        .unwrap());
    serde_json::from_str::<serde_json::Value>(&out)
        .unwrap()
        .as_array()
        .unwrap()
        .clone()
}

/// Eight machines, each running `oslab run null` three times, all at once into one
/// new database, while a reader lists the history: nothing is lost, every run has
/// its own id, and the reader only ever sees complete runs, or unfinished ones.
fn eight_machines_at_once(db: &OsStr) {
    const MACHINES: usize = 8;
    const RUNS: usize = 3;
    let done = std::sync::atomic::AtomicBool::new(false);
    std::thread::scope(|scope| {
        let writers: Vec<_> = (0..MACHINES)
            .map(|m| {
                scope.spawn(move || {
                    for _ in 0..RUNS {
                        let (_, err) = ok(oslab_db(db)
                            .env("OSLAB_MACHINE", format!("machine-{m}"))
                            .args(["run", "null", "--label", &format!("from {m}")])
                            .output()
                            .unwrap());
                        assert!(err.contains("kept as run"), "machine-{m}: {err}");
                    }
                })
            })
            .collect();
        let reader = scope.spawn(|| {
            let mut looks = 0;
            while !done.load(std::sync::atomic::Ordering::Relaxed) {
                let out = oslab_db(db)
                    .args(["history", "--json", "-"])
                    .output()
                    .unwrap();
                if !out.status.success() {
                    continue; // the database is not made yet
                }
                let runs: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
                for r in runs.as_array().unwrap() {
                    let n = r["results"].as_array().unwrap().len();
                    match r["state"].as_str().unwrap() {
                        "complete" => assert_eq!(n, 1, "{r}"),
                        "running" => assert!(n <= 1, "{r}"),
                        s => panic!("state {s}"),
                    }
                }
                looks += 1;
            }
            looks
        });
        for w in writers {
            w.join().unwrap();
        }
        done.store(true, std::sync::atomic::Ordering::Relaxed);
        reader.join().unwrap();
    });
    let runs = history(db);
    assert_eq!(runs.len(), MACHINES * RUNS);
    let mut ids: Vec<i64> = runs.iter().map(|r| r["id"].as_i64().unwrap()).collect();
    ids.sort();
    ids.dedup();
    assert_eq!(ids.len(), MACHINES * RUNS, "distinct run ids");
    for m in 0..MACHINES {
        let name = format!("machine-{m}");
        let mine: Vec<_> = runs.iter().filter(|r| r["machine"] == name).collect();
        assert_eq!(mine.len(), RUNS, "{name}");
        assert!(mine.iter().all(|r| r["state"] == "complete"
            && r["label"] == format!("from {m}")
            && r["results"][0][0] == "null"));
    }
    let (cmp, _) = ok(oslab_db(db)
        .args([
            "compare",
            "--machine",
            "machine-0",
            "--machine",
            "machine-7",
        ])
        .output()
        .unwrap());
    assert!(
        cmp.contains("machine machine-0") && cmp.contains("latency"),
        "{cmp}"
    );
}

#[test]
fn eight_machines_write_one_postgres_history_at_once() {
    if let Some(url) = fresh_database("machines") {
        eight_machines_at_once(OsStr::new(&url));
    }
}

#[test]
fn eight_machines_write_one_sqlite_history_at_once() {
    let dir = tempfile::tempdir().unwrap();
    eight_machines_at_once(dir.path().join("shared.db").as_os_str());
}

/// A URL of a server that is not there: a socket folder with no server in it.
fn unreachable_url(dir: &Path) -> String {
    let host = dir.display().to_string().replace('/', "%2F");
    format!("postgres://oslab:hunter2@{host}/lab")
}

/// The `oslab import FILE --db URL` command a not-stored run's message gives.
fn import_hint(stderr: &str) -> Vec<String> {
    let line = stderr
        .lines()
        .find(|l| l.contains("was not stored"))
        .unwrap_or_else(|| panic!("no sentence: {stderr}"));
    let cmd = line.split('`').nth(1).unwrap_or_else(|| panic!("{line}"));
    cmd.split(' ').map(String::from).collect()
}

#[test]
fn a_run_whose_database_is_unreachable_finishes_and_can_be_imported_later() {
    let Some(url) = fresh_database("unreachable") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let nowhere = unreachable_url(dir.path());
    let json = dir.path().join("r.json");
    let out = common::oslab()
        .env_remove("OSLAB_MACHINE")
        .args(["run", "null", "--db", &nowhere, "--json"])
        .arg(&json)
        .output()
        .unwrap();
    let (tables, err) = ok(out);
    assert!(tables.contains("== null"), "the run finished: {tables}");
    assert!(json.is_file(), "its JSON is written");
    assert!(!err.contains("hunter2"), "{err}");
    let hint = import_hint(&err);
    assert_eq!(hint[..3], ["oslab", "import", &json.display().to_string()]);
    assert_eq!(
        hint[3..5],
        ["--db".to_string(), nowhere.replace("hunter2", "***")]
    );

    // Without --json the results wait in the data folder.
    let data = dir.path().join("data");
    let (_, err) = ok(common::oslab()
        .env("XDG_DATA_HOME", &data)
        .env("OSLAB_MACHINE", "far-away")
        .args(["run", "null", "--db", &nowhere])
        .output()
        .unwrap());
    let hint = import_hint(&err);
    assert_eq!(hint[0], "OSLAB_MACHINE=far-away");
    let waiting = Path::new(&hint[3]);
    assert!(waiting.starts_with(data.join("oslab/unstored")), "{err}");

    // Imported once each, whatever the number of tries.
    for _ in 0..2 {
        ok(oslab_db(&url).arg("import").arg(&json).output().unwrap());
        ok(oslab_db(&url)
            .env("OSLAB_MACHINE", "far-away")
            .arg("import")
            .arg(waiting)
            .output()
            .unwrap());
    }
    let runs = history(OsStr::new(&url));
    assert_eq!(runs.len(), 2, "{runs:?}");
    assert_eq!(runs[0]["machine"], "far-away");
    assert!(runs.iter().all(|r| r["state"] == "complete"));
    assert!(
        runs.iter()
            .all(|r| !r["command"].as_str().unwrap().contains("hunter2")),
        "the stored command line hides the password"
    );
}

#[test]
fn an_sqlite_history_moves_to_postgres() {
    let Some(url) = fresh_database("moved") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("old.db");
    for label in ["one", "two"] {
        ok(oslab_db(&file)
            .args(["run", "null", "--label", label])
            .output()
            .unwrap());
    }
    let (_, err) = ok(oslab_db(&url).arg("import").arg(&file).output().unwrap());
    assert!(err.contains("2 run(s) stored"), "{err}");
    let (_, err) = ok(oslab_db(&url).arg("import").arg(&file).output().unwrap());
    assert!(
        err.contains("0 run(s) stored") && err.contains("2 were there already"),
        "{err}"
    );
    let strip = |runs: Vec<serde_json::Value>| -> Vec<serde_json::Value> {
        runs.into_iter()
            .map(|mut r| {
                r.as_object_mut().unwrap().remove("id");
                r
            })
            .collect()
    };
    assert_eq!(
        strip(history(OsStr::new(&url))),
        strip(history(file.as_os_str()))
    );
    let (moved, _) = ok(oslab_db(&url).args(["export"]).output().unwrap());
    let (kept, _) = ok(oslab_db(&file).args(["export"]).output().unwrap());
    let results = |text: &str| {
        let v: serde_json::Value = serde_json::from_str(text).unwrap();
        v["runs"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["results"].clone())
            .collect::<Vec<_>>()
    };
    assert_eq!(results(&moved), results(&kept), "every result as it was");
}

/// The server goes away in the middle of a run: the run measures on, and at the end
/// every result, those stored before and those after, is in the file it names.
#[test]
fn a_database_lost_midway_loses_no_result() {
    let server = match oslab_store::testing::PgServer::start() {
        Ok(s) => s,
        Err(why) => return eprintln!("skipped: no PostgreSQL server: {why}"),
    };
    let url = server.create_database("midway").unwrap();
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("r.json");
    // null finishes at once; cpu.ctxsw takes seconds: the server stops inside it.
    let child = oslab_db(&url)
        .args(["run", "null", "cpu.ctxsw", "--quick", "--json"])
        .arg(&json)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    let first_stored = || {
        let out = oslab_db(&url)
            .args(["history", "--json", "-"])
            .output()
            .unwrap();
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap_or_default();
        v[0]["results"].as_array().is_some_and(|r| !r.is_empty())
    };
    while !first_stored() {
        assert!(
            std::time::Instant::now() < deadline,
            "null was never stored"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    drop(server);
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr).to_string();
    assert!(out.status.success(), "{err}");
    assert!(err.contains("results are no longer kept"), "{err}");
    let hint = import_hint(&err);
    assert_eq!(hint[2], json.display().to_string());

    let Some(elsewhere) = fresh_database("midway_import") else {
        return;
    };
    ok(oslab_db(&elsewhere)
        .arg("import")
        .arg(&json)
        .output()
        .unwrap());
    let runs = history(OsStr::new(&elsewhere));
    assert_eq!(runs.len(), 1);
    let results: Vec<&str> = runs[0]["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r[0].as_str().unwrap())
        .collect();
    assert_eq!(results, ["null", "cpu.ctxsw"]);
}
