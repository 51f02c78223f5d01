//! `cpu.syscall`: what one system call costs, and that it is no context switch.
//!
//! Method: the cheapest system calls, gettid(2) and getppid(2), are issued through
//! syscall(2) so no C library cache can answer them; clock_gettime(CLOCK_MONOTONIC)
//! is timed beside them as the contrast, because the vDSO serves it in user space
//! without entering the kernel. The thread is pinned to the CPU it started on. Each
//! sample is one batch (calibrated to last at least 200 us) divided by its size; the
//! probes are interleaved round by round, after warm-up rounds; the cost of the empty
//! loop is measured the same way and subtracted from the others.
//!
//! The claim of material section 5 (seed 002): a system call is a mode switch, not a
//! context switch. The thread's own switch counters (getrusage(RUSAGE_THREAD), the
//! same numbers /proc/thread-self/status shows) are read around the loop: a system
//! call that switched would add one voluntary switch per call.
//!
//! Pitfalls: Spectre/Meltdown mitigations (page-table isolation, retpolines, IBRS)
//! can multiply the cost of entering the kernel; the vulnerabilities files are
//! quoted in the result. Under a hypervisor a system call does not exit to the host,
//! so its cost is close to bare metal, unlike a context switch.

use std::hint::black_box;

use oslab_model::{Axis, Claim, Plot, Scale, Series, SeriesStyle, Verdict};
use oslab_sys::fsread::Root;
use oslab_sys::process::{PinGuard, current_cpu, raw_getppid, raw_gettid, thread_usage};

use crate::experiment::{
    Context, Experiment, LabError, Meta, Needs, Outcome, Output, finding, measurement,
};
use crate::harness::{MIN_BATCH_NS, calibrate, empty_body, subtract, time_batch};

pub struct Syscall;

static META: Meta = Meta {
    id: "cpu.syscall",
    title: "The cost of a system call",
    section: "5",
    summary: "raw gettid and getppid vs vDSO clock_gettime, ns per call; no context switch",
    needs: Needs {
        root: false,
        min_cpus: 1,
        free_disk_bytes: 0,
    },
    quick_s: 2.0,
    full_s: 10.0,
    internal: false,
};

const WARMUP_ROUNDS: usize = 3;

/// The material's range for the cheapest system call on 2006-2013 Xeons.
const MATERIAL_LOW_NS: f64 = 10.0;
const MATERIAL_HIGH_NS: f64 = 150.0;

fn vdso_clock() {
    black_box(oslab_sys::clock::monotonic_ns());
}

fn gettid() {
    black_box(raw_gettid());
}

fn getppid() {
    black_box(raw_getppid());
}

struct Probe {
    name: &'static str,
    description: &'static str,
    f: fn(),
    batch: u64,
    samples: Vec<f64>,
}

/// Mitigations in force, from /sys/devices/system/cpu/vulnerabilities.
fn mitigations(root: &Root) -> Vec<String> {
    let dir = "/sys/devices/system/cpu/vulnerabilities";
    root.list(dir)
        .into_iter()
        .filter_map(|name| {
            let v = root.read_trim(&format!("{dir}/{name}"))?;
            v.starts_with("Mitigation").then(|| format!("{name}: {v}"))
        })
        .collect()
}

impl Experiment for Syscall {
    fn meta(&self) -> &Meta {
        &META
    }

    fn run(&self, ctx: &mut Context) -> Result<Outcome, LabError> {
        let rounds = ctx.samples(100, 1000);
        let seed = ctx.config.seed;
        let cpu = current_cpu().unwrap_or(0);
        let _pin = PinGuard::pin(cpu)?;
        ctx.param("cpu", cpu);

        let mut probes = vec![
            Probe {
                name: "loop",
                description: "empty loop iteration (subtracted from the others)",
                f: empty_body,
                batch: 0,
                samples: vec![],
            },
            Probe {
                name: "gettid",
                description: "gettid(2) via syscall(2)",
                f: gettid,
                batch: 0,
                samples: vec![],
            },
            Probe {
                name: "getppid",
                description: "getppid(2) via syscall(2)",
                f: getppid,
                batch: 0,
                samples: vec![],
            },
            Probe {
                name: "clock_gettime_vdso",
                description: "clock_gettime(CLOCK_MONOTONIC), served by the vDSO",
                f: vdso_clock,
                batch: 0,
                samples: vec![],
            },
        ];
        ctx.progress.stage("calibrating batch sizes");
        for p in probes.iter_mut() {
            let mut f = p.f;
            p.batch = calibrate(&mut f, MIN_BATCH_NS);
            ctx.params
                .insert(format!("batch_{}", p.name), serde_json::json!(p.batch));
        }

        ctx.progress.stage("timing");
        for _ in 0..WARMUP_ROUNDS {
            for p in probes.iter_mut() {
                let mut f = p.f;
                black_box(time_batch(p.batch, &mut f));
            }
        }
        let before = thread_usage();
        for r in 0..rounds {
            for p in probes.iter_mut() {
                let mut f = p.f;
                let ns = time_batch(p.batch, &mut f);
                p.samples.push(ns as f64 / p.batch as f64);
            }
            ctx.progress.fraction((r + 1) as f64 / rounds as f64);
        }
        let switches = thread_usage().since(&before);
        let ran_on = current_cpu();

        let overhead = oslab_stats::median(&probes[0].samples).unwrap_or(0.0);
        let correction = format!("empty-loop cost {overhead:.3} ns per iteration subtracted");
        let mut measurements = Vec::new();
        let mut medians = std::collections::BTreeMap::new();
        let mut series = Vec::new();
        for p in &probes {
            let (samples, corr) = if p.name == "loop" {
                (p.samples.clone(), None)
            } else {
                (subtract(&p.samples, overhead), Some(correction.clone()))
            };
            series.push(Series {
                name: p.name.into(),
                style: SeriesStyle::LinePoints,
                points: samples
                    .iter()
                    .enumerate()
                    .map(|(i, &y)| [i as f64, y])
                    .collect(),
            });
            let m = measurement(p.name, p.description, "ns/call", samples, seed, corr);
            medians.insert(p.name, m.summary.as_ref().map_or(0.0, |s| s.median));
            measurements.push(m);
        }
        let calls: u64 = probes
            .iter()
            .filter(|p| p.name == "gettid" || p.name == "getppid")
            .map(|p| p.batch * rounds as u64)
            .sum();
        let all_calls: u64 = probes.iter().map(|p| p.batch * rounds as u64).sum();

        let gettid_ns = medians["gettid"];
        let vdso_ns = medians["clock_gettime_vdso"];
        let mitig = mitigations(&Root::live());
        let per_million = switches.voluntary_switches as f64 * 1e6 / all_calls.max(1) as f64;
        let findings = vec![
            finding(
                "gettid_ns",
                gettid_ns,
                "ns",
                "median cost of one gettid system call",
            ),
            finding(
                "getppid_ns",
                medians["getppid"],
                "ns",
                "median cost of one getppid system call",
            ),
            finding(
                "vdso_clock_gettime_ns",
                vdso_ns,
                "ns",
                "median cost of clock_gettime through the vDSO",
            ),
            finding(
                "syscall_to_vdso_ratio",
                if vdso_ns > 0.0 {
                    gettid_ns / vdso_ns
                } else {
                    0.0
                },
                "x",
                "how many vDSO clock reads cost as much as one kernel entry",
            ),
            finding(
                "loop_overhead_ns",
                overhead,
                "ns",
                "empty loop iteration, subtracted",
            ),
            finding(
                "voluntary_switches",
                switches.voluntary_switches as f64,
                "switches",
                format!("during {all_calls} timed calls ({per_million:.3} per million)"),
            ),
            finding(
                "involuntary_switches",
                switches.involuntary_switches as f64,
                "switches",
                "preemptions during the timed loop (timer tick, other tasks); not caused by the calls",
            ),
            finding(
                "cpu",
                f64::from(cpu),
                "cpu",
                match ran_on {
                    Some(c) => format!("pinned; sched_getcpu after the loop: cpu{c}"),
                    None => "pinned; sched_getcpu unavailable".into(),
                },
            ),
        ];

        let mode_switch = Claim {
            id: "syscall-is-mode-switch".into(),
            text: "A system call is a mode switch, not a context switch".into(),
            source: "material 5 (seed 002)".into(),
            expectation:
                "no voluntary context switch from the calls: fewer than 1 per 100,000 calls".into(),
            observed: format!(
                "{} voluntary and {} involuntary switches during {} calls ({} of them system calls)",
                switches.voluntary_switches, switches.involuntary_switches, all_calls, calls
            ),
            verdict: if switches.voluntary_switches * 100_000 <= all_calls {
                Verdict::Holds
            } else {
                Verdict::Differs
            },
            why: if switches.voluntary_switches * 100_000 <= all_calls {
                "the thread's own switch counters did not move with the calls".into()
            } else {
                "the thread blocked during the loop; something else (page faults, a signal, a debugger) made it sleep".into()
            },
        };
        let in_range = (MATERIAL_LOW_NS..=MATERIAL_HIGH_NS).contains(&gettid_ns);
        let cost = Claim {
            id: "syscall-cost-tens-of-ns".into(),
            text: "The cheapest system call (gettid) costs tens to about a hundred nanoseconds"
                .into(),
            source: "material 5 (seed 002, 2006-2013 Xeons)".into(),
            expectation: format!("{MATERIAL_LOW_NS:.0}-{MATERIAL_HIGH_NS:.0} ns per call"),
            observed: format!(
                "gettid {gettid_ns:.1} ns, getppid {:.1} ns",
                medians["getppid"]
            ),
            verdict: if in_range {
                Verdict::Holds
            } else {
                Verdict::Differs
            },
            why: if in_range {
                "within the range the author measured".into()
            } else if gettid_ns > MATERIAL_HIGH_NS && !mitig.is_empty() {
                format!(
                    "dearer than on the author's CPUs; kernel entry here pays for mitigations ({})",
                    mitig.join("; ")
                )
            } else {
                "outside the range the author measured on older CPUs".into()
            },
        };

        let mut notes = vec![format!(
            "pinned to cpu{cpu}; {rounds} interleaved rounds after {WARMUP_ROUNDS} warm-up rounds; batches of at least {} us",
            MIN_BATCH_NS / 1000
        )];
        if !mitig.is_empty() {
            notes.push(format!(
                "CPU vulnerability mitigations in force: {}",
                mitig.join("; ")
            ));
        }
        Ok(Outcome::Completed(Output {
            measurements,
            findings,
            claims: vec![mode_switch, cost],
            plots: vec![Plot {
                id: "rounds".into(),
                title: "Cost per call, round by round".into(),
                x: Axis::new("round", "", Scale::Linear),
                y: Axis::new("time per call", "ns", Scale::Linear),
                series,
                markers: vec![],
                x_labels: vec![],
            }],
            notes,
            ..Default::default()
        }))
    }
}
