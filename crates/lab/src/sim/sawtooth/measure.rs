//! The real wb.background and wb.periodic, run as `oslab run` runs them.

use super::Raw;
use oslab_harness::runner;
use oslab_harness::{AnyExperiment, Context, LabError};

/// Runs each of `experiments` in turn.
pub fn measure(experiments: &[&dyn AnyExperiment], ctx: &mut Context) -> Result<Raw, LabError> {
    let mut real = Vec::new();
    for &e in experiments {
        let id = e.meta().id;
        ctx.progress.stage(id);
        let ran = runner::run(e, ctx.config, ctx.machine, ctx.progress);
        if let oslab_model::Status::Failed { error } = &ran.result.status {
            return Err(LabError::Failed(format!("{id}: {error}")));
        }
        real.push(
            ran.raw
                .ok_or_else(|| LabError::Failed(format!("{id} recorded nothing")))?,
        );
    }
    Ok(Raw { real })
}
