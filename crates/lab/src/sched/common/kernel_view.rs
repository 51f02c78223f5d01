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
use crate::harness::check::{Check, Condition, Rule, figure};
use crate::harness::kernel_trace::KernelTrace;
use crate::harness::{LabError, finding};

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

/// How the workers' own run time compares with the kernel's, over each one's
/// window: (largest |kernel - own| / kernel over the workers, kernel ns, own ns
/// of that worker).
pub fn agreement(c: &Captured, workers: &[Worker]) -> Option<(f64, u64, u64)> {
    workers
        .iter()
        .filter_map(|w| {
            let k: u64 = kernel_runs(c, w.pid, w.start_ns, w.end_ns)
                .iter()
                .map(|(a, b)| b - a)
                .sum();
            let own = w.ran_between(w.start_ns, w.end_ns);
            (k > 0).then(|| (k.abs_diff(own) as f64 / k as f64, k, own))
        })
        .max_by(|a, b| a.0.total_cmp(&b.0))
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
    text: "What the spinning workers noticed of their own runs (gaps in their clock readings) is what the scheduler did (its sched_switch records)",
    source: "kernel/sched/core.c __schedule (trace_sched_switch), traced with eBPF",
};

/// Within 1 % of the run time.
pub const AGREE_WITHIN: f64 = 0.01;

/// The claim over several groups of workers (rounds, pairs): the worst group.
pub fn agreement_claim(groups: &[(&TraceOutcome, &[Worker])]) -> Claim {
    let subject = "largest difference between a worker's own run time and the kernel's";
    let rule = Rule::AtMost(AGREE_WITHIN);
    let mut worst: Option<(f64, u64, u64)> = None;
    let mut why_none = String::from("no worker ran inside a traced switch");
    for (outcome, workers) in groups {
        match outcome {
            TraceOutcome::NotAvailable { reason } => {
                why_none = format!("kernel tracing: not available ({reason})");
            }
            TraceOutcome::Traced(c) => {
                if let Some(a) = agreement(c, workers)
                    && worst.is_none_or(|w| a.0 > w.0)
                {
                    worst = Some(a);
                }
            }
        }
    }
    let cond = Condition::from_option(subject, "", rule, worst.map(|w| w.0), why_none);
    let context = worst
        .map(|(_, k, own)| {
            format!(
                "that worker ran {} by the kernel, {} by its own clock",
                figure(k as f64 / 1e6, "ms"),
                figure(own as f64 / 1e6, "ms")
            )
        })
        .unwrap_or_default();
    AGREES.judge(&[cond], &context, |o| {
        if o.holds() {
            "every stretch a worker noticed off the CPU was a switch the kernel made".into()
        } else {
            let (_, k, own) = worst.unwrap_or_default();
            if own < k {
                "a worker saw gaps the kernel did not switch it out for: time the hypervisor took the vCPU (steal) or interrupt handlers ran, both invisible to the scheduler".into()
            } else {
                "the kernel switched a worker out for stretches shorter than the gap it notices (50 us), so they count as its own run time".into()
            }
        }
    })
}

/// Findings `kernel.<key>.*`: the agreement and the kernel's median slice.
pub fn findings(key: &str, c: &Captured, workers: &[Worker]) -> Vec<Finding> {
    let mut out = Vec::new();
    if let Some((d, k, own)) = agreement(c, workers) {
        out.push(finding(
            &format!("kernel.{key}.run_time_difference"),
            d,
            "fraction",
            format!(
                "largest |kernel - own| / kernel over the workers: {:.1} ms by sched_switch, {:.1} ms by the worker's clock",
                k as f64 / 1e6,
                own as f64 / 1e6
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
        let (d, k, own) = agreement(&c, &[w10]).unwrap();
        assert_eq!((d, k, own), (0.0, 12 * ms, 12 * ms));
    }

    #[test]
    fn the_claim_holds_when_both_accounts_agree_and_names_steal_when_not() {
        let c = TraceOutcome::Traced(Box::new(turns()));
        let ms = 1_000_000;
        let agree = [worker(
            10,
            0,
            20 * ms,
            vec![(4 * ms, 8 * ms), (12 * ms, 16 * ms)],
        )];
        assert_eq!(agreement_claim(&[(&c, &agree)]).verdict, Verdict::Holds);
        // the worker saw one more 1 ms gap the kernel never switched it out for
        let stolen = [worker(
            10,
            0,
            20 * ms,
            vec![(ms, 2 * ms), (4 * ms, 8 * ms), (12 * ms, 16 * ms)],
        )];
        let claim = agreement_claim(&[(&c, &stolen)]);
        assert_eq!(claim.verdict, Verdict::Differs);
        assert!(claim.why.contains("steal"), "{}", claim.why);
        let off = TraceOutcome::NotAvailable {
            reason: "needs root".into(),
        };
        let claim = agreement_claim(&[(&off, &agree)]);
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
