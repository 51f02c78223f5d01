//! The simulator on each real run's settings, its Dirty sawtooth against the
//! kernel's: the errors of peak, trough and period, and the curves side by side.

use oslab_model::{ExperimentResult, Series, SeriesStyle};
use oslab_wbsim::Config;

use super::{Raw, claims};
use oslab_harness::runner::judge_file;
use oslab_harness::{AnyExperiment, Output, finding};

fn param_f(r: &ExperimentResult, k: &str) -> Option<f64> {
    r.params.get(k).and_then(|v| v.as_f64())
}

fn found(r: &ExperimentResult, k: &str) -> Option<f64> {
    r.finding(k).map(|f| f.value).filter(|v| v.is_finite())
}

/// The simulator's configuration for a real wb.background or wb.periodic run.
pub fn config_for_real(r: &ExperimentResult) -> Option<Config> {
    use oslab_wbsim::Sysctls;
    let rate = param_f(r, "rate")?;
    let duration = param_f(r, "duration")?;
    let sysctls = if r.experiment == "wb.background" {
        let bg = param_f(r, "background")? as u64;
        Sysctls {
            dirty_background_bytes: bg,
            dirty_bytes: bg * 2,
            dirty_writeback_centisecs: 0,
            ..Sysctls::default()
        }
    } else {
        let far = (rate * duration * 2.0) as u64 + (256 << 20);
        Sysctls {
            dirty_background_bytes: far,
            dirty_bytes: far * 2,
            dirty_expire_centisecs: (param_f(r, "expire")? * 100.0).round() as u64,
            dirty_writeback_centisecs: (param_f(r, "interval")? * 100.0).round() as u64,
            ..Sysctls::default()
        }
    };
    let dirtyable = r
        .environment
        .machine
        .memory
        .available_bytes
        .unwrap_or(8 << 30);
    Some(oslab_services::sawtooth::model::config(
        rate, duration, sysctls, dirtyable,
    ))
}

/// The real runs of `experiments`, judged from their raw data as they were when
/// they ran.
pub fn judge(experiments: &[&dyn AnyExperiment], raw: &Raw) -> Output {
    let real: Vec<ExperimentResult> = experiments
        .iter()
        .zip(&raw.real)
        .map(|(e, file)| judge_file(*e, file))
        .collect();
    beside_real(&real)
}

/// Compares real sawtooth experiments with the simulator on the same settings.
pub fn beside_real(real: &[ExperimentResult]) -> Output {
    let mut findings = Vec::new();
    let mut worst: f64 = 0.0;
    let mut compared = 0;
    let mut plots = Vec::new();
    for r in real {
        let Some(c) = config_for_real(r) else {
            continue;
        };
        let (t, y, saw) = oslab_services::sawtooth::model::simulated_curve(&c);
        for (what, sim) in [
            ("peak_mib", saw.peak_median),
            ("trough_mib", saw.trough_median),
            ("period_s", saw.period),
        ] {
            if let (Some(real_v), Some(sim_v)) = (found(r, what), sim) {
                // troughs near zero are compared against the peak, not themselves
                let scale = if what == "trough_mib" {
                    found(r, "peak_mib").unwrap_or(real_v).abs()
                } else {
                    real_v.abs()
                };
                let err = (sim_v - real_v).abs() / scale.max(1e-9);
                worst = worst.max(err);
                compared += 1;
                findings.push(finding(
                    &format!("{}.{what}_error", r.experiment),
                    err,
                    "fraction",
                    format!("real {real_v:.2}, simulated {sim_v:.2}"),
                ));
            }
        }
        if let Some(real_plot) = r.plots.iter().find(|p| p.id == "dirty") {
            let mut p = real_plot.clone();
            p.id = format!("{}-vs-sim", r.experiment);
            p.title = format!("{}: real kernel vs simulator", r.experiment);
            p.series.retain(|s| s.name.starts_with("Dirty"));
            p.series.push(Series {
                name: "simulated Dirty".into(),
                style: SeriesStyle::Line,
                points: t.iter().zip(&y).map(|(a, b)| [*a, *b]).collect(),
            });
            plots.push(p);
        }
    }
    let claim = claims::matches_claim(compared, worst);
    Output {
        findings,
        claims: vec![claim],
        plots,
        ..Default::default()
    }
}
