//! `oslab restore` and the pending-journal line of `info` on journals a test
//! writes: unreadable lines, a half-built testbed, a huge command name.

mod common;

use assert_cmd::Command;
use predicates::prelude::*;

/// A journal header of a process that is gone (pid 1 with an impossible start time).
fn dead_header(command: &str) -> String {
    serde_json::json!({
        "oslab_journal": 1, "pid": 1, "start_time": u64::MAX, "command": command
    })
    .to_string()
}

fn remove_entry(seq: u64, path: &std::path::Path) -> String {
    serde_json::json!({
        "seq": seq, "description": format!("made {seq}"),
        "undo": {"kind": "remove_path", "path": path}
    })
    .to_string()
}

fn oslab(journals: &std::path::Path) -> Command {
    let mut c = Command::cargo_bin("oslab").unwrap();
    c.env("OSLAB_DB", common::test_db())
        .env("OSLAB_JOURNAL_DIR", journals);
    c
}

const PENDING: &str = "an interrupted oslab run left changes";

/// Regression (issue 27, item 3): a line of an unknown kind in the middle made
/// `restore` undo nothing after it and delete the file.
#[test]
fn restore_undoes_around_an_unreadable_line_names_it_and_keeps_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let journals = dir.path().join("j");
    std::fs::create_dir(&journals).unwrap();
    let made: Vec<_> = (1..=3)
        .map(|i| {
            let p = dir.path().join(format!("made-{i}"));
            std::fs::write(&p, "x").unwrap();
            p
        })
        .collect();
    let bad = r#"{"seq":9,"description":"?","undo":{"kind":"frobnicate"}}"#;
    let jp = journals.join("journal-1.jsonl");
    std::fs::write(
        &jp,
        format!(
            "{}\n{}\n{bad}\n{}\n{}\n",
            dead_header("oslab run x"),
            remove_entry(1, &made[0]),
            remove_entry(2, &made[1]),
            remove_entry(3, &made[2])
        ),
    )
    .unwrap();
    oslab(&journals).arg("restore").assert().code(1).stdout(
        predicate::str::contains("line 3")
            .and(predicate::str::contains("frobnicate"))
            .and(predicate::str::contains("undone: made 3"))
            .and(predicate::str::contains("undone: made 1")),
    );
    assert!(
        made.iter().all(|p| !p.exists()),
        "every readable entry undone"
    );
    let kept = std::fs::read_to_string(&jp).unwrap();
    assert!(kept.contains("frobnicate"), "{kept}");
    assert!(
        !kept.contains("remove_path"),
        "undone entries are not kept: {kept}"
    );
    // still there, still named: the user has to look at it
    oslab(&journals)
        .arg("info")
        .assert()
        .success()
        .stderr(predicate::str::contains(PENDING));
    oslab(&journals).arg("restore").assert().code(1);
}

/// Issue 27, item 6: a testbed whose `up` was killed half way is flagged; one
/// that was built (and marked complete) is not, although its creator has exited.
#[test]
fn a_half_built_testbed_is_flagged_and_a_complete_one_is_not() {
    let dir = tempfile::tempdir().unwrap();
    let journals = dir.path().join("j");
    std::fs::create_dir(&journals).unwrap();
    let loop_file = dir.path().join("image");
    std::fs::write(&loop_file, "x").unwrap();
    let jp = journals.join("journal-testbed.jsonl");
    let half = format!(
        "{}\n{}\n",
        dead_header("oslab testbed up"),
        remove_entry(1, &loop_file)
    );
    std::fs::write(&jp, &half).unwrap();
    oslab(&journals)
        .arg("info")
        .assert()
        .success()
        .stderr(predicate::str::contains(PENDING));
    oslab(&journals)
        .arg("restore")
        .assert()
        .success()
        .stdout(predicate::str::contains("undone: made 1"));
    assert!(!loop_file.exists() && !jp.exists());

    std::fs::write(&jp, format!("{half}{{\"mark\":\"complete\"}}\n")).unwrap();
    oslab(&journals)
        .arg("info")
        .assert()
        .success()
        .stderr(predicate::str::contains(PENDING).not());
    // a complete testbed is still taken down by restore, as `testbed up` says
    oslab(&journals).arg("restore").assert().success();
    assert!(!jp.exists());
}

/// Issue 27, item 6: restore echoed a 5 MB command name in full.
#[test]
fn restore_prints_a_bounded_command() {
    let dir = tempfile::tempdir().unwrap();
    let journals = dir.path().join("j");
    std::fs::create_dir(&journals).unwrap();
    let long = format!("oslab run {}", "x".repeat(5 << 20));
    std::fs::write(
        journals.join("journal-1.jsonl"),
        format!("{}\n", dead_header(&long)),
    )
    .unwrap();
    let out = oslab(&journals).arg("restore").output().unwrap();
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.len() < 1000, "{} bytes printed", text.len());
    assert!(
        text.contains(&format!("({} characters)", long.len())),
        "{text}"
    );
}
