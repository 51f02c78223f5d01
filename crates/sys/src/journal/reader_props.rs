//! Property tests and the fuzz run of the journal reader.
//!
//! - Lines that cannot be read, at any positions among harmless entries: every
//!   entry is undone, newest first, each bad line is named with its number, and
//!   the file is kept with exactly those lines (losing undos is no crash, so only
//!   a property catches it).
//! - The reader over a valid journal with random edits (bytes changed, inserted,
//!   removed), over random bytes and over long lines, read whole and under a
//!   small bound: no panic, no line lost or counted twice, the bound kept. These
//!   journals are only read, never restored: an edited path could name anything.
//!
//! `fuzz_journal_reader` is the fuzz run (docs/architecture.md, "Property tests
//! and fuzz runs"): `PROPTEST_CASES=N cargo test -p oslab-sys --release --
//! --ignored fuzz_journal_reader`.

use super::file::{Contents, parse, read_bounded};
use super::props::{DEAD, entry};
use super::*;
use crate::testing::{fuzz_config, proptest_config as config};
use proptest::prelude::*;
use proptest::sample::Index;

/// A line that is neither blank, nor an entry, nor a mark.
fn bad_line() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        proptest::collection::vec(any::<u8>(), 1..80),
        "[^\n]{1,80}".prop_map(String::into_bytes),
        "[a-z_]{1,12}".prop_map(|kind| {
            format!(r#"{{"seq":5,"description":"x","undo":{{"kind":"{kind}"}}}}"#).into_bytes()
        }),
        Just(br#"{"mark":"half"}"#.to_vec()),
    ]
    .prop_map(|l| l.into_iter().filter(|&b| b != b'\n').collect::<Vec<u8>>())
    .prop_filter("neither blank nor readable", |l| {
        let text = [format!("{DEAD}\n").as_bytes(), l, b"\n"].concat();
        parse(&text).is_ok_and(|c| c.bad_lines().len() == 1)
    })
}

/// `n` entries and the bad lines, in a random order (true: a bad line).
fn entries_among_bad_lines() -> impl Strategy<Value = (usize, Vec<Vec<u8>>, Vec<bool>)> {
    (0usize..6, proptest::collection::vec(bad_line(), 0..5)).prop_flat_map(|(n, bad)| {
        let mut order = vec![false; n];
        order.extend(std::iter::repeat_n(true, bad.len()));
        (Just(n), Just(bad), Just(order).prop_shuffle())
    })
}

fn restore_around_bad_lines(
    n: usize,
    bad: &[Vec<u8>],
    order: &[bool],
) -> Result<(), TestCaseError> {
    let dir = tempfile::tempdir().unwrap();
    let made: Vec<PathBuf> = (0..n)
        .map(|i| dir.path().join(format!("made-{i}")))
        .collect();
    let mut text = format!("{DEAD}\n").into_bytes();
    let (mut entries, mut bads, mut bad_numbers) = (made.iter().enumerate(), bad.iter(), vec![]);
    for (i, &is_bad) in order.iter().enumerate() {
        if is_bad {
            text.extend_from_slice(bads.next().unwrap());
            bad_numbers.push(i + 2);
        } else {
            let (k, p) = entries.next().unwrap();
            std::fs::write(p, "x").unwrap();
            let e = Entry {
                seq: k as u64 + 1,
                description: format!("made {k}"),
                undo: Undo::RemovePath { path: p.clone() },
            };
            text.extend_from_slice(serde_json::to_string(&e).unwrap().as_bytes());
        }
        text.push(b'\n');
    }
    let jp = dir.path().join("journal-1.jsonl");
    std::fs::write(&jp, &text).unwrap();

    let report = restore_orphans(dir.path(), false);

    prop_assert_eq!(report.restored.len(), 1, "{:?}", report.unreadable);
    let r = &report.restored[0];
    let undone: Vec<String> = r.outcomes.iter().map(|o| o.description.clone()).collect();
    let expected: Vec<String> = (0..n).rev().map(|i| format!("made {i}")).collect();
    prop_assert_eq!(undone, expected);
    prop_assert!(made.iter().all(|p| !p.exists()));
    let numbers: Vec<usize> = r.bad_lines.iter().map(|b| b.number).collect();
    prop_assert_eq!(numbers, bad_numbers);
    prop_assert_eq!(jp.exists(), !bad.is_empty());
    prop_assert_eq!(r.kept, !bad.is_empty());
    prop_assert_eq!(report.needs_attention(), !bad.is_empty());
    if !bad.is_empty() {
        let kept = file::read(&jp, process::euid()).map_err(TestCaseError::fail)?;
        prop_assert!(kept.entries().is_empty());
        let raw: Vec<Vec<u8>> = kept.bad_lines().into_iter().map(|b| b.raw).collect();
        prop_assert_eq!(raw, bad.to_vec());
    }
    Ok(())
}

/// One edit of a journal's bytes.
#[derive(Debug, Clone)]
enum Edit {
    Set(Index, u8),
    Insert(Index, Vec<u8>),
    Remove(Index, usize),
}

fn edit() -> impl Strategy<Value = Edit> {
    prop_oneof![
        (any::<Index>(), any::<u8>()).prop_map(|(i, b)| Edit::Set(i, b)),
        (
            any::<Index>(),
            proptest::collection::vec(any::<u8>(), 1..16)
        )
            .prop_map(|(i, b)| Edit::Insert(i, b)),
        (any::<Index>(), 1usize..40).prop_map(|(i, n)| Edit::Remove(i, n)),
    ]
}

fn apply(bytes: &mut Vec<u8>, e: &Edit) {
    if bytes.is_empty() {
        return;
    }
    match e {
        Edit::Set(i, b) => {
            let at = i.index(bytes.len());
            bytes[at] = *b;
        }
        Edit::Insert(i, b) => {
            let at = i.index(bytes.len() + 1);
            bytes.splice(at..at, b.iter().copied());
        }
        Edit::Remove(i, n) => {
            let at = i.index(bytes.len());
            let end = (at + n).min(bytes.len());
            bytes.drain(at..end);
        }
    }
}

/// A journal as oslab writes it (entries, maybe the mark), then edited.
fn edited_journal() -> impl Strategy<Value = Vec<u8>> {
    (
        proptest::collection::vec(entry(), 0..6),
        any::<bool>(),
        proptest::collection::vec(edit(), 0..8),
    )
        .prop_map(|(entries, complete, edits)| {
            let mut text = format!("{DEAD}\n");
            for e in &entries {
                text += &(serde_json::to_string(e).unwrap() + "\n");
            }
            if complete {
                text += &format!("{}\n", file::COMPLETE_LINE);
            }
            let mut bytes = text.into_bytes();
            for e in &edits {
                apply(&mut bytes, e);
            }
            bytes
        })
}

/// A journal with one long line (up to 1 MiB) somewhere.
fn long_line() -> impl Strategy<Value = Vec<u8>> {
    (0usize..(1 << 20), any::<u8>(), any::<bool>()).prop_map(|(len, b, as_entry)| {
        let filler = String::from_utf8_lossy(&vec![b; len]).replace('\n', " ");
        let line = if as_entry {
            serde_json::to_string(&Entry {
                seq: 1,
                description: filler,
                undo: Undo::Nothing,
            })
            .unwrap()
        } else {
            filler
        };
        format!("{DEAD}\n{line}\n").into_bytes()
    })
}

fn journal_bytes() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        6 => edited_journal(),
        2 => proptest::collection::vec(any::<u8>(), 0..400),
        1 => long_line(),
    ]
}

/// The lines after the header that the reader must account for: complete (with
/// their newline), not blank.
fn whole_lines_after_header(bytes: &[u8]) -> usize {
    let mut lines = bytes
        .split_inclusive(|&b| b == b'\n')
        .filter(|l| !l.trim_ascii().is_empty());
    lines.next();
    lines.filter(|l| l.ends_with(b"\n")).count()
}

/// No line lost or counted twice: entries, bad lines and marks add up to the
/// whole lines after the header; bad lines are numbered in order, after line 1.
fn accounted(bytes: &[u8], c: &Contents) -> Result<(), TestCaseError> {
    let marks = bytes
        .split_inclusive(|&b| b == b'\n')
        .filter(|l| !l.trim_ascii().is_empty())
        .skip(1)
        .filter(|l| l.ends_with(b"\n") && serde_json::from_slice::<Entry>(l).is_err())
        .filter(|l| file::is_mark(l))
        .count();
    prop_assert_eq!(c.lines.len() + marks, whole_lines_after_header(bytes));
    let numbers: Vec<usize> = c.bad_lines().iter().map(|b| b.number).collect();
    prop_assert!(numbers.windows(2).all(|w| w[0] < w[1]), "{:?}", numbers);
    prop_assert!(numbers.iter().all(|&n| n > 1));
    for b in c.bad_lines() {
        prop_assert!(b.why.chars().count() <= 250, "{}", b.why.len());
    }
    Ok(())
}

fn reader_holds(bytes: &[u8], limit: u64) -> Result<(), TestCaseError> {
    let parsed = parse(bytes);
    if let Ok(c) = &parsed {
        accounted(bytes, c)?;
    }
    let dir = tempfile::tempdir().unwrap();
    let jp = dir.path().join("journal-1.jsonl");
    std::fs::write(&jp, bytes).unwrap();
    match read_bounded(&jp, process::euid(), limit) {
        Err(e) if bytes.len() as u64 > limit => prop_assert!(e.starts_with("holds "), "{}", e),
        Err(e) => prop_assert_eq!(Some(e), parsed.err()),
        Ok(c) => {
            prop_assert!(bytes.len() as u64 <= limit);
            prop_assert_eq!(c.entries(), parsed.map_err(TestCaseError::fail)?.entries());
        }
    }
    // read only: the pending line never panics either
    let _ = pending_orphans(dir.path());
    Ok(())
}

proptest! {
    // each case writes a file and restores it: fewer cases
    #![proptest_config(config(96))]

    #[test]
    fn every_readable_entry_is_undone_whatever_bad_lines_are_among_them(
        (n, bad, order) in entries_among_bad_lines()
    ) {
        restore_around_bad_lines(n, &bad, &order)?;
    }

    #[test]
    fn the_reader_accounts_for_every_line_and_keeps_its_bound(
        bytes in journal_bytes(),
        small in any::<bool>(),
    ) {
        reader_holds(&bytes, if small { 512 } else { MAX_JOURNAL_BYTES })?;
    }
}

// The same with many cases, outside the default run.
proptest! {
    #![proptest_config(fuzz_config(20_000))]

    #[test]
    #[ignore = "a fuzz run: cargo test -p oslab-sys --release -- --ignored fuzz"]
    fn fuzz_journal_reader(bytes in journal_bytes(), small in any::<bool>()) {
        reader_holds(&bytes, if small { 512 } else { MAX_JOURNAL_BYTES })?;
    }

    #[test]
    #[ignore = "a fuzz run: cargo test -p oslab-sys --release -- --ignored fuzz"]
    fn fuzz_journal_restore_around_bad_lines((n, bad, order) in entries_among_bad_lines()) {
        restore_around_bad_lines(n, &bad, &order)?;
    }
}
