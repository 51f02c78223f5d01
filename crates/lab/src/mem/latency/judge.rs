//! Judging a latency sweep: the levels named, their measurements, the notes and
//! the plot; the findings are in `findings`, the claim in `claims`.

use oslab_model::{Axis, Environment, Marker, Measurement, Plot, Scale, Series, SeriesStyle};
use oslab_units::human_bytes;

use super::claims::claim;
use super::curve::{self, Plateau};
use super::findings::{level_findings, sysfs_findings};
use super::judging::{Judging, bytes};
use super::{Plan, Raw};
use crate::mem::common::sweep::{points, sysfs_of};
use oslab_harness::{Output, finding, measurement};

pub fn judge(plan: &Plan, raw: &Raw, env: &Environment) -> Output {
    let (x, y) = curve_of(&raw.small);
    let sysfs = sysfs_of!(env.machine);
    let reading = curve::read(&x, &y, &sysfs, plan.max_size as f64);
    let cpu = &env.machine.cpu;
    let j = Judging {
        plan,
        raw,
        sysfs,
        reading,
        mhz: cpu.mhz.filter(|m| cpu.tsc.tsc_known_freq && *m > 0.0),
        hypervisor: env.machine.hypervisor.name.clone(),
    };
    let mut findings = level_findings(&j);
    findings.extend(sysfs_findings(&j));
    findings.push(finding(
        "thp_granted",
        thp_granted(raw),
        "fraction",
        "median share of the huge-page buffers (4 MiB and up) the kernel backed with huge pages (AnonHugePages)",
    ));
    let mut out = Output {
        measurements: measurements(&j, env.seed),
        findings,
        claims: vec![claim(&j)],
        notes: notes(&j),
        plots: vec![plot(&j, &x, &y)],
        ..Default::default()
    };
    out.params.insert(
        "levels".into(),
        serde_json::json!(
            j.reading
                .plateaus
                .iter()
                .map(|p| p.name.as_str())
                .collect::<Vec<_>>()
        ),
    );
    out
}

/// Sizes and median latencies, in size order.
pub fn curve_of(sizes: &[crate::mem::common::sweep::Chased]) -> (Vec<f64>, Vec<f64>) {
    let x = sizes.iter().map(|c| c.bytes as f64).collect();
    let y = sizes
        .iter()
        .map(|c| c.median().unwrap_or(f64::NAN))
        .collect();
    (x, y)
}

/// The median share of the huge-page buffers of 4 MiB and up backed by huge pages.
pub fn thp_granted(raw: &Raw) -> f64 {
    let big: Vec<f64> = raw
        .huge
        .iter()
        .filter(|c| c.bytes >= 4 << 20)
        .map(|c| c.huge_fraction())
        .collect();
    oslab_stats::median(&big).unwrap_or(0.0)
}

fn what(j: &Judging, p: &Plateau) -> String {
    match p.sysfs {
        Some(i) => format!("{} (sysfs {})", p.name, human_bytes(j.sysfs[i].bytes)),
        None if p.name == "memory" => "memory (the last plateau, beyond the caches)".into(),
        None => format!("{}: a plateau no sysfs level matched", p.name),
    }
}

fn measurements(j: &Judging, seed: u64) -> Vec<Measurement> {
    j.reading
        .plateaus
        .iter()
        .map(|p| {
            let pooled: Vec<f64> = j
                .raw
                .small
                .iter()
                .filter(|c| c.bytes as f64 >= p.from_bytes && c.bytes as f64 <= p.to_bytes)
                .flat_map(|c| c.ns.iter().copied())
                .collect();
            measurement(
                &format!("ns.{}", p.name),
                &format!(
                    "{}: {} to {}",
                    what(j, p),
                    bytes(p.from_bytes),
                    bytes(p.to_bytes)
                ),
                "ns",
                pooled,
                seed,
                None,
            )
        })
        .collect()
}

fn notes(j: &Judging) -> Vec<String> {
    let plan = j.plan;
    let mut notes = vec![format!(
        "{} sizes with 4 KiB pages, {} with huge pages, {} samples each, visited in a shuffled order",
        j.raw.small.len(),
        j.raw.huge.len(),
        plan.samples
    )];
    notes.push(match j.mhz {
        Some(m) => format!(
            "cycles per access at {m:.0} MHz, the TSC's rate (the kernel knows it: tsc_known_freq); they are TSC cycles, and a core clocked above or below the TSC spends a different number of its own"
        ),
        None => "cycles per access are not given: the kernel does not report a known TSC frequency (tsc_known_freq) with a CPU clock".into(),
    });
    let last_edge = j
        .reading
        .plateaus
        .iter()
        .filter_map(|p| p.edge.as_ref().map(|e| e.bytes))
        .fold(0.0, f64::max);
    if last_edge > 0.0 && (plan.max_size as f64) < 8.0 * last_edge {
        notes.push(format!(
            "the sweep ends at {}, less than 8x the last edge found ({}): memory latency may be understated",
            human_bytes(plan.max_size),
            bytes(last_edge)
        ));
    }
    if let (Some(last), Some(l)) = (j.reading.plateaus.last(), j.sysfs.last())
        && last.name != "memory"
    {
        notes.push(format!(
            "the sweep ends at {}, not beyond sysfs {} ({}), and not every cache level was matched: the last plateau ({}) is not named memory",
            human_bytes(plan.max_size),
            l.name,
            human_bytes(l.bytes),
            last.name
        ));
    }
    if plan.per_octave <= 4 {
        notes.push(format!(
            "{} points per octave: a sharp edge is located to within about 1/{} octave ({:.0} %)",
            plan.per_octave,
            plan.per_octave,
            (2f64.powf(1.0 / plan.per_octave as f64) - 1.0) * 100.0
        ));
    }
    let granted = thp_granted(j.raw);
    if granted < 0.5 {
        notes.push(format!(
            "huge pages were not granted (only {:.0} % of the buffer): the huge-page curve is not a TLB comparison",
            granted * 100.0
        ));
    }
    notes
}

fn plot(j: &Judging, x: &[f64], y: &[f64]) -> Plot {
    let (hx, hy) = curve_of(&j.raw.huge);
    let mut markers: Vec<Marker> = j
        .sysfs
        .iter()
        .filter(|l| l.bytes <= j.plan.max_size * 2)
        .map(|l| Marker {
            x: l.bytes as f64,
            label: format!("sysfs {} {}", l.name, human_bytes(l.bytes)),
        })
        .collect();
    markers.extend(j.reading.plateaus.iter().filter_map(|p| {
        p.edge.as_ref().map(|e| Marker {
            x: e.bytes,
            label: if e.range {
                format!(
                    "{} ends {}-{}",
                    p.shown(),
                    bytes(e.below.bytes),
                    bytes(e.above.bytes)
                )
            } else {
                format!("edge {} {}", p.shown(), bytes(e.bytes))
            },
        })
    }));
    let series = |name: &str, x: &[f64], y: &[f64]| Series {
        name: name.into(),
        style: SeriesStyle::LinePoints,
        points: points(x, y),
    };
    Plot {
        id: "latency".into(),
        title: "load-to-use latency vs working set (random chase)".into(),
        x: Axis::new("working set", "bytes", Scale::Log2),
        y: Axis::new("latency", "ns", Scale::Log10),
        series: vec![series("4 KiB pages", x, y), series("huge pages", &hx, &hy)],
        markers,
        x_labels: vec![],
    }
}
