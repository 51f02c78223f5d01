//! `oslab wcall bench-writes` (hidden): timed small pwrite() calls for
//! wb.wcall-overhead.

use oslab_wcall::cli::WcallBenchArgs;

use crate::failure::{CmdResult, Failure};
use crate::output::print;

pub fn run(a: WcallBenchArgs) -> CmdResult {
    let v = oslab_lab::wb::wcall_overhead::time_pwrites(
        &a.file,
        a.batches.clamp(1, 1000),
        a.per_batch.clamp(1, 10_000_000),
    )
    .map_err(|e| Failure::runtime(format!("{}: {e}", a.file.display())))?;
    print(&(serde_json::to_string(&v).map_err(|e| Failure::runtime(e.to_string()))? + "\n"));
    Ok(0)
}
