//! mem.bandwidth's findings and plot from the timed sizes.

use oslab_model::{Axis, Environment, Marker, Plot, Scale, Series, SeriesStyle};
use oslab_units::human_bytes;

use super::{Plan, Raw, SAMPLE_NS, SMALL};
use crate::mem::common::sweep::{points, sysfs_of};
use oslab_harness::{Output, finding};

pub(super) fn judge(plan: &Plan, raw: &Raw, env: &Environment) -> Output {
    let median = |v: &[f64]| oslab_stats::median(v).unwrap_or(f64::NAN);
    let x: Vec<f64> = raw.sizes.iter().map(|s| s.bytes as f64).collect();
    let read: Vec<f64> = raw
        .sizes
        .iter()
        .map(|s| median(&s.read.gb_s(s.bytes)))
        .collect();
    let write: Vec<f64> = raw
        .sizes
        .iter()
        .map(|s| median(&s.write.gb_s(s.bytes)))
        .collect();
    // the first size at or above `at`, as the old sweep read it
    let at = |v: &[f64], at: u64| {
        raw.sizes
            .iter()
            .position(|s| s.bytes >= at)
            .map_or(f64::NAN, |i| v[i])
    };
    let big = raw.sizes.last().map_or(0, |s| s.bytes);
    let mut out = Output::default();
    for (op, v) in [("read", &read), ("write", &write)] {
        let verb = if op == "read" { "reading" } else { "writing" };
        out.findings.push(finding(
            &format!("{op}_gb_s.small"),
            at(v, SMALL),
            "GB/s",
            format!("{verb} {}", human_bytes(SMALL)),
        ));
        out.findings.push(finding(
            &format!("{op}_gb_s.large"),
            at(v, big),
            "GB/s",
            format!("{verb} {}", human_bytes(big)),
        ));
    }
    let series = |name: &str, y: &[f64]| Series {
        name: name.into(),
        style: SeriesStyle::LinePoints,
        points: points(&x, y),
    };
    let markers = sysfs_of!(env.machine)
        .into_iter()
        .filter(|l| l.bytes <= big * 2)
        .map(|l| Marker {
            x: l.bytes as f64,
            label: format!("sysfs {} {}", l.name, human_bytes(l.bytes)),
        })
        .collect();
    out.plots.push(Plot {
        id: "bandwidth".into(),
        title: "sequential bandwidth vs working set".into(),
        x: Axis::new("working set", "bytes", Scale::Log2),
        y: Axis::new("bandwidth", "GB/s", Scale::Linear),
        series: vec![series("read", &read), series("write", &write)],
        markers,
        x_labels: vec![],
    });
    out.notes.push(format!(
        "{} sizes, {} samples of at least {} ms each; one thread; reads with {}-byte loads, writes with the C library's memset",
        raw.sizes.len(),
        plan.samples,
        SAMPLE_NS / 1_000_000,
        raw.read_load_bytes
    ));
    out
}
