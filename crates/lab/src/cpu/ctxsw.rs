//! `cpu.ctxsw`: what a context switch costs, measured so that every iteration really
//! switches (material section 5, seed 002).
//!
//! Method: two tasks ping-pong; the waker wakes the other and blocks until woken
//! back, with blocking primitives only (FUTEX_WAIT/FUTEX_WAKE on a word in a shared
//! anonymous mapping, or one byte each way through two pipes), never sched_yield.
//! The full matrix: two processes (fork) or two threads; futex or pipe; both pinned
//! to one CPU, pinned to two CPUs of each pair class the topology offers (SMT
//! siblings, same L3, different L3), or unpinned. Each cell runs several launches
//! (a fresh peer each time) of batches of round trips timed with CLOCK_MONOTONIC
//! after a warm-up; a sample is one batch's time per switch (a round trip is two
//! handoffs). Each side counts its own switches with getrusage(RUSAGE_THREAD): on one
//! CPU every round trip must cost each side exactly one switch (voluntary, or
//! involuntary by wake-up preemption); launches that do not are flagged.
//!
//! Naming: on one CPU the figure is a handoff, a real switch. On two CPUs it is a
//! cross-CPU wake-up (and, in a VM, an idle vCPU's exit and an IPI), not a switch
//! cost; unpinned is whatever the scheduler chose. The cost of the system calls
//! themselves (a FUTEX_WAKE with no waiter, a FUTEX_WAIT that returns at once, a
//! non-blocking pipe write + read) is measured in the same run and subtracted for an
//! estimate of the switch alone, labelled as an estimate.

use std::sync::atomic::AtomicU32;

use oslab_model::{Axis, Claim, Plot, Scale, Series, SeriesStyle, Verdict};
use oslab_sys::fsread::Root;
use oslab_sys::machine::MachineInfo;
use oslab_sys::parse::procstat::cpu_times;
use oslab_sys::pingpong::{self, Mechanism, Tasks};

use crate::experiment::{
    Context, Experiment, LabError, Meta, Needs, Outcome, Output, finding, measurement,
};
use crate::harness::{MIN_BATCH_NS, calibrate, time_batch};
use crate::settings::{AnySetting, Count, Declared, Setting};

pub struct Ctxsw;

static LAUNCHES: Setting<Count> = Setting {
    name: "launches",
    help: "fresh peers per cell",
    quick: 3,
    full: 5,
    bounds: Some((1, 50)),
    names: &[],
};
static ROUND_TRIPS: Setting<Count> = Setting {
    name: "round_trips",
    help: "round trips per timed batch",
    quick: 2000,
    full: 10_000,
    bounds: Some((1000, 10_000_000)),
    names: &[],
};
static SETTINGS: [&dyn AnySetting; 2] = [&LAUNCHES, &ROUND_TRIPS];

static META: Meta = Meta {
    id: "cpu.ctxsw",
    title: "Context switches: processes and threads, futex and pipe, pinned and not",
    section: "5",
    summary: "ns per forced switch (one CPU) or cross-CPU wake-up, with switch counts, syscall cost and perf bench beside",
    needs: Needs {
        root: false,
        min_cpus: 1,
        free_disk_bytes: 0,
    },
    quick_s: 12.0,
    full_s: 200.0,
    internal: false,
};

/// Where the two tasks run.
#[derive(Debug, Clone, PartialEq)]
pub struct Placement {
    pub name: String,
    pub own: Option<u32>,
    pub peer: Option<u32>,
}

/// Same CPU, one pair per class the topology offers, and unpinned.
pub fn placements(m: &MachineInfo) -> Vec<Placement> {
    let mut out = vec![Placement {
        name: "same-cpu".into(),
        own: Some(0),
        peer: Some(0),
    }];
    let cpus: Vec<u32> = m.cpu.cpus.iter().map(|c| c.cpu).collect();
    let first = cpus.first().copied().unwrap_or(0);
    out[0].own = Some(first);
    out[0].peer = Some(first);
    let siblings: Vec<u32> = m
        .cpu
        .cpus
        .iter()
        .find(|c| c.cpu == first)
        .map(|c| c.thread_siblings.clone())
        .unwrap_or_default();
    let l3_shared = |a: u32, b: u32| {
        m.caches
            .distinct
            .iter()
            .any(|c| c.level == 3 && c.shared_cpus.contains(&a) && c.shared_cpus.contains(&b))
    };
    let mut classes: Vec<(&str, u32)> = Vec::new();
    for &c in cpus.iter().filter(|c| **c != first) {
        let class = if siblings.contains(&c) {
            "smt-sibling"
        } else if l3_shared(first, c) {
            "same-l3"
        } else {
            "other-l3"
        };
        if !classes.iter().any(|(k, _)| *k == class) {
            classes.push((class, c));
        }
    }
    for (class, c) in classes {
        out.push(Placement {
            name: format!("cross-cpu.{class}"),
            own: Some(first),
            peer: Some(c),
        });
    }
    out.push(Placement {
        name: "unpinned".into(),
        own: None,
        peer: None,
    });
    out
}

/// Switches each side made per round trip (voluntary, involuntary), and whether a
/// run is clean: on one CPU exactly one switch per side per round trip. Involuntary
/// ones are expected there: the woken task preempts the waker on its way back from
/// the wake call (wake-up preemption), before it blocks, and that counts as
/// involuntary; the waker then finds its turn already back and does not block.
pub fn per_round_trip(vol: u64, invol: u64, round_trips: u64) -> (f64, f64) {
    let n = round_trips.max(1) as f64;
    (vol as f64 / n, invol as f64 / n)
}

pub fn clean(own: (f64, f64), peer: (f64, f64)) -> bool {
    let ok = |x: (f64, f64)| (x.0 + x.1 - 1.0).abs() <= 0.02;
    ok(own) && ok(peer)
}

fn steal_now() -> Option<oslab_sys::parse::procstat::CpuTimes> {
    cpu_times(&Root::live().read("/proc/stat").ok()?)
}

/// perf bench sched pipe: µs per round trip, pinned with taskset like ours.
fn perf_bench(cpu: Option<u32>, threads: bool, loops: u64) -> Option<f64> {
    let mut cmd = match cpu {
        Some(c) => {
            let mut x = std::process::Command::new("taskset");
            x.args(["-c", &c.to_string(), "perf"]);
            x
        }
        None => std::process::Command::new("perf"),
    };
    cmd.args(["bench", "sched", "pipe", "-l", &loops.to_string()]);
    if threads {
        cmd.arg("-T");
    }
    cmd.stderr(std::process::Stdio::null());
    let out = oslab_sys::signals::child_of_oslab(&mut cmd, oslab_sys::signals::OnParentDeath::Kill)
        .output()
        .ok()?;
    let text = String::from_utf8_lossy(&out.stdout);
    text.lines()
        .find(|l| l.contains("usecs/op"))
        .and_then(|l| l.split_whitespace().next()?.parse().ok())
}

fn has_perf() -> bool {
    std::process::Command::new("perf")
        .arg("--version")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// One cell of the matrix over several launches.
pub struct Cell {
    pub key: String,
    pub samples: Vec<f64>,
    pub own: (f64, f64),
    pub peer: (f64, f64),
    pub flagged: usize,
    pub launches: usize,
    pub cpus_seen: (u64, u64),
    pub steal: f64,
}

pub fn run_cell(
    tasks: Tasks,
    mech: Mechanism,
    p: &Placement,
    launches: usize,
    batches: usize,
    rts: u64,
    ws: usize,
) -> Result<Cell, LabError> {
    let mut samples = Vec::new();
    let (mut ov, mut oi, mut pv, mut pi, mut total, mut peer_total) = (0, 0, 0, 0, 0, 0);
    let warmup = rts / 4 + 100;
    let mut flagged = 0;
    let mut seen = (0, 0);
    let s0 = steal_now();
    for _ in 0..launches {
        let r = pingpong::run(tasks, mech, p.own, p.peer, rts, batches, warmup, ws)?;
        let n = rts * r.batches as u64;
        for b in &r.batch_ns {
            samples.push(*b as f64 / (2.0 * rts as f64));
        }
        let own = per_round_trip(r.own_voluntary, r.own_involuntary, n);
        // the peer's counts include the warm-up round trips
        let peer = per_round_trip(r.peer_voluntary, r.peer_involuntary, n + warmup);
        if p.name == "same-cpu" && !clean(own, peer) {
            flagged += 1;
        }
        ov += r.own_voluntary;
        oi += r.own_involuntary;
        pv += r.peer_voluntary;
        pi += r.peer_involuntary;
        total += n;
        peer_total += n + warmup;
        seen = (seen.0 | r.own_cpus, seen.1 | r.peer_cpus);
    }
    let steal = match (s0, steal_now()) {
        (Some(a), Some(b)) => b.since(&a).steal_fraction(),
        _ => 0.0,
    };
    let t = |m: Tasks| {
        if m == Tasks::Processes {
            "processes"
        } else {
            "threads"
        }
    };
    let mname = if mech == Mechanism::Futex {
        "futex"
    } else {
        "pipe"
    };
    Ok(Cell {
        key: format!("{}.{}.{}", t(tasks), mname, p.name),
        samples,
        own: per_round_trip(ov, oi, total),
        peer: per_round_trip(pv, pi, peer_total),
        flagged,
        launches,
        cpus_seen: seen,
        steal,
    })
}

fn cpus_of(mask: u64) -> String {
    let v: Vec<String> = (0..64)
        .filter(|i| mask & (1 << i) != 0)
        .map(|i| i.to_string())
        .collect();
    if v.is_empty() {
        "?".into()
    } else {
        v.join(",")
    }
}

impl Experiment for Ctxsw {
    fn meta(&self) -> &Meta {
        &META
    }

    fn settings(&self) -> Declared {
        &SETTINGS
    }

    fn run(&self, ctx: &mut Context) -> Result<Outcome, LabError> {
        let launches = ctx.get(&LAUNCHES) as usize;
        let batches = ctx.samples(3, 8);
        let rts = ctx.get(&ROUND_TRIPS);
        let seed = ctx.config.seed;
        let places = placements(ctx.machine);
        let mut cells = Vec::new();
        let total = places.len() * 4;
        for p in &places {
            for tasks in [Tasks::Processes, Tasks::Threads] {
                for mech in [Mechanism::Futex, Mechanism::Pipe] {
                    ctx.progress.stage(&p.name);
                    cells.push(run_cell(tasks, mech, p, launches, batches, rts, 0)?);
                    ctx.progress.fraction(cells.len() as f64 / total as f64);
                }
            }
        }
        // the system calls alone
        let word = AtomicU32::new(0);
        let mut wake = || pingpong::futex_wake_nobody(&word);
        let nw = calibrate(&mut wake, MIN_BATCH_NS);
        let wake_ns: Vec<f64> = (0..batches.max(3))
            .map(|_| time_batch(nw, &mut wake) as f64 / nw as f64)
            .collect();
        let mut wait = || pingpong::futex_wait_mismatch(&word);
        let nt = calibrate(&mut wait, MIN_BATCH_NS);
        let wait_ns: Vec<f64> = (0..batches.max(3))
            .map(|_| time_batch(nt, &mut wait) as f64 / nt as f64)
            .collect();
        let (pipe_ns, pipe_ok) = {
            let mut fds = [0i32; 2];
            let ok = oslab_sys::pingpong::nonblocking_pipe(&mut fds);
            let mut pair = || oslab_sys::pingpong::pipe_write_read(&fds);
            let v: Vec<f64> = if ok {
                let n = calibrate(&mut pair, MIN_BATCH_NS);
                (0..batches.max(3))
                    .map(|_| time_batch(n, &mut pair) as f64 / n as f64)
                    .collect()
            } else {
                vec![]
            };
            oslab_sys::pingpong::close_pipe(&fds);
            (v, ok)
        };
        let med = |v: &[f64]| oslab_stats::median(v).unwrap_or(0.0);
        let get = |k: &str| cells.iter().find(|c| c.key == k).map(|c| med(&c.samples));

        let mut measurements = Vec::new();
        let mut findings = Vec::new();
        let mut bars = Vec::new();
        let mut labels = Vec::new();
        let mut notes = Vec::new();
        for (i, c) in cells.iter().enumerate() {
            let what = if c.key.ends_with("same-cpu") {
                "per switch (handoff on one CPU)"
            } else if c.key.ends_with("unpinned") {
                "per handoff, unpinned (not a switch cost)"
            } else {
                "per cross-CPU wake-up (not a switch cost)"
            };
            measurements.push(measurement(
                &format!("ns.{}", c.key),
                what,
                "ns",
                c.samples.clone(),
                seed,
                None,
            ));
            findings.push(finding(
                &format!("switches_per_round_trip.{}", c.key),
                c.own.0 + c.own.1 + c.peer.0 + c.peer.1,
                "switches",
                format!(
                    "both sides together; measuring side {:.2} voluntary + {:.3} involuntary, peer {:.2} + {:.3}; ran on cpus {} / {}; steal {:.1} %{}",
                    c.own.0, c.own.1, c.peer.0, c.peer.1, cpus_of(c.cpus_seen.0), cpus_of(c.cpus_seen.1), c.steal * 100.0,
                    if c.flagged > 0 { format!("; {} of {} launches flagged", c.flagged, c.launches) } else { String::new() }
                ),
            ));
            if c.steal > 0.05 {
                notes.push(format!(
                    "{}: steal {:.1} % during the cell: contaminated",
                    c.key,
                    c.steal * 100.0
                ));
            }
            bars.push([i as f64, med(&c.samples)]);
            labels.push(
                c.key
                    .replace("processes", "proc")
                    .replace("threads", "thr")
                    .replace("cross-cpu.", "x-"),
            );
        }
        measurements.push(measurement(
            "ns.futex_wake_no_waiter",
            "FUTEX_WAKE with nobody waiting",
            "ns",
            wake_ns.clone(),
            seed,
            None,
        ));
        measurements.push(measurement(
            "ns.futex_wait_mismatch",
            "FUTEX_WAIT that returns at once (value changed)",
            "ns",
            wait_ns.clone(),
            seed,
            None,
        ));
        if pipe_ok {
            measurements.push(measurement(
                "ns.pipe_write_read",
                "non-blocking pipe write + read of one byte",
                "ns",
                pipe_ns.clone(),
                seed,
                None,
            ));
        }
        if let Some(s) = get("processes.futex.same-cpu") {
            findings.push(finding(
                "estimate.switch_alone.futex",
                s - med(&wake_ns) - med(&wait_ns),
                "ns",
                "ESTIMATE: same-CPU futex handoff minus one wake and one wait system call",
            ));
        }
        if let Some(s) = get("processes.pipe.same-cpu") {
            findings.push(finding(
                "estimate.switch_alone.pipe",
                s - med(&pipe_ns),
                "ns",
                "ESTIMATE: same-CPU pipe handoff minus one non-blocking write + read",
            ));
        }
        // perf bench sched pipe, pinned the same way
        if has_perf() {
            let loops = launches as u64 * batches as u64 * rts;
            for (pinned, threads) in [(true, false), (true, true), (false, false), (false, true)] {
                let tasks = if threads { "threads" } else { "processes" };
                let place = if pinned { "same-cpu" } else { "unpinned" };
                let cpu = if pinned { places[0].own } else { None };
                if let (Some(us), Some(ours)) = (
                    perf_bench(cpu, threads, loops),
                    get(&format!("{tasks}.pipe.{place}")),
                ) {
                    let perf_ns = us * 1000.0 / 2.0;
                    findings.push(finding(
                        &format!("perf_bench.{tasks}.{place}"),
                        perf_ns,
                        "ns",
                        format!(
                            "perf bench sched pipe{} {}: {us:.3} us per round trip = {perf_ns:.0} ns per handoff; ours / perf = {:.2}",
                            if threads { " -T" } else { "" },
                            if pinned { "pinned to one CPU with taskset" } else { "unpinned" },
                            ours / perf_ns
                        ),
                    ));
                }
            }
        } else {
            notes.push("perf is not installed: no perf bench sched pipe comparison".into());
        }

        let mut claims = Vec::new();
        if let (Some(pinned), Some(free)) = (
            get("processes.futex.same-cpu"),
            get("processes.futex.unpinned"),
        ) {
            {
                let cut = 1.0 - pinned / free;
                claims.push(Claim {
                    id: "pinning-cheaper".into(),
                    text: "Pinning both tasks to one CPU makes switches 45-70 % cheaper".into(),
                    source: "material 5 (seed 002: 45-70 % on 2006-2013 Xeons)".into(),
                    expectation: "unpinned / pinned cost reduction between 45 % and 70 %".into(),
                    observed: format!("pinned {pinned:.0} ns, unpinned {free:.0} ns: {:.0} % cheaper", cut * 100.0),
                    verdict: if (0.45..=0.70).contains(&cut) { Verdict::Holds } else { Verdict::Differs },
                    why: if (0.45..=0.70).contains(&cut) {
                        "as the author saw".into()
                    } else if cut > 0.70 {
                        "unpinned tasks land on two CPUs, so every handoff is a cross-CPU wake-up of an idle vCPU (a hypervisor exit and an IPI), far dearer than a switch on one CPU".into()
                    } else {
                        "the scheduler kept the unpinned tasks on one CPU most of the time".into()
                    },
                });
            }
        }
        if let (Some(p), Some(t)) = (
            get("processes.futex.same-cpu"),
            get("threads.futex.same-cpu"),
        ) {
            let cut = 1.0 - t / p;
            claims.push(Claim {
                id: "threads-cheaper".into(),
                text: "A thread switch is 5-20 % cheaper than a process switch".into(),
                source: "material 5 (seed 002)".into(),
                expectation: "threads 5-20 % cheaper, pinned to one CPU".into(),
                observed: format!("processes {p:.0} ns, threads {t:.0} ns: {:.1} % cheaper", cut * 100.0),
                verdict: if (0.05..=0.20).contains(&cut) { Verdict::Holds } else { Verdict::Differs },
                why: if (0.05..=0.20).contains(&cut) {
                    "no page-table (CR3) change between threads of one process".into()
                } else if cut < 0.05 {
                    "with PCID the CR3 reload no longer flushes the TLB, so a process switch costs about what a thread switch does".into()
                } else {
                    "the mm switch costs more here than on the author's CPUs".into()
                },
            });
        }
        let hv = ctx.machine.hypervisor.name.clone();
        claims.push(Claim {
            id: "vm-dearer".into(),
            text: "Under a hypervisor context switches cost 2.5-3x more".into(),
            source: "material 5 (seed 002, VMware ESX)".into(),
            expectation: "the same machine measured with and without a hypervisor".into(),
            observed: match (&hv, get("processes.futex.same-cpu")) {
                (Some(h), Some(s)) => format!("running under {h}: {s:.0} ns per same-CPU switch; cross-CPU wake-ups show the VM's cost"),
                (None, Some(s)) => format!("bare metal: {s:.0} ns per same-CPU switch"),
                _ => "-".into(),
            },
            verdict: Verdict::NotTestable,
            why: "one machine cannot be measured both with and without its hypervisor; shown as context".into(),
        });
        notes.push(format!("{launches} launches x {batches} batches x {rts} round trips per cell; a sample is one batch; unpinned and cross-CPU figures are wake-ups, not switch costs"));
        Ok(Outcome::Completed(Output {
            measurements,
            findings,
            claims,
            plots: vec![Plot {
                id: "matrix".into(),
                title: "ns per handoff: processes/threads, futex/pipe, placement".into(),
                x: Axis::new("", "", Scale::Linear),
                y: Axis::new("time per handoff", "ns", Scale::Linear),
                series: vec![Series {
                    name: "median".into(),
                    style: SeriesStyle::Bars,
                    points: bars,
                }],
                markers: vec![],
                x_labels: labels,
            }],
            notes,
            ..Default::default()
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bookkeeping_of_switch_counts() {
        assert_eq!(per_round_trip(2000, 3, 2000), (1.0, 0.0015));
        assert!(clean((1.0, 0.0), (1.005, 0.002)));
        assert!(
            clean((0.58, 0.42), (0.65, 0.35)),
            "wake-up preemption counts as involuntary"
        );
        assert!(
            !clean((0.6, 0.0), (1.0, 0.0)),
            "a side that did not switch each time"
        );
        assert!(
            !clean((1.0, 0.05), (1.0, 0.0)),
            "extra switches: something else ran"
        );
    }
}
