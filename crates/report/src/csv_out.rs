//! CSV output: for each result, its raw samples, its summaries, findings, claims and
//! the points of its plots, one file each, named after the experiment
//! (`cpu.syscall.samples.csv`, ...); and one of those tables over the stored runs
//! of `oslab export`.

use oslab_model::ExperimentResult;

use crate::export::{Stored, StoredRun};
use crate::exporter::{ExportError, Exporter, Piece, Results, Shape, Stage};

fn to_bytes(header: &[&str], rows: Vec<Vec<String>>) -> Vec<u8> {
    let mut w = csv::Writer::from_writer(Vec::new());
    w.write_record(header).expect("in-memory write");
    for r in rows {
        w.write_record(&r).expect("in-memory write");
    }
    w.into_inner().expect("in-memory flush")
}

/// The CSV tables of a result.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CsvTable {
    Samples,
    Summary,
    Findings,
    Claims,
    /// Every point of every plot's series: the curves (latency vs working set,
    /// Dirty over time) as rows.
    Series,
}

impl CsvTable {
    pub const ALL: [CsvTable; 5] = [
        CsvTable::Samples,
        CsvTable::Summary,
        CsvTable::Findings,
        CsvTable::Claims,
        CsvTable::Series,
    ];

    pub fn name(self) -> &'static str {
        match self {
            CsvTable::Samples => "samples",
            CsvTable::Summary => "summary",
            CsvTable::Findings => "findings",
            CsvTable::Claims => "claims",
            CsvTable::Series => "series",
        }
    }

    pub fn header(self) -> &'static [&'static str] {
        match self {
            CsvTable::Samples => &["measurement", "index", "value", "unit"],
            CsvTable::Summary => &[
                "measurement",
                "unit",
                "n",
                "median",
                "ci95_low",
                "ci95_high",
                "noise",
                "mean",
                "min",
                "max",
                "mad",
                "cv",
                "outliers",
            ],
            CsvTable::Findings => &["finding", "value", "unit", "detail", "low", "high"],
            CsvTable::Claims => &["claim", "verdict", "text", "expectation", "observed", "why"],
            CsvTable::Series => &["plot", "series", "x", "y", "x_unit", "y_unit"],
        }
    }

    /// The rows of this table for one result.
    pub fn rows(self, r: &ExperimentResult) -> Vec<Vec<String>> {
        match self {
            CsvTable::Samples => r
                .measurements
                .iter()
                .flat_map(|m| {
                    m.samples.iter().enumerate().map(move |(i, v)| {
                        vec![m.name.clone(), i.to_string(), v.to_string(), m.unit.clone()]
                    })
                })
                .collect(),
            CsvTable::Summary => r
                .measurements
                .iter()
                .filter_map(|m| {
                    let s = m.summary.as_ref()?;
                    Some(vec![
                        m.name.clone(),
                        m.unit.clone(),
                        s.n.to_string(),
                        s.median.to_string(),
                        s.ci95.map(|c| c.low.to_string()).unwrap_or_default(),
                        s.ci95.map(|c| c.high.to_string()).unwrap_or_default(),
                        noise_flag(s.noise),
                        s.mean.to_string(),
                        s.min.to_string(),
                        s.max.to_string(),
                        s.mad.to_string(),
                        s.cv.to_string(),
                        s.outliers.len().to_string(),
                    ])
                })
                .collect(),
            CsvTable::Findings => r.findings.iter().map(finding_row).collect(),
            CsvTable::Claims => r
                .claims
                .iter()
                .map(|c| {
                    vec![
                        c.id.clone(),
                        c.verdict.label().to_string(),
                        c.text.clone(),
                        c.expectation.clone(),
                        c.observed.clone(),
                        c.why.clone(),
                    ]
                })
                .collect(),
            CsvTable::Series => r
                .plots
                .iter()
                .flat_map(|p| {
                    p.series.iter().flat_map(move |s| {
                        s.points.iter().map(move |[x, y]| {
                            vec![
                                p.id.clone(),
                                s.name.clone(),
                                number(*x),
                                number(*y),
                                p.x.unit.clone(),
                                p.y.unit.clone(),
                            ]
                        })
                    })
                })
                .collect(),
        }
    }
}

/// A value as pandas reads it: empty for a value that is none.
fn number(v: f64) -> String {
    if v.is_finite() {
        v.to_string()
    } else {
        String::new()
    }
}

/// A finding's row: its range's ends empty where it has none.
fn finding_row(f: &oslab_model::Finding) -> Vec<String> {
    let [low, high] = f.range.map_or([String::new(), String::new()], |[l, h]| {
        [l.to_string(), h.to_string()]
    });
    vec![
        f.name.clone(),
        f.value.to_string(),
        f.unit.clone(),
        f.detail.clone(),
        low,
        high,
    ]
}

/// The noise flag in the JSON's words: `steady`, `noisy` or `too_few_samples`.
fn noise_flag(n: oslab_stats::NoiseVerdict) -> String {
    serde_json::to_value(n)
        .ok()
        .and_then(|v| v.as_str().map(String::from))
        .unwrap_or_default()
}

/// Encodes a header and rows as CSV.
pub fn encode(header: &[&str], rows: Vec<Vec<String>>) -> Vec<u8> {
    to_bytes(header, rows)
}

/// (file name, contents) for every CSV file of one result.
pub fn files(r: &ExperimentResult) -> Vec<(String, Vec<u8>)> {
    CsvTable::ALL
        .iter()
        .map(|t| {
            (
                format!("{}.{}.csv", r.experiment, t.name()),
                to_bytes(t.header(), t.rows(r)),
            )
        })
        .collect()
}

/// CSV files into a folder (`--csv DIR`): the four tables of each result as it comes.
pub struct Csv;

impl Exporter<Results> for Csv {
    fn shape(&self) -> Shape {
        Shape::Pieces
    }
    fn serialize(&mut self, doc: &Results, stage: Stage) -> Result<Vec<Piece>, ExportError> {
        Ok(match (stage, doc.newest()) {
            (Stage::Added, Some(r)) => files(r)
                .into_iter()
                .map(|(name, bytes)| Piece::file(name, bytes))
                .collect(),
            _ => Vec::new(),
        })
    }
}

const PREFIX: [&str; 8] = [
    "run_id",
    "machine",
    "machine_id",
    "kernel",
    "label",
    "experiment",
    "mode",
    "started_at",
];

/// One CSV table over every result of every run: each row of the per-result table
/// prefixed with the run and experiment it belongs to, for notebooks.
fn runs_table(table: CsvTable, runs: &[StoredRun]) -> Vec<u8> {
    let header: Vec<&str> = PREFIX.iter().chain(table.header()).copied().collect();
    let mut rows = Vec::new();
    for StoredRun {
        columns: run,
        results,
        ..
    } in runs
    {
        for r in results {
            let prefix = [
                run.run_id.to_string(),
                run.machine.clone(),
                r.environment.machine.machine_id.clone().unwrap_or_default(),
                run.kernel.clone(),
                run.label.clone().unwrap_or_default(),
                r.experiment.clone(),
                match r.mode {
                    oslab_model::Mode::Quick => "quick".to_string(),
                    oslab_model::Mode::Full => "full".to_string(),
                },
                r.started_at.clone(),
            ];
            for row in table.rows(r) {
                rows.push(prefix.iter().cloned().chain(row).collect());
            }
        }
    }
    encode(&header, rows)
}

/// One table over stored runs, with the run's columns first (`oslab export --format
/// csv --table T`).
impl Exporter<Stored> for CsvTable {
    fn shape(&self) -> Shape {
        Shape::Document
    }
    fn serialize(&mut self, s: &Stored, _: Stage) -> Result<Vec<Piece>, ExportError> {
        Ok(vec![Piece::whole(runs_table(*self, &s.runs))])
    }
}
