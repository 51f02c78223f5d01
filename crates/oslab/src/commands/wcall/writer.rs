//! `oslab wcall writer` (hidden): one writer process of `sim validate`'s real cells.

use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

use oslab_wcall::cli::WcallWriterArgs;

use crate::failure::{CmdResult, Failure};
use crate::output::print;

pub fn run(a: WcallWriterArgs) -> CmdResult {
    let spec = oslab_services::timed_writer::WriterSpec {
        path: a.file.clone(),
        chunk: a.chunk as usize,
        period: Duration::from_secs_f64(a.period_ms.max(0.0) / 1000.0),
        count: a.count,
        fifo_priority: a.fifo,
        nice: a.nice,
    };
    let stop = Arc::new(AtomicBool::new(false));
    let start = a.start_at.unwrap_or_else(oslab_sys::clock::monotonic_ns);
    if let Some(d) = a.duration {
        let s = stop.clone();
        let end = start + (d.max(0.0) * 1e9) as u64;
        std::thread::spawn(move || {
            let now = oslab_sys::clock::monotonic_ns();
            std::thread::sleep(Duration::from_nanos(end.saturating_sub(now)));
            s.store(true, std::sync::atomic::Ordering::Relaxed);
        });
    }
    let trace = oslab_services::timed_writer::run_writer(spec, start, stop);
    print(&(serde_json::to_string(&trace).map_err(|e| Failure::runtime(e.to_string()))? + "\n"));
    Ok(if trace.error.is_some() { 1 } else { 0 })
}
