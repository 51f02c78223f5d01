use super::chunk::bandwidth_for_chunk;
use super::judge::judge;
use super::*;
use oslab_model::Claim;
use oslab_model::Verdict;
use oslab_model::trace::FlushReason;
use oslab_services::dirty_rules;
use oslab_services::sawtooth::testing::{saw_raw, sawtooth_polls};

fn plan() -> Plan {
    Plan {
        rate: 4 << 20,
        background: 32 << 20,
        duration: 40.0,
    }
}

#[test]
fn prediction_matches_the_figures_seen_here() {
    // writeback-kernel.md: 32 MiB background, 4 MiB/s: peaks 32.2 MiB, troughs
    // 20.4 MiB, 3.0 s period, first peak at 8 s (hard limit 64 MiB)
    let p = dirty_rules::background(4 << 20, 32 << 20, 64 << 20);
    assert_eq!(dirty_rules::background_chunk(64 << 20), 12 << 20);
    assert_eq!(p.peak_mib, 32.0);
    assert_eq!(p.trough_mib, 20.0);
    assert_eq!(p.period_s, 3.0);
    assert_eq!(p.first_peak_s, 8.0);
    assert_eq!(bandwidth_for_chunk(4.0), (0.0, 8.0));
    assert_eq!(bandwidth_for_chunk(12.0), (16.0, 24.0));
}

fn claims(raw: &SawRaw) -> (Claim, Claim) {
    let out = judge(&plan(), raw, 1);
    (out.claims[0].clone(), out.claims[1].clone())
}

#[test]
fn every_verdict_of_both_claims() {
    // the predicted sawtooth: 32 -> 20 MiB every 3 s
    let (saw, zero) = claims(&saw_raw(sawtooth_polls(4.0, 32.0, 20.0, 40.0), 0));
    assert_eq!(saw.verdict, Verdict::Holds, "{saw:?}");
    assert!(
        saw.expectation
            .contains("round_down(min(write bandwidth / 2"),
        "{}",
        saw.expectation
    );
    assert!(
        saw.expectation.contains("median trough"),
        "{}",
        saw.expectation
    );
    assert_eq!(zero.verdict, Verdict::Differs);
    assert!(zero.why.contains("chunks of 12 MiB"), "{}", zero.why);
    // the runs seen here: 4 MiB chunks, a 1 s period, 28 MiB troughs
    let (saw, _) = claims(&saw_raw(sawtooth_polls(4.0, 32.0, 28.0, 40.0), 0));
    assert_eq!(saw.verdict, Verdict::Differs);
    assert!(saw.why.contains("bandwidth term"), "{}", saw.why);
    assert!(saw.why.contains("0 to 8 MiB/s"), "{}", saw.why);
    assert!(
        saw.why.contains("kernel tracing: not available"),
        "{}",
        saw.why
    );
    // the author's kernel: everything written
    let (saw, zero) = claims(&saw_raw(sawtooth_polls(4.0, 32.0, 0.0, 40.0), 0));
    assert_eq!(zero.verdict, Verdict::Holds);
    assert_eq!(saw.verdict, Verdict::Differs);
    // other dirtiers lift the peaks
    let (saw, _) = claims(&saw_raw(sawtooth_polls(4.0, 40.0, 28.0, 40.0), 8));
    assert!(saw.why.contains("other dirtiers"), "{}", saw.why);
    // too short a run: not judged, with the reason
    let (saw, zero) = claims(&saw_raw(sawtooth_polls(4.0, 32.0, 20.0, 5.0), 0));
    assert_eq!(saw.verdict, Verdict::NotJudged);
    assert!(saw.why.contains("run longer"), "{}", saw.why);
    assert_eq!(zero.verdict, Verdict::NotJudged);
}

/// `passes` background passes of `chunk_mib` each, the kernel's estimate
/// `bw_mib_s` at their start, one a second.
fn traced(mut raw: SawRaw, passes: u64, chunk_mib: u64, bw_mib_s: u64) -> SawRaw {
    use oslab_trace::analysis::Captured;
    use oslab_trace::records::FlushPass;
    let flushes = (0..passes)
        .map(|i| FlushPass {
            start_ns: i * 1_000_000_000,
            end_ns: i * 1_000_000_000 + 1_000_000,
            bdi_id: 1,
            bdi: "254:0".into(),
            reason: FlushReason::Background,
            pages: chunk_mib * 256,
            avg_write_bw: bw_mib_s * 256,
            write_bw: bw_mib_s * 256,
            dirty_ratelimit: 0,
        })
        .collect();
    raw.kernel = oslab_trace::TraceOutcome::Traced(Box::new(Captured {
        flushes,
        ..Captured::default()
    }));
    raw
}

#[test]
fn the_kernels_own_estimate_sizes_the_prediction() {
    // The runs that used to flip: 4 MiB flushes, 28.4 MiB troughs, a 1 s
    // period. The kernel's estimate then was 6 MiB/s: min(3, 8) + 4 -> 4 MiB.
    let raw = traced(saw_raw(sawtooth_polls(4.0, 32.0, 28.4, 40.0), 0), 30, 4, 6);
    let out = judge(&plan(), &raw, 1);
    let saw = &out.claims[0];
    assert_eq!(saw.verdict, Verdict::Holds, "{saw:?}");
    assert!(
        saw.expectation.contains("avg_write_bandwidth 6.0 MiB/s"),
        "{}",
        saw.expectation
    );
    assert!(
        saw.why.contains("its own bandwidth estimate (6.0 MiB/s)"),
        "{}",
        saw.why
    );
    let f = |n: &str| out.findings.iter().find(|f| f.name == n).unwrap().value;
    assert_eq!(f("kernel.background_passes"), 30.0);
    assert_eq!(f("kernel.background_predicted_chunk_mib"), 4.0);
    assert_eq!(f("kernel.avg_write_bw_mib_s"), 6.0);
    // With a fast device in the estimate the same 12 MiB rule as before holds.
    let raw = traced(
        saw_raw(sawtooth_polls(4.0, 32.0, 20.0, 40.0), 0),
        10,
        12,
        200,
    );
    assert_eq!(judge(&plan(), &raw, 1).claims[0].verdict, Verdict::Holds);
    // A kernel that flushed 12 MiB chunks while the sawtooth shows 4 MiB: the
    // "why" says the flusher kept its rule and looks elsewhere.
    let raw = traced(
        saw_raw(sawtooth_polls(4.0, 32.0, 28.4, 40.0), 0),
        10,
        12,
        200,
    );
    let saw = &judge(&plan(), &raw, 1).claims[0];
    assert_eq!(saw.verdict, Verdict::Differs);
    assert!(saw.why.contains("kept to its rule"), "{}", saw.why);
}

#[test]
fn findings_keep_their_names() {
    let out = judge(
        &plan(),
        &saw_raw(sawtooth_polls(4.0, 32.0, 20.0, 40.0), 0),
        1,
    );
    for n in [
        "predicted_peak_mib",
        "peak_mib",
        "trough_mib",
        "period_s",
        "first_peak_s",
        "period_error",
        "max_write_ms",
        "implied_chunk_mib",
        "device_peak_write_mib_s",
    ] {
        assert!(out.findings.iter().any(|f| f.name == n), "{n}");
    }
    assert_eq!(out.plots[0].id, "dirty");
    assert!(out.plots[0].series[0].name.starts_with("Dirty"));
}
