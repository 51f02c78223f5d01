//! cpu.syscall's measurements and findings, the loop's cost subtracted.

use oslab_model::{Axis, Plot, Scale, Series, SeriesStyle};

use super::calls::Calls;
use super::claims::{cost_claim, mode_switch_claim};
use super::{PROBES, Plan, Raw, WARMUP_ROUNDS};
use crate::cpu::common::timing::{MIN_BATCH_NS, subtract};
use oslab_harness::{Output, finding, measurement};

pub(super) fn median(v: &[f64]) -> f64 {
    oslab_stats::median(v).unwrap_or(f64::NAN)
}

pub(super) fn judge(plan: &Plan, raw: &Raw, seed: u64) -> Output {
    let mut out = Output::default();
    let (corrected, overhead) = measurements(raw, seed, &mut out);
    let fig = |name: &str| corrected.get(name).copied().unwrap_or(f64::NAN);
    let calls = Calls::of(raw);
    out.findings = findings(raw, &calls, overhead, |n| fig(n));
    out.claims = vec![
        mode_switch_claim(raw, &calls),
        cost_claim(raw, fig("gettid"), fig("getppid")),
    ];
    out.notes.push(format!(
        "pinned to cpu{}; {} interleaved rounds after {WARMUP_ROUNDS} warm-up rounds; batches of at least {} us",
        raw.cpu,
        plan.samples,
        MIN_BATCH_NS / 1000
    ));
    if !raw.mitigations.is_empty() {
        out.notes.push(format!(
            "CPU vulnerability mitigations in force: {}",
            raw.mitigations.join("; ")
        ));
    }
    out
}

/// The probes' measurements (the loop subtracted from the others) and the round
/// by round plot; the corrected medians by probe, and the loop's cost.
pub(super) fn measurements(
    raw: &Raw,
    seed: u64,
    out: &mut Output,
) -> (std::collections::BTreeMap<String, f64>, f64) {
    let overhead = raw
        .probes
        .iter()
        .find(|p| p.name == "loop")
        .map_or(0.0, |p| median(&p.ns_per_call));
    let correction = format!(
        "loop cost {overhead:.3} ns per iteration subtracted (an indirect call, as every probe makes)"
    );
    let mut series = Vec::new();
    let mut corrected = std::collections::BTreeMap::new();
    for (p, (_, description, _)) in raw.probes.iter().zip(PROBES) {
        let (samples, corr) = if p.name == "loop" {
            (p.ns_per_call.clone(), None)
        } else {
            (subtract(&p.ns_per_call, overhead), Some(correction.clone()))
        };
        series.push(Series {
            name: p.name.clone(),
            style: SeriesStyle::LinePoints,
            points: samples
                .iter()
                .enumerate()
                .map(|(i, &y)| [i as f64, y])
                .collect(),
        });
        corrected.insert(p.name.clone(), median(&samples));
        out.params
            .insert(format!("batch_{}", p.name), serde_json::json!(p.batch));
        out.measurements.push(measurement(
            &p.name,
            description,
            "ns/call",
            samples,
            seed,
            corr,
        ));
    }
    out.params.insert("cpu".into(), serde_json::json!(raw.cpu));
    out.plots.push(Plot {
        id: "rounds".into(),
        title: "Cost per call, round by round".into(),
        x: Axis::new("round", "", Scale::Linear),
        y: Axis::new("time per call", "ns", Scale::Linear),
        series,
        markers: vec![],
        x_labels: vec![],
    });
    (corrected, overhead)
}

pub(super) fn findings(
    raw: &Raw,
    calls: &Calls,
    overhead: f64,
    fig: impl Fn(&str) -> f64,
) -> Vec<oslab_model::Finding> {
    let raw_median = |name: &str| {
        raw.probes
            .iter()
            .find(|p| p.name == name)
            .map_or(f64::NAN, |p| median(&p.ns_per_call))
    };
    let (gettid_ns, vdso_ns) = (fig("gettid"), fig("clock_gettime_vdso"));
    vec![
        finding(
            "gettid_ns",
            gettid_ns,
            "ns",
            "median cost of one gettid system call",
        ),
        finding(
            "getppid_ns",
            fig("getppid"),
            "ns",
            "median cost of one getppid system call",
        ),
        finding(
            "vdso_clock_gettime_ns",
            vdso_ns,
            "ns",
            "median cost of clock_gettime through the vDSO",
        ),
        finding(
            "syscall_to_vdso_ratio",
            if vdso_ns > 0.0 {
                gettid_ns / vdso_ns
            } else {
                f64::NAN
            },
            "x",
            "how many vDSO clock reads cost as much as one kernel entry",
        ),
        finding(
            "loop_overhead_ns",
            overhead,
            "ns",
            "loop iteration with its indirect call, subtracted",
        ),
        finding(
            "gettid_uncorrected_ns",
            raw_median("gettid"),
            "ns",
            "gettid with the loop included, as timed",
        ),
        finding(
            "vdso_clock_gettime_uncorrected_ns",
            raw_median("clock_gettime_vdso"),
            "ns",
            "clock_gettime with the loop included, as timed",
        ),
        finding(
            "voluntary_switches",
            raw.voluntary_switches as f64,
            "switches",
            format!(
                "during {} timed calls ({:.3} per million)",
                calls.all, calls.switches_per_million
            ),
        ),
        finding(
            "involuntary_switches",
            raw.involuntary_switches as f64,
            "switches",
            "preemptions during the timed loop (timer tick, other tasks); not caused by the calls",
        ),
        finding(
            "cpu",
            f64::from(raw.cpu),
            "cpu",
            match raw.ran_on {
                Some(c) => format!("pinned; sched_getcpu after the loop: cpu{c}"),
                None => "pinned; sched_getcpu unavailable".into(),
            },
        ),
    ]
}
