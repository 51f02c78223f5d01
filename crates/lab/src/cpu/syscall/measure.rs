//! cpu.syscall's measurement: each probe calibrated and timed in interleaved rounds.

use std::hint::black_box;

use oslab_sys::fsread::Root;
use oslab_sys::process::{PinGuard, current_cpu, thread_usage};

use super::{PROBES, Plan, ProbeRaw, Raw, WARMUP_ROUNDS};
use crate::cpu::common::timing::{MIN_BATCH_NS, calibrate, time_batch};
use oslab_harness::Measured;
use oslab_harness::{Context, LabError};

pub(super) fn measure(plan: &Plan, ctx: &mut Context) -> Result<Measured<Raw>, LabError> {
    let cpu = current_cpu().unwrap_or(0);
    let _pin = PinGuard::pin(cpu)?;
    ctx.progress.stage("calibrating batch sizes");
    let mut probes: Vec<ProbeRaw> = PROBES
        .iter()
        .map(|(name, _, f)| {
            let mut f = *f;
            ProbeRaw {
                name: name.to_string(),
                batch: calibrate(&mut f, MIN_BATCH_NS),
                ns_per_call: Vec::with_capacity(plan.samples),
            }
        })
        .collect();
    ctx.progress.stage("timing");
    for _ in 0..WARMUP_ROUNDS {
        for (p, (_, _, f)) in probes.iter().zip(PROBES) {
            let mut f = f;
            black_box(time_batch(p.batch, &mut f));
        }
    }
    let before = thread_usage();
    for r in 0..plan.samples {
        for (p, (_, _, f)) in probes.iter_mut().zip(PROBES) {
            let mut f = f;
            let ns = time_batch(p.batch, &mut f);
            p.ns_per_call.push(ns as f64 / p.batch as f64);
        }
        ctx.progress.fraction((r + 1) as f64 / plan.samples as f64);
    }
    let switches = thread_usage().since(&before);
    Ok(Measured::Raw(Raw {
        cpu,
        ran_on: current_cpu(),
        probes,
        voluntary_switches: switches.voluntary_switches,
        involuntary_switches: switches.involuntary_switches,
        mitigations: mitigations(&Root::live()),
    }))
}

/// Mitigations in force, from /sys/devices/system/cpu/vulnerabilities.
pub(super) fn mitigations(root: &Root) -> Vec<String> {
    let dir = "/sys/devices/system/cpu/vulnerabilities";
    root.list(dir)
        .into_iter()
        .filter_map(|name| {
            let v = root.read_trim(&format!("{dir}/{name}"))?;
            v.starts_with("Mitigation").then(|| format!("{name}: {v}"))
        })
        .collect()
}
