//! The null experiment's summary, finding, claims and plot of its fixed samples.

use oslab_model::{Axis, Marker, Plot, Scale, Series, SeriesStyle};

use super::Raw;
use super::claims::claims;
use oslab_harness::{Output, finding, measurement};

pub(super) fn judge(raw: &Raw, seed: u64) -> Output {
    let m = measurement(
        "latency",
        "fixed samples with one outlier (150)",
        "ns",
        raw.latency_ns.clone(),
        seed,
        Some("none".into()),
    );
    let median = m.summary.as_ref().map_or(f64::NAN, |s| s.median);
    Output {
        measurements: vec![m],
        findings: vec![finding(
            "median_ns",
            median,
            "ns",
            "median of the fixed samples",
        )],
        claims: claims(median),
        plots: vec![samples_plot(raw, median)],
        notes: vec!["the null experiment measures nothing".into()],
        ..Default::default()
    }
}

/// The samples by a made-up working set, the median beside them and one marker.
fn samples_plot(raw: &Raw, median: f64) -> Plot {
    Plot {
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
    }
}
