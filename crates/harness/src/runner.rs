//! Runs one experiment and assembles its result.

use std::path::PathBuf;

use oslab_model::machine::MachineInfo;
use oslab_model::{Environment, ExperimentResult, LoadRecord, Mode, SCHEMA_VERSION, Status};
use oslab_sys::clock::{TIMER_NAME, now_ns, rfc3339_utc, unix_time_s};
use oslab_sys::fsread::Root;

use super::any::AnyExperiment;
use super::context::{Context, Progress, RunConfig};
use super::error::{LabError, Unreadable};
use super::experiment::Output;
use super::interference;
use super::load::LoadMonitor;
use super::rawfile::RawFile;

pub const OSLAB_VERSION: &str = env!("CARGO_PKG_VERSION");

/// What an experiment needs that this machine or run does not give: the
/// result's skip reason, and for the command's exit code whether root was
/// what it lacked.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Unmet {
    #[error("needs root (run it with sudo); nothing was changed")]
    Root,
    #[error("needs at least {need} CPUs, this machine has {have}")]
    Cpus { need: usize, have: usize },
    #[error("needs {} MiB free in {}, only {} MiB are", need >> 20, dir.display(), free >> 20)]
    FreeDisk { need: u64, dir: PathBuf, free: u64 },
}

/// Why an experiment cannot run here, checked before it starts.
pub fn unmet_needs(
    exp: &dyn AnyExperiment,
    machine: &MachineInfo,
    cfg: &RunConfig,
) -> Option<Unmet> {
    let n = exp.meta().needs;
    if n.root && !machine.root {
        return Some(Unmet::Root);
    }
    if n.min_cpus > machine.cpu.logical_cpus {
        return Some(Unmet::Cpus {
            need: n.min_cpus,
            have: machine.cpu.logical_cpus,
        });
    }
    if n.free_disk_bytes > 0
        && let Some(free) = oslab_sys::machine::free_bytes(&cfg.scratch_dir)
        && free < n.free_disk_bytes
    {
        return Some(Unmet::FreeDisk {
            need: n.free_disk_bytes,
            dir: cfg.scratch_dir.clone(),
            free,
        });
    }
    None
}

/// A run either produced output or was skipped, with the reason.
#[derive(Debug, Clone)]
pub enum Outcome {
    Completed(Output),
    Skipped { reason: String },
}

/// Builds the result from an experiment's outcome; pure, so the pipeline is testable
/// with a fixed environment and clock.
pub fn assemble(
    exp: &dyn AnyExperiment,
    mode: Mode,
    environment: Environment,
    started_unix_s: f64,
    duration_s: f64,
    mut params: oslab_model::Params,
    outcome: Result<Outcome, LabError>,
) -> ExperimentResult {
    let meta = exp.meta();
    let (status, out) = match outcome {
        Ok(Outcome::Completed(mut o)) => {
            params.append(&mut o.params);
            (Status::Completed, o)
        }
        Ok(Outcome::Skipped { reason }) => (Status::Skipped { reason }, Output::default()),
        Err(e) => (
            Status::Failed {
                error: e.to_string(),
            },
            Output::default(),
        ),
    };
    ExperimentResult {
        schema_version: SCHEMA_VERSION,
        experiment: meta.id.to_string(),
        title: meta.title.to_string(),
        section: meta.section.to_string(),
        mode,
        started_at: rfc3339_utc(started_unix_s),
        duration_s,
        params,
        environment,
        status,
        measurements: out.measurements,
        findings: out.findings,
        claims: out.claims,
        plots: out.plots,
        notes: out.notes,
        system: out.system,
        simulated: out.simulated,
    }
}

/// One experiment run: its result and the raw data it was judged from (none when
/// nothing was measured: its needs were unmet, or measuring failed).
pub struct Ran {
    pub result: ExperimentResult,
    pub raw: Option<RawFile>,
    /// What it needed and did not have, when that is why it did not run.
    pub unmet: Option<Unmet>,
}

/// Runs `exp` on the live machine. A run during which other programs' work went
/// beyond what a claim's method tolerates is measured once more (said on the
/// progress line); the second measurement is the result, its claims still
/// disturbed not judged (`super::interference`).
pub fn run(
    exp: &dyn AnyExperiment,
    cfg: &RunConfig,
    machine: &MachineInfo,
    progress: &dyn Progress,
) -> Ran {
    let first = attempt(exp, cfg, machine, progress, 1);
    let Some(what) = first.raw.as_ref().and_then(|_| disturbance(&first.result)) else {
        return first;
    };
    progress.stage(&format!("{what}: measuring again (2 of 2)"));
    attempt(exp, cfg, machine, progress, 2)
}

/// What went beyond a claim's tolerance during the measurement of `r`, if anything.
fn disturbance(r: &ExperimentResult) -> Option<String> {
    r.claims
        .iter()
        .filter_map(|c| c.tolerates.as_ref())
        .find_map(|t| interference::beyond(t, &r.environment.load))
}

/// One measurement of `exp`, the `attempts`th.
fn attempt(
    exp: &dyn AnyExperiment,
    cfg: &RunConfig,
    machine: &MachineInfo,
    progress: &dyn Progress,
    attempts: u32,
) -> Ran {
    let started = unix_time_s();
    let t0 = now_ns();
    let monitor = LoadMonitor::start(Root::live());
    // Err: nothing was recorded (its needs were unmet, or measuring failed)
    let unmet = unmet_needs(exp, machine, cfg);
    let measured: Result<_, Result<Outcome, LabError>> = match &unmet {
        Some(why) => Err(Ok(Outcome::Skipped {
            reason: why.to_string(),
        })),
        None => {
            let mut ctx = Context {
                experiment: exp.meta().id,
                config: cfg,
                machine,
                progress,
            };
            exp.plan_and_measure(&mut ctx).map_err(Err)
        }
    };
    let duration_s = (now_ns() - t0) as f64 / 1e9;
    let load = LoadRecord {
        attempts: (attempts > 1).then_some(attempts),
        ..monitor.finish()
    };
    let env = Environment {
        oslab_version: OSLAB_VERSION.to_string(),
        machine: machine.clone(),
        timer: TIMER_NAME.to_string(),
        load,
        seed: cfg.seed,
    };
    match measured {
        Err(outcome) => Ran {
            result: assemble(
                exp,
                cfg.mode,
                env,
                started,
                duration_s,
                Default::default(),
                outcome,
            ),
            raw: None,
            unmet,
        },
        Ok((recorded, skipped)) => {
            let file = RawFile {
                oslab_raw: super::rawfile::RAW_VERSION,
                oslab_version: OSLAB_VERSION.to_string(),
                experiment: exp.meta().id.to_string(),
                mode: cfg.mode,
                started_unix_s: started,
                duration_s,
                environment: env,
                skipped,
                recorded,
            };
            Ran {
                result: judge_file(exp, &file),
                raw: Some(file),
                unmet: None,
            }
        }
    }
}

/// The result of an experiment from its raw file: what the run printed, or
/// what today's analysis makes of an old run. Recorded data it cannot read make a
/// failed result (a live run's own data, judged as it ends).
pub fn judge_file(exp: &dyn AnyExperiment, file: &RawFile) -> ExperimentResult {
    let outcome = judged(exp, file).map_err(LabError::from);
    assembled(exp, file, outcome)
}

/// [`judge_file`] for a file from outside (`oslab judge FILE`): a plan or raw data
/// that cannot be read as the experiment's is an error of the file, not a result.
pub fn judge_outside_file(
    exp: &dyn AnyExperiment,
    file: &RawFile,
) -> Result<ExperimentResult, Unreadable> {
    let outcome = judged(exp, file)?;
    Ok(assembled(exp, file, Ok(outcome)))
}

fn judged(exp: &dyn AnyExperiment, file: &RawFile) -> Result<Outcome, Unreadable> {
    match &file.skipped {
        Some(reason) => Ok(Outcome::Skipped {
            reason: reason.clone(),
        }),
        None => {
            let mut out = exp.judge_recorded(&file.recorded, &file.environment)?;
            interference::judge_disturbed(&mut out.claims, &file.environment.load);
            Ok(Outcome::Completed(out))
        }
    }
}

fn assembled(
    exp: &dyn AnyExperiment,
    file: &RawFile,
    outcome: Result<Outcome, LabError>,
) -> ExperimentResult {
    let params = match &file.recorded.plan {
        serde_json::Value::Object(m) => m.clone().into_iter().collect(),
        _ => Default::default(),
    };
    assemble(
        exp,
        file.mode,
        file.environment.clone(),
        file.started_unix_s,
        file.duration_s,
        params,
        outcome,
    )
}

#[cfg(test)]
mod tests {
    use super::Unmet;

    /// The skip reasons results have recorded stay the same sentences.
    #[test]
    fn an_unmet_need_reads_as_the_reason_results_record() {
        assert_eq!(
            Unmet::Root.to_string(),
            "needs root (run it with sudo); nothing was changed"
        );
        assert_eq!(
            Unmet::Cpus { need: 2, have: 1 }.to_string(),
            "needs at least 2 CPUs, this machine has 1"
        );
        let disk = Unmet::FreeDisk {
            need: 3 << 30,
            dir: "/var/tmp".into(),
            free: (512 << 20) + 1,
        };
        assert_eq!(
            disk.to_string(),
            "needs 3072 MiB free in /var/tmp, only 512 MiB are"
        );
    }
}
