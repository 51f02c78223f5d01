//! `oslab report`

use crate::args::{DbArg, MaxInputArg};
use clap::Args;
use std::path::PathBuf;

use oslab_harness::runner;
use oslab_report::exporter::{Results, Stage};
use oslab_report::html::Html;
use oslab_report::terminal::Terminal;

use crate::failure::CmdResult;
use crate::output::{Destination, Output, check_file_target, write_all};
use crate::sources::{LazyStore, load};

#[derive(Debug, Args)]
pub struct ReportArgs {
    /// Result files written by `oslab run --json`, or run ids from `oslab history`
    /// (`latest` for the newest run)
    #[arg(required = true, value_name = "RESULTS")]
    pub sources: Vec<String>,
    /// Write the report as one self-contained HTML page to FILE (else tables on stdout)
    #[arg(long, value_name = "FILE")]
    pub html: Option<PathBuf>,
    #[command(flatten)]
    pub db: DbArg,
    #[command(flatten)]
    pub input: MaxInputArg,
}

pub fn run(a: ReportArgs) -> CmdResult {
    if let Some(p) = &a.html {
        check_file_target(p, "--html")?;
    }
    let mut store = LazyStore::new(a.db.db.as_deref());
    let mut results = Vec::new();
    let mut labels = Vec::new();
    for s in &a.sources {
        let l = load(s, &mut store, a.input.max_input)?;
        labels.push(l.label);
        results.extend(l.results);
    }
    let mut outputs = vec![match &a.html {
        Some(p) => Output::new(Html, Destination::file(p)),
        None => Output::new(
            Terminal {
                width: crate::term::width(),
            },
            Destination::Stdout,
        ),
    }];
    let n = results.len();
    let mut doc = Results {
        all: Vec::with_capacity(n),
        source: labels.join(", "),
        oslab_version: runner::OSLAB_VERSION.to_string(),
    };
    for r in results {
        doc.all.push(r);
        write_all(&mut outputs, &doc, Stage::Added)?;
    }
    // the output says where the page went, once
    write_all(&mut outputs, &doc, Stage::Done)?;
    Ok(0)
}
