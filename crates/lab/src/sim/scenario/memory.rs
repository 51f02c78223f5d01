//! Dirty and Writeback in a simulation, apart and together, as `oslab watch` and
//! /proc/meminfo show them: a figure of Dirty alone compares with what a user
//! sees there, the sum with the kernel's limits.

use oslab_model::{Axis, Finding, Plot, Scale, Series, SeriesStyle};
use oslab_wbsim::config::MIB;
use oslab_wbsim::outcome::Sample;

use super::SimulatedRun;
use oslab_harness::finding;

/// Which page-cache counter a series or finding follows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Counter {
    Dirty,
    Writeback,
    Both,
}

impl Counter {
    pub const ALL: [Counter; 3] = [Counter::Dirty, Counter::Writeback, Counter::Both];

    /// The name in findings and plot ids.
    pub fn key(self) -> &'static str {
        match self {
            Counter::Dirty => "dirty",
            Counter::Writeback => "writeback",
            Counter::Both => "dirty_writeback",
        }
    }

    fn words(self) -> &'static str {
        match self {
            Counter::Dirty => "Dirty",
            Counter::Writeback => "Writeback",
            Counter::Both => "Dirty + Writeback",
        }
    }

    /// The sample's value, MiB.
    pub fn mib(self, s: &Sample) -> f64 {
        let bytes = match self {
            Counter::Dirty => s.dirty,
            Counter::Writeback => s.writeback,
            Counter::Both => s.dirty + s.writeback,
        };
        bytes as f64 / MIB as f64
    }
}

/// One plot per counter, a series per policy.
pub fn plots(runs: &[SimulatedRun]) -> Vec<Plot> {
    Counter::ALL
        .into_iter()
        .map(|c| Plot {
            id: match c {
                // the id the sum had before Dirty and Writeback were apart
                Counter::Both => "dirty".into(),
                other => format!("{}-only", other.key()),
            },
            title: format!("{} in the simulation", c.words()),
            x: Axis::new("time", "s", Scale::Linear),
            y: Axis::new("memory", "MiB", Scale::Linear),
            series: runs
                .iter()
                .map(|o| Series {
                    name: o.policy.name().into(),
                    style: SeriesStyle::Line,
                    points: o.samples.iter().map(|s| [s.t_s, c.mib(s)]).collect(),
                })
                .collect(),
            markers: vec![],
            x_labels: vec![],
        })
        .collect()
}

/// The smallest fall that counts as a drop of the sawtooth, MiB.
const MIN_DROP_MIB: f64 = 1.0;

/// Each counter's peak and mean over one policy's run
/// (`peak_mib.dirty.vanilla`, `mean_mib.writeback.vanilla`, ...), and where
/// Dirty and the sum saw (two peaks or more) their median peak, trough and
/// period, as sim.validate's sawtooth cells measure the kernel's.
pub fn findings(run: &SimulatedRun) -> Vec<Finding> {
    let mut f = levels(run);
    for c in [Counter::Dirty, Counter::Both] {
        f.extend(sawtooth(run, c));
    }
    f
}

fn sawtooth(run: &SimulatedRun, c: Counter) -> Vec<Finding> {
    let t: Vec<f64> = run.samples.iter().map(|s| s.t_s).collect();
    let y: Vec<f64> = run.samples.iter().map(|s| c.mib(s)).collect();
    let saw = oslab_stats::sawtooth::sawtooth(&t, &y, MIN_DROP_MIB);
    let (Some(peak), Some(trough), Some(period)) = (saw.peak_median, saw.trough_median, saw.period)
    else {
        return Vec::new();
    };
    let key = |what: &str| format!("sawtooth.{what}.{}.{}", c.key(), run.policy.name());
    let detail = format!(
        "median of {} peaks of {} (drops of {MIN_DROP_MIB} MiB or more)",
        saw.peaks.len(),
        c.words()
    );
    vec![
        finding(&key("peak_mib"), peak, "MiB", detail.clone()),
        finding(&key("trough_mib"), trough, "MiB", detail.clone()),
        finding(&key("period_s"), period, "s", detail),
    ]
}

fn levels(run: &SimulatedRun) -> Vec<Finding> {
    let p = run.policy.name();
    let n = run.samples.len().max(1) as f64;
    Counter::ALL
        .into_iter()
        .flat_map(|c| {
            let values: Vec<f64> = run.samples.iter().map(|s| c.mib(s)).collect();
            let peak = values.iter().copied().fold(0.0, f64::max);
            let mean = values.iter().sum::<f64>() / n;
            [
                finding(
                    &format!("peak_mib.{}.{p}", c.key()),
                    peak,
                    "MiB",
                    format!("the highest {} of the simulation", c.words()),
                ),
                finding(
                    &format!("mean_mib.{}.{p}", c.key()),
                    mean,
                    "MiB",
                    format!("{} averaged over the simulation's samples", c.words()),
                ),
            ]
        })
        .collect()
}
