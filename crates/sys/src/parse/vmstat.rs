//! /proc/vmstat: one counter per line, `name value`, as the kernel's vmstat_show()
//! prints them. The one reader of its text in oslab: the sar snapshots
//! (`crate::sar`), the machine description's dirty thresholds (`crate::machine`), the
//! inputs of the dirty limits (`crate::dirty`) and `dirty explain` (lab) all read it
//! here.
//!
//! - A counter line is two words: the name and its value in decimal. The kernel
//!   prints unsigned values; a negative one (per-cpu drift, as procfs-core allows by
//!   reading i64) reads as 0.
//! - Any other line (empty, one word, three words, a value that is not a number) is
//!   not a counter and is skipped, so one odd line never costs the others.
//! - A name that appears twice counts once, the first time.
//!
//! procfs-core's `VmStat` does not fit: one line it cannot read fails the whole text
//! (the sar snapshot then lost every counter) and it keeps the last of a repeated name.

use std::collections::BTreeMap;

use crate::fsread::Root;

/// The counter of one line, or `None` for a line of another shape.
fn counter(line: &str) -> Option<(&str, u64)> {
    let mut words = line.split_whitespace();
    let (name, value, None) = (words.next()?, words.next()?, words.next()) else {
        return None;
    };
    let value = match value.parse::<u64>() {
        Ok(v) => v,
        Err(_) => value.parse::<i64>().ok().filter(|v| *v < 0).map(|_| 0)?,
    };
    Some((name, value))
}

/// Every counter of the text, in its order (a repeated name as often as it appears).
pub fn counters(text: &str) -> impl Iterator<Item = (&str, u64)> {
    text.lines().filter_map(counter)
}

/// The value of the counter `name`, or `None` when the text has no such counter.
pub fn value(text: &str, name: &str) -> Option<u64> {
    counters(text).find(|(n, _)| *n == name).map(|(_, v)| v)
}

/// [`value`] of /proc/vmstat under `root`.
pub fn read_value(root: &Root, name: &str) -> Option<u64> {
    value(&root.read("/proc/vmstat").ok()?, name)
}

/// The counters named in `names` that the text has, by name.
pub fn select(text: &str, names: &[&str]) -> BTreeMap<String, u64> {
    let mut out = BTreeMap::new();
    for (n, v) in counters(text) {
        if names.contains(&n) {
            out.entry(n.to_string()).or_insert(v);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// /proc/vmstat of the 2-vCPU KVM guest (AMD EPYC, kernel 6.18) the lab was
    /// developed on, captured with `cat /proc/vmstat`.
    const CAPTURED: &str = include_str!("../../tests/fixtures/vmstat/kvm-epyc-2cpu-6.18");

    #[test]
    fn every_line_of_the_captured_file_is_a_counter() {
        let lines = CAPTURED.lines().count();
        assert_eq!(lines, 192);
        assert_eq!(counters(CAPTURED).count(), lines);
        let first: Vec<_> = counters(CAPTURED).take(2).collect();
        assert_eq!(
            first,
            [
                ("nr_free_pages", 1_960_696),
                ("nr_free_pages_blocks", 1_523_200)
            ]
        );
    }

    #[test]
    fn the_captured_figures_read_back() {
        for (name, v) in [
            ("nr_inactive_file", 571_952),
            ("nr_active_file", 212_919),
            ("nr_dirtied", 20_044_247),
            ("nr_dirty_threshold", 1_200_772),
            ("nr_dirty_background_threshold", 599_653),
            ("pgpgin", 30_596_305),
            ("pswpout", 0),
        ] {
            assert_eq!(value(CAPTURED, name), Some(v), "{name}");
        }
        assert_eq!(value(CAPTURED, "nr_dirty_thresh"), None, "whole names only");
        assert_eq!(value(CAPTURED, "no_such_counter"), None);
    }

    #[test]
    fn the_reader_takes_a_root() {
        let root = Root::at(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/fixtures/kvm-xeon-2cpu"
        ));
        assert_eq!(read_value(&root, "nr_dirtied"), Some(215976));
        assert_eq!(read_value(&root, "no_such_counter"), None);
        assert_eq!(read_value(&Root::at("/nonexistent"), "nr_dirtied"), None);
    }

    #[test]
    fn select_keeps_the_named_counters() {
        let got = select(
            CAPTURED,
            &["pgpgin", "nr_dirty_threshold", "pswpout", "no_such_counter"],
        );
        assert_eq!(
            got,
            BTreeMap::from([
                ("nr_dirty_threshold".to_string(), 1_200_772),
                ("pgpgin".to_string(), 30_596_305),
                ("pswpout".to_string(), 0),
            ])
        );
    }

    #[test]
    fn odd_lines_are_skipped_not_fatal() {
        let text = "a 1\n\nb\nc 2 3\nd x\ne -4\nf 18446744073709551615\na 9\n\tg\t7 \n";
        let all: Vec<_> = counters(text).collect();
        assert_eq!(
            all,
            [("a", 1), ("e", 0), ("f", u64::MAX), ("a", 9), ("g", 7)]
        );
        assert_eq!(value(text, "a"), Some(1), "the first of a repeated name");
        assert_eq!(select(text, &["a"])["a"], 1);
        assert_eq!(value(text, "c"), None);
        assert_eq!(value(text, "d"), None);
    }
}

/// Property tests: any text gives counters (maybe none), never a panic; what the
/// kernel writes reads back exactly, whatever odd lines surround it; `value` and
/// `select` agree. A fuzz-like run with many cases (PROPTEST_CASES wins over the
/// default here; failures are printed, not saved to proptest-regressions/):
/// `PROPTEST_CASES=100000 cargo test -p oslab-sys --lib -- parse::vmstat::props`
#[cfg(test)]
mod props {
    use super::*;
    use crate::testing::proptest_config as config;
    use proptest::prelude::*;

    /// A line that is not a counter, by construction.
    fn odd_line() -> impl Strategy<Value = String> {
        let name = "[a-z_]{1,12}";
        prop_oneof![
            Just(String::new()),
            name.prop_map(|n| n.to_string()),
            (name, any::<u64>(), any::<u64>()).prop_map(|(n, a, b)| format!("{n} {a} {b}")),
            (name, "[a-z.+]{1,5}").prop_map(|(n, v)| format!("{n} {v}")),
            (name, any::<u64>()).prop_map(|(n, v)| format!("{n} {v}.5")),
        ]
    }

    proptest! {
        #![proptest_config(config(512))]

        #[test]
        fn any_text_never_panics(text in "(?s).{0,200}", name in "\\PC{0,12}") {
            let _ = counters(&text).count();
            let _ = value(&text, &name);
            let _ = select(&text, &[&name, "pgpgin"]);
        }

        /// Distinct names with any u64 (or negative, read as 0), in any order and
        /// with odd lines between them, read back exactly.
        #[test]
        fn the_kernels_lines_read_back(
            (entries, lines) in (
                proptest::collection::btree_map(
                    "[a-z_]{1,24}",
                    prop_oneof![any::<u64>().prop_map(i128::from), any::<i64>().prop_map(i128::from)],
                    0..24,
                ),
                proptest::collection::vec(odd_line(), 0..8),
            )
                .prop_flat_map(|(entries, odd)| {
                    let mut lines: Vec<String> =
                        entries.iter().map(|(k, v)| format!("{k} {v}")).collect();
                    lines.extend(odd);
                    (Just(entries), Just(lines).prop_shuffle())
                }),
        ) {
            let text = lines.join("\n");
            let want = |v: i128| u64::try_from(v).unwrap_or(0);
            prop_assert_eq!(counters(&text).count(), entries.len());
            for (k, v) in &entries {
                prop_assert_eq!(value(&text, k), Some(want(*v)));
            }
            let names: Vec<&str> = entries.keys().map(String::as_str).collect();
            let got = select(&text, &names);
            prop_assert_eq!(got.len(), entries.len());
            for (k, v) in &entries {
                prop_assert_eq!(got.get(k).copied(), Some(want(*v)));
            }
        }

        /// `value` is the first counter of that name, and `select` agrees with it.
        #[test]
        fn value_and_select_agree(
            lines in proptest::collection::vec(
                prop_oneof![
                    ("[a-c]", any::<i64>()).prop_map(|(k, v)| format!("{k} {v}")),
                    odd_line(),
                ],
                0..16,
            ),
        ) {
            let text = lines.join("\n");
            for k in ["a", "b", "c"] {
                let first = counters(&text).find(|(n, _)| *n == k).map(|(_, v)| v);
                prop_assert_eq!(value(&text, k), first);
                prop_assert_eq!(select(&text, &[k]).get(k).copied(), first);
            }
        }
    }
}
