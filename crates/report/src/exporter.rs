//! Every output format behind one trait, after hyperfine's `Exporter`
//! (`fn serialize(&self, results, ...) -> Result<Vec<u8>>`): a format turns what it
//! is given into bytes and never writes them; the binary chooses the exporters and
//! where their bytes go (a file, a folder, standard output through the one path that
//! ends quietly on a closed pipe).
//!
//! Each format lives in its own file and implements [`Exporter`] for every document
//! it renders:
//!
//! | format | type | renders |
//! | --- | --- | --- |
//! | terminal tables | [`crate::terminal::Terminal`] | [`Results`], [`Comparison`] |
//! | JSON | [`crate::json::Json`] | [`Results`], [`Comparison`], [`Stored`] |
//! | HTML | [`crate::html::Html`] | [`Results`], [`Comparison`] |
//! | CSV | [`crate::csv_out::Csv`], [`crate::csv_out::CsvTable`] | [`Results`] (a folder), [`Stored`] (one table) |
//! | SVG plots | [`crate::svg::Svg`] | [`Results`] (a folder) |
//! | the results database | `oslab::db::Database` (in the binary: `report` stays bytes out and does not link SQLite) | [`Results`] |
//!
//! Adding a format is one new file here with its `impl Exporter<...>` blocks, and
//! the flag that chooses it in the binary.
//!
//! [`Comparison`]: oslab_model::compare::Comparison
//! [`Stored`]: crate::export::Stored

use oslab_model::ExperimentResult;

/// When an exporter is asked: results of a run come one by one, and a format that
/// writes a whole file rewrites it after each, so an interrupted run keeps what it
/// finished. A document that comes whole (a comparison, stored runs, results read
/// back) is asked once, `Done`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stage {
    /// A result was just added (the newest is the last); more may follow.
    Added,
    /// Everything is in.
    Done,
}

/// How the pieces an exporter makes add up.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shape {
    /// Each call makes the whole document so far, one unnamed piece (JSON, HTML): a
    /// file is rewritten with it; standard output prints only the last.
    Document,
    /// Each call makes what is new (a result's table, its CSV files, its plots):
    /// printed as it comes, or put into a folder under each piece's name.
    Pieces,
}

/// Some output: a file's name inside a folder (empty for a document or for text to
/// print), and its bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Piece {
    pub name: String,
    pub bytes: Vec<u8>,
}

impl Piece {
    /// A document, or text to print.
    pub fn whole(bytes: impl Into<Vec<u8>>) -> Piece {
        Piece {
            name: String::new(),
            bytes: bytes.into(),
        }
    }

    /// A file to put into a folder.
    pub fn file(name: impl Into<String>, bytes: impl Into<Vec<u8>>) -> Piece {
        Piece {
            name: name.into(),
            bytes: bytes.into(),
        }
    }
}

/// Why a format could not render what it was given.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExportError(pub String);

impl std::fmt::Display for ExportError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for ExportError {}

/// One output format for documents of type `D`.
pub trait Exporter<D: ?Sized> {
    /// Whether each call makes the whole document or what is new.
    fn shape(&self) -> Shape;
    /// The bytes for `doc` at `stage` (no I/O here, except in the database's
    /// exporter, which keeps results rather than rendering them).
    fn serialize(&mut self, doc: &D, stage: Stage) -> Result<Vec<Piece>, ExportError>;
}

/// Results of experiments: a run's as they come (`run`, `judge`, `sim run`, `sim
/// validate`), or results read back (`report`).
#[derive(Debug, Clone, PartialEq)]
pub struct Results {
    /// Every result so far, in order; the newest last.
    pub all: Vec<ExperimentResult>,
    /// What made them: a run's command line, or the sources `oslab report` read.
    /// The HTML page shows it; the JSON records it as `command`.
    pub source: String,
    /// The oslab that wrote them (the JSON's `oslab_version`).
    pub oslab_version: String,
}

impl Results {
    /// The newest result (the one an `Added` call is about).
    pub fn newest(&self) -> Option<&ExperimentResult> {
        self.all.last()
    }
}
