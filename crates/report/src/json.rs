//! JSON output: the result set as pretty-printed, schema-versioned JSON; a
//! comparison; stored runs for notebooks.

use oslab_model::compare::Comparison;
use oslab_model::{ResultSet, SCHEMA_VERSION};

use crate::export::Stored;
use crate::exporter::{ExportError, Exporter, Piece, Results, Shape, Stage};

/// The result set as JSON text with a trailing newline.
pub fn to_json(set: &ResultSet) -> String {
    let mut s = serde_json::to_string_pretty(set).expect("results serialise");
    s.push('\n');
    s
}

/// Parses results written by [`to_json`].
pub fn from_json(text: &str) -> Result<ResultSet, serde_json::Error> {
    serde_json::from_str(text)
}

/// JSON (`--json F|-`, `oslab export --format json`).
pub struct Json;

impl Exporter<Results> for Json {
    fn shape(&self) -> Shape {
        Shape::Document
    }
    fn serialize(&mut self, doc: &Results, _: Stage) -> Result<Vec<Piece>, ExportError> {
        let set = ResultSet {
            schema_version: SCHEMA_VERSION,
            oslab_version: doc.oslab_version.clone(),
            command: doc.source.clone(),
            results: doc.all.clone(),
        };
        Ok(vec![Piece::whole(to_json(&set))])
    }
}

impl Exporter<Comparison> for Json {
    fn shape(&self) -> Shape {
        Shape::Document
    }
    fn serialize(&mut self, c: &Comparison, _: Stage) -> Result<Vec<Piece>, ExportError> {
        Ok(vec![Piece::whole(
            serde_json::to_string_pretty(c).expect("plain data") + "\n",
        )])
    }
}

/// Whole runs: each run's row from the database with its results beside.
impl Exporter<Stored> for Json {
    fn shape(&self) -> Shape {
        Shape::Document
    }
    fn serialize(&mut self, s: &Stored, _: Stage) -> Result<Vec<Piece>, ExportError> {
        let runs: Vec<serde_json::Value> = s
            .runs
            .iter()
            .map(|run| {
                let mut v = run.row.clone();
                v["results"] = serde_json::to_value(&run.results).expect("plain data");
                v
            })
            .collect();
        let doc = serde_json::json!({
            "schema_version": SCHEMA_VERSION,
            "database": s.database,
            "runs": runs,
        });
        Ok(vec![Piece::whole(
            serde_json::to_string_pretty(&doc).expect("plain data") + "\n",
        )])
    }
}
