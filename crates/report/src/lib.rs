//! Rendering results: every function takes values and returns text or bytes; the
//! binary decides where they go.
#![forbid(unsafe_code)]

pub mod compare;
pub mod csv_out;
pub mod export;
pub mod html;
pub mod info;
pub mod json;
mod markup;
pub mod num;
pub mod svg;
pub mod table;
pub mod watch;
