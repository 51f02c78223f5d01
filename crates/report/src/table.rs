//! Terminal tables of results: measurements, findings and claim verdicts.
//!
//! Every table cell and every wrapped paragraph is shown through
//! `oslab_term_text` here, where the text is assembled, so no caller can print
//! a name or a sentence read from a file raw (docs/reports.md, "Text from
//! outside oslab").

use comfy_table::{Cell, CellAlignment, ColumnConstraint, ContentArrangement, Table};
use oslab_model::{ExperimentResult, Status, Verdict};

use oslab_term_text::{lines, one_line};

use crate::num::{fmt, pct};

/// How many columns terminal text may take: `None` keeps every row on one line
/// (`--wide`, or output that is not a terminal).
pub type Width = Option<usize>;

/// No borders and no row rules, one rule under the header: reads well in a terminal
/// and in a log file alike.
const HEADER_RULE_ONLY: &str = "     ──            ";

/// A plain table with a header row, every row on one line; `right` marks columns to
/// right-align.
pub fn simple(headers: &[&str], rows: &[Vec<String>], right: &[usize]) -> String {
    fit(headers, rows, right, None)
}

/// [`simple`] within `width` columns: the text columns wrap at spaces, the
/// right-aligned (number) columns keep their width so numbers stay aligned, and
/// no column is narrower than its longest word (a header's included), so lines
/// break between words, never inside one. Where even those widths do not fit,
/// each row becomes a block of its own ([`records`]), as the phone report
/// stacks its rows into cards, rather than a table of broken words.
pub fn fit(headers: &[&str], rows: &[Vec<String>], right: &[usize], width: Width) -> String {
    let shown: Vec<String> = headers.iter().map(|h| one_line(h)).collect();
    let headers: Vec<&str> = shown.iter().map(String::as_str).collect();
    let headers = &headers[..];
    let rows: Vec<Vec<String>> = rows
        .iter()
        .map(|r| r.iter().map(|c| one_line(c)).collect())
        .collect();
    let rows = same_format(&rows, right);
    let Some(w) = width else {
        return build(headers, &rows, right, None, &[]);
    };
    let floors = longest_words(headers, &rows, right);
    let table = build(headers, &rows, right, Some(w), &floors);
    if table.lines().all(|l| l.chars().count() <= w) {
        table
    } else {
        records(headers, &rows, right, w)
    }
}

/// Per text column, its longest word: the least width that keeps words whole.
fn longest_words(headers: &[&str], rows: &[Vec<String>], right: &[usize]) -> Vec<(usize, usize)> {
    (0..headers.len())
        .filter(|i| !right.contains(i))
        .map(|i| {
            let longest = std::iter::once(headers[i])
                .chain(rows.iter().filter_map(|r| r.get(i).map(String::as_str)))
                .flat_map(str::split_whitespace)
                .map(|word| word.chars().count())
                .max()
                .unwrap_or(0);
            (i, longest)
        })
        .collect()
}

/// The rows as blocks for a terminal too narrow for the table, one a row: its
/// first cell as a title line, then every other cell as "header value", the
/// pieces flowed into indented lines of at most `w` columns, a piece moved whole
/// to the next line where it does not fit (and wrapped at spaces where it is
/// longer than a line).
fn records(headers: &[&str], rows: &[Vec<String>], right: &[usize], w: usize) -> String {
    const INDENT: &str = "   ";
    let mut out = Vec::new();
    for r in rows {
        let Some(first) = r.first() else { continue };
        let title = if right.contains(&0) {
            format!("{} {first}", headers[0])
        } else {
            first.clone()
        };
        out.push(wrap(&title, " ", INDENT, Some(w)));
        let mut line = String::new();
        for (h, v) in headers.iter().zip(r).skip(1).filter(|(_, v)| !v.is_empty()) {
            let piece = format!("{h} {v}");
            let joined = INDENT.len() + line.chars().count() + 3 + piece.chars().count();
            if !line.is_empty() && joined <= w {
                line.push_str(" · ");
                line.push_str(&piece);
                continue;
            }
            if !line.is_empty() {
                out.push(format!("{INDENT}{line}"));
            }
            line = piece;
            if INDENT.len() + line.chars().count() > w {
                out.push(wrap(&line, INDENT, INDENT, Some(w)));
                line.clear();
            }
        }
        if !line.is_empty() {
            out.push(format!("{INDENT}{line}"));
        }
    }
    out.join("\n")
}

/// The table, `floors` giving text columns their least width (column, chars).
fn build(
    headers: &[&str],
    rows: &[Vec<String>],
    right: &[usize],
    width: Width,
    floors: &[(usize, usize)],
) -> String {
    let mut t = Table::new();
    t.load_preset(HEADER_RULE_ONLY)
        .set_header(headers.iter().map(Cell::new));
    match width {
        Some(w) => {
            t.set_content_arrangement(ContentArrangement::Dynamic)
                .set_width(w.min(u16::MAX as usize) as u16);
        }
        None => {
            t.set_content_arrangement(ContentArrangement::Disabled);
        }
    }
    for r in rows {
        t.add_row(r.iter().enumerate().map(|(i, c)| {
            let cell = Cell::new(c);
            if right.contains(&i) {
                cell.set_alignment(CellAlignment::Right)
            } else {
                cell
            }
        }));
    }
    if width.is_some() {
        for i in right {
            if let Some(c) = t.column_mut(*i) {
                c.set_constraint(ColumnConstraint::ContentWidth);
            }
        }
    }
    for &(i, chars) in floors {
        if let Some(c) = t.column_mut(i) {
            // the boundary counts the cell's padding, one space a side
            let with_padding = (chars + 2).min(u16::MAX as usize) as u16;
            c.set_constraint(ColumnConstraint::LowerBoundary(comfy_table::Width::Fixed(
                with_padding,
            )));
        }
    }
    t.lines()
        .map(|l| l.trim_end().to_string())
        .collect::<Vec<_>>()
        .join("\n")
}

/// The number columns (`right`) with one format each: where a column holds
/// fractional numbers (`2.013`), a whole one beside them (`2`, as [`fmt`] writes
/// an exact whole number) gets the decimals of its magnitude (`2.000`).
fn same_format(rows: &[Vec<String>], right: &[usize]) -> Vec<Vec<String>> {
    let whole = |c: &str| -> Option<f64> {
        let t = c.strip_prefix('-').unwrap_or(c);
        (!t.is_empty() && t.bytes().all(|b| b.is_ascii_digit()))
            .then(|| c.parse().ok())
            .flatten()
    };
    let fractional = |c: &str| {
        let t = c.strip_prefix('-').unwrap_or(c);
        t.split_once('.').is_some_and(|(a, b)| {
            !a.is_empty()
                && !b.is_empty()
                && (a.bytes().chain(b.bytes())).all(|x| x.is_ascii_digit())
        })
    };
    let mut out = rows.to_vec();
    for &col in right {
        if !rows
            .iter()
            .any(|r| r.get(col).is_some_and(|c| fractional(c)))
        {
            continue;
        }
        for r in &mut out {
            if let Some(c) = r.get_mut(col)
                && let Some(x) = whole(c)
            {
                *c = crate::num::fmt_decimals(x);
            }
        }
    }
    out
}

/// `text`, one line of it as `oslab_term_text::one_line` shows it, broken at
/// spaces into lines of at most `width` columns: the first line starts with
/// `first`, the others with `rest` (a hanging indent). A word longer than a line
/// stays whole.
pub fn wrap(text: &str, first: &str, rest: &str, width: Width) -> String {
    let text = one_line(text);
    let Some(width) = width else {
        return format!("{first}{text}");
    };
    let mut out = String::new();
    let mut line = first.to_string();
    let mut empty = true;
    for word in text.split(' ').filter(|w| !w.is_empty()) {
        let len = line.chars().count() + usize::from(!empty) + word.chars().count();
        if !empty && len > width {
            out.push_str(&line);
            out.push('\n');
            line = rest.to_string();
            empty = true;
        }
        if !empty {
            line.push(' ');
        }
        line.push_str(word);
        empty = false;
    }
    out.push_str(&line);
    out
}

/// Free text that may hold several lines (a note, an error), each line as
/// `oslab_term_text::lines` shows it and [`wrap`]ped, every line after the
/// first starting with `rest`.
pub fn wrap_lines(text: &str, first: &str, rest: &str, width: Width) -> String {
    lines(text)
        .split('\n')
        .enumerate()
        .map(|(i, l)| {
            let first = if i == 0 { first } else { rest };
            wrap(l, first, rest, width).trim_end().to_string()
        })
        .collect::<Vec<_>>()
        .join("\n")
}

fn verdict_mark(v: Verdict) -> &'static str {
    match v {
        Verdict::Holds => "HOLDS",
        Verdict::Differs => "DIFFERS",
        Verdict::NotTestable => "NOT TESTABLE",
        Verdict::NotJudged => "NOT JUDGED",
    }
}

/// The column names of [`summary_cells`].
pub const SUMMARY_HEADERS: [&str; 7] = ["median", "95% CI", "noise", "min", "max", "CV", "n"];

/// The noise flag of a summary in words: whether its interval can be trusted.
pub fn noise_label(n: oslab_stats::NoiseVerdict) -> &'static str {
    match n {
        oslab_stats::NoiseVerdict::Steady => "steady",
        oslab_stats::NoiseVerdict::Noisy => "noisy",
        oslab_stats::NoiseVerdict::TooFewSamples => "too few samples",
    }
}

/// Median, 95 % CI, noise flag, min, max, CV and n of a summary, as table cells.
pub fn summary_cells(s: &oslab_stats::Summary) -> [String; 7] {
    [
        fmt(s.median),
        s.ci95.map_or_else(
            || "-".into(),
            |c| format!("{} - {}", fmt(c.low), fmt(c.high)),
        ),
        noise_label(s.noise).into(),
        fmt(s.min),
        fmt(s.max),
        pct(s.cv),
        s.n.to_string(),
    ]
}

/// A finding's value and unit as cells: a size in bytes as a person reads it
/// (1.5 MiB, the JSON keeping the bytes); "-" and no unit when the experiment
/// could not determine it (its detail says why).
pub fn finding_cells(f: &oslab_model::Finding) -> [String; 2] {
    if !f.value.is_finite() {
        ["-".into(), String::new()]
    } else if f.unit == "bytes" && f.value >= 0.0 {
        [
            oslab_units::human_bytes(f.value.round() as u64),
            String::new(),
        ]
    } else {
        [fmt(f.value), f.unit.clone()]
    }
}

/// The terminal report of one result, `width` columns wide.
pub fn render_result(r: &ExperimentResult, width: Width) -> String {
    let mut out = String::new();
    let section =
        crate::source::of_section(&r.section).map_or_else(String::new, |w| format!(", after {w}"));
    let head = format!(
        "{}: {} ({}{section}, {:.1} s)",
        r.experiment,
        r.title,
        match r.mode {
            oslab_model::Mode::Quick => "quick",
            oslab_model::Mode::Full => "full",
        },
        r.duration_s
    );
    out.push_str(&wrap(&head, "== ", "   ", width));
    out.push('\n');
    let line = |out: &mut String, first: &str, rest: &str, text: &str| {
        out.push_str(&wrap(text, first, rest, width));
        out.push('\n');
    };
    let free_text = |out: &mut String, first: &str, rest: &str, text: &str| {
        out.push_str(&wrap_lines(text, first, rest, width));
        out.push('\n');
    };
    let load = &r.environment.load;
    if let Some(machine) = &r.simulated {
        let text = format!("{machine}; the model's figures, the same on every run");
        line(&mut out, "   simulated on ", "   ", &text);
    } else {
        line(&mut out, "   ", "   ", &crate::num::load_text(load, "->"));
    }
    if let Some(w) = load.warning.as_ref().filter(|_| r.simulated.is_none()) {
        let text = format!("{w}; treat the figures with care");
        line(&mut out, "   warning: ", "            ", &text);
    }
    match &r.status {
        Status::Completed => {}
        Status::Skipped { reason } => {
            free_text(&mut out, "   skipped: ", "            ", reason);
            return out;
        }
        Status::Failed { error } => {
            free_text(&mut out, "   failed: ", "           ", error);
            return out;
        }
    }
    out.push_str(&figures_text(r, width));
    const HANG: &str = "                  ";
    for c in &r.claims {
        let head = format!("{} ({})", c.text, c.source);
        line(
            &mut out,
            &format!("   [{}] ", verdict_mark(c.verdict)),
            "        ",
            &head,
        );
        line(&mut out, "        expected: ", HANG, &c.expectation);
        line(&mut out, "        observed: ", HANG, &c.observed);
        line(&mut out, "        why: ", "             ", &c.why);
    }
    for n in &r.notes {
        free_text(&mut out, "   note: ", "         ", n);
    }
    out
}

/// A simulation's measurements: the model's samples have no noise to speak of.
fn simulated_measurements(r: &ExperimentResult, width: Width) -> String {
    let rows: Vec<Vec<String>> = r
        .measurements
        .iter()
        .map(|m| match &m.summary {
            Some(s) => vec![
                m.name.clone(),
                m.unit.clone(),
                fmt(s.median),
                fmt(s.min),
                fmt(s.max),
                s.n.to_string(),
            ],
            None => vec![m.name.clone(), m.unit.clone(), "-".into()],
        })
        .collect();
    let headers = ["measurement", "unit", "median", "min", "max", "n"];
    let mut out = fit(&headers, &rows, &[2, 3, 4, 5], width);
    out.push('\n');
    out
}

/// A result's measurements and findings as tables, each followed by a blank line.
fn figures_text(r: &ExperimentResult, width: Width) -> String {
    let mut out = String::new();
    if !r.measurements.is_empty() && r.simulated.is_some() {
        out.push_str(&simulated_measurements(r, width));
    } else if !r.measurements.is_empty() {
        let rows: Vec<Vec<String>> = r
            .measurements
            .iter()
            .map(|m| match &m.summary {
                Some(s) => [m.name.clone(), m.unit.clone()]
                    .into_iter()
                    .chain(summary_cells(s))
                    .chain([s.outliers.len().to_string()])
                    .collect(),
                None => vec![m.name.clone(), m.unit.clone(), "-".into()],
            })
            .collect();
        let headers: Vec<&str> = ["measurement", "unit"]
            .into_iter()
            .chain(SUMMARY_HEADERS)
            .chain(["outliers"])
            .collect();
        out.push_str(&fit(&headers, &rows, &[2, 3, 5, 6, 7, 8, 9], width));
        out.push('\n');
    }
    if !r.findings.is_empty() {
        let rows: Vec<Vec<String>> = r
            .findings
            .iter()
            .map(|f| {
                let [value, unit] = finding_cells(f);
                vec![f.name.clone(), value, unit, f.detail.clone()]
            })
            .collect();
        out.push_str(&fit(
            &["finding", "value", "unit", "detail"],
            &rows,
            &[1],
            width,
        ));
        out.push('\n');
    }
    out
}

/// One line per claim across results: the verdict overview printed after a run.
pub fn render_verdicts(results: &[ExperimentResult], width: Width) -> String {
    let rows: Vec<Vec<String>> = results
        .iter()
        .flat_map(|r| {
            r.claims.iter().map(move |c| {
                vec![
                    r.experiment.clone(),
                    verdict_mark(c.verdict).to_string(),
                    c.text.clone(),
                ]
            })
        })
        .collect();
    if rows.is_empty() {
        return String::new();
    }
    fit(&["experiment", "verdict", "claim"], &rows, &[], width)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn narrow_tables_wrap_between_words_never_inside_an_identifier() {
        let rows = vec![
            vec![
                "ns.processes.futex.cross-cpu.same-l3".to_string(),
                "a long explanation of what this figure means, which wraps over several lines when the screen is narrow".to_string(),
                "2.5".to_string(),
            ],
            vec![
                "vm.dirty_background_bytes".to_string(),
                "the background threshold".to_string(),
                "16".to_string(),
            ],
        ];
        let table = fit(&["name", "what", "value"], &rows, &[2], Some(60));
        for id in [
            "ns.processes.futex.cross-cpu.same-l3",
            "vm.dirty_background_bytes",
        ] {
            assert!(table.contains(id), "{id} whole in:\n{table}");
        }
        for word in ["explanation", "several", "threshold"] {
            assert!(table.contains(word), "{word} whole in:\n{table}");
        }
        assert!(
            table.lines().all(|l| l.chars().count() <= 60),
            "within the width:\n{table}"
        );
    }

    /// Regression: where the longest words did not fit, the table was built with
    /// no floor at all, so a header printed one letter a line and "steady" read
    /// "ste/ady"; such a table is now one block a row, every word whole.
    #[test]
    fn a_table_its_words_cannot_fit_becomes_one_block_a_row() {
        let headers = ["measurement", "unit", "median", "noise", "outliers"];
        let rows = vec![vec![
            "ns.processes.futex.cross-cpu.same-l3".to_string(),
            "ns".to_string(),
            "2383.8".to_string(),
            "steady".to_string(),
            "0".to_string(),
        ]];
        let out = fit(&headers, &rows, &[2, 4], Some(40));
        assert_eq!(
            out,
            " ns.processes.futex.cross-cpu.same-l3\n   unit ns · median 2383.8\n   noise steady · outliers 0"
        );
        let fits = fit(&headers, &rows, &[2, 4], Some(100));
        assert!(fits.starts_with(" measurement"), "{fits}");
    }

    #[test]
    fn cells_and_paragraphs_show_no_control_character_raw() {
        let evil = "vda\x1b]0;x\x07\u{202E}\tb\nc".to_string();
        let table = fit(&["name\x1b[2J"], &[vec![evil.clone()]], &[], Some(60));
        let para = wrap(&evil, "  ", "  ", Some(60));
        let free = wrap_lines("one\x1b[2J\ntwo", "note: ", "      ", None);
        for text in [&table, &para, &free] {
            assert!(
                !text
                    .chars()
                    .any(|c| c != '\n' && oslab_term_text::needs_escape(c)),
                "{text:?}"
            );
        }
        assert!(table.contains("name\\u{1b}[2J"), "{table}");
        for text in [&table, &para] {
            assert!(
                text.contains("vda\\u{1b}]0;x\\u{7}\\u{202e}\\tb\\nc"),
                "{text}"
            );
        }
        assert_eq!(free, "note: one\\u{1b}[2J\n      two");
    }

    /// Regression: mem.latency's cache edges printed 1617094 where a reader
    /// reads 1.5 MiB.
    #[test]
    fn a_size_in_bytes_reads_in_human_units() {
        let f = |value: f64, unit: &str| oslab_model::Finding {
            name: "edge.L2".into(),
            value,
            unit: unit.into(),
            detail: String::new(),
            range: None,
        };
        assert_eq!(finding_cells(&f(1_617_094.0, "bytes")), ["1.54 MiB", ""]);
        assert_eq!(finding_cells(&f(512.0, "bytes")), ["512 B", ""]);
        assert_eq!(finding_cells(&f(f64::NAN, "bytes")), ["-", ""]);
        assert_eq!(finding_cells(&f(3.5, "ns")), ["3.500", "ns"]);
    }

    #[test]
    fn a_number_column_has_one_format() {
        let rows: Vec<Vec<String>> = [
            ["a", "2.013", "3"],
            ["b", "2", "4"],
            ["c", "-", "5"],
            ["d", "216", "6"],
        ]
        .iter()
        .map(|r| r.iter().map(|c| c.to_string()).collect())
        .collect();
        let out = same_format(&rows, &[1, 2]);
        let col = |i: usize| out.iter().map(|r| r[i].as_str()).collect::<Vec<_>>();
        assert_eq!(col(1), ["2.013", "2.000", "-", "216.0"]);
        assert_eq!(
            col(2),
            ["3", "4", "5", "6"],
            "a column of whole numbers stays whole"
        );
        assert_eq!(col(0), ["a", "b", "c", "d"], "text columns are not touched");
        let table = fit(&["k", "v", "n"], &rows, &[1, 2], None);
        assert!(table.contains("2.000") && !table.contains(" 2 "), "{table}");
    }
}
