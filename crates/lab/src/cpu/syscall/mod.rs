//! `cpu.syscall`: what one system call costs, and that it is no context switch.
//!
//! What: ns per call of the cheapest system calls, gettid(2) and getppid(2),
//! beside clock_gettime(CLOCK_MONOTONIC), which the vDSO serves in user space
//! without entering the kernel; and the thread's voluntary context switches per
//! million calls. The claim of material section 5 (seed 002): a system call is a
//! mode switch, not a context switch.
//!
//! Method: gettid and getppid are issued through syscall(2) so no C library cache
//! can answer them; the vDSO clock is timed beside them as the contrast. The thread
//! is pinned to the CPU it started on. Each sample is one batch (calibrated to last
//! at least 200 us) divided by its size; the probes are interleaved round by round,
//! after warm-up rounds; the cost of the empty loop is measured the same way and
//! subtracted from the others. The thread's own switch counters
//! (getrusage(RUSAGE_THREAD), the same numbers /proc/thread-self/status shows) are
//! read around the loop: a system call that switched would add one voluntary
//! switch per call.
//!
//! Pitfalls: Spectre/Meltdown mitigations (page-table isolation, retpolines, IBRS)
//! can multiply the cost of entering the kernel; the vulnerabilities files are
//! quoted in the result. Under a hypervisor a system call does not exit to the host,
//! so its cost is close to bare metal, unlike a context switch. The subtracted
//! "loop" is not an empty compiled loop (a fraction of a nanosecond): it is the
//! same loop every probe runs, an indirect call through a function pointer per
//! iteration, so what remains is the body alone; raw figures are reported beside
//! the corrected ones.
//!
//! References: syscall(2), gettid(2), vdso(7), getrusage(2);
//! Documentation/admin-guide/hw-vuln/; material section 5.

use std::hint::black_box;

use oslab_model::{Axis, Environment, Plot, Scale, Series, SeriesStyle};
use oslab_sys::fsread::Root;
use oslab_sys::process::{PinGuard, current_cpu, raw_getppid, raw_gettid, thread_usage};
use serde::{Deserialize, Serialize};

use crate::cpu::common::timing::{MIN_BATCH_NS, calibrate, empty_body, subtract, time_batch};
use crate::harness::check::{Check, Condition, Rule};
use crate::harness::{Context, LabError, Meta, Needs, Output, finding, measurement};
use crate::harness::{Experiment, Measured, Planner};

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

/// The material's "tens to ~100 ns per call" (section 5, 2006-2013 Xeons): tens
/// means at least 10 ns; "about 100" is read with 50 % room.
const MATERIAL_LOW_NS: f64 = 10.0;
const MATERIAL_HIGH_NS: f64 = 150.0;

/// Voluntary switches per million calls at or below which the calls caused none
/// (one per 100,000 calls: a page fault or the tick's work, not the calls).
const SWITCHES_PER_MILLION: f64 = 10.0;

fn vdso_clock() {
    black_box(oslab_sys::clock::monotonic_ns());
}

fn gettid() {
    black_box(raw_gettid());
}

fn getppid() {
    black_box(raw_getppid());
}

/// The probes, in the order they are interleaved; the first is the loop itself.
const PROBES: [(&str, &str, fn()); 4] = [
    (
        "loop",
        "empty loop iteration (subtracted from the others)",
        empty_body,
    ),
    ("gettid", "gettid(2) via syscall(2)", gettid),
    ("getppid", "getppid(2) via syscall(2)", getppid),
    (
        "clock_gettime_vdso",
        "clock_gettime(CLOCK_MONOTONIC), served by the vDSO",
        vdso_clock,
    ),
];

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Plan {
    /// Interleaved rounds, one sample of each probe per round.
    pub samples: usize,
}

/// One probe's batch size and its per-call times, uncorrected.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProbeRaw {
    pub name: String,
    pub batch: u64,
    pub ns_per_call: Vec<f64>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Raw {
    /// The CPU the thread was pinned to, and where it was seen after the loop.
    pub cpu: u32,
    pub ran_on: Option<u32>,
    pub probes: Vec<ProbeRaw>,
    /// The thread's switches during the timed rounds (getrusage RUSAGE_THREAD).
    pub voluntary_switches: u64,
    pub involuntary_switches: u64,
    /// CPU vulnerability mitigations in force (name: state).
    pub mitigations: Vec<String>,
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

const MODE_SWITCH: Check = Check {
    id: "syscall-is-mode-switch",
    text: "A system call is a mode switch, not a context switch",
    source: "material 5 (seed 002)",
};

const COST: Check = Check {
    id: "syscall-cost-tens-of-ns",
    text: "The cheapest system call (gettid) costs tens to about a hundred nanoseconds",
    source: "material 5 (seed 002, 2006-2013 Xeons; 'about 100' read as up to 150 ns)",
};

impl Experiment for Syscall {
    type Plan = Plan;
    type Raw = Raw;

    fn meta(&self) -> &Meta {
        &META
    }

    fn plan(&self, p: &mut Planner) -> Plan {
        Plan {
            samples: p.samples(100, 1000),
        }
    }

    fn measure(&self, plan: &Plan, ctx: &mut Context) -> Result<Measured<Raw>, LabError> {
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

    fn judge(&self, plan: &Plan, raw: &Raw, env: &Environment) -> Output {
        judge(plan, raw, env.seed)
    }
}

fn median(v: &[f64]) -> f64 {
    oslab_stats::median(v).unwrap_or(f64::NAN)
}

/// Counts of calls and switches the claims and findings use.
struct Calls {
    syscalls: u64,
    all: u64,
    switches_per_million: f64,
}

impl Calls {
    fn of(raw: &Raw) -> Calls {
        let calls_of = |names: &[&str]| -> u64 {
            raw.probes
                .iter()
                .filter(|p| names.contains(&p.name.as_str()))
                .map(|p| p.batch * p.ns_per_call.len() as u64)
                .sum()
        };
        let all = calls_of(&["loop", "gettid", "getppid", "clock_gettime_vdso"]);
        Calls {
            syscalls: calls_of(&["gettid", "getppid"]),
            all,
            switches_per_million: raw.voluntary_switches as f64 * 1e6 / all.max(1) as f64,
        }
    }
}

fn judge(plan: &Plan, raw: &Raw, seed: u64) -> Output {
    let mut out = Output::default();
    let (corrected, overhead) = measurements(raw, seed, &mut out);
    let fig = |name: &str| corrected.get(name).copied().unwrap_or(f64::NAN);
    let calls = Calls::of(raw);
    out.findings = findings(raw, &calls, overhead, |n| fig(n));
    out.claims = vec![
        mode_switch_claim(raw, &calls),
        cost_claim(raw, fig("gettid"), fig("getppid")),
    ];
    out.notes.push(format!(
        "pinned to cpu{}; {} interleaved rounds after {WARMUP_ROUNDS} warm-up rounds; batches of at least {} us",
        raw.cpu,
        plan.samples,
        MIN_BATCH_NS / 1000
    ));
    if !raw.mitigations.is_empty() {
        out.notes.push(format!(
            "CPU vulnerability mitigations in force: {}",
            raw.mitigations.join("; ")
        ));
    }
    out
}

/// The probes' measurements (the loop subtracted from the others) and the round
/// by round plot; the corrected medians by probe, and the loop's cost.
fn measurements(
    raw: &Raw,
    seed: u64,
    out: &mut Output,
) -> (std::collections::BTreeMap<String, f64>, f64) {
    let overhead = raw
        .probes
        .iter()
        .find(|p| p.name == "loop")
        .map_or(0.0, |p| median(&p.ns_per_call));
    let correction = format!(
        "loop cost {overhead:.3} ns per iteration subtracted (an indirect call, as every probe makes)"
    );
    let mut series = Vec::new();
    let mut corrected = std::collections::BTreeMap::new();
    for (p, (_, description, _)) in raw.probes.iter().zip(PROBES) {
        let (samples, corr) = if p.name == "loop" {
            (p.ns_per_call.clone(), None)
        } else {
            (subtract(&p.ns_per_call, overhead), Some(correction.clone()))
        };
        series.push(Series {
            name: p.name.clone(),
            style: SeriesStyle::LinePoints,
            points: samples
                .iter()
                .enumerate()
                .map(|(i, &y)| [i as f64, y])
                .collect(),
        });
        corrected.insert(p.name.clone(), median(&samples));
        out.params
            .insert(format!("batch_{}", p.name), serde_json::json!(p.batch));
        out.measurements.push(measurement(
            &p.name,
            description,
            "ns/call",
            samples,
            seed,
            corr,
        ));
    }
    out.params.insert("cpu".into(), serde_json::json!(raw.cpu));
    out.plots.push(Plot {
        id: "rounds".into(),
        title: "Cost per call, round by round".into(),
        x: Axis::new("round", "", Scale::Linear),
        y: Axis::new("time per call", "ns", Scale::Linear),
        series,
        markers: vec![],
        x_labels: vec![],
    });
    (corrected, overhead)
}

fn findings(
    raw: &Raw,
    calls: &Calls,
    overhead: f64,
    fig: impl Fn(&str) -> f64,
) -> Vec<oslab_model::Finding> {
    let raw_median = |name: &str| {
        raw.probes
            .iter()
            .find(|p| p.name == name)
            .map_or(f64::NAN, |p| median(&p.ns_per_call))
    };
    let (gettid_ns, vdso_ns) = (fig("gettid"), fig("clock_gettime_vdso"));
    vec![
        finding(
            "gettid_ns",
            gettid_ns,
            "ns",
            "median cost of one gettid system call",
        ),
        finding(
            "getppid_ns",
            fig("getppid"),
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
                f64::NAN
            },
            "x",
            "how many vDSO clock reads cost as much as one kernel entry",
        ),
        finding(
            "loop_overhead_ns",
            overhead,
            "ns",
            "loop iteration with its indirect call, subtracted",
        ),
        finding(
            "gettid_uncorrected_ns",
            raw_median("gettid"),
            "ns",
            "gettid with the loop included, as timed",
        ),
        finding(
            "vdso_clock_gettime_uncorrected_ns",
            raw_median("clock_gettime_vdso"),
            "ns",
            "clock_gettime with the loop included, as timed",
        ),
        finding(
            "voluntary_switches",
            raw.voluntary_switches as f64,
            "switches",
            format!(
                "during {} timed calls ({:.3} per million)",
                calls.all, calls.switches_per_million
            ),
        ),
        finding(
            "involuntary_switches",
            raw.involuntary_switches as f64,
            "switches",
            "preemptions during the timed loop (timer tick, other tasks); not caused by the calls",
        ),
        finding(
            "cpu",
            f64::from(raw.cpu),
            "cpu",
            match raw.ran_on {
                Some(c) => format!("pinned; sched_getcpu after the loop: cpu{c}"),
                None => "pinned; sched_getcpu unavailable".into(),
            },
        ),
    ]
}

fn mode_switch_claim(raw: &Raw, calls: &Calls) -> oslab_model::Claim {
    MODE_SWITCH.judge(
        &[Condition::new(
            "voluntary switches per million calls",
            "",
            Rule::AtMost(SWITCHES_PER_MILLION),
            calls.switches_per_million,
        )],
        &format!(
            "{} voluntary and {} involuntary switches during {} calls ({} of them system calls)",
            raw.voluntary_switches, raw.involuntary_switches, calls.all, calls.syscalls
        ),
        |o| {
            if o.holds() {
                "the thread's own switch counters did not move with the calls".into()
            } else {
                "the thread blocked during the loop; something else (page faults, a signal, a debugger) made it sleep".into()
            }
        },
    )
}

fn cost_claim(raw: &Raw, gettid_ns: f64, getppid_ns: f64) -> oslab_model::Claim {
    COST.judge(
        &[Condition::new(
            "gettid",
            "ns",
            Rule::Range(MATERIAL_LOW_NS, MATERIAL_HIGH_NS),
            gettid_ns,
        )],
        &format!("getppid {getppid_ns:.1} ns"),
        |o| {
            if o.holds() {
                "within the range the author measured".into()
            } else if gettid_ns > MATERIAL_HIGH_NS && !raw.mitigations.is_empty() {
                format!(
                    "dearer than on the author's CPUs; kernel entry here pays for mitigations ({})",
                    raw.mitigations.join("; ")
                )
            } else if gettid_ns > MATERIAL_HIGH_NS {
                "dearer than on the author's CPUs, with no mitigation reported: a slow or heavily shared CPU".into()
            } else {
                "cheaper than on the author's CPUs: a newer CPU enters the kernel faster".into()
            }
        },
    )
}

#[cfg(test)]
mod tests;
