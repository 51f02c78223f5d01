//! Rendering results: every function takes values and returns text or bytes; the
//! binary decides where they go.
#![forbid(unsafe_code)]

pub mod csv_out;
pub mod info;
pub mod json;
pub mod num;
pub mod svg;
pub mod table;
pub mod watch;
