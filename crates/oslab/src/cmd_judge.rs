//! `oslab judge`: raw data saved by `oslab run --save-raw`, judged by this oslab.

use oslab_lab::{Registry, rawfile::RawFile, runner};

use crate::CmdResult;
use crate::cli::JudgeArgs;
use crate::cmd_run::{Outputs, check_targets, deliver, exporters};
use crate::db::DbTarget;
use crate::failure::Failure;

pub fn run(a: JudgeArgs) -> CmdResult {
    let registry = Registry::default();
    let mut files = Vec::new();
    for path in &a.files {
        let f = RawFile::read(path).map_err(Failure::usage)?;
        let exp = registry.get(&f.experiment).ok_or_else(|| {
            Failure::usage(format!(
                "{}: experiment '{}' is not one this oslab knows",
                path.display(),
                f.experiment
            ))
        })?;
        if exp.shaped().is_none() {
            return Err(Failure::usage(format!(
                "{}: {} cannot be judged from raw data yet",
                path.display(),
                f.experiment
            )));
        }
        files.push((exp, f));
    }
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
    let runs = files.into_iter().map(|(exp, f)| runner::Ran {
        result: runner::judge_file(exp, &f),
        raw: None,
    });
    deliver(runs, None, exporters(&outputs, json, None))
}
