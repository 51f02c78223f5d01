//! `oslab wcall writer` (hidden): one writer process of `sim validate`'s real cells.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

use clap::Args;
use oslab_sys::parse::size::parse_human_size;

use crate::failure::{CmdResult, Failure};
use crate::output::print;

#[derive(Debug, Args)]
pub struct WcallWriterArgs {
    #[arg(long)]
    pub file: PathBuf,
    #[arg(long, default_value = "512KiB")]
    pub chunk: String,
    /// Milliseconds between writes (0: back to back)
    #[arg(long, default_value_t = 20.0)]
    pub period_ms: f64,
    #[arg(long)]
    pub count: Option<u64>,
    /// Stop after this many seconds
    #[arg(long)]
    pub duration: Option<f64>,
    #[arg(long)]
    pub fifo: Option<i32>,
    #[arg(long)]
    pub nice: Option<i32>,
    /// Common start time (CLOCK_MONOTONIC ns) shared by the writers of one run
    #[arg(long)]
    pub start_at: Option<u64>,
}

pub fn run(a: WcallWriterArgs) -> CmdResult {
    let chunk = parse_human_size(&a.chunk)
        .map_err(|e| Failure::usage(format!("--chunk: {e}")))?
        .clamp(1, 1 << 30) as usize;
    let spec = oslab_lab::wb::trace::WriterSpec {
        path: a.file.clone(),
        chunk,
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
    let trace = oslab_lab::wb::trace::run_writer(spec, start, stop);
    print(&(serde_json::to_string(&trace).map_err(|e| Failure::runtime(e.to_string()))? + "\n"));
    Ok(if trace.error.is_some() { 1 } else { 0 })
}
