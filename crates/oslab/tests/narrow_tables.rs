//! Tables keep words whole at every width (issue 53, item 4): `oslab judge` of
//! two raw fixtures (cpu.syscall, cpu.ctxsw: long measurement names, long
//! details, ten number columns) printed at COLUMNS 60, 80 and 120, against
//! golden files (snapshots/narrow_tables__judged_at_*.snap), and checked for the
//! rule itself: no line wider than the terminal, and no word of the output that
//! the same output one row a line does not hold (a word broken in two is two
//! words that were never printed whole).

mod common;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

const WIDTHS: [usize; 3] = [60, 80, 120];

fn raw(id: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("../lab/tests/fixtures/raw/{id}.raw.json"))
}

/// `oslab judge` of the two fixtures at `columns`, or one row a line (None).
fn judged_at(columns: Option<usize>) -> String {
    let mut cmd = common::oslab();
    cmd.arg("judge")
        .arg(raw("cpu.syscall"))
        .arg(raw("cpu.ctxsw"))
        .env_remove("COLUMNS");
    if let Some(c) = columns {
        cmd.env("COLUMNS", c.to_string());
    }
    let out = common::succeed(&mut cmd);
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn tables_at_60_80_and_120_columns_match_their_golden_files() {
    for columns in WIDTHS {
        insta::assert_snapshot!(format!("judged_at_{columns}"), judged_at(Some(columns)));
    }
}

/// Regression: at 80 columns the measurement header printed one letter a line
/// ("m / e / a / s"), a cpu.ctxsw row took about 30 lines, and at 120 columns
/// "steady" became "ste/ady".
#[test]
fn no_word_is_broken_and_no_line_is_wider_than_the_terminal() {
    let whole: BTreeSet<String> = judged_at(None)
        .split_whitespace()
        .map(str::to_string)
        .collect();
    for columns in WIDTHS {
        let text = judged_at(Some(columns));
        for line in text.lines() {
            assert!(
                line.chars().count() <= columns,
                "{columns} columns: {line:?} is wider"
            );
        }
        let broken: BTreeSet<&str> = text
            .split_whitespace()
            .filter(|w| !whole.contains(*w) && !w.chars().all(|c| c == '─' || c == '·'))
            .collect();
        assert!(
            broken.is_empty(),
            "{columns} columns: words never printed whole: {broken:?}\n{text}"
        );
        for word in ["steady", "ns.processes.futex.cross-cpu.same-l3"] {
            assert!(text.contains(word), "{columns} columns: {word} whole");
        }
    }
}
