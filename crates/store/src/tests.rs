use super::*;

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

#[test]
fn a_run_round_trips_with_its_results_in_order() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("sub/results.db");
    let mut s = Store::open_or_create(&path).unwrap();
    assert_eq!(s.schema_version().unwrap(), migrate::latest());
    let a = renamed(fixture(), "null", 0.0);
    let b = renamed(fixture(), "other", 5.0);
    let run = s.begin_run(&meta("host-a")).unwrap();
    s.add_result(run, 0, &a).unwrap();
    s.add_result(run, 1, &b).unwrap();
    s.finish_run(run, "2026-11-22T10:01:00Z").unwrap();

    let (row, results) = s.run(run).unwrap().unwrap();
    assert_eq!(row.state, "complete");
    assert_eq!(row.meta.machine, "host-a");
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
}

#[test]
fn runs_are_listed_newest_first_and_filtered() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = Store::open_or_create(&dir.path().join("r.db")).unwrap();
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

    let exported = s.export(&RunFilter::default()).unwrap();
    assert_eq!(
        exported.iter().map(|(r, _)| r.id).collect::<Vec<_>>(),
        vec![1, 2, 3]
    );
}

#[test]
fn a_version_1_database_is_migrated_and_backfilled() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("old.db");
    {
        let mut conn = Connection::open(&path).unwrap();
        assert_eq!(migrate::migrate_to(&mut conn, 1).unwrap(), 1);
        conn.execute(
            "INSERT INTO runs (started_at, state, machine, kernel, oslab_version, command)
             VALUES ('2026-01-01T00:00:00Z', 'complete', 'old-host', '6.1', '0.0.1', 'oslab run null')",
            [],
        )
        .unwrap();
        conn.execute(
            "INSERT INTO results (run_id, position, experiment, mode, status, started_at, result_json)
             VALUES (1, 0, 'null', 'quick', 'completed', '2026-01-01T00:00:00Z', ?1)",
            [include_str!("../tests/fixtures/null-result.json")],
        )
        .unwrap();
    }
    let s = Store::open_existing(&path).unwrap();
    assert_eq!(s.schema_version().unwrap(), 2);
    let rows = s.experiment_history(&RunFilter::default()).unwrap();
    let h = rows[0].headline.as_ref().expect("measurements backfilled");
    let m = &fixture().measurements[0];
    assert_eq!(h.name, m.name);
    assert_eq!(h.median, Some(m.summary.as_ref().unwrap().median));
    let run = &s.runs(&RunFilter::default()).unwrap()[0];
    assert_eq!(run.meta.cpu_model, fixture().environment.machine.cpu.model);
}

#[test]
fn migrating_step_by_step_gives_the_schema_of_a_new_database() {
    let schema = |c: &Connection| -> Vec<String> {
        c.prepare("SELECT sql FROM sqlite_master WHERE sql IS NOT NULL ORDER BY name")
            .unwrap()
            .query_map([], |r| r.get(0))
            .unwrap()
            .collect::<std::result::Result<_, _>>()
            .unwrap()
    };
    let mut stepwise = Connection::open_in_memory().unwrap();
    for m in migrate::MIGRATIONS {
        assert_eq!(
            migrate::migrate_to(&mut stepwise, m.version).unwrap(),
            m.version
        );
    }
    let mut direct = Connection::open_in_memory().unwrap();
    migrate::migrate_to(&mut direct, migrate::latest()).unwrap();
    assert_eq!(schema(&stepwise), schema(&direct));
    let versions: Vec<u32> = migrate::MIGRATIONS.iter().map(|m| m.version).collect();
    assert_eq!(versions, (1..=migrate::latest()).collect::<Vec<_>>());
}

fn message(e: StoreError) -> String {
    let m = e.to_string();
    assert!(!m.contains('\n'), "one sentence: {m}");
    m
}

#[test]
fn foreign_damaged_newer_and_missing_files_are_refused_with_a_sentence() {
    let dir = tempfile::tempdir().unwrap();

    let missing = dir.path().join("nope.db");
    let m = message(Store::open_existing(&missing).err().unwrap());
    assert!(m.contains("does not exist"), "{m}");

    let text = dir.path().join("notes.txt");
    let words = "this is a text file, long enough to fill a header. ".repeat(20);
    std::fs::write(&text, &words).unwrap();
    let m = message(Store::open_existing(&text).err().unwrap());
    assert!(m.contains("not an SQLite database"), "{m}");
    assert_eq!(
        std::fs::read_to_string(&text).unwrap(),
        words,
        "left untouched"
    );

    let foreign = dir.path().join("foreign.db");
    Connection::open(&foreign)
        .unwrap()
        .execute_batch("CREATE TABLE contacts (name TEXT); INSERT INTO contacts VALUES ('x');")
        .unwrap();
    let m = message(Store::open_or_create(&foreign).err().unwrap());
    assert!(m.contains("another program"), "{m}");

    let newer = dir.path().join("newer.db");
    drop(Store::open_or_create(&newer).unwrap());
    Connection::open(&newer)
        .unwrap()
        .pragma_update(None, "user_version", 99)
        .unwrap();
    let m = message(Store::open_existing(&newer).err().unwrap());
    assert!(m.contains("newer oslab") && m.contains("99"), "{m}");

    let m = message(Store::open_or_create(dir.path()).err().unwrap());
    assert!(m.contains("directory"), "{m}");
}

#[test]
fn a_damaged_database_gives_a_sentence_not_a_panic() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("r.db");
    {
        let mut s = Store::open_or_create(&path).unwrap();
        let run = s.begin_run(&meta("a")).unwrap();
        for i in 0..20 {
            s.add_result(run, i, &fixture()).unwrap();
        }
        // Fold the write-ahead log into the main file so the damage below hits data.
        s.conn
            .query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()))
            .unwrap();
    }
    let mut bytes = std::fs::read(&path).unwrap();
    assert!(bytes.len() > 8 * 4096, "{} bytes", bytes.len());
    let end = bytes.len() - 4096;
    for b in &mut bytes[4096..end] {
        *b = 0xA5;
    }
    std::fs::write(&path, &bytes).unwrap();
    let outcome = Store::open_existing(&path).and_then(|s| {
        s.runs(&RunFilter::default())?;
        s.export(&RunFilter::default())
    });
    let m = message(outcome.expect_err("damage is noticed"));
    assert!(m.contains("damaged") || m.contains("not an SQLite"), "{m}");
}

#[test]
fn a_finding_without_a_value_survives_the_round_trip() {
    // mem.latency reports "no edge found" as a NaN finding, which JSON stores as null;
    // reading it back failed and made the whole database look damaged.
    let dir = tempfile::tempdir().unwrap();
    let mut s = Store::open_or_create(&dir.path().join("r.db")).unwrap();
    let mut r = fixture();
    r.findings[0].value = f64::NAN;
    let run = s.begin_run(&meta("a")).unwrap();
    s.add_result(run, 0, &r).unwrap();
    let (_, back) = s.run(run).unwrap().unwrap();
    assert!(back[0].findings[0].value.is_nan());
    assert_eq!(s.latest_on_machine("a").unwrap().len(), 1);
}
