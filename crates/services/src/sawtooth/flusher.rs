//! The flusher as the kernel recorded it (writeback_start/writeback_written), or as
//! the simulator did: its passes for one reason on the test file's device, the
//! pages each wrote, and the chunk the kernel's own bandwidth estimate gives for
//! each (fs/fs-writeback.c writeback_chunk_size: round_down(min(avg_write_bandwidth
//! / 2, dirty_limit / 8) + 4 MiB, 4 MiB)), so a prediction can use the estimate the
//! kernel had at the time instead of assuming which term of the min wins.

use oslab_model::Finding;
use oslab_model::trace::FlushReason;
use oslab_trace::analysis::episodes;
use oslab_trace::records::FlushPass;
use oslab_wbsim::Outcome;
use oslab_wbsim::outcome::FlushKind;

use super::SawRaw;
use crate::dirty_rules::chunk_for;
use oslab_harness::finding;

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
    of_passes(&passes, c.page_size, limit)
}

/// The same figures for the simulator's passes of `reason` (its own records of
/// what each pass put under write back, with the estimate it began with).
pub fn simulated_flush(out: &Outcome, reason: FlushReason, limit: u64) -> Option<KernelFlush> {
    let kind = match reason {
        FlushReason::Background => FlushKind::Background,
        FlushReason::Periodic => FlushKind::Periodic,
        _ => return None,
    };
    let page = oslab_wbsim::kernel::PAGE;
    let passes: Vec<FlushPass> = out
        .flushes
        .iter()
        .filter(|f| f.kind == kind && f.pages > 0)
        .map(|f| {
            let at = (f.t_s * 1e9) as u64;
            FlushPass {
                start_ns: at,
                end_ns: at,
                bdi_id: 0,
                bdi: String::new(),
                reason,
                pages: f.pages,
                avg_write_bw: (f.avg_write_bw / page as f64) as u64,
                write_bw: 0,
                dirty_ratelimit: 0,
            }
        })
        .collect();
    let refs: Vec<&FlushPass> = passes.iter().collect();
    of_passes(&refs, page, limit)
}

/// The figures of `passes` (pages of `page` bytes); None without one.
fn of_passes(passes: &[&FlushPass], page: u64, limit: u64) -> Option<KernelFlush> {
    if passes.is_empty() {
        return None;
    }
    // a raw file's counts are untrusted: in floating point they cannot overflow
    let mib = |pages: u64| pages as f64 * page as f64 / MIB;
    let written: Vec<f64> = passes.iter().map(|f| mib(f.pages)).collect();
    let predicted: Vec<f64> = passes
        .iter()
        .map(|f| chunk_for(f.avg_write_bw.saturating_mul(page), limit) as f64 / MIB)
        .collect();
    let bw: Vec<f64> = passes.iter().map(|f| mib(f.avg_write_bw)).collect();
    let eps = episodes(passes, 100_000_000);
    let starts: Vec<f64> = eps.iter().map(|e| e.0 as f64 / 1e9).collect();
    let gaps: Vec<f64> = starts.windows(2).map(|w| w[1] - w[0]).collect();
    let ep_mib: Vec<f64> = eps.iter().map(|e| mib(e.2)).collect();
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
    use oslab_wbsim::outcome::FlushRecord;

    #[test]
    fn the_simulators_passes_give_the_same_figures_by_hand() {
        let pass = |t_s: f64, kind: FlushKind, pages: u64, mib_s: f64| FlushRecord {
            t_s,
            kind,
            pages,
            avg_write_bw: mib_s * MIB,
        };
        let out = Outcome {
            flushes: vec![
                // two passes 50 ms apart: one episode of 8 MiB
                pass(1.0, FlushKind::Background, 1024, 20.0),
                pass(1.05, FlushKind::Background, 1024, 20.0),
                // a periodic pass between is not a background one
                pass(2.0, FlushKind::Periodic, 4096, 20.0),
                pass(3.0, FlushKind::Background, 2048, 24.0),
                pass(6.0, FlushKind::Background, 3072, 30.0),
            ],
            ..Default::default()
        };
        let f = simulated_flush(&out, FlushReason::Background, 64 << 20).unwrap();
        assert_eq!(f.passes, 4);
        // passes of 4, 4, 8 and 12 MiB: median 6; estimates 20, 20, 24, 30: 22
        assert_eq!(f.written_mib, 6.0);
        assert_eq!(f.avg_write_bw_mib_s, 22.0);
        // episodes of 8, 8, 12 MiB starting at 1, 3 and 6 s
        assert_eq!(f.episodes, 3);
        assert_eq!(f.episode_mib, 8.0);
        assert_eq!(f.episode_interval_s, Some(2.5));
        // chunks from 20, 20, 24, 30 MiB/s under 64 MiB: min(estimate / 2, 64 /
        // 8 = 8) + 4 = 12 MiB each
        assert_eq!(f.predicted_chunk_mib, 12.0);
        let p = simulated_flush(&out, FlushReason::Periodic, 64 << 20).unwrap();
        assert_eq!(
            (p.passes, p.written_mib, p.episode_interval_s),
            (1, 16.0, None)
        );
        assert!(simulated_flush(&out, FlushReason::Sync, 64 << 20).is_none());
        assert!(simulated_flush(&Outcome::default(), FlushReason::Background, 1).is_none());
    }

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
