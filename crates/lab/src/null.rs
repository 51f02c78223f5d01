//! The null experiment: known samples through the whole pipeline.
//!
//! Like fio's null engine, it measures nothing. It returns fixed samples (one of them
//! an outlier), a finding, one claim of each verdict and a plot with markers, so the
//! statistics, claims and every output format can be tested exactly.

use oslab_model::{Axis, Claim, Marker, Plot, Scale, Series, SeriesStyle, Verdict};

use crate::experiment::{
    Context, Experiment, LabError, Meta, Needs, Outcome, Output, finding, measurement,
};

pub struct Null;

/// The samples every null run returns, in ns.
pub const SAMPLES: [f64; 10] = [
    100.0, 102.0, 98.0, 101.0, 99.0, 100.0, 103.0, 97.0, 150.0, 100.0,
];

static META: Meta = Meta {
    id: "null",
    title: "Null experiment (pipeline self-test)",
    section: "-",
    summary: "returns known samples so statistics and outputs can be checked",
    needs: Needs {
        root: false,
        min_cpus: 1,
        free_disk_bytes: 0,
    },
    quick_s: 0.0,
    full_s: 0.0,
    internal: true,
};

impl Experiment for Null {
    fn meta(&self) -> &Meta {
        &META
    }

    fn run(&self, ctx: &mut Context) -> Result<Outcome, LabError> {
        ctx.param("samples", SAMPLES.len());
        let seed = ctx.config.seed;
        let m = measurement(
            "latency",
            "fixed samples with one outlier (150)",
            "ns",
            SAMPLES.to_vec(),
            seed,
            Some("none".into()),
        );
        let median = m.summary.as_ref().map_or(0.0, |s| s.median);
        let claim = |id: &str, text: &str, verdict: Verdict, why: &str| Claim {
            id: id.into(),
            text: text.into(),
            source: "none (self-test)".into(),
            expectation: "median of the fixed samples is 100 ns".into(),
            observed: format!("median {median} ns"),
            verdict,
            why: why.into(),
        };
        Ok(Outcome::Completed(Output {
            measurements: vec![m],
            findings: vec![finding(
                "median_ns",
                median,
                "ns",
                "median of the fixed samples",
            )],
            claims: vec![
                claim(
                    "null-holds",
                    "The null median is 100 ns",
                    Verdict::Holds,
                    "the median is 100",
                ),
                claim(
                    "null-differs",
                    "The null median is 200 ns",
                    Verdict::Differs,
                    "a deliberate contradiction",
                ),
                claim(
                    "null-untestable",
                    "The null experiment says something about the kernel",
                    Verdict::NotTestable,
                    "it measures nothing",
                ),
            ],
            plots: vec![Plot {
                id: "samples".into(),
                title: "Null samples by size".into(),
                x: Axis::new("working set", "bytes", Scale::Log2),
                y: Axis::new("time", "ns", Scale::Linear),
                series: vec![
                    Series {
                        name: "samples".into(),
                        style: SeriesStyle::LinePoints,
                        points: SAMPLES
                            .iter()
                            .enumerate()
                            .map(|(i, &y)| [(1024u64 << i) as f64, y])
                            .collect(),
                    },
                    Series {
                        name: "median".into(),
                        style: SeriesStyle::Line,
                        points: vec![[1024.0, median], [(1024u64 << 9) as f64, median]],
                    },
                ],
                markers: vec![Marker {
                    x: 32768.0,
                    label: "L1d 32 KiB".into(),
                }],
                x_labels: vec![],
            }],
            notes: vec!["the null experiment measures nothing".into()],
            ..Default::default()
        }))
    }
}
