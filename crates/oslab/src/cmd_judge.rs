//! `oslab judge`: raw data saved by `oslab run --save-raw`, judged by this oslab.

use oslab_lab::Registry;
use oslab_lab::harness::{rawfile::RawFile, runner};
use oslab_sys::infile;

use crate::CmdResult;
use crate::cli::JudgeArgs;
use crate::cmd_run::{Outputs, check_targets, deliver, exporters};
use crate::db::DbTarget;
use crate::failure::Failure;

pub fn run(a: JudgeArgs) -> CmdResult {
    let registry = Registry::default();
    let outputs = Outputs {
        json: a.json,
        csv: a.csv,
        plots: a.plots,
        html: a.html,
        save_raw: None,
        db: DbTarget::Off,
        label: None,
    };
    let json = check_targets(&outputs)?;
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
    let runs = files
        .into_iter()
        .map(|result| runner::Ran { result, raw: None });
    deliver(runs, None, exporters(&outputs, json, None))
}
