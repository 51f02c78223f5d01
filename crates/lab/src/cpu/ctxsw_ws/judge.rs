//! Judging `cpu.ctxsw-ws`: the write time subtracted, the curves, where they rise,
//! the claim, the plot.

use oslab_model::{Axis, Claim, Environment, Marker, Plot, Scale, Series, SeriesStyle};
use oslab_units::human_bytes;

use super::{DEFAULT_CAP, Plan, PointRaw, Raw, last_level_bytes};
use crate::cpu::ctxsw::modes::Spread;
use oslab_harness::check::{Check, Condition, Rule};
use oslab_harness::{Output, finding, measurement};

/// A switch costs this factor over its cost with no working set: it has risen.
const RISE: f64 = 1.5;
/// The material's "about half of L2", as a band of L2.
const RISE_BAND: (f64, f64) = (0.25, 2.0);
/// "Far lower": pinned below this share of the two-CPU cost.
const FAR_LOWER: f64 = 0.5;

const WORKING_SET: Check = Check {
    id: "working-set-rise",
    tolerates: &oslab_harness::interference::TIMES,
    text: "Past about half of L2 the working-set cost rises sharply, and pinning keeps it far lower",
    source: "B. Sigoure, \"How long does it take to make a context switch?\" (2010); Li, Ding and Shen, \"Quantifying the Cost of Context Switch\" (ExpCS 2007)",
};

/// One placement's cost per switch (write time subtracted) at each size.
pub type Curve = (String, Vec<(u64, f64)>);

fn median(v: &[f64]) -> f64 {
    oslab_stats::median(v).unwrap_or(f64::NAN)
}

/// The first size whose cost exceeds `factor` x the cost at W = 0 and stays above it
/// at the next size (when there is one): where the working set starts to hurt.
pub fn rise_point(points: &[(u64, f64)], factor: f64) -> Option<u64> {
    let base = points.iter().find(|(w, _)| *w == 0)?.1.max(1.0);
    let over: Vec<bool> = points.iter().map(|(_, c)| *c > base * factor).collect();
    (0..points.len())
        .find(|&i| points[i].0 > 0 && over[i] && over.get(i + 1).copied().unwrap_or(true))
        .map(|i| points[i].0)
}

/// The samples of a point with the median write time subtracted, and that time.
fn net(p: &PointRaw) -> (Vec<f64>, f64) {
    let write_ns = median(&p.write_only_ns);
    let w = if write_ns.is_finite() { write_ns } else { 0.0 };
    (p.cell.samples().iter().map(|s| s - w).collect(), w)
}

pub(super) fn judge(plan: &Plan, raw: &Raw, env: &Environment) -> Output {
    let mut out = Output::default();
    let mut curves: Vec<Curve> = Vec::new();
    let mut unclean = Vec::new();
    let mut bimodal = Vec::new();
    for place in &plan.placements {
        let mut curve = Vec::new();
        for p in raw.points.iter().filter(|p| p.cell.placement == place.name) {
            let (samples, write_ns) = net(p);
            let rts = p.cell.launches.first().map_or(0, |l| l.round_trips);
            if p.cell.switch_counts().flagged > 0 {
                unclean.push(format!("{} at {}", place.name, human_bytes(p.ws)));
            }
            if place.name == "unpinned"
                && matches!(Spread::of(&p.cell.samples()), Spread::Bimodal(_))
            {
                bimodal.push(human_bytes(p.ws));
            }
            curve.push((p.ws, median(&samples)));
            out.measurements.push(measurement(
                &format!("ns.{}.{}", place.name, p.ws),
                &format!(
                    "{}: per switch minus the {write_ns:.0} ns to write {} alone ({rts} round trips a batch)",
                    place.name,
                    human_bytes(p.ws)
                ),
                "ns",
                samples,
                env.seed,
                Some(format!("write-only time {write_ns:.1} ns subtracted")),
            ));
        }
        curves.push((place.name.clone(), curve));
    }
    for (name, curve) in &curves {
        out.findings.push(match rise_point(curve, RISE) {
            Some(w) => finding(
                &format!("rise_at.{name}"),
                w as f64,
                "bytes",
                format!(
                    "{name}: from {} on, a switch costs over 1.5x its cost with no working set ({:.0} ns)",
                    human_bytes(w),
                    curve.first().map_or(f64::NAN, |c| c.1)
                ),
            ),
            None => finding(
                &format!("rise_at.{name}"),
                f64::NAN,
                "bytes",
                format!("{name}: no rise up to {}", human_bytes(plan.max_ws)),
            ),
        });
    }
    out.claims = vec![working_set_claim(
        &curves,
        env.machine.caches.level_size("L2"),
        plan.max_ws,
    )];
    out.plots.push(plot(&curves, env, plan.max_ws));
    notes(&mut out, plan, env, &unclean, &bimodal);
    out
}

fn notes(out: &mut Output, plan: &Plan, env: &Environment, unclean: &[String], bimodal: &[String]) {
    if !unclean.is_empty() {
        out.notes.push(format!(
            "switch counts were not one per side per round trip for: {}",
            unclean.join(", ")
        ));
    }
    if !bimodal.is_empty() {
        out.notes.push(format!(
            "unpinned: the batches at {} fall into two modes at least 2x apart (the tasks' placement changed between batches), so that curve mixes placements; the claim compares with the two-CPU placement",
            bimodal.join(", ")
        ));
    }
    let llc = last_level_bytes(&env.machine);
    if let Some(b) = llc.filter(|b| 2 * b > DEFAULT_CAP) {
        out.notes.push(format!(
            "sysfs reports a {} last-level cache; the sweep stops at {} (mem.latency measures the effective size)",
            human_bytes(b),
            human_bytes(plan.max_ws)
        ));
    }
    out.notes.push(
        "both sides write the same shared W bytes; on two CPUs every handoff also moves those lines between the CPUs' caches"
            .into(),
    );
}

fn plot(curves: &[Curve], env: &Environment, max_ws: u64) -> Plot {
    let markers: Vec<Marker> = env
        .machine
        .caches
        .levels
        .iter()
        .filter(|l| l.kind != "Instruction")
        .filter_map(|l| {
            let s = l.size_bytes?;
            (s <= max_ws * 2).then(|| Marker {
                x: s as f64,
                label: format!("{} {}", l.name, human_bytes(s)),
            })
        })
        .collect();
    let series = curves
        .iter()
        .map(|(name, c)| Series {
            name: name.clone(),
            style: SeriesStyle::LinePoints,
            points: c
                .iter()
                .filter(|(w, _)| *w > 0)
                .map(|(w, ns)| [*w as f64, ns.max(1.0)])
                .collect(),
        })
        .collect();
    Plot {
        id: "working-set".into(),
        title: "switch cost vs working set (write time subtracted)".into(),
        x: Axis::new("working set per side", "bytes", Scale::Log2),
        y: Axis::new("per switch", "ns", Scale::Log10),
        series,
        markers,
        x_labels: vec![],
    }
}

/// Same-CPU against two-CPU cost at the largest size swept.
fn pin_condition(last: Option<(u64, f64)>, cross: Option<&Curve>) -> Condition {
    let (pin_subject, pin_ratio) = match (last, cross) {
        (Some((w, s)), Some((name, c))) => (
            format!("same-CPU / {name} cost at {}", human_bytes(w)),
            c.iter()
                .find(|(cw, _)| *cw == w)
                .map(|(_, o)| *o)
                .filter(|o| *o > 0.0)
                .map(|o| s / o),
        ),
        _ => ("same-CPU / two-CPU cost at the largest size".into(), None),
    };
    Condition::from_option(
        pin_subject,
        "x",
        Rule::Below(FAR_LOWER),
        pin_ratio,
        match cross {
            None => "no placement on two CPUs (one CPU here) to compare with",
            Some(_) => "no positive two-CPU cost at the largest size to compare with",
        },
    )
}

/// The claim from the curves, sysfs's L2 and the largest size swept.
pub fn working_set_claim(curves: &[Curve], l2: Option<u64>, max_ws: u64) -> Claim {
    let Some(l2) = l2.filter(|b| *b > 0) else {
        return WORKING_SET.not_testable(
            "same-CPU cost rises between L2/4 and 2x L2, and pinned below half of two CPUs at the largest size",
            "sysfs gives no L2 size here",
        );
    };
    let same = curves.iter().find(|(n, _)| n == "same-cpu").map(|c| &c.1);
    let cross = curves.iter().find(|(n, _)| n.starts_with("cross-cpu"));
    let rise = same.and_then(|c| rise_point(c, RISE));
    let base = same
        .and_then(|c| c.iter().find(|(w, _)| *w == 0))
        .map(|p| p.1.max(1.0));
    let last = same.and_then(|c| c.last()).copied();
    let lb = human_bytes(l2);
    let rise_cond = match (rise, last) {
        (Some(w), _) => Condition::new(
            "same-CPU rise point / L2",
            "x",
            Rule::Range(RISE_BAND.0, RISE_BAND.1),
            w as f64 / l2 as f64,
        ),
        (None, Some((w, c))) if w >= 2 * l2 => Condition::from_option(
            format!("same-CPU cost at {} / with no working set", human_bytes(w)),
            "x",
            Rule::Above(RISE),
            base.map(|b| c / b),
            "no same-CPU cost with no working set",
        ),
        (None, _) => Condition::missing(
            "same-CPU rise point / L2",
            "x",
            Rule::Range(RISE_BAND.0, RISE_BAND.1),
            format!(
                "no rise up to {}, and the sweep stopped below 2x L2 ({lb}): --set max_ws= larger",
                human_bytes(max_ws)
            ),
        ),
    };
    let pin_cond = pin_condition(last, cross);
    let context = format!(
        "same-CPU rise at {} (L2 {lb}); same-CPU {} at the largest size",
        rise.map(human_bytes).unwrap_or_else(|| "none".into()),
        last.map_or_else(|| "-".into(), |(_, s)| format!("{s:.0} ns")),
    );
    WORKING_SET.judge(&[rise_cond, pin_cond], &context, |o| {
        if o.holds() {
            return "as the article found: on one CPU the working set stays in that CPU's caches until it outgrows them; on two CPUs every handoff moves it between the CPUs' caches".into();
        }
        let mut why = Vec::new();
        if o.failed(0) {
            why.push(match rise {
                None => format!(
                    "the same-CPU cost never rose {RISE}x within the sweep up to {}",
                    human_bytes(max_ws)
                ),
                Some(w) if (w as f64) < RISE_BAND.0 * l2 as f64 => format!(
                    "the same-CPU cost rose already at {}, below a quarter of L2 ({lb})",
                    human_bytes(w)
                ),
                Some(w) => format!(
                    "the same-CPU cost rose only at {}, past twice L2 ({lb})",
                    human_bytes(w)
                ),
            });
        }
        if o.failed(1) {
            why.push(
                "pinning did not keep the cost below half of what the tasks pay on two CPUs"
                    .into(),
            );
        }
        why.join("; ")
    })
}
