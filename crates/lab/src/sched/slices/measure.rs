//! sched.slices' measurement: N spinners on one CPU and the kernel's trace of them,
//! one round per N.

use oslab_sys::fsread::Root;
use oslab_sys::parse::pidsched::PidSched;

use super::{MAX_GAPS, Plan, Raw, Round, Window};
use crate::sched::common::kernel_view;
use crate::sched::common::probe::{self};
use oslab_harness::Measured;
use oslab_harness::{Context, LabError};

pub(super) fn measure(plan: &Plan, ctx: &mut Context) -> Result<Measured<Raw>, LabError> {
    let cpu = probe::first_cpu();
    let root = Root::live();
    let mut rounds = Vec::new();
    for (k, &n) in plan.ns.iter().enumerate() {
        ctx.progress.stage(&format!("{n} process(es)"));
        rounds.push(round(ctx.machine, &root, cpu, n, plan.duration)?);
        ctx.progress.fraction((k + 1) as f64 / plan.ns.len() as f64);
    }
    if let (Some(path), Some(last)) = (&plan.trace, rounds.last()) {
        let names: Vec<String> = (0..last.workers.len())
            .map(|i| format!("worker {i}"))
            .collect();
        let events = match last.kernel.captured() {
            Some(c) => kernel_view::chrome_events(c, &last.workers, &names),
            None => super::plots::chrome_trace(&last.workers, &names),
        };
        let text = serde_json::to_string(&oslab_trace::chrome::document(&events))
            .map_err(|e| LabError::Failed(e.to_string()))?;
        oslab_sys::outfile::write_whole(path, text.as_bytes())
            .map_err(|e| LabError::Failed(format!("cannot write {}: {e}", path.display())))?;
    }
    Ok(Measured::Raw(Raw { cpu, rounds }))
}

/// `n` workers on `cpu` for `secs`; the parent reads the first one's
/// /proc/PID/sched 300 ms in, then its schedstat and the CPU's timer interrupts
/// around a window of half the run (at least 50 ms, at most 1 s).
pub(super) fn round(
    machine: &oslab_model::machine::MachineInfo,
    root: &Root,
    cpu: u32,
    n: usize,
    secs: f64,
) -> Result<Round, LabError> {
    let mut first_sched = PidSched::default();
    let mut window = None;
    let (workers, kernel) = kernel_view::spin_traced(
        machine,
        &probe::specs(n, Some(cpu), 0, 0),
        (secs * 1e9) as u64,
        MAX_GAPS,
        |pids| {
            std::thread::sleep(std::time::Duration::from_millis(300));
            let first = pids.first().copied();
            if let Some(p) = first {
                first_sched = probe::pid_sched(root, p);
            }
            let stat = || first.and_then(|p| probe::schedstat(root, p));
            let (c0, s0, t0) = (
                probe::local_timer(root, cpu),
                stat(),
                oslab_sys::clock::monotonic_ns(),
            );
            std::thread::sleep(std::time::Duration::from_secs_f64(
                (secs * 0.5).clamp(0.05, 1.0),
            ));
            let (c1, s1) = (probe::local_timer(root, cpu), stat());
            window = Some(Window {
                ns: oslab_sys::clock::monotonic_ns().saturating_sub(t0),
                timer_before: c0,
                timer_after: c1,
                schedstat_before: s0,
                schedstat_after: s1,
            });
        },
    )?;
    Ok(Round {
        n,
        workers,
        kernel,
        first_sched,
        window: window.unwrap_or(Window {
            ns: 0,
            timer_before: None,
            timer_after: None,
            schedstat_before: None,
            schedstat_after: None,
        }),
    })
}
