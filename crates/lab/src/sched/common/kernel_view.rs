//! The scheduler's own account of the spinning workers (sched_switch and
//! sched_wakeup, crates/trace): when each ran and waited, beside what the workers
//! noticed themselves from gaps in their clock readings, and a Chrome trace of it
//! with the real pids and CLOCK_MONOTONIC timestamps.

use oslab_model::machine::MachineInfo;
use oslab_model::{Claim, Finding};
use oslab_probe::spinners::Spec;
use oslab_trace::TraceOutcome;
use oslab_trace::analysis::Captured;
use oslab_trace::chrome::{self, TraceEvent};

use super::analysis::Worker;
use super::probe;
use oslab_harness::check::{Check, Condition, Rule, figure};
use oslab_harness::kernel_trace::KernelTrace;
use oslab_harness::{LabError, finding};

/// The spinners and their runs, as the kernel switched them.
pub fn spin_traced(
    machine: &MachineInfo,
    specs: &[Spec],
    duration_ns: u64,
    max_gaps: usize,
    during: impl FnOnce(&[u32]),
) -> Result<(Vec<Worker>, TraceOutcome), LabError> {
    // Following oslab follows the workers it forks from their first instruction.
    let kernel = KernelTrace::sched(machine, vec![std::process::id()], true);
    let workers = probe::spin(specs, duration_ns, max_gaps, during);
    let mut outcome = kernel.finish();
    if let (Ok(w), TraceOutcome::Traced(c)) = (&workers, &mut outcome) {
        let pids: Vec<u32> = w.iter().map(|x| x.pid).collect();
        keep_only(c, &pids);
    }
    Ok((workers?, outcome))
}

fn keep_only(c: &mut Captured, pids: &[u32]) {
    c.switches
        .retain(|s| pids.contains(&s.prev_pid) || pids.contains(&s.next_pid));
    c.wakeups.retain(|w| pids.contains(&w.pid));
    c.counts.retain(|k| pids.contains(&k.pid));
}

/// A thread's stretches on the CPU inside [from, to), from the switches.
pub fn kernel_runs(c: &Captured, pid: u32, from: u64, to: u64) -> Vec<(u64, u64)> {
    let mut out = Vec::new();
    let mut on: Option<u64> = None;
    let mut seen = false;
    for s in &c.switches {
        if s.next_pid == pid {
            on = Some(s.ts_ns);
            seen = true;
        } else if s.prev_pid == pid {
            // running since before the first switch seen
            let start = on.take().unwrap_or(if seen { s.ts_ns } else { from });
            seen = true;
            out.push((start.max(from), s.ts_ns.min(to)));
        }
    }
    if let Some(start) = on {
        out.push((start.max(from), to));
    }
    out.retain(|(a, b)| b > a);
    out
}

/// One worker's run time by the kernel's switches and by its own clock.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Agreement {
    /// |kernel - own| / kernel.
    pub difference: f64,
    pub kernel_ns: u64,
    pub own_ns: u64,
    /// How often the kernel switched it out inside its window.
    pub switches: usize,
}

impl Agreement {
    /// What the method cannot see, as a share of the worker's run time
    /// ([`ALLOWANCE`]): the steal share of the run, the switch path per switch,
    /// and the interrupts.
    pub fn allowed(&self, steal: f64) -> f64 {
        let per_switch =
            self.switches as f64 * SWITCH_PATH_NS as f64 / self.kernel_ns.max(1) as f64;
        steal + per_switch + INTERRUPT_SHARE
    }
}

/// What the workers' clocks and the scheduler's records cannot agree on, named:
/// the worker sees as a gap of its own, and the scheduler counts as its run time,
/// (1) the time the hypervisor stole from the vCPU (the run's steal share), (2) at
/// each switch the way from the timer's interrupt to the switch record and back
/// to the worker after it ([`SWITCH_PATH_NS`]), (3) the interrupts handled while
/// it ran ([`INTERRUPT_SHARE`]).
pub const ALLOWANCE: &str = "the run's steal share, 100 µs for each switch (the timer interrupt, schedule() and the tracer before the switch record, the way back after it; 44 to 63 µs measured per switch on a quiet 2-vCPU KVM guest) and 1.5 % for interrupts (a worker alone on its CPU lost 0.9 % to them there)";

/// The switch path a worker sees as its own gap and the scheduler as its run time.
pub const SWITCH_PATH_NS: u64 = 100_000;
/// The interrupts' share of a CPU's time that a worker sees as gaps: timer ticks
/// and device interrupts, each a VM exit on a guest (0.9 % for a lone worker on
/// a quiet 2-vCPU KVM guest: 71 gaps of 124 µs a second, steal 0.1 %).
pub const INTERRUPT_SHARE: f64 = 0.015;

/// How each worker's own run time compares with the kernel's over its window.
pub fn agreements(c: &Captured, workers: &[Worker]) -> Vec<Agreement> {
    workers
        .iter()
        .filter_map(|w| {
            let runs = kernel_runs(c, w.pid, w.start_ns, w.end_ns);
            let k: u64 = runs.iter().map(|(a, b)| b - a).sum();
            let own = w.ran_between(w.start_ns, w.end_ns);
            (k > 0).then(|| Agreement {
                difference: k.abs_diff(own) as f64 / k as f64,
                kernel_ns: k,
                own_ns: own,
                switches: runs.len().saturating_sub(1),
            })
        })
        .collect()
}

/// The worker whose difference is largest, for the findings.
pub fn agreement(c: &Captured, workers: &[Worker]) -> Option<Agreement> {
    agreements(c, workers)
        .into_iter()
        .max_by(|a, b| a.difference.total_cmp(&b.difference))
}

/// The kernel's complete runs of a worker, ms (the first and last cut off).
pub fn kernel_slices_ms(c: &Captured, w: &Worker) -> Vec<f64> {
    let r = kernel_runs(c, w.pid, w.start_ns, w.end_ns);
    if r.len() > 2 {
        r[1..r.len() - 1]
            .iter()
            .map(|(a, b)| (b - a) as f64 / 1e6)
            .collect()
    } else {
        Vec::new()
    }
}

pub const AGREES: Check = Check {
    id: "spinners-agree-with-kernel",
    // the switch path it allows was measured on a quiet machine; beside other
    // work each switch costs a worker more
    tolerates: &oslab_harness::interference::TIMES,
    text: "What the spinning workers noticed of their own runs (gaps in their clock readings) is what the scheduler did (its sched_switch records)",
    source: "kernel/sched/core.c __schedule (trace_sched_switch), traced with eBPF",
};

/// The claim over several groups of workers (rounds, pairs): the worker furthest
/// beyond its allowance, with the run's steal share `steal`.
pub fn agreement_claim(groups: &[(&TraceOutcome, &[Worker])], steal: f64) -> Claim {
    let mut worst: Option<Agreement> = None;
    let mut why_none = String::from("no worker ran inside a traced switch");
    for (outcome, workers) in groups {
        match outcome {
            TraceOutcome::NotAvailable { reason } => {
                why_none = format!("kernel tracing: not available ({reason})");
            }
            TraceOutcome::Traced(c) => {
                for a in agreements(c, workers) {
                    let beyond = |x: &Agreement| x.difference - x.allowed(steal);
                    if worst.is_none_or(|w| beyond(&a) > beyond(&w)) {
                        worst = Some(a);
                    }
                }
            }
        }
    }
    let subject = "largest difference between a worker's own run time and the kernel's";
    let rule = Rule::AtMost(worst.map_or(INTERRUPT_SHARE + steal, |w| w.allowed(steal)));
    let cond = Condition::from_option(subject, "", rule, worst.map(|w| w.difference), why_none);
    let context = worst
        .map(|w| {
            format!(
                "that worker ran {} by the kernel, {} by its own clock, switched out {} times; allowed: {ALLOWANCE} (steal {:.1} % here)",
                figure(w.kernel_ns as f64 / 1e6, "ms"),
                figure(w.own_ns as f64 / 1e6, "ms"),
                w.switches,
                steal * 100.0
            )
        })
        .unwrap_or_default();
    AGREES.judge(&[cond], &context, |o| {
        let Some(w) = worst.filter(|_| !o.holds()) else {
            return "every stretch a worker noticed off the CPU was a switch the kernel made, within what the two cannot see alike".into();
        };
        if w.own_ns < w.kernel_ns {
            format!(
                "a worker saw more gaps than the scheduler switched it out for, beyond the steal ({:.1} % of the run here), the switch path and the interrupts: time the CPU spent outside any task the scheduler knows of",
                steal * 100.0
            )
        } else {
            "the kernel switched a worker out for stretches shorter than the gap it notices (50 us), so they count as its own run time".into()
        }
    })
}

/// Findings `kernel.<key>.*`: the agreement and the kernel's median slice.
pub fn findings(key: &str, c: &Captured, workers: &[Worker]) -> Vec<Finding> {
    let mut out = Vec::new();
    if let Some(a) = agreement(c, workers) {
        out.push(finding(
            &format!("kernel.{key}.run_time_difference"),
            a.difference,
            "fraction",
            format!(
                "largest |kernel - own| / kernel over the workers: {:.1} ms by sched_switch, {:.1} ms by the worker's clock, {} switches",
                a.kernel_ns as f64 / 1e6,
                a.own_ns as f64 / 1e6,
                a.switches
            ),
        ));
    }
    // a worker alone on its CPU has no turns to measure
    let slices: Vec<f64> = if workers.len() > 1 {
        workers
            .iter()
            .flat_map(|w| kernel_slices_ms(c, w))
            .collect()
    } else {
        Vec::new()
    };
    if let Some(m) = oslab_stats::describe::median(&slices) {
        out.push(finding(
            &format!("kernel.{key}.slice_p50_ms"),
            m,
            "ms",
            format!(
                "median run between two switches, {} runs (sched_switch)",
                slices.len()
            ),
        ));
    }
    out
}

/// The workers' runs and waits as the kernel switched them: a "running" slice
/// from each switch in to the switch out and a "runnable" slice from a wake-up
/// or a preemption to the next switch in, on the real pid and tid.
pub fn chrome_events(c: &Captured, workers: &[Worker], names: &[String]) -> Vec<TraceEvent> {
    let mut ev = Vec::new();
    for (w, name) in workers.iter().zip(names) {
        ev.push(chrome::name(w.pid, w.pid, false, name));
        ev.push(chrome::name(w.pid, w.pid, true, name));
        for (a, b) in kernel_runs(c, w.pid, w.start_ns, w.end_ns) {
            ev.push(chrome::slice("running", "sched", w.pid, w.pid, a, b - a));
        }
        let mut ready: Option<u64> = None;
        let wakeups = c
            .wakeups
            .iter()
            .filter(|x| x.pid == w.pid)
            .map(|x| (x.ts_ns, true));
        let switches = c
            .switches
            .iter()
            .filter(|s| s.prev_pid == w.pid || s.next_pid == w.pid)
            .map(|s| (s.ts_ns, false));
        let mut marks: Vec<(u64, bool)> = wakeups.chain(switches).collect();
        marks.sort();
        for (ts, is_wakeup) in marks {
            if is_wakeup {
                ready.get_or_insert(ts);
                continue;
            }
            let s = c
                .switches
                .iter()
                .find(|s| s.ts_ns == ts && (s.prev_pid == w.pid || s.next_pid == w.pid));
            match s {
                Some(s) if s.next_pid == w.pid => {
                    if let Some(r) = ready.take() {
                        ev.push(chrome::slice("runnable", "sched", w.pid, w.pid, r, ts - r));
                    }
                }
                Some(s) if s.prev_runnable => ready = Some(ts),
                _ => ready = None,
            }
        }
    }
    ev
}

#[cfg(test)]
mod tests {
    use super::*;
    use oslab_model::Verdict;
    use oslab_trace::records::Switch;

    fn sw(ts: u64, prev: u32, next: u32) -> Switch {
        Switch {
            ts_ns: ts,
            cpu: 0,
            prev_pid: prev,
            prev_tgid: prev,
            next_pid: next,
            next_tgid: next,
            prev_prio: 120,
            next_prio: 120,
            prev_runnable: true,
        }
    }

    fn worker(pid: u32, start: u64, end: u64, gaps: Vec<(u64, u64)>) -> Worker {
        Worker {
            pid,
            start_ns: start,
            end_ns: end,
            gaps,
            overflow: false,
            voluntary: 0,
            involuntary: 0,
            user_ns: 0,
            sys_ns: 0,
            readings: 0,
        }
    }

    /// Two workers taking 4 ms turns from 0 to 16 ms.
    fn turns() -> Captured {
        Captured {
            switches: vec![sw(4, 10, 11), sw(8, 11, 10), sw(12, 10, 11), sw(16, 11, 10)]
                .into_iter()
                .map(|mut s| {
                    s.ts_ns *= 1_000_000;
                    s
                })
                .collect(),
            ..Captured::default()
        }
    }

    #[test]
    fn runs_come_from_switches_in_and_out() {
        let c = turns();
        let ms = 1_000_000;
        // worker 10 runs from the start of its window to 4 ms, 8-12, 16 to the end
        assert_eq!(
            kernel_runs(&c, 10, 0, 20 * ms),
            vec![(0, 4 * ms), (8 * ms, 12 * ms), (16 * ms, 20 * ms)]
        );
        assert_eq!(
            kernel_runs(&c, 11, 0, 20 * ms),
            vec![(4 * ms, 8 * ms), (12 * ms, 16 * ms)]
        );
        let w10 = worker(10, 0, 20 * ms, vec![(4 * ms, 8 * ms), (12 * ms, 16 * ms)]);
        assert_eq!(kernel_slices_ms(&c, &w10), vec![4.0]);
        let a = agreement(&c, &[w10]).unwrap();
        assert_eq!(
            (a.difference, a.kernel_ns, a.own_ns, a.switches),
            (0.0, 12 * ms, 12 * ms, 2)
        );
    }

    /// Regression: sched.slices and sched.nice differed on this cross-check (1.3
    /// and 1.8 % against a bare 1 %) and blamed steal while steal was 0.0 %. The
    /// allowance now names what the two accounts cannot see alike (steal, the
    /// switch path, interrupts), and the "why" gives the steal it saw.
    #[test]
    fn the_claim_allows_what_neither_account_sees_and_names_the_steal_it_saw() {
        let c = TraceOutcome::Traced(Box::new(turns()));
        let ms = 1_000_000;
        let agree = [worker(
            10,
            0,
            20 * ms,
            vec![(4 * ms, 8 * ms), (12 * ms, 16 * ms)],
        )];
        let claim = agreement_claim(&[(&c, &agree)], 0.0);
        assert_eq!(claim.verdict, Verdict::Holds);
        assert!(
            claim.expectation.contains("at most"),
            "{}",
            claim.expectation
        );
        // each of the two switches cost the worker 100 us more than the kernel's
        // record shows, as the preemption path does on a KVM guest: 1.7 % of
        // its 12 ms, inside 1.5 % + 2 x 100 us (3.2 %)
        let path = [worker(
            10,
            0,
            20 * ms,
            vec![(4 * ms - 100_000, 8 * ms + 100_000), (12 * ms, 16 * ms)],
        )];
        let claim = agreement_claim(&[(&c, &path)], 0.0);
        assert_eq!(claim.verdict, Verdict::Holds, "{}", claim.observed);
        assert!(
            claim.observed.contains("switched out 2 times"),
            "{}",
            claim.observed
        );
        // the worker saw one more 1 ms gap the kernel never switched it out for
        let stolen = [worker(
            10,
            0,
            20 * ms,
            vec![(ms, 2 * ms), (4 * ms, 8 * ms), (12 * ms, 16 * ms)],
        )];
        let claim = agreement_claim(&[(&c, &stolen)], 0.0);
        assert_eq!(claim.verdict, Verdict::Differs);
        assert!(
            claim
                .why
                .contains("beyond the steal (0.0 % of the run here)"),
            "{}",
            claim.why
        );
        // steal of 8 % during the run explains that gap (1 ms of 12 ms)
        let claim = agreement_claim(&[(&c, &stolen)], 0.08);
        assert_eq!(claim.verdict, Verdict::Holds, "{}", claim.observed);
        let off = TraceOutcome::NotAvailable {
            reason: "needs root".into(),
        };
        let claim = agreement_claim(&[(&off, &agree)], 0.0);
        assert_eq!(claim.verdict, Verdict::NotJudged);
        assert_eq!(claim.why, "kernel tracing: not available (needs root)");
    }

    #[test]
    fn the_trace_has_running_and_runnable_slices_on_real_pids() {
        let c = turns();
        let ms = 1_000_000;
        let ws = [
            worker(10, 0, 20 * ms, vec![]),
            worker(11, 0, 20 * ms, vec![]),
        ];
        let ev = chrome_events(&c, &ws, &["a".into(), "b".into()]);
        let of =
            |pid: u32, name: &str| ev.iter().filter(|e| e.pid == pid && e.name == name).count();
        assert_eq!(of(10, "running"), 3);
        assert_eq!(of(11, "running"), 2);
        // 10 was preempted at 4 and 12 ms and waited until 8 and 16
        assert_eq!(of(10, "runnable"), 2);
        let r = ev
            .iter()
            .find(|e| e.pid == 10 && e.name == "runnable")
            .unwrap();
        assert_eq!((r.ts, r.dur), (4000.0, Some(4000.0)));
    }
}
