//! The null experiment: known samples through the whole pipeline.
//!
//! Like fio's null engine, it measures nothing. It returns fixed samples (one of them
//! an outlier), a finding, one claim of each verdict and a plot with markers, so the
//! statistics, claims and every output format can be tested exactly.

use oslab_model::{Axis, Environment, Marker, Plot, Scale, Series, SeriesStyle};
use serde::{Deserialize, Serialize};

use crate::harness::check::{Check, Condition, Rule};
use crate::harness::{Context, LabError, Meta, Needs, Output, finding, measurement};
use crate::harness::{Experiment, Measured, Planner};

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

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Plan {
    pub samples: usize,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Raw {
    pub latency_ns: Vec<f64>,
}

const SOURCE: &str = "none (self-test)";

impl Experiment for Null {
    type Plan = Plan;
    type Raw = Raw;

    fn meta(&self) -> &Meta {
        &META
    }

    fn plan(&self, _: &mut Planner) -> Plan {
        Plan {
            samples: SAMPLES.len(),
        }
    }

    fn measure(&self, _: &Plan, _: &mut Context) -> Result<Measured<Raw>, LabError> {
        Ok(Measured::Raw(Raw {
            latency_ns: SAMPLES.to_vec(),
        }))
    }

    fn judge(&self, _: &Plan, raw: &Raw, env: &Environment) -> Output {
        let m = measurement(
            "latency",
            "fixed samples with one outlier (150)",
            "ns",
            raw.latency_ns.clone(),
            env.seed,
            Some("none".into()),
        );
        let median = m.summary.as_ref().map_or(f64::NAN, |s| s.median);
        let holds = Check {
            id: "null-holds",
            text: "The null median is 100 ns",
            source: SOURCE,
        }
        .judge(
            &[Condition::new("median", "ns", Rule::Exactly(100.0), median)],
            "",
            |_| "the median of the fixed samples is 100".into(),
        );
        let differs = Check {
            id: "null-differs",
            text: "The null median is 200 ns",
            source: SOURCE,
        }
        .judge(
            &[Condition::new("median", "ns", Rule::Exactly(200.0), median)],
            "",
            |_| "a deliberate contradiction".into(),
        );
        let untestable = Check {
            id: "null-untestable",
            text: "The null experiment says something about the kernel",
            source: SOURCE,
        }
        .not_testable("a figure of the kernel", "it measures nothing");
        let not_judged = Check {
            id: "null-not-judged",
            text: "The null experiment has a second figure",
            source: SOURCE,
        }
        .judge(
            &[Condition::missing(
                "second figure",
                "ns",
                Rule::AtLeast(0.0),
                "the null experiment records one figure only",
            )],
            "",
            |_| unreachable!("a missing figure is not judged"),
        );
        Output {
            measurements: vec![m],
            findings: vec![finding(
                "median_ns",
                median,
                "ns",
                "median of the fixed samples",
            )],
            claims: vec![holds, differs, untestable, not_judged],
            plots: vec![Plot {
                id: "samples".into(),
                title: "Null samples by size".into(),
                x: Axis::new("working set", "bytes", Scale::Log2),
                y: Axis::new("time", "ns", Scale::Linear),
                series: vec![
                    Series {
                        name: "samples".into(),
                        style: SeriesStyle::LinePoints,
                        points: raw
                            .latency_ns
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
        }
    }
}
