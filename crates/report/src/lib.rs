//! Rendering results: every function takes values and returns text or bytes; the
//! binary decides where they go. Every output format (terminal, JSON, CSV, SVG,
//! HTML) implements [`exporter::Exporter`], one file per format; the binary chooses
//! the exporters a command writes.
#![forbid(unsafe_code)]

pub mod compare;
pub mod csv_out;
pub mod dirty;
pub mod export;
pub mod exporter;
pub mod html;
pub mod info;
pub mod json;
mod markup;
pub mod num;
pub mod stalls;
pub mod svg;
pub mod table;
pub mod terminal;
pub mod watch;
pub mod wcall;
