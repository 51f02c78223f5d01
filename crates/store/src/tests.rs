//! The store's suite, run against both databases (`tests::sqlite::*` and
//! `tests::postgres::*`: the same test bodies), then what only one of them has.

use super::*;
use std::path::Path;

fn fixture() -> ExperimentResult {
    let text = include_str!("../tests/fixtures/null-result.json");
    serde_json::from_str(text).unwrap()
}

fn meta(machine: &str) -> RunMeta {
    RunMeta {
        started_at: "2026-11-22T10:00:00Z".into(),
        machine: machine.into(),
        kernel: "6.18.0".into(),
        cpu_model: "Test CPU".into(),
        oslab_version: "test".into(),
        command: "oslab run null".into(),
        label: None,
    }
}

fn renamed(mut r: ExperimentResult, id: &str, median_shift: f64) -> ExperimentResult {
    r.experiment = id.into();
    for m in &mut r.measurements {
        if let Some(s) = m.summary.as_mut() {
            s.median += median_shift;
        }
    }
    r
}

/// A database for one test of the suite: an SQLite file in a folder that lives as
/// long as the test, or a new database on the test server.
struct Place {
    target: Target,
    _dir: Option<tempfile::TempDir>,
}

fn sqlite_place() -> Place {
    let dir = tempfile::tempdir().unwrap();
    Place {
        target: Target::File(dir.path().join("results.db")),
        _dir: Some(dir),
    }
}

/// The store makes no folder: the binary makes (and checks) the folders a
/// database lives in, since one made by path could be made through a link.
#[test]
fn a_database_whose_folder_is_missing_is_not_made() {
    let dir = tempfile::tempdir().unwrap();
    let target = Target::File(dir.path().join("sub/results.db"));
    let e = Store::open_or_create(&target).err().unwrap();
    assert!(e.to_string().contains("does not exist"), "{e}");
    assert!(!dir.path().join("sub").exists());
    assert!(matches!(
        Store::open_existing(&target).err().unwrap(),
        StoreError::Missing(_)
    ));
}

fn postgres_place() -> Option<Place> {
    Some(Place {
        target: Target::Postgres(testing::fresh_database("store")?),
        _dir: None,
    })
}

/// Each test of the suite twice: once on SQLite, once on PostgreSQL (skipped with
/// the reason where no server can be started).
macro_rules! suite {
    ($($name:ident),* $(,)?) => {
        mod sqlite {
            $(#[test] fn $name() { super::$name(&super::sqlite_place().target) })*
        }
        mod postgres {
            $(#[test] fn $name() {
                if let Some(p) = super::postgres_place() { super::$name(&p.target) }
            })*
        }
    };
}

suite!(
    a_run_round_trips_with_its_results_in_order,
    runs_are_listed_newest_first_and_filtered,
    a_finding_without_a_value_survives_the_round_trip,
    the_views_give_a_row_per_run_and_figure,
    an_import_stores_a_run_whole_and_once,
    concurrent_writers_lose_nothing,
    a_newer_schema_is_refused,
    migrating_step_by_step_gives_the_schema_of_a_new_database,
);

fn a_run_round_trips_with_its_results_in_order(t: &Target) {
    let mut s = Store::open_or_create(t).unwrap();
    assert_eq!(s.schema_version().unwrap(), migrate::latest());
    let a = renamed(fixture(), "null", 0.0);
    let b = renamed(fixture(), "other", 5.0);
    let run = s.begin_run(&meta("host-a")).unwrap();
    s.add_result(run, 0, &a).unwrap();
    s.add_result(run, 1, &b).unwrap();
    s.finish_run(run, "2026-11-22T10:01:00Z").unwrap();

    let (row, results) = s.run(run).unwrap().unwrap();
    assert_eq!(row.state, "complete");
    assert_eq!(row.finished_at.as_deref(), Some("2026-11-22T10:01:00Z"));
    assert_eq!(row.meta, meta("host-a"));
    assert_eq!(
        row.results,
        vec![
            ("null".to_string(), "completed".to_string()),
            ("other".to_string(), "completed".to_string())
        ]
    );
    assert_eq!(results, vec![a.clone(), b]);
    assert!(s.run(run + 100).unwrap().is_none());

    let rows = s
        .experiment_history(&RunFilter {
            experiment: Some("other".into()),
            ..Default::default()
        })
        .unwrap();
    assert_eq!(rows.len(), 1);
    let h = rows[0].headline.as_ref().unwrap();
    assert_eq!(h.name, a.measurements[0].name);
    assert_eq!(
        h.median,
        Some(a.measurements[0].summary.as_ref().unwrap().median + 5.0)
    );
    // Reopened, it is the same history.
    drop(s);
    let mut s = Store::open_existing(t).unwrap();
    assert_eq!(s.run(run).unwrap().unwrap().1[0], a);
}

fn runs_are_listed_newest_first_and_filtered(t: &Target) {
    let mut s = Store::open_or_create(t).unwrap();
    for (i, host) in ["a", "b", "a"].iter().enumerate() {
        let run = s.begin_run(&meta(host)).unwrap();
        let id = if i == 1 { "other" } else { "null" };
        s.add_result(run, 0, &renamed(fixture(), id, i as f64))
            .unwrap();
    }
    let all = s.runs(&RunFilter::default()).unwrap();
    assert_eq!(all.iter().map(|r| r.id).collect::<Vec<_>>(), vec![3, 2, 1]);
    assert!(all.iter().all(|r| r.state == "running"), "never finished");
    let on_a = s
        .runs(&RunFilter {
            machine: Some("a".into()),
            limit: Some(1),
            ..Default::default()
        })
        .unwrap();
    assert_eq!(on_a.iter().map(|r| r.id).collect::<Vec<_>>(), vec![3]);
    let other = s
        .runs(&RunFilter {
            experiment: Some("other".into()),
            ..Default::default()
        })
        .unwrap();
    assert_eq!(other.iter().map(|r| r.id).collect::<Vec<_>>(), vec![2]);
    assert_eq!(s.machines().unwrap(), vec!["a", "b"]);

    // The newest result per experiment on a machine: run 3's, not run 1's.
    let latest = s.latest_on_machine("a").unwrap();
    assert_eq!(latest.len(), 1);
    let base = fixture().measurements[0].summary.clone().unwrap().median;
    assert_eq!(
        latest[0].measurements[0].summary.as_ref().unwrap().median,
        base + 2.0
    );
    assert!(s.latest_on_machine("nowhere").unwrap().is_empty());

    let exported = s.export(&RunFilter::default()).unwrap();
    assert_eq!(
        exported.iter().map(|(r, _)| r.id).collect::<Vec<_>>(),
        vec![1, 2, 3]
    );
}

fn a_finding_without_a_value_survives_the_round_trip(t: &Target) {
    // mem.latency reports "no edge found" as a NaN finding, which JSON stores as null;
    // reading it back failed and made the whole database look damaged.
    let mut s = Store::open_or_create(t).unwrap();
    let mut r = fixture();
    r.findings[0].value = f64::NAN;
    let run = s.begin_run(&meta("a")).unwrap();
    s.add_result(run, 0, &r).unwrap();
    let (_, back) = s.run(run).unwrap().unwrap();
    assert!(back[0].findings[0].value.is_nan());
    assert_eq!(s.latest_on_machine("a").unwrap().len(), 1);
}

/// A query of the views as a dashboard would make it, rows as text.
fn view_rows(s: &mut Store, sql: &str) -> Vec<Vec<String>> {
    let rows = s.sql(|db| db.rows(sql, &[])).unwrap();
    rows.iter()
        .map(|r| {
            r.0.iter()
                .map(|v| match v {
                    backend::Value::Null => "NULL".to_string(),
                    backend::Value::Int(i) => i.to_string(),
                    backend::Value::Real(f) => f.to_string(),
                    backend::Value::Text(t) => t.clone(),
                })
                .collect()
        })
        .collect()
}

fn the_views_give_a_row_per_run_and_figure(t: &Target) {
    let mut s = Store::open_or_create(t).unwrap();
    let mut r = fixture();
    r.findings.push(r.findings[0].clone().within(1.5, 2.5));
    r.findings[1].name = "edge".into();
    for host in ["a", "b"] {
        let run = s.begin_run(&meta(host)).unwrap();
        s.add_result(run, 0, &r).unwrap();
        s.finish_run(run, "2026-11-22T10:01:00Z").unwrap();
    }
    let m = &r.measurements[0];
    let rows = view_rows(
        &mut s,
        &format!(
            "SELECT machine, experiment, measurement, unit, median, run_state FROM run_measurements
             WHERE measurement = '{}' ORDER BY machine",
            m.name
        ),
    );
    let median = m.summary.as_ref().unwrap().median.to_string();
    let row = |host: &str| {
        vec![
            host.to_string(),
            "null".into(),
            m.name.clone(),
            m.unit.clone(),
            median.clone(),
            "complete".into(),
        ]
    };
    assert_eq!(rows, vec![row("a"), row("b")]);

    let f = &r.findings[0];
    let rows = view_rows(
        &mut s,
        "SELECT machine, finding, value, unit FROM run_findings WHERE position = 0 ORDER BY machine",
    );
    assert_eq!(rows.len(), 2);
    assert_eq!(rows[0][..2], ["a".to_string(), f.name.clone()]);
    assert_eq!(rows[0][3], f.unit);
    // A finding's range is there where it has one, NULL where not.
    let ranges = view_rows(
        &mut s,
        "SELECT finding, range_low, range_high FROM run_findings WHERE machine = 'a' ORDER BY position",
    );
    assert_eq!(
        ranges,
        vec![
            vec![f.name.clone(), "NULL".into(), "NULL".into()],
            vec!["edge".into(), "1.5".into(), "2.5".into()],
        ]
    );
    // The time column is the result's start, as the database's own time type.
    let times = view_rows(
        &mut s,
        "SELECT count(*) FROM run_findings WHERE time >= CAST('2000-01-01T00:00:00Z' AS {time})",
    );
    assert_eq!(times, vec![vec!["4".to_string()]]);
}

fn an_import_stores_a_run_whole_and_once(t: &Target) {
    let mut s = Store::open_or_create(t).unwrap();
    let results = vec![
        renamed(fixture(), "null", 0.0),
        renamed(fixture(), "x", 1.0),
    ];
    let m = meta("far-away");
    let first = s
        .import_run(&m, "complete", Some("2026-11-22T10:02:00Z"), &results)
        .unwrap();
    let Imported::Added(id) = first else {
        panic!("{first:?}")
    };
    assert_eq!(
        s.import_run(&m, "complete", None, &results).unwrap(),
        Imported::AlreadyThere(id)
    );
    let (row, back) = s.run(id).unwrap().unwrap();
    assert_eq!((row.state.as_str(), back), ("complete", results));
    assert_eq!(s.runs(&RunFilter::default()).unwrap().len(), 1);
}

/// Eight writers on eight "machines" at once, each with its own connection, on a
/// database none of them has opened before: every run and result is kept, run ids
/// are distinct, and a reader meanwhile sees only whole results.
fn concurrent_writers_lose_nothing(t: &Target) {
    const WRITERS: usize = 8;
    const RUNS: usize = 3;
    let done = std::sync::atomic::AtomicBool::new(false);
    std::thread::scope(|scope| {
        let writers: Vec<_> = (0..WRITERS)
            .map(|w| {
                scope.spawn(move || {
                    let mut s = Store::open_or_create(t).unwrap();
                    let mut ids = Vec::new();
                    for _ in 0..RUNS {
                        let run = s.begin_run(&meta(&format!("m{w}"))).unwrap();
                        for p in 0..2 {
                            s.add_result(run, p, &fixture()).unwrap();
                        }
                        s.finish_run(run, "2026-11-22T10:01:00Z").unwrap();
                        ids.push(run);
                    }
                    ids
                })
            })
            .collect();
        let reader = scope.spawn(|| {
            let mut seen = 0;
            while !done.load(std::sync::atomic::Ordering::Relaxed) {
                let Ok(mut s) = Store::open_existing(t) else {
                    std::thread::sleep(std::time::Duration::from_millis(5));
                    continue; // not made yet
                };
                for (run, results) in s.export(&RunFilter::default()).unwrap() {
                    if run.state == "complete" {
                        assert_eq!(results.len(), 2, "a complete run has every result");
                    }
                    assert!(results.iter().all(|r| *r == fixture()), "whole results");
                    seen += 1;
                }
            }
            seen
        });
        let mut ids: Vec<i64> = writers
            .into_iter()
            .flat_map(|w| w.join().unwrap())
            .collect();
        done.store(true, std::sync::atomic::Ordering::Relaxed);
        reader.join().unwrap();
        ids.sort();
        ids.dedup();
        assert_eq!(ids.len(), WRITERS * RUNS, "distinct run ids");
    });
    let mut s = Store::open_existing(t).unwrap();
    let runs = s.runs(&RunFilter::default()).unwrap();
    assert_eq!(runs.len(), WRITERS * RUNS);
    assert!(
        runs.iter()
            .all(|r| r.state == "complete" && r.results.len() == 2)
    );
    assert_eq!(s.machines().unwrap().len(), WRITERS);
}

fn a_newer_schema_is_refused(t: &Target) {
    let mut s = Store::open_or_create(t).unwrap();
    s.sql(|db| db.transaction(|db| db.set_schema_version(99)))
        .unwrap();
    drop(s);
    let m = message(Store::open_existing(t).err().unwrap());
    assert!(m.contains("newer oslab") && m.contains("99"), "{m}");
}

/// The schema as the database describes it: tables, columns with their types,
/// indexes and views.
fn schema(db: &mut dyn Backend) -> Vec<String> {
    let sql = match db.dialect() {
        backend::Dialect::Sqlite => {
            "SELECT sql FROM sqlite_master WHERE sql IS NOT NULL ORDER BY name"
        }
        backend::Dialect::Postgres => {
            "SELECT table_name || '.' || column_name || ' ' || data_type || ' ' ||
                    is_nullable || ' ' || coalesce(column_default, '')
             FROM information_schema.columns WHERE table_schema = current_schema()
             UNION ALL SELECT indexdef FROM pg_indexes WHERE schemaname = current_schema()
             UNION ALL SELECT viewname || ': ' || definition FROM pg_views
                 WHERE schemaname = current_schema()
             ORDER BY 1"
        }
    };
    db.rows(sql, &[])
        .unwrap()
        .iter()
        .map(|r| r.text(0).unwrap())
        .collect()
}

fn raw_backend(t: &Target) -> Box<dyn Backend> {
    match t {
        Target::File(p) => Box::new(crate::sqlite::open(p, true).unwrap()),
        Target::Postgres(url) => Box::new(crate::postgres::connect(url, "test").unwrap()),
    }
}

/// PostgreSQL: a read-only dashboard user granted SELECT on a view keeps it when a
/// migration gives the view more columns (a dropped and re-made view would lose
/// the grant, and the dashboard would get "permission denied").
#[test]
fn a_dashboard_users_grant_survives_a_migration_of_its_view() {
    let Some(url) = testing::fresh_database("grants") else {
        return;
    };
    let mut db = raw_backend(&Target::Postgres(url));
    migrate::migrate_to(db.as_mut(), 3).unwrap();
    let role = format!("oslab_reader_{}", std::process::id());
    db.batch(&format!(
        "CREATE ROLE {role}; GRANT SELECT ON run_findings TO {role}"
    ))
    .unwrap();
    migrate::migrate_to(db.as_mut(), migrate::latest()).unwrap();
    let can = db
        .rows(
            &format!("SELECT has_table_privilege('{role}', 'run_findings', 'SELECT')::text"),
            &[],
        )
        .unwrap()[0]
        .text(0)
        .unwrap();
    db.batch(&format!("DROP OWNED BY {role}; DROP ROLE {role}"))
        .unwrap();
    assert_eq!(can, "true");
}

fn migrating_step_by_step_gives_the_schema_of_a_new_database(t: &Target) {
    let mut stepwise = raw_backend(t);
    for m in migrate::MIGRATIONS {
        assert_eq!(
            migrate::migrate_to(stepwise.as_mut(), m.version).unwrap(),
            m.version
        );
    }
    let stepwise = schema(stepwise.as_mut());
    let direct_target = match t {
        Target::File(p) => Target::File(p.with_extension("direct.db")),
        Target::Postgres(_) => Target::Postgres(testing::fresh_database("direct").unwrap()),
    };
    let mut direct = raw_backend(&direct_target);
    migrate::migrate_to(direct.as_mut(), migrate::latest()).unwrap();
    assert_eq!(stepwise, schema(direct.as_mut()));
    let versions: Vec<u32> = migrate::MIGRATIONS.iter().map(|m| m.version).collect();
    assert_eq!(versions, (1..=migrate::latest()).collect::<Vec<_>>());
}

fn message(e: StoreError) -> String {
    let m = e.to_string();
    assert!(!m.contains('\n'), "one sentence: {m}");
    m
}

// SQLite only: the file itself.

#[test]
fn a_version_1_database_is_migrated_and_backfilled() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("old.db");
    {
        let mut db = crate::sqlite::open(&path, true).unwrap();
        assert_eq!(migrate::migrate_to(&mut db, 1).unwrap(), 1);
    }
    let conn = rusqlite::Connection::open(&path).unwrap();
    conn.execute(
        "INSERT INTO runs (started_at, state, machine, kernel, oslab_version, command)
         VALUES ('2026-01-01T00:00:00Z', 'complete', 'old-host', '6.1', '0.0.1', 'oslab run null')",
        [],
    )
    .unwrap();
    conn.execute(
        "INSERT INTO results (run_id, position, experiment, mode, status, started_at, result_json)
         VALUES (1, 0, 'null', 'quick', 'completed', '2026-01-01T00:00:00Z', ?1)",
        [ranged_fixture_json()],
    )
    .unwrap();
    drop(conn);
    let mut s = Store::open_existing(&Target::File(path)).unwrap();
    assert_eq!(s.schema_version().unwrap(), migrate::latest());
    let rows = s.experiment_history(&RunFilter::default()).unwrap();
    let h = rows[0].headline.as_ref().expect("measurements backfilled");
    let m = &fixture().measurements[0];
    assert_eq!(h.name, m.name);
    assert_eq!(h.median, Some(m.summary.as_ref().unwrap().median));
    let run = &s.runs(&RunFilter::default()).unwrap()[0];
    assert_eq!(run.meta.cpu_model, fixture().environment.machine.cpu.model);
    let findings = view_rows(&mut s, "SELECT finding FROM run_findings ORDER BY position");
    let names: Vec<String> = fixture().findings.iter().map(|f| f.name.clone()).collect();
    assert_eq!(findings.concat(), names, "findings backfilled");
    let range = view_rows(&mut s, "SELECT range_low, range_high FROM run_findings");
    assert_eq!(
        range,
        vec![vec!["1.5".to_string(), "2.5".into()]],
        "ranges backfilled"
    );
}

/// The fixture's JSON with a range on its first finding, as a stored result.
fn ranged_fixture_json() -> String {
    let mut v: serde_json::Value =
        serde_json::from_str(include_str!("../tests/fixtures/null-result.json")).unwrap();
    v["findings"][0]["range"] = serde_json::json!([1.5, 2.5]);
    v.to_string()
}

fn file(p: &Path) -> Target {
    Target::File(p.to_path_buf())
}

#[test]
fn foreign_damaged_and_missing_files_are_refused_with_a_sentence() {
    let dir = tempfile::tempdir().unwrap();

    let missing = dir.path().join("nope.db");
    let m = message(Store::open_existing(&file(&missing)).err().unwrap());
    assert!(m.contains("does not exist"), "{m}");

    let text = dir.path().join("notes.txt");
    let words = "this is a text file, long enough to fill a header. ".repeat(20);
    std::fs::write(&text, &words).unwrap();
    let m = message(Store::open_existing(&file(&text)).err().unwrap());
    assert!(m.contains("not an SQLite database"), "{m}");
    assert_eq!(
        std::fs::read_to_string(&text).unwrap(),
        words,
        "left untouched"
    );

    let foreign = dir.path().join("foreign.db");
    rusqlite::Connection::open(&foreign)
        .unwrap()
        .execute_batch("CREATE TABLE contacts (name TEXT); INSERT INTO contacts VALUES ('x');")
        .unwrap();
    let m = message(Store::open_or_create(&file(&foreign)).err().unwrap());
    assert!(m.contains("another program"), "{m}");

    let m = message(Store::open_or_create(&file(dir.path())).err().unwrap());
    assert!(m.contains("directory"), "{m}");
}

#[test]
fn a_damaged_database_gives_a_sentence_not_a_panic() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("r.db");
    {
        let mut s = Store::open_or_create(&file(&path)).unwrap();
        let run = s.begin_run(&meta("a")).unwrap();
        for i in 0..20 {
            s.add_result(run, i, &fixture()).unwrap();
        }
        // Fold the write-ahead log into the main file so the damage below hits data.
        s.sql(|db| db.rows("PRAGMA wal_checkpoint(TRUNCATE)", &[]))
            .unwrap();
    }
    let mut bytes = std::fs::read(&path).unwrap();
    assert!(bytes.len() > 8 * 4096, "{} bytes", bytes.len());
    let end = bytes.len() - 4096;
    for b in &mut bytes[4096..end] {
        *b = 0xA5;
    }
    std::fs::write(&path, &bytes).unwrap();
    let outcome = Store::open_existing(&file(&path)).and_then(|mut s| {
        s.runs(&RunFilter::default())?;
        s.export(&RunFilter::default())
    });
    let m = message(outcome.expect_err("damage is noticed"));
    assert!(m.contains("damaged") || m.contains("not an SQLite"), "{m}");
}

// PostgreSQL only: the server and its database.

#[test]
fn a_database_of_another_program_or_an_empty_one_is_refused() {
    let Some(url) = testing::fresh_database("foreign") else {
        return;
    };
    let t = Target::Postgres(url.clone());
    let m = message(Store::open_existing(&t).err().unwrap());
    assert!(m.contains("holds no oslab results yet"), "{m}");
    let server = testing::shared().unwrap();
    let dbname = url.rsplit('/').next().unwrap();
    server
        .connect(dbname)
        .unwrap()
        .batch_execute("CREATE TABLE contacts (name TEXT)")
        .unwrap();
    let m = message(Store::open_or_create(&t).err().unwrap());
    assert!(m.contains("another program"), "{m}");
}

#[test]
fn an_unreachable_server_is_said_so_and_a_password_never_shown() {
    let dir = tempfile::tempdir().unwrap();
    let host = dir.path().display().to_string().replace('/', "%2F");
    let t = Target::Postgres(format!("postgres://oslab:hunter2@{host}/nothing"));
    let e = Store::open_or_create(&t).err().unwrap();
    assert!(matches!(e, StoreError::Unreachable { .. }), "{e:?}");
    let m = message(e);
    assert!(m.contains("cannot reach") && !m.contains("hunter2"), "{m}");

    let t = Target::Postgres("postgres://oslab@localhost/x?sslmode=require".into());
    let m = message(Store::open_or_create(&t).err().unwrap());
    assert!(m.contains("without TLS"), "{m}");
    let t = Target::Postgres("postgres://oslab@localhost:notaport/x".into());
    let m = message(Store::open_or_create(&t).err().unwrap());
    assert!(m.contains("not a database URL"), "{m}");
}

/// Every query of the example Grafana dashboard runs on the views, with the
/// dashboard's variables and time filter filled in as Grafana would, and finds the
/// run stored.
#[test]
fn the_example_dashboard_queries_the_views() {
    let Some(p) = postgres_place() else {
        return;
    };
    let mut s = Store::open_or_create(&p.target).unwrap();
    let r = fixture();
    let run = s.begin_run(&meta("a")).unwrap();
    s.add_result(run, 0, &r).unwrap();
    s.finish_run(run, "2026-11-22T10:01:00Z").unwrap();

    let dashboard: serde_json::Value = serde_json::from_str(include_str!(
        "../../../dashboards/oslab-history-postgres.json"
    ))
    .unwrap();
    let fill = |sql: &str| {
        sql.replace(
            "$__timeFilter(time)",
            "time BETWEEN '2000-01-01T00:00:00Z' AND '2100-01-01T00:00:00Z'",
        )
        .replace("$experiment", &r.experiment)
        .replace("$measurement", &r.measurements[0].name)
        .replace("$machine", "'a'")
    };
    let variables = dashboard["templating"]["list"].as_array().unwrap();
    let panels = dashboard["panels"].as_array().unwrap();
    let queries: Vec<&str> = variables
        .iter()
        .map(|v| v["query"].as_str().unwrap())
        .chain(panels.iter().flat_map(|p| {
            p["targets"]
                .as_array()
                .unwrap()
                .iter()
                .map(|t| t["rawSql"].as_str().unwrap())
        }))
        .collect();
    assert_eq!(queries.len(), variables.len() + panels.len());
    for q in queries {
        let rows = s
            .sql(|db| db.rows(&fill(q), &[]))
            .unwrap_or_else(|e| panic!("{q}: {e}"));
        assert!(!rows.is_empty(), "no row from {q}");
    }
}

/// Eight connections opening one new file at the same instant, many times over:
/// each makes or finds the history and begins its run. Turning the new file to WAL
/// and telling oslab's tables from a foreign program's both race with the first
/// migration; neither may cost a run.
#[test]
fn many_openers_of_one_new_sqlite_file_all_begin_their_runs() {
    const OPENERS: usize = 8;
    for round in 0..100 {
        let place = sqlite_place();
        let t = &place.target;
        let start = std::sync::Barrier::new(OPENERS);
        let failed: Vec<String> = std::thread::scope(|scope| {
            let openers: Vec<_> = (0..OPENERS)
                .map(|_| {
                    scope.spawn(|| {
                        start.wait();
                        Store::open_or_create(t)
                            .and_then(|mut s| s.begin_run(&meta("m")))
                            .err()
                            .map(|e| e.to_string())
                    })
                })
                .collect();
            openers
                .into_iter()
                .filter_map(|o| o.join().unwrap())
                .collect()
        });
        assert!(failed.is_empty(), "round {round}: {failed:?}");
        let runs = Store::open_existing(t)
            .unwrap()
            .runs(&RunFilter::default())
            .unwrap();
        assert_eq!(runs.len(), OPENERS, "round {round}");
    }
}
