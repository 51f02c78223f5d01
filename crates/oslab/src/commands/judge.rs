//! `oslab judge`: raw data saved by `oslab run --save-raw`, judged by this oslab.

use std::path::PathBuf;

use clap::Args;
use oslab_harness::{rawfile::RawFile, runner};
use oslab_lab::Registry;
use oslab_sys::infile;

use crate::args::MaxInputArg;
use crate::exports::{Exports, OutputArgs, worded};
use crate::failure::CmdResult;
use crate::failure::Failure;
use crate::results::deliver;

#[derive(Debug, Args)]
#[command(mut_args(worded(&[
    ("csv", "Write CSV files of every result into DIR"),
    ("html", "Also write one self-contained HTML report to FILE"),
])))]
pub struct JudgeArgs {
    /// Raw files written by `oslab run --save-raw DIR` (.raw.json or .raw.json.gz;
    /// `-` for standard input)
    #[arg(required = true, value_name = "RAWFILE")]
    pub files: Vec<PathBuf>,
    #[command(flatten)]
    pub outputs: OutputArgs,
    #[command(flatten)]
    pub input: MaxInputArg,
}

pub fn run(a: JudgeArgs) -> CmdResult {
    let registry = Registry::default();
    let exports = Exports::from_args(&a.outputs, &[])?;
    let mut files = Vec::new();
    for path in &a.files {
        let f = RawFile::read(path, a.input.max_input)?;
        let exp = registry.get(&f.experiment).ok_or_else(|| {
            Failure::usage(format!(
                "{}: experiment '{}' is not one this oslab knows",
                infile::display_name(path),
                f.experiment
            ))
        })?;
        // judged here, before anything is written: raw data the experiment cannot
        // read is the file's fault (a usage error), like a file that is not JSON
        let result = runner::judge_outside_file(exp, &f)
            .map_err(|why| Failure::usage(format!("{}: {why}", infile::display_name(path))))?;
        files.push(result);
    }
    let runs = files.into_iter().map(|result| runner::Ran {
        result,
        raw: None,
        unmet: None,
    });
    deliver(runs, None, exports.into_outputs(None))
}
