//! Property tests of the journal's JSON lines: entries round-trip through their line;
//! `restore_orphans` over any bytes, or over a valid journal followed by any bytes,
//! never panics and undoes no more than the complete entries. Every undo here is
//! harmless (`Nothing`, or paths inside a temporary directory). The `fuzz_*` tests
//! run the same with 20,000 cases (or PROPTEST_CASES), outside the default run:
//! `cargo test -p oslab-sys --release -- --ignored fuzz`

use super::tests::read_journal;
use super::*;
use crate::testing::{fuzz_config, proptest_config as config};
use proptest::prelude::*;

/// A header as a process that is gone (pid 1 with an impossible start time).
pub(super) const DEAD: &str =
    r#"{"oslab_journal":1,"pid":1,"start_time":18446744073709551615,"command":"oslab run x"}"#;

fn path() -> impl Strategy<Value = PathBuf> {
    "(/[^/\0]{0,12}){0,4}".prop_map(PathBuf::from)
}

fn undo() -> impl Strategy<Value = Undo> {
    prop_oneof![
        (path(), "(?s).{0,20}").prop_map(|(path, contents)| Undo::WriteFile { path, contents }),
        path().prop_map(|target| Undo::Unmount { target }),
        path().prop_map(|device| Undo::DetachLoop { device }),
        path().prop_map(|path| Undo::RemovePath { path }),
        path().prop_map(|path| Undo::RemoveDir { path }),
        (path(), path()).prop_map(|(path, parent)| Undo::RemoveCgroup { path, parent }),
        (
            path(),
            "[a-z]{0,8}",
            proptest::collection::vec("[^/\0]{0,8}", 0..3)
        )
            .prop_map(|(dir, controller, children)| Undo::WithdrawController {
                dir,
                controller,
                children
            }),
        Just(Undo::Nothing),
    ]
}

pub(super) fn entry() -> impl Strategy<Value = Entry> {
    (any::<u64>(), "(?s).{0,30}", undo()).prop_map(|(seq, description, undo)| Entry {
        seq,
        description,
        undo,
    })
}

proptest! {
    #![proptest_config(config(256))]

    /// An entry is one line (whatever its description holds) that reads back
    /// as the same entry.
    #[test]
    fn an_entry_round_trips_through_its_line(e in entry()) {
        let line = serde_json::to_string(&e).unwrap();
        prop_assert!(!line.contains('\n'));
        prop_assert_eq!(serde_json::from_str::<Entry>(&line).unwrap(), e);
    }

    /// What a journal writes, read back: header and entries, in order.
    #[test]
    fn a_written_journal_reads_back(entries in proptest::collection::vec(entry(), 0..6)) {
        let dir = tempfile::tempdir().unwrap();
        let jp = dir.path().join("journal-1.jsonl");
        let mut text = format!("{DEAD}\n");
        for e in &entries {
            text += &(serde_json::to_string(e).unwrap() + "\n");
        }
        std::fs::write(&jp, text).unwrap();
        let (h, back) = read_journal(&jp).map_err(TestCaseError::fail)?;
        prop_assert_eq!(h.pid, 1);
        prop_assert_eq!(back, entries);
    }
}

fn any_bytes() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        proptest::collection::vec(any::<u8>(), 0..200),
        "(?s).{0,200}".prop_map(String::into_bytes),
        "(?s).{0,120}".prop_map(|t| format!("{DEAD}\n{t}").into_bytes()),
    ]
}

fn any_tail() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        proptest::collection::vec(any::<u8>(), 0..120),
        "[^\n]{0,120}".prop_map(String::into_bytes),
    ]
}

/// Any bytes in a journal file: reported (unreadable, or restored with the
/// entries it held), never a panic.
fn restore_of_any_bytes(bytes: &[u8]) -> Result<(), TestCaseError> {
    let dir = tempfile::tempdir().unwrap();
    let jp = dir.path().join("journal-1.jsonl");
    std::fs::write(&jp, bytes).unwrap();
    let _ = pending_orphans(dir.path());
    let report = restore_orphans(dir.path(), false);
    prop_assert_eq!(report.restored.len() + report.unreadable.len(), 1);
    Ok(())
}

/// A valid journal of `n` harmless entries followed by `tail` or, for a tail of
/// odd length, an entry line cut at `cut`: the entries are undone, newest first,
/// and nothing of the tail unless it holds whole entry lines (random bytes never
/// do).
fn restore_with_a_tail(
    n: usize,
    tail: &[u8],
    cut: proptest::sample::Index,
) -> Result<(), TestCaseError> {
    let dir = tempfile::tempdir().unwrap();
    let made: Vec<PathBuf> = (0..n)
        .map(|i| dir.path().join(format!("made-{i}")))
        .collect();
    let mut text = format!("{DEAD}\n").into_bytes();
    for (i, p) in made.iter().enumerate() {
        std::fs::write(p, "x").unwrap();
        let e = Entry {
            seq: i as u64 + 1,
            description: format!("made {i}"),
            undo: Undo::RemovePath { path: p.clone() },
        };
        text.extend_from_slice((serde_json::to_string(&e).unwrap() + "\n").as_bytes());
    }
    let torn = serde_json::to_string(&Entry {
        seq: 99,
        description: "torn".into(),
        undo: Undo::Nothing,
    })
    .unwrap()
        + "\n";
    let torn = &torn.as_bytes()[..cut.index(torn.len())];
    let tail = if tail.len() % 2 == 0 { tail } else { torn };
    text.extend_from_slice(tail);
    let jp = dir.path().join("journal-1.jsonl");
    std::fs::write(&jp, &text).unwrap();

    let report = restore_orphans(dir.path(), false);

    prop_assert_eq!(report.restored.len(), 1, "{:?}", report.unreadable);
    let undone: Vec<String> = report.restored[0]
        .outcomes
        .iter()
        .map(|o| o.description.clone())
        .collect();
    let whole_tail_lines = tail.split(|&b| b == b'\n').count() - 1;
    if whole_tail_lines == 0 {
        let expected: Vec<String> = (0..n).rev().map(|i| format!("made {i}")).collect();
        prop_assert_eq!(undone, expected);
        prop_assert!(!jp.exists());
    } else {
        prop_assert!(undone.len() <= n + whole_tail_lines);
    }
    prop_assert!(made.iter().all(|p| !p.exists()));
    Ok(())
}

proptest! {
    // each case writes a file and restores it: fewer cases
    #![proptest_config(config(96))]

    #[test]
    fn restore_of_any_bytes_never_panics(bytes in any_bytes()) {
        restore_of_any_bytes(&bytes)?;
    }

    #[test]
    fn restore_of_a_journal_with_any_tail_undoes_its_entries(
        n in 0usize..5,
        tail in any_tail(),
        cut in any::<proptest::sample::Index>(),
    ) {
        restore_with_a_tail(n, &tail, cut)?;
    }
}

// The same with many cases, outside the default run (docs/architecture.md,
// "Fuzz runs"): `cargo test -p oslab-sys --release -- --ignored fuzz`
proptest! {
    #![proptest_config(fuzz_config(20_000))]

    #[test]
    #[ignore = "a fuzz run: cargo test -p oslab-sys --release -- --ignored fuzz"]
    fn fuzz_journal_entries_round_trip(e in entry()) {
        let line = serde_json::to_string(&e).unwrap();
        prop_assert!(!line.contains('\n'));
        prop_assert_eq!(serde_json::from_str::<Entry>(&line).unwrap(), e);
    }

    #[test]
    #[ignore = "a fuzz run: cargo test -p oslab-sys --release -- --ignored fuzz"]
    fn fuzz_journal_restore_of_any_bytes(bytes in any_bytes()) {
        restore_of_any_bytes(&bytes)?;
    }

    #[test]
    #[ignore = "a fuzz run: cargo test -p oslab-sys --release -- --ignored fuzz"]
    fn fuzz_journal_restore_with_any_tail(
        n in 0usize..5,
        tail in any_tail(),
        cut in any::<proptest::sample::Index>(),
    ) {
        restore_with_a_tail(n, &tail, cut)?;
    }
}
