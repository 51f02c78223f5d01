//! mem.locality's measurements, findings and plot.

use oslab_model::{Axis, Environment, Plot, Scale, Series, SeriesStyle};
use oslab_units::human_bytes;

use super::claims::claim;
use super::{ELEMENT, Raw, SAMPLE_NS};
use crate::mem::common::sweep::sysfs_of;
use oslab_harness::{Output, finding, measurement};

pub(super) fn bytes_of(side: usize) -> u64 {
    (side * side * ELEMENT) as u64
}

pub(super) fn judge(raw: &Raw, env: &Environment) -> Output {
    let mut out = Output::default();
    let mut ratios = Vec::new();
    for a in &raw.arrays {
        let bytes = bytes_of(a.side);
        let name = human_bytes(bytes).replace(' ', "");
        let (rows, cols) = (a.rows.per_element(a.side), a.cols.per_element(a.side));
        let med = |v: &[f64]| oslab_stats::median(v).unwrap_or(f64::NAN);
        let ratio = med(&cols) / med(&rows).max(1e-12);
        let n = a.side;
        out.measurements.push(measurement(
            &format!("ns.rows.{name}"),
            &format!("row by row, {n} x {n}"),
            "ns",
            rows,
            env.seed,
            None,
        ));
        out.measurements.push(measurement(
            &format!("ns.cols.{name}"),
            &format!("column by column, {n} x {n}"),
            "ns",
            cols,
            env.seed,
            None,
        ));
        out.findings.push(finding(
            &format!("ratio.{name}"),
            ratio,
            "x",
            format!("column-major / row-major time at {}", human_bytes(bytes)),
        ));
        ratios.push((bytes, ratio));
    }
    let llc = sysfs_of!(env.machine)
        .last()
        .map(|l| (l.name.clone(), l.bytes));
    out.claims.push(claim(&ratios, llc));
    out.notes.push(format!(
        "arrays of u32; {} samples per order and size, each repeating the traversal for at least {} ms",
        raw.arrays.first().map_or(0, |a| a.rows.ns.len()),
        SAMPLE_NS / 1_000_000
    ));
    out.plots.push(Plot {
        id: "locality".into(),
        title: "column-major / row-major time vs array size".into(),
        x: Axis::new("array", "bytes", Scale::Log2),
        y: Axis::new("ratio", "x", Scale::Linear),
        series: vec![Series {
            name: "cols / rows".into(),
            style: SeriesStyle::LinePoints,
            points: ratios.iter().map(|(b, r)| [*b as f64, *r]).collect(),
        }],
        markers: vec![],
        x_labels: vec![],
    });
    out
}
