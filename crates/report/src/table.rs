//! Terminal tables of results: measurements, findings and claim verdicts.

use comfy_table::{Cell, CellAlignment, ContentArrangement, Table};
use oslab_model::{ExperimentResult, Status, Verdict};

use crate::num::{fmt, pct};

/// No borders and no row rules, one rule under the header: reads well in a terminal
/// and in a log file alike.
const HEADER_RULE_ONLY: &str = "     ──            ";

/// A plain table with a header row; `right` marks columns to right-align.
pub fn simple(headers: &[&str], rows: &[Vec<String>], right: &[usize]) -> String {
    let mut t = Table::new();
    t.load_preset(HEADER_RULE_ONLY)
        .set_content_arrangement(ContentArrangement::Disabled)
        .set_header(headers.iter().map(Cell::new));
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
    t.to_string()
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
pub const SUMMARY_HEADERS: [&str; 6] = ["median", "95% CI", "min", "max", "CV", "n"];

/// Median, 95 % CI, min, max, CV and n of a summary, as table cells.
pub fn summary_cells(s: &oslab_stats::Summary) -> [String; 6] {
    [
        fmt(s.median),
        match (&s.ci95, s.noise) {
            (Some(c), oslab_stats::NoiseVerdict::Noisy) => {
                format!("{} - {} (noisy)", fmt(c.low), fmt(c.high))
            }
            (Some(c), _) => format!("{} - {}", fmt(c.low), fmt(c.high)),
            (None, _) => "- (too few samples)".into(),
        },
        fmt(s.min),
        fmt(s.max),
        pct(s.cv),
        s.n.to_string(),
    ]
}

/// The terminal report of one result.
pub fn render_result(r: &ExperimentResult) -> String {
    let mut out = String::new();
    let section = if r.section == "-" {
        String::new()
    } else {
        format!(", material section {}", r.section)
    };
    out.push_str(&format!(
        "== {}: {} ({}{section}, {:.1} s)\n",
        r.experiment,
        r.title,
        match r.mode {
            oslab_model::Mode::Quick => "quick",
            oslab_model::Mode::Full => "full",
        },
        r.duration_s
    ));
    let load = &r.environment.load;
    out.push_str(&format!(
        "   steal {} · CPUs busy {} · load {:.2} -> {:.2}\n",
        pct(load.steal_fraction),
        pct(load.cpu_busy_fraction),
        load.loadavg_before[0],
        load.loadavg_after[0]
    ));
    if let Some(w) = &load.warning {
        out.push_str(&format!("   warning: {w}; treat the figures with care\n"));
    }
    match &r.status {
        Status::Completed => {}
        Status::Skipped { reason } => {
            out.push_str(&format!("   skipped: {reason}\n"));
            return out;
        }
        Status::Failed { error } => {
            out.push_str(&format!("   failed: {error}\n"));
            return out;
        }
    }
    if !r.measurements.is_empty() {
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
        out.push_str(&simple(&headers, &rows, &[2, 3, 4, 5, 6, 7, 8]));
        out.push('\n');
    }
    if !r.findings.is_empty() {
        let rows: Vec<Vec<String>> = r
            .findings
            .iter()
            .map(|f| {
                vec![
                    f.name.clone(),
                    fmt(f.value),
                    f.unit.clone(),
                    f.detail.clone(),
                ]
            })
            .collect();
        out.push_str(&simple(
            &["finding", "value", "unit", "detail"],
            &rows,
            &[1],
        ));
        out.push('\n');
    }
    for c in &r.claims {
        out.push_str(&format!(
            "   [{}] {} ({})\n        expected: {}\n        observed: {}\n        why: {}\n",
            verdict_mark(c.verdict),
            c.text,
            c.source,
            c.expectation,
            c.observed,
            c.why
        ));
    }
    for n in &r.notes {
        out.push_str(&format!("   note: {n}\n"));
    }
    out
}

/// One line per claim across results: the verdict overview printed after a run.
pub fn render_verdicts(results: &[ExperimentResult]) -> String {
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
    simple(&["experiment", "verdict", "claim"], &rows, &[])
}
