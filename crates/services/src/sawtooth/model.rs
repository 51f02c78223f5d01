//! The simulator beside every sawtooth run: from the settings the run used and the
//! writer's rate alone (blind: nothing of the run is read before predicting it),
//! the simulator's Dirty sawtooth from its steady-state start, its peak, trough and
//! period beside the measured ones, and the claim that the simulator predicts this
//! machine. The simulation costs milliseconds. A model that shows no whole period
//! in a run as long as the real one, where the kernel sawed two or more, has
//! answered and differs; with fewer real periods the claim is not judged.

use oslab_model::{Claim, Finding};
use oslab_stats::sawtooth::Sawtooth;
use oslab_wbsim::config::MIB;
use oslab_wbsim::{Class, Config, DeviceCfg, DeviceKind, Kind, RuleSet, Sysctls, WriterCfg};

use oslab_harness::check::{Check, Condition, Rule};
use oslab_harness::finding;

pub const PREDICTS: Check = Check {
    id: "simulator-predicts-this-machine",
    tolerates: &oslab_harness::interference::TIMES,
    text: "The simulator predicts this machine's Dirty sawtooth from the settings and the writer's rate alone",
    source: "docs/sim-scenarios.md (the model: mm/page-writeback.c, fs/fs-writeback.c)",
};

/// Dirtyable memory for runs whose limits are set in bytes: it only has to be far
/// above them.
pub const DIRTYABLE_FAR: u64 = 16 << 30;

/// The simulator's configuration for one writer at `rate` bytes per second for
/// `duration` s under `sysctls` with `dirtyable` bytes of dirtyable memory (it
/// sets ratio limits, and how often a writer looks at them), on a fast disk (the
/// runs' scratch folder).
pub fn config(rate: f64, duration: f64, sysctls: Sysctls, dirtyable: u64) -> Config {
    let writer = WriterCfg {
        name: "writer".into(),
        kind: Kind::Rate {
            bytes_per_s: rate,
            chunk: (rate / 10.0) as u64,
        },
        class: Class::Normal { nice: 0 },
        group: None,
        fsync_every: None,
        start_ms: 0.0,
        stop_ms: None,
    };
    Config {
        sysctls,
        device: DeviceCfg {
            kind: DeviceKind::Disk,
            bandwidth_bytes_s: 1000.0 * MIB as f64,
            request_latency_ns: 0,
            max_request_bytes: 512 << 10,
            queue_bytes: 1 << 40,
        },
        ..Config::new(RuleSet::Linux6, dirtyable, vec![writer], duration, 2)
    }
}

/// `cfg` moved onto a device of `bandwidth` bytes per second (`throttled`: a
/// testbed capped there by blk-throttle, else a disk) whose probe measured `measured`: the
/// kernel's estimates start at the probe's figure, and the steady-state start
/// settles them under the writer.
pub fn on_device(mut cfg: Config, bandwidth: f64, throttled: bool, measured: f64) -> Config {
    cfg.device.bandwidth_bytes_s = bandwidth;
    if throttled {
        cfg.device.kind = DeviceKind::Throttled;
        cfg.device.max_request_bytes = oslab_wbsim::config::TESTBED_REQUEST_BYTES;
    }
    cfg.start = oslab_wbsim::config::Start::Steady;
    cfg.initial = oslab_wbsim::config::Initial {
        write_bw_bytes_s: Some(measured),
        avg_write_bw_bytes_s: Some(measured),
        ..Default::default()
    };
    cfg
}

/// The simulated sawtooth of `cfg` (its first writer's rate sets the smallest
/// drop that counts, as for the real run).
pub fn simulated(cfg: &Config) -> Sawtooth {
    simulated_curve(cfg).2
}

/// The simulated Dirty curve of `cfg` (times in s, MiB) and its sawtooth.
pub fn simulated_curve(cfg: &Config) -> (Vec<f64>, Vec<f64>, Sawtooth) {
    let run = simulated_run(cfg);
    (run.t, run.y, run.saw)
}

/// One simulated run: its Dirty curve (times in s, MiB), the curve's sawtooth,
/// and the whole outcome (the flusher's passes, the estimates it ended with:
/// where the next run on the device starts).
pub struct SimulatedRun {
    pub t: Vec<f64>,
    pub y: Vec<f64>,
    pub saw: Sawtooth,
    pub outcome: oslab_wbsim::Outcome,
}

pub fn simulated_run(cfg: &Config) -> SimulatedRun {
    let outcome = oslab_wbsim::simulate(cfg);
    let t: Vec<f64> = outcome.samples.iter().map(|s| s.t_s).collect();
    let y: Vec<f64> = outcome
        .samples
        .iter()
        .map(|s| s.dirty as f64 / MIB as f64)
        .collect();
    let rate_mib = cfg.writers.first().map_or(1.0, |w| match w.kind {
        Kind::Rate { bytes_per_s, .. } => bytes_per_s / MIB as f64,
        _ => 1.0,
    });
    let saw = oslab_stats::sawtooth::sawtooth(&t, &y, (rate_mib * 0.5).max(1.0));
    SimulatedRun { t, y, saw, outcome }
}

/// Adds the blind prediction of a sawtooth run (`rate` bytes per second for
/// `duration` s under `sysctls`, limits in bytes) and its claim to `out`.
pub fn add_check(
    out: &mut oslab_harness::Output,
    rate: u64,
    duration: f64,
    sysctls: Sysctls,
    real: &Sawtooth,
) {
    let cfg = config(rate as f64, duration, sysctls, DIRTYABLE_FAR);
    let (findings, claim) = check(&cfg, real);
    out.findings.extend(findings);
    out.claims.push(claim);
}

/// Within 10 % of the measured figure or `floor` (1 MiB, 0.2 s), whichever is
/// larger.
fn within(real: f64, floor: f64) -> Rule {
    Rule::WithinAbs {
        target: real,
        tol: (0.1 * real.abs()).max(floor),
    }
}

/// The blind prediction of `cfg` beside the measured sawtooth `real`: findings
/// `model.peak_mib`, `model.trough_mib`, `model.period_s` and the claim.
pub fn check(cfg: &Config, real: &Sawtooth) -> (Vec<Finding>, Claim) {
    check_each(&[("", cfg, real)])
}

/// [`check`] for several runs of one experiment, one claim over all of them:
/// each entry is (its findings' prefix, e.g. "case1.", the configuration, the
/// measured sawtooth).
pub fn check_each(runs: &[(&str, &Config, &Sawtooth)]) -> (Vec<Finding>, Claim) {
    let mut findings = Vec::new();
    let mut conditions = Vec::new();
    for (prefix, cfg, real) in runs {
        let (f, c) = compared(prefix, cfg, real);
        findings.extend(f);
        conditions.extend(c);
    }
    let claim = PREDICTS.judge(&conditions, "", |o| {
        if o.holds() {
            "the model, given only the settings and the rate, lands within the targets".into()
        } else {
            "the model's flusher or bandwidth estimate differs from the kernel's here: its estimate follows its own history, the kernel's carries this machine's (docs/sim-scenarios.md, the sawtooth table)".into()
        }
    });
    (findings, claim)
}

/// The findings and conditions of one run: its simulated peak, trough and period
/// beside the measured ones.
fn compared(prefix: &str, cfg: &Config, real: &Sawtooth) -> (Vec<Finding>, Vec<Condition>) {
    let sim = simulated(cfg);
    let figures = [
        (
            "peak_mib",
            "the simulated peak",
            "MiB",
            real.peak_median,
            sim.peak_median,
            1.0,
        ),
        (
            "trough_mib",
            "the simulated trough",
            "MiB",
            real.trough_median,
            sim.trough_median,
            1.0,
        ),
        (
            "period_s",
            "the simulated period",
            "s",
            real.period,
            sim.period,
            0.2,
        ),
    ];
    let mut findings = Vec::new();
    let mut conditions = Vec::new();
    for (key, subject, unit, real_v, sim_v, floor) in figures {
        let subject = match prefix.trim_end_matches('.') {
            "" => subject.to_string(),
            p => format!("{p}: {subject}"),
        };
        let detail = match real_v {
            Some(r) => format!("the simulator, blind; measured {r:.2} {unit}"),
            None => "the simulator, blind; the run has no such figure".into(),
        };
        findings.push(finding(
            &format!("{prefix}model.{key}"),
            sim_v.unwrap_or(f64::NAN),
            unit,
            detail,
        ));
        let kernel_periods = real.peaks.len().saturating_sub(1);
        conditions.push(match real_v {
            // the kernel sawed whole periods where the model shows none in the
            // same time: that is the model's answer, and it differs
            Some(_) if key == "period_s" && sim_v.is_none() && kernel_periods >= 2 => {
                Condition::new(
                    format!(
                        "{subject}: whole periods the simulation shows in the run's {:.0} s (the kernel sawed {kernel_periods})",
                        cfg.duration_s
                    ),
                    "",
                    Rule::AtLeast(1.0),
                    0.0,
                )
            }
            Some(r) => Condition::from_option(
                &subject,
                unit,
                within(r, floor),
                sim_v,
                "the simulation showed no full period",
            ),
            None => Condition::missing(
                &subject,
                unit,
                Rule::AtLeast(0.0),
                "the run itself has no full period to compare with",
            ),
        });
    }
    (findings, conditions)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn saw(peak: f64, trough: f64, period: f64) -> Sawtooth {
        Sawtooth {
            peak_median: Some(peak),
            trough_median: Some(trough),
            period: Some(period),
            ..Default::default()
        }
    }

    /// Background limit in bytes, the hard limit the default 20 % of this
    /// machine's 23 GB dirtyable memory (far above it).
    fn background(rate_mib: f64, bg_mib: u64) -> Config {
        config(
            rate_mib * MIB as f64,
            60.0,
            Sysctls {
                dirty_background_bytes: bg_mib << 20,
                dirty_writeback_centisecs: 0,
                ..Sysctls::default()
            },
            23_000_000_000,
        )
    }

    #[test]
    fn the_kernels_sawtooth_measured_here_is_predicted() {
        // the root disk, 2026-11-26, dirty_ratio 20: 2 MiB/s, background 16 MiB,
        // periodic off: peaks 19.9 MiB (the writer looks every 4 MiB), troughs 0.1
        // MiB, period 9.99 s
        let (f, claim) = check(&background(2.0, 16), &saw(19.9, 0.1, 9.99));
        assert_eq!(
            claim.verdict,
            oslab_model::Verdict::Holds,
            "{claim:?} {f:?}"
        );
        assert_eq!(f.len(), 3);
    }

    #[test]
    fn a_sawtooth_the_model_does_not_make_is_a_difference() {
        // 10 MiB/s at 64 MiB measured troughs of 18.5 MiB and a 4.8 s period;
        // the model writes nearly everything back each time
        let c = background(10.0, 64);
        let (_, claim) = check(&c, &saw(64.0, 18.5, 4.78));
        assert_eq!(claim.verdict, oslab_model::Verdict::Differs, "{claim:?}");
        // no real period: not judged, never a pass
        let (_, none) = check(&c, &Sawtooth::default());
        assert_ne!(none.verdict, oslab_model::Verdict::Holds);
    }

    #[test]
    fn a_model_that_shows_no_period_where_the_kernel_sawed_differs() {
        // 2 MiB/s under a 16 MiB background limit: the model peaks after about
        // 8 s and writes nearly everything back, so a 12 s run shows it one peak
        // and no whole period
        let mut c = background(2.0, 16);
        c.duration_s = 12.0;
        let sim = simulated(&c);
        assert_eq!(sim.peaks.len(), 1, "{sim:?}");
        let sawed = |periods: usize| Sawtooth {
            peaks: (0..=periods).map(|i| [1.0 + i as f64, 16.0]).collect(),
            ..saw(16.0, 0.125, 1.0)
        };
        // the kernel sawed three whole periods: the model differs
        let (_, claim) = check(&c, &sawed(3));
        assert_eq!(claim.verdict, oslab_model::Verdict::Differs, "{claim:?}");
        assert!(
            claim
                .observed
                .contains("whole periods the simulation shows"),
            "{}",
            claim.observed
        );
        // one real period only: too little to tell, not judged
        let (_, open) = check(&c, &sawed(1));
        assert_eq!(open.verdict, oslab_model::Verdict::NotJudged, "{open:?}");
    }
}
