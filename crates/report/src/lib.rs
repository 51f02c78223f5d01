//! oslab's outputs, bytes out and no I/O: every function takes values and returns
//! text or bytes; the binary decides where they go.
//!
//! Every output format implements [`exporter::Exporter`] in a file of its own
//! ([`terminal`], [`json`], [`csv_out`], [`svg`], [`html`]); the binary chooses the
//! exporters a command writes. What several formats of one kind of document share
//! is rendered beside that document rather than in each format's file: a
//! comparison's text and page in [`compare`] (its page built of the pieces every
//! page is, `page`); the stored runs of `oslab export` are a document of their own
//! ([`export`]). The other modules render one command's text (`info`, `dirty`,
//! `stalls`, `wcall`, `watch`).
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
mod page;
pub mod source;
pub mod stalls;
pub mod svg;
pub mod table;
pub mod terminal;
pub mod watch;
pub mod wcall;
