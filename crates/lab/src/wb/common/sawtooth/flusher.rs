//! The flusher as the kernel recorded it (writeback_start/writeback_written): its
//! passes for one reason on the test file's device, the pages each wrote, and the
//! chunk the kernel's own bandwidth estimate gives for each (fs/fs-writeback.c
//! writeback_chunk_size: round_down(min(avg_write_bandwidth / 2, dirty_limit / 8) +
//! 4 MiB, 4 MiB)), so a prediction can use the estimate the kernel had at the time
//! instead of assuming which term of the min wins.

use oslab_model::Finding;
use oslab_model::trace::FlushReason;
use oslab_trace::analysis::episodes;
use oslab_trace::records::FlushPass;

use super::SawRaw;
use crate::harness::finding;
use crate::services::dirty_rules::chunk_for;

const MIB: f64 = (1u64 << 20) as f64;

/// The flusher's passes of one reason, as the kernel recorded them.
#[derive(Debug, Clone, PartialEq)]
pub struct KernelFlush {
    /// Passes that wrote pages.
    pub passes: usize,
    /// Median MiB one pass wrote.
    pub written_mib: f64,
    /// Median chunk (MiB) the kernel's estimate at each pass's start gives.
    pub predicted_chunk_mib: f64,
    /// Median avg_write_bandwidth at the passes' start, MiB/s.
    pub avg_write_bw_mib_s: f64,
    /// Passes within 100 ms of each other grouped: how many, median MiB, and the
    /// median time between their starts.
    pub episodes: usize,
    pub episode_mib: f64,
    pub episode_interval_s: Option<f64>,
}

fn median(v: &[f64]) -> f64 {
    oslab_stats::describe::median(v).unwrap_or(f64::NAN)
}

/// The passes of `reason` on the run's device; None without a trace, without the
/// device's name, or without such a pass.
pub fn kernel_flush(raw: &SawRaw, reason: FlushReason, limit: u64) -> Option<KernelFlush> {
    let c = raw.kernel.captured()?;
    let bdi = raw.bdi.as_deref()?;
    let passes: Vec<&FlushPass> = c
        .flushes
        .iter()
        .filter(|f| f.bdi == bdi && f.reason == reason && f.pages > 0)
        .collect();
    if passes.is_empty() {
        return None;
    }
    let page = c.page_size;
    let written: Vec<f64> = passes
        .iter()
        .map(|f| (f.pages * page) as f64 / MIB)
        .collect();
    let predicted: Vec<f64> = passes
        .iter()
        .map(|f| chunk_for(f.avg_write_bw * page, limit) as f64 / MIB)
        .collect();
    let bw: Vec<f64> = passes
        .iter()
        .map(|f| (f.avg_write_bw * page) as f64 / MIB)
        .collect();
    let eps = episodes(&passes, 100_000_000);
    let starts: Vec<f64> = eps.iter().map(|e| e.0 as f64 / 1e9).collect();
    let gaps: Vec<f64> = starts.windows(2).map(|w| w[1] - w[0]).collect();
    let ep_mib: Vec<f64> = eps.iter().map(|e| (e.2 * page) as f64 / MIB).collect();
    Some(KernelFlush {
        passes: passes.len(),
        written_mib: median(&written),
        predicted_chunk_mib: median(&predicted),
        avg_write_bw_mib_s: median(&bw),
        episodes: eps.len(),
        episode_mib: median(&ep_mib),
        episode_interval_s: (!gaps.is_empty()).then(|| median(&gaps)),
    })
}

/// Findings `kernel.<reason>_*` for the passes of one reason.
pub fn findings(k: &KernelFlush, reason: FlushReason) -> Vec<Finding> {
    let r = reason.name();
    let mut out = vec![
        finding(
            &format!("kernel.{r}_passes"),
            k.passes as f64,
            "count",
            format!(
                "{r} passes of the flusher that wrote pages (writeback_start/writeback_written)"
            ),
        ),
        finding(
            &format!("kernel.{r}_pass_mib"),
            k.written_mib,
            "MiB",
            "median written by one pass",
        ),
        finding(
            &format!("kernel.{r}_predicted_chunk_mib"),
            k.predicted_chunk_mib,
            "MiB",
            "median chunk the kernel's estimate at each pass gives: round_down(min(avg_write_bw / 2, limit / 8) + 4 MiB, 4 MiB)",
        ),
        finding(
            "kernel.avg_write_bw_mib_s",
            k.avg_write_bw_mib_s,
            "MiB/s",
            "median of the kernel's avg_write_bandwidth for the device when the passes began",
        ),
        finding(
            &format!("kernel.{r}_episodes"),
            k.episodes as f64,
            "count",
            format!(
                "runs of {r} passes less than 100 ms apart; median {:.1} MiB each",
                k.episode_mib
            ),
        ),
    ];
    if let Some(i) = k.episode_interval_s {
        out.push(finding(
            &format!("kernel.{r}_episode_interval_s"),
            i,
            "s",
            "median time between the starts of two episodes",
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_chunk_follows_the_smaller_term() {
        // 64 MiB hard limit: limit / 8 = 8 MiB; a fast device takes that term
        assert_eq!(chunk_for(200 << 20, 64 << 20), 12 << 20);
        // an estimate of 6 MiB/s: 3 MiB + 4 MiB rounds down to 4 MiB
        assert_eq!(chunk_for(6 << 20, 64 << 20), 4 << 20);
        // 10 MiB/s: 5 + 4 = 9 -> 8 MiB
        assert_eq!(chunk_for(10 << 20, 64 << 20), 8 << 20);
    }
}
