//! Unit tests of the journal.

use super::undo::apply_undo;
use super::*;
use crate::fsread::Root;

/// The header and entries of the journal at `path`.
pub(super) fn read_journal(path: &Path) -> Result<(Header, Vec<Entry>), String> {
    file::read(path, process::euid()).map(|c| (c.header.clone(), c.entries()))
}

#[test]
fn a_cgroup_undo_removes_its_directory_and_tolerates_it_gone() {
    let dir = tempfile::tempdir().unwrap();
    let cg = dir.path().join("oslab-wcall-1");
    std::fs::create_dir(&cg).unwrap();
    let undo = Undo::RemoveCgroup {
        path: cg.clone(),
        parent: dir.path().to_path_buf(),
    };
    apply_undo(&undo).unwrap();
    assert!(!cg.exists());
    apply_undo(&undo).unwrap();
    // The entry's JSON is stable for `oslab restore` of older journals.
    let json = serde_json::to_string(&undo).unwrap();
    assert!(json.contains("\"kind\":\"remove_cgroup\""), "{json}");
}

#[test]
fn a_private_record_takes_no_machine_wide_lock() {
    let dir = tempfile::tempdir().unwrap();
    let mut j = Journal::new(dir.path());
    j.record_private("private", Undo::Nothing).unwrap();
    assert!(j.lock.is_none());
    j.record("shared", Undo::Nothing).unwrap();
    assert!(j.lock.is_some());
    j.undo_all();
}

#[test]
fn undo_runs_newest_first_and_removes_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let target = dir.path().join("knob");
    std::fs::write(&target, "10\n").unwrap();
    let mut j = Journal::new(dir.path());
    assert!(!j.path().exists(), "no file before the first change");
    j.write_file(&target, "20").unwrap();
    j.write_file(&target, "30").unwrap();
    assert_eq!(std::fs::read_to_string(&target).unwrap(), "30");
    assert!(j.path().exists());
    let out = j.undo_all();
    assert_eq!(out.len(), 2);
    assert!(out[0].description.contains("'30'"));
    assert_eq!(std::fs::read_to_string(&target).unwrap(), "10");
    assert!(!j.path().exists());
}

#[test]
fn restore_undoes_a_dead_process_journal() {
    let dir = tempfile::tempdir().unwrap();
    let target = dir.path().join("knob");
    let scratch = dir.path().join("scratch");
    std::fs::create_dir(&scratch).unwrap();
    std::fs::write(scratch.join("f"), "x").unwrap();
    std::fs::write(&target, "new").unwrap();
    // A journal as a killed process (pid 1 with an impossible start time) left it.
    let header =
        r#"{"oslab_journal":1,"pid":1,"start_time":18446744073709551615,"command":"oslab run x"}"#;
    let e1 = serde_json::to_string(&Entry {
        seq: 1,
        description: "scratch".into(),
        undo: Undo::RemovePath {
            path: scratch.clone(),
        },
    })
    .unwrap();
    let e2 = serde_json::to_string(&Entry {
        seq: 2,
        description: "knob".into(),
        undo: Undo::WriteFile {
            path: target.clone(),
            contents: "old".into(),
        },
    })
    .unwrap();
    let jp = dir.path().join("journal-1.jsonl");
    std::fs::write(&jp, format!("{header}\n{e1}\n{e2}\n{{\"seq\":3,\"desc")).unwrap();
    let report = restore_orphans(dir.path(), false);
    assert_eq!(report.restored.len(), 1);
    assert_eq!(report.restored[0].outcomes.len(), 2);
    assert_eq!(std::fs::read_to_string(&target).unwrap(), "old");
    assert!(!scratch.exists());
    assert!(!jp.exists());
    // Nothing left: a second restore finds nothing.
    assert!(restore_orphans(dir.path(), false).restored.is_empty());
}

#[test]
fn a_live_owner_is_left_alone() {
    let dir = tempfile::tempdir().unwrap();
    // this test's own parent process is alive; use our own pid's parent? Use pid 1.
    let st = process::start_time(&Root::live(), 1).unwrap_or(0);
    let header = format!(r#"{{"oslab_journal":1,"pid":1,"start_time":{st},"command":"init"}}"#);
    let jp = dir.path().join("journal-1.jsonl");
    std::fs::write(&jp, format!("{header}\n")).unwrap();
    let report = restore_orphans(dir.path(), false);
    if process::start_time(&Root::live(), 1).is_some() {
        assert_eq!(report.live.len(), 1);
        assert!(jp.exists());
    }
}

#[test]
fn an_unreaped_owner_is_restored() {
    // a killed oslab whose parent has not reaped it yet is a zombie: its
    // journal is an orphan's
    let mut child = std::process::Command::new("true").spawn().unwrap();
    let pid = child.id();
    let root = Root::live();
    let start = process::start_time(&root, pid).unwrap();
    while crate::parse::pidstat::read(&root, pid).is_some_and(|s| s.state != 'Z') {
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    let dir = tempfile::tempdir().unwrap();
    let scratch = dir.path().join("scratch");
    std::fs::create_dir(&scratch).unwrap();
    let header =
        format!(r#"{{"oslab_journal":1,"pid":{pid},"start_time":{start},"command":"oslab"}}"#);
    let entry = serde_json::json!({
        "seq": 1,
        "description": "scratch",
        "undo": {"kind": "remove_path", "path": scratch},
    });
    let jp = dir.path().join(format!("journal-{pid}.jsonl"));
    std::fs::write(&jp, format!("{header}\n{entry}\n")).unwrap();
    let report = restore_orphans(dir.path(), false);
    child.wait().unwrap();
    assert!(report.live.is_empty());
    assert_eq!(report.restored.len(), 1);
    assert!(!scratch.exists() && !jp.exists());
}

#[test]
fn one_entry_can_be_undone_early() {
    let dir = tempfile::tempdir().unwrap();
    let a = dir.path().join("a");
    let b = dir.path().join("b");
    std::fs::write(&a, "").unwrap();
    std::fs::write(&b, "").unwrap();
    let mut j = Journal::new(dir.path());
    let sa = j.record("a", Undo::RemovePath { path: a.clone() }).unwrap();
    let sb = j.record("b", Undo::RemovePath { path: b.clone() }).unwrap();
    j.undo(sa).unwrap();
    assert!(!a.exists() && b.exists());
    let (_, left) = read_journal(j.path()).unwrap();
    assert_eq!(left.len(), 1);
    j.record("c", Undo::Nothing).unwrap();
    assert_eq!(read_journal(j.path()).unwrap().1.len(), 2);
    j.undo(sb).unwrap();
    j.undo_all();
    assert!(!b.exists() && !j.path().exists());
}

#[test]
fn a_failed_undo_stays_in_the_journal() {
    let dir = tempfile::tempdir().unwrap();
    let target = dir.path().join("knob");
    std::fs::write(&target, "1").unwrap();
    let mut j = Journal::new(dir.path());
    j.write_file(&target, "2").unwrap();
    j.record(
        "impossible",
        Undo::WriteFile {
            path: dir.path().join("no/such/dir/file"),
            contents: "x".into(),
        },
    )
    .unwrap();
    let out = j.undo_all();
    assert!(out[0].result.is_err());
    assert!(out[1].result.is_ok());
    assert_eq!(std::fs::read_to_string(&target).unwrap(), "1");
    let (_, kept) = read_journal(j.path()).unwrap();
    assert_eq!(kept.len(), 1);
    assert_eq!(kept[0].description, "impossible");
}

#[test]
fn pending_changes_of_dead_processes_are_counted() {
    let dir = tempfile::tempdir().unwrap();
    assert_eq!(pending_orphans(dir.path()), (0, 0));
    assert_eq!(pending_orphans(&dir.path().join("absent")), (0, 0));
    let dead =
        r#"{"oslab_journal":1,"pid":1,"start_time":18446744073709551615,"command":"oslab run x"}"#;
    let entry = r#"{"seq":1,"description":"x","undo":{"kind":"nothing"}}"#;
    std::fs::write(
        dir.path().join("journal-1.jsonl"),
        format!("{dead}\n{entry}\n{entry}\n"),
    )
    .unwrap();
    // a testbed left up on purpose (marked complete) is not an interrupted run
    std::fs::write(
        dir.path().join("journal-testbed.jsonl"),
        format!("{dead}\n{entry}\n{}\n", file::COMPLETE_LINE),
    )
    .unwrap();
    // our own journal is not an orphan
    let mut j = Journal::new(dir.path());
    j.record_private("mine", Undo::Nothing).unwrap();
    assert_eq!(pending_orphans(dir.path()), (1, 2));
    j.undo_all();
}

/// Regression: as an ordinary user the journal folder did not exist when the
/// machine-wide lock beside it was opened, so the first change failed.
#[test]
fn the_first_change_creates_the_journal_folder() {
    let dir = tempfile::tempdir().unwrap();
    let nested = dir.path().join("a").join("b");
    let mut j = Journal::new(&nested);
    j.lock_beside = true; // as an ordinary user
    j.record("first", Undo::Nothing).unwrap();
    assert!(j.path().exists());
    j.undo_all();
    assert!(!j.path().exists());
}

#[test]
fn a_change_that_was_never_made_is_not_undone() {
    let dir = tempfile::tempdir().unwrap();
    let mut j = Journal::new(dir.path());
    let target = dir.path().join("no-such-dir").join("knob");
    let seq = j
        .record(
            "knob",
            Undo::WriteFile {
                path: target.clone(),
                contents: "old".into(),
            },
        )
        .unwrap();
    assert!(j.write_or_forget(seq, &target, "new").is_err());
    assert!(j.entries().is_empty());
    assert!(j.undo_all().is_empty(), "nothing reported as undone");
    assert!(!j.path().exists());
}

#[test]
fn garbage_is_reported_not_fatal() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("journal-9.jsonl"), "not json\n").unwrap();
    let report = restore_orphans(dir.path(), false);
    assert_eq!(report.unreadable.len(), 1);
}

/// A crash can cut the journal anywhere in the line being written. For every
/// byte offset of the last line (inside a character, and just before its
/// newline too), `restore_orphans` undoes exactly the complete entries before
/// it, newest first, never the cut one (its change was never made: changes are
/// made only after the whole line is synced), and removes the file.
#[test]
fn a_journal_torn_anywhere_in_its_last_line_undoes_the_complete_entries() {
    let dir = tempfile::tempdir().unwrap();
    let knobs: Vec<PathBuf> = (0..4)
        .map(|i| dir.path().join(format!("knob-{i}")))
        .collect();
    let gone = dir.path().join("scratch");
    let header =
        r#"{"oslab_journal":1,"pid":1,"start_time":18446744073709551615,"command":"oslab run x"}"#;
    let mut entries: Vec<Entry> = knobs
        .iter()
        .enumerate()
        .map(|(i, k)| Entry {
            seq: i as u64 + 1,
            // wide characters, so some cuts fall inside one
            description: format!("write to knob {i}: 50 µs → «x»"),
            undo: Undo::WriteFile {
                path: k.clone(),
                contents: format!("old-{i}"),
            },
        })
        .collect();
    entries.insert(
        1,
        Entry {
            seq: 9,
            description: "scratch".into(),
            undo: Undo::RemovePath { path: gone.clone() },
        },
    );
    let lines: Vec<String> = entries
        .iter()
        .map(|e| serde_json::to_string(e).unwrap())
        .collect();
    let (last, complete) = lines.split_last().unwrap();
    let before = format!("{header}\n{}\n", complete.join("\n"));
    let last = format!("{last}\n");
    assert!(
        last.len() != last.chars().count(),
        "the last line has wide characters"
    );
    let jp = dir.path().join("journal-1.jsonl");
    for cut in 0..last.len() {
        for k in &knobs {
            std::fs::write(k, "new").unwrap();
        }
        std::fs::create_dir_all(&gone).unwrap();
        let mut bytes = before.clone().into_bytes();
        bytes.extend_from_slice(&last.as_bytes()[..cut]);
        std::fs::write(&jp, &bytes).unwrap();

        let report = restore_orphans(dir.path(), false);

        assert!(
            report.unreadable.is_empty(),
            "cut at {cut}: {:?}",
            report.unreadable
        );
        assert_eq!(report.restored.len(), 1, "cut at {cut}");
        let undone: Vec<&str> = report.restored[0]
            .outcomes
            .iter()
            .map(|o| {
                assert!(o.result.is_ok(), "cut at {cut}: {o:?}");
                o.description.as_str()
            })
            .collect();
        let expected: Vec<&str> = entries[..entries.len() - 1]
            .iter()
            .rev()
            .map(|e| e.description.as_str())
            .collect();
        assert_eq!(undone, expected, "cut at {cut}");
        for (i, k) in knobs.iter().enumerate() {
            let want = if i < 3 {
                format!("old-{i}")
            } else {
                "new".into()
            };
            assert_eq!(
                std::fs::read_to_string(k).unwrap(),
                want,
                "cut at {cut}, knob {i}"
            );
        }
        assert!(!gone.exists(), "cut at {cut}");
        assert!(!jp.exists(), "cut at {cut}: the journal is removed");
    }
}

/// A path that is not UTF-8 cannot be written into the JSON journal: recording
/// it is an error (so the change is not made), never a panic.
#[test]
fn a_path_that_is_not_utf8_is_refused_not_a_panic() {
    use std::os::unix::ffi::OsStrExt;
    let dir = tempfile::tempdir().unwrap();
    let mut j = Journal::new(dir.path());
    let odd = dir
        .path()
        .join(std::ffi::OsStr::from_bytes(b"scratch-\xff"));
    let r = j.record_private("scratch", Undo::RemovePath { path: odd });
    assert!(r.is_err());
    assert!(j.entries().is_empty());
    assert!(j.undo_all().is_empty());
    assert!(!j.path().exists());
}

/// A header as a process that is gone (pid 1 with an impossible start time).
const DEAD: &str =
    r#"{"oslab_journal":1,"pid":1,"start_time":18446744073709551615,"command":"oslab run x"}"#;

/// An entry line removing `path`.
fn removal(seq: u64, path: &Path) -> String {
    serde_json::to_string(&Entry {
        seq,
        description: format!("made {seq}"),
        undo: Undo::RemovePath {
            path: path.to_path_buf(),
        },
    })
    .unwrap()
}

/// Gives `path` to uid 4242 (no such user is needed); false, with the reason
/// printed, when this process may not (not root).
fn give_away(path: &Path) -> bool {
    match std::os::unix::fs::lchown(path, Some(4242), Some(4242)) {
        Ok(()) => true,
        Err(e) => {
            eprintln!("skipped: giving a file to another uid needs root ({e})");
            false
        }
    }
}

/// Regression (issue 27, item 3): a line of an unknown kind in the middle made
/// restore undo nothing after it and delete the file.
#[test]
fn every_readable_entry_around_bad_lines_is_undone_and_the_file_kept() {
    let dir = tempfile::tempdir().unwrap();
    let made: Vec<PathBuf> = (1..=3).map(|i| dir.path().join(format!("m{i}"))).collect();
    for p in &made {
        std::fs::write(p, "x").unwrap();
    }
    let unknown = r#"{"seq":7,"description":"?","undo":{"kind":"frobnicate"}}"#;
    let jp = dir.path().join("journal-1.jsonl");
    let text = format!(
        "{DEAD}\n{}\n{unknown}\n\n{}\nnot json at all\n{}\n",
        removal(1, &made[0]),
        removal(2, &made[1]),
        removal(3, &made[2])
    );
    std::fs::write(&jp, text).unwrap();

    let report = restore_orphans(dir.path(), false);

    assert_eq!(report.restored.len(), 1);
    let r = &report.restored[0];
    let undone: Vec<&str> = r.outcomes.iter().map(|o| o.description.as_str()).collect();
    assert_eq!(undone, ["made 3", "made 2", "made 1"]);
    assert!(made.iter().all(|p| !p.exists()));
    let numbers: Vec<usize> = r.bad_lines.iter().map(|b| b.number).collect();
    assert_eq!(numbers, [3, 6], "line numbers count the blank line too");
    assert!(
        r.bad_lines[0].why.contains("frobnicate"),
        "{:?}",
        r.bad_lines
    );
    assert!(r.kept && report.needs_attention());
    let kept = file::read(&jp, process::euid()).unwrap();
    assert!(kept.entries().is_empty(), "what was undone is not kept");
    let raw: Vec<String> = kept
        .bad_lines()
        .iter()
        .map(|b| String::from_utf8_lossy(&b.raw).into_owned())
        .collect();
    assert_eq!(raw, [unknown, "not json at all"]);
    // named after the restoring process, so counted for the pending line once
    // that has exited (journal_cli.rs sees it)
    assert_eq!(kept.header.pid, std::process::id());
}

/// Regression (issue 27, item 2): a journal another user planted was executed.
#[test]
fn a_journal_owned_by_another_user_is_not_read() {
    let dir = tempfile::tempdir().unwrap();
    let victim = dir.path().join("victim");
    std::fs::write(&victim, "precious").unwrap();
    let jp = dir.path().join("journal-1.jsonl");
    std::fs::write(&jp, format!("{DEAD}\n{}\n", removal(1, &victim))).unwrap();
    if !give_away(&jp) {
        return;
    }
    let report = restore_orphans(dir.path(), false);
    assert!(victim.exists() && jp.exists());
    assert!(report.restored.is_empty());
    assert_eq!(report.unreadable.len(), 1);
    assert!(
        report.unreadable[0].1.contains("is owned by uid 4242"),
        "{:?}",
        report.unreadable
    );
    assert_eq!(pending_orphans(dir.path()), (1, 1), "worth a look");
}

#[test]
fn a_journal_others_or_its_group_can_write_is_not_read() {
    use std::os::unix::fs::PermissionsExt;
    for (mode, who) in [(0o666, "every user"), (0o660, "its group")] {
        let dir = tempfile::tempdir().unwrap();
        let victim = dir.path().join("victim");
        std::fs::write(&victim, "precious").unwrap();
        let jp = dir.path().join("journal-1.jsonl");
        std::fs::write(&jp, format!("{DEAD}\n{}\n", removal(1, &victim))).unwrap();
        std::fs::set_permissions(&jp, std::fs::Permissions::from_mode(mode)).unwrap();
        let report = restore_orphans(dir.path(), false);
        assert!(victim.exists(), "mode {mode:o}");
        assert!(
            report.unreadable[0].1.contains(who),
            "{:?}",
            report.unreadable
        );
    }
}

#[test]
fn a_link_in_place_of_a_journal_is_not_followed() {
    let dir = tempfile::tempdir().unwrap();
    let elsewhere = tempfile::tempdir().unwrap();
    let victim = dir.path().join("victim");
    std::fs::write(&victim, "precious").unwrap();
    let real = elsewhere.path().join("j");
    std::fs::write(&real, format!("{DEAD}\n{}\n", removal(1, &victim))).unwrap();
    std::os::unix::fs::symlink(&real, dir.path().join("journal-1.jsonl")).unwrap();
    let report = restore_orphans(dir.path(), false);
    assert!(victim.exists() && real.exists());
    assert!(report.unreadable[0].1.contains("symbolic link"));
}

/// Regression: `system.lock` was opened with O_CREAT through a planted link.
#[test]
fn a_link_in_place_of_the_lock_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let target = dir.path().join("target");
    std::os::unix::fs::symlink(&target, dir.path().join("system.lock")).unwrap();
    let mut j = Journal::new(dir.path());
    j.lock_beside = true; // as an ordinary user
    let e = j.record("x", Undo::Nothing).unwrap_err();
    assert!(e.to_string().contains("symbolic link"), "{e}");
    assert!(!target.exists(), "nothing made through the link");
    assert!(!j.path().exists(), "no change recorded, so none is made");
}

/// Regression (issue 27, item 2): a journal folder of another user, one others
/// can write, or a link to a folder, was written into.
#[test]
fn a_journal_folder_that_is_not_private_is_not_written() {
    use std::os::unix::fs::PermissionsExt;
    let base = tempfile::tempdir().unwrap();
    let open = base.path().join("open");
    std::fs::create_dir(&open).unwrap();
    std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o777)).unwrap();
    let own = base.path().join("own");
    std::fs::create_dir(&own).unwrap();
    let link = base.path().join("link");
    std::os::unix::fs::symlink(&own, &link).unwrap();
    let mut cases = vec![(open, "every user"), (link, "symbolic link")];
    let other = base.path().join("other");
    std::fs::create_dir(&other).unwrap();
    if give_away(&other) {
        cases.push((other, "is owned by uid 4242"));
    }
    for (dir, why) in cases {
        let mut j = Journal::new(&dir);
        let e = j.record_private("x", Undo::Nothing).unwrap_err();
        assert!(e.to_string().contains(why), "{}: {e}", dir.display());
        assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 0);
    }
}

#[test]
fn journals_and_their_folder_are_private_to_their_owner() {
    use std::os::unix::fs::PermissionsExt;
    let base = tempfile::tempdir().unwrap();
    let dir = base.path().join("journals");
    let mut j = Journal::new(&dir);
    j.lock_beside = true;
    j.record("x", Undo::Nothing).unwrap();
    let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o7777;
    assert_eq!(mode(&dir), 0o700);
    assert_eq!(mode(j.path()), 0o600);
    assert_eq!(mode(&dir.join("system.lock")), 0o600);
    j.undo_all();
}

/// Issue 27, item 6: a named journal whose process died before it was marked
/// complete (`testbed up` killed half way) is counted; a complete one is not.
#[test]
fn a_named_journal_is_counted_until_marked_complete() {
    let dir = tempfile::tempdir().unwrap();
    let entry = r#"{"seq":1,"description":"x","undo":{"kind":"nothing"}}"#;
    let jp = dir.path().join("journal-testbed.jsonl");
    std::fs::write(&jp, format!("{DEAD}\n{entry}\n")).unwrap();
    assert_eq!(pending_orphans(dir.path()), (1, 1));
    std::fs::write(&jp, format!("{DEAD}\n{entry}\n{}\n", file::COMPLETE_LINE)).unwrap();
    assert_eq!(pending_orphans(dir.path()), (0, 0));
    // an entry after the mark: something was changed after completion
    std::fs::write(
        &jp,
        format!("{DEAD}\n{entry}\n{}\n{entry}\n", file::COMPLETE_LINE),
    )
    .unwrap();
    assert_eq!(pending_orphans(dir.path()), (1, 2));
}

#[test]
fn marking_complete_is_written_kept_on_rewrite_and_undone_by_a_new_entry() {
    let dir = tempfile::tempdir().unwrap();
    let mut j = Journal::named(dir.path(), "testbed");
    let a = j.record_private("a", Undo::Nothing).unwrap();
    j.record_private("b", Undo::Nothing).unwrap();
    j.mark_complete().unwrap();
    let read = |p: &Path| file::read(p, process::euid()).unwrap();
    assert!(read(j.path()).complete);
    j.forget(a).unwrap();
    let c = read(j.path());
    assert!(c.complete && c.entries().len() == 1, "{c:?}");
    let mut again = Journal::load(dir.path(), "testbed").unwrap().unwrap();
    assert!(again.complete);
    again.record_private("c", Undo::Nothing).unwrap();
    assert!(!read(again.path()).complete);
    again.undo_all();
    assert!(!again.path().exists());
}

#[test]
fn a_named_journal_with_a_bad_line_is_not_taken_over() {
    let dir = tempfile::tempdir().unwrap();
    let jp = dir.path().join("journal-testbed.jsonl");
    std::fs::write(&jp, format!("{DEAD}\n{{\"kind\":\"?\"}}\n")).unwrap();
    let e = Journal::load(dir.path(), "testbed").unwrap_err();
    assert!(e.to_string().contains("line 2"), "{e}");
    assert!(jp.exists());
}

/// A named journal cut mid-line by a crash, taken over and appended to: the
/// new line must not be glued to the cut one.
#[test]
fn a_torn_named_journal_taken_over_reads_back_whole() {
    let dir = tempfile::tempdir().unwrap();
    let jp = dir.path().join("journal-advise.jsonl");
    let e1 = r#"{"seq":1,"description":"a","undo":{"kind":"nothing"}}"#;
    std::fs::write(&jp, format!("{DEAD}\n{e1}\n{{\"seq\":2,\"desc")).unwrap();
    let mut j = Journal::load(dir.path(), "advise").unwrap().unwrap();
    j.record_private("b", Undo::Nothing).unwrap();
    let c = file::read(&jp, process::euid()).unwrap();
    assert!(c.bad_lines().is_empty(), "{:?}", c.bad_lines());
    let names: Vec<String> = c.entries().into_iter().map(|e| e.description).collect();
    assert_eq!(names, ["a", "b"]);
    j.undo_all();
}

/// Regression: a journal left by a dead process whose pid this process now has
/// was truncated by this process's first change, and its undos were lost.
#[test]
fn a_dead_process_journal_under_this_pid_is_set_aside_not_lost() {
    let dir = tempfile::tempdir().unwrap();
    let made = dir.path().join("made");
    std::fs::write(&made, "x").unwrap();
    let mine = dir
        .path()
        .join(format!("journal-{}.jsonl", std::process::id()));
    std::fs::write(&mine, format!("{DEAD}\n{}\n", removal(1, &made))).unwrap();
    let mut j = Journal::new(dir.path());
    j.record_private("mine", Undo::Nothing).unwrap();
    assert_eq!(
        pending_orphans(dir.path()),
        (1, 1),
        "the old one still counts"
    );
    j.undo_all();
    let report = restore_orphans(dir.path(), false);
    assert_eq!(report.restored.len(), 1);
    assert!(!made.exists(), "its undo was kept and done");
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
}

/// Regression: a journal that recorded nothing removed, when undone, whatever
/// file stood at its path: a dead process's journal under a reused pid.
#[test]
fn undoing_a_journal_that_recorded_nothing_removes_no_file() {
    let dir = tempfile::tempdir().unwrap();
    let theirs = dir
        .path()
        .join(format!("journal-{}.jsonl", std::process::id()));
    std::fs::write(
        &theirs,
        format!("{DEAD}\n{}\n", removal(1, &dir.path().join("x"))),
    )
    .unwrap();
    let mut j = Journal::new(dir.path());
    assert!(j.undo_all().is_empty());
    assert!(theirs.exists());
}

#[test]
fn a_file_larger_than_any_journal_is_refused_unread() {
    let dir = tempfile::tempdir().unwrap();
    let jp = dir.path().join("journal-1.jsonl");
    // sparse: 5 GiB that take no room, and would take 5 GiB of memory to read
    let f = std::fs::File::create(&jp).unwrap();
    f.set_len(5 << 30).unwrap();
    let report = restore_orphans(dir.path(), false);
    assert!(jp.exists());
    let why = &report.unreadable[0].1;
    assert!(
        why.contains("more than the 64 MiB a journal may hold"),
        "{why}"
    );
    // one line longer than the limit, under a small limit
    std::fs::write(&jp, format!("{DEAD}\n{}\n", "x".repeat(10_000))).unwrap();
    let e = file::read_bounded(&jp, process::euid(), 4096).unwrap_err();
    assert!(e.starts_with("holds 10"), "{e}");
}

#[test]
fn what_is_shown_of_a_text_is_bounded_and_on_one_line() {
    assert_eq!(shown("short", 200), "short");
    let long = "é".repeat(1000);
    let s = shown(&long, 10);
    assert_eq!(s, format!("{}... (1000 characters)", "é".repeat(10)));
    assert_eq!(shown("a\nb\u{1b}[2J", 200), "a\\nb\\u{1b}[2J");
}

/// Regression, found by the fuzz run: the cut came before the escapes, so 200
/// control characters printed as 1,200.
#[test]
fn escapes_count_toward_the_bound() {
    let controls = "\u{1}".repeat(300);
    let s = shown(&controls, 200);
    assert!(
        s.chars().count() <= 200 + "... (300 characters)".len(),
        "{s}"
    );
    assert!(s.ends_with("... (300 characters)"), "{s}");
    assert_eq!(shown(&"\u{1}".repeat(40), 200), "\\u{1}".repeat(40));
}

/// After kill -9 one journal's undo can need another's first: here the first
/// journal's folder still holds a file the second journal made. One restore
/// undoes both, and reports no failure.
#[test]
fn one_restore_undoes_journals_that_depend_on_each_other() {
    let dir = tempfile::tempdir().unwrap();
    let outer = dir.path().join("outer");
    std::fs::create_dir(&outer).unwrap();
    let inner = outer.join("inner");
    std::fs::write(&inner, "x").unwrap();
    let knob = dir.path().join("knob");
    std::fs::write(&knob, "new").unwrap();
    let journal = |pid: u32, undos: Vec<(&str, Undo)>| {
        let header = format!(
            r#"{{"oslab_journal":1,"pid":{pid},"start_time":18446744073709551615,"command":"oslab"}}"#
        );
        let mut text = format!("{header}\n");
        for (seq, (description, undo)) in undos.into_iter().enumerate() {
            let entry = Entry {
                seq: seq as u64 + 1,
                description: description.into(),
                undo,
            };
            text += &format!("{}\n", serde_json::to_string(&entry).unwrap());
        }
        std::fs::write(dir.path().join(format!("journal-{pid}.jsonl")), text).unwrap();
    };
    // journal-1 sorts first, and its folder is not empty until journal-2 is undone
    journal(
        1,
        vec![
            (
                "outer",
                Undo::RemoveCgroup {
                    path: outer.clone(),
                    parent: dir.path().to_path_buf(),
                },
            ),
            (
                "knob",
                Undo::WriteFile {
                    path: knob.clone(),
                    contents: "old".into(),
                },
            ),
        ],
    );
    journal(
        2,
        vec![(
            "inner",
            Undo::RemovePath {
                path: inner.clone(),
            },
        )],
    );
    let report = restore_orphans(dir.path(), false);
    assert!(!inner.exists() && !outer.exists());
    assert_eq!(std::fs::read_to_string(&knob).unwrap(), "old");
    assert_eq!(report.restored.len(), 2);
    for j in &report.restored {
        assert!(!j.kept, "{j:?}");
        assert!(j.outcomes.iter().all(|o| o.result.is_ok()), "{j:?}");
    }
    let first: Vec<&str> = report.restored[0]
        .outcomes
        .iter()
        .map(|o| o.description.as_str())
        .collect();
    assert_eq!(
        first,
        ["knob", "outer"],
        "newest first, the retry in its place"
    );
    assert!(!report.needs_attention());
    assert!(restore_orphans(dir.path(), false).restored.is_empty());
}

/// A removal recorded for a folder oslab made follows no link of another
/// user's that was swapped in on the way, and a link at the very end is removed
/// itself, never what it points at.
#[test]
fn a_removal_never_follows_a_link_swapped_in_on_the_way() {
    let dir = tempfile::tempdir().unwrap();
    let victim = dir.path().join("victim");
    std::fs::create_dir_all(victim.join("scratch")).unwrap();
    std::fs::write(victim.join("scratch/keep"), "precious").unwrap();
    let base = dir.path().join("base");
    std::os::unix::fs::symlink(&victim, &base).unwrap();
    if crate::process::is_root() {
        let c = std::ffi::CString::new(base.as_os_str().as_encoded_bytes()).unwrap();
        // SAFETY: a NUL-terminated path; lchown has no memory effects.
        assert_eq!(unsafe { libc::lchown(c.as_ptr(), 4242, 4242) }, 0);
        let mut j = Journal::new(dir.path());
        let s = j
            .record(
                "scratch",
                Undo::RemovePath {
                    path: base.join("scratch"),
                },
            )
            .unwrap();
        assert!(j.undo(s).is_err(), "another user's link on the way");
        assert!(victim.join("scratch/keep").exists());
    }
    // a link at the end: the link goes, its target stays
    let end = dir.path().join("end");
    std::os::unix::fs::symlink(victim.join("scratch"), &end).unwrap();
    let mut j = Journal::new(dir.path());
    let s = j
        .record("end", Undo::RemovePath { path: end.clone() })
        .unwrap();
    j.undo(s).unwrap();
    assert!(std::fs::symlink_metadata(&end).is_err());
    assert_eq!(
        std::fs::read_to_string(victim.join("scratch/keep")).unwrap(),
        "precious"
    );
}
