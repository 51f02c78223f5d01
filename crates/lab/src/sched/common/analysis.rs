//! From the gaps a worker recorded to its runs on the CPU: slice lengths, turns,
//! shares, and the kernel's nice-to-weight table. Pure: every function here reads
//! recorded [`Worker`]s only.

/// What one spinning worker recorded, as raw data: the probe's own record.
pub use oslab_probe::spinners::Worker;

/// The kernel's sched_prio_to_weight table, nice -20 to 19 (kernel/sched/core.c).
pub const NICE_WEIGHTS: [u64; 40] = [
    88761, 71755, 56483, 46273, 36291, 29154, 23254, 18705, 14949, 11916, 9548, 7620, 6100, 4904,
    3906, 3121, 2501, 1991, 1586, 1277, 1024, 820, 655, 526, 423, 335, 272, 215, 172, 137, 110, 87,
    70, 56, 45, 36, 29, 23, 18, 15,
];

pub fn weight(nice: i32) -> u64 {
    NICE_WEIGHTS[(nice.clamp(-20, 19) + 20) as usize]
}

/// A worker's run time in each of `n` intervals of `step` ns from `from`: what
/// [`Worker::ran_between`] gives for each, in one pass over its runs (asking
/// each interval alone walks every run once per interval).
pub fn ran_by_interval(t: &Worker, from: u64, step: u64, n: usize) -> Vec<u64> {
    let mut out = vec![0u64; n];
    if step == 0 || n == 0 {
        return out;
    }
    let end = from + step * n as u64;
    for (a, b) in t.runs() {
        let (a, b) = (a.max(from), b.min(end));
        if a >= b {
            continue;
        }
        let first = ((a - from) / step) as usize;
        let last = ((b - 1 - from) / step) as usize;
        for (k, slot) in out.iter_mut().enumerate().take(last + 1).skip(first) {
            let lo = from + step * k as u64;
            *slot += b.min(lo + step) - a.max(lo);
        }
    }
    out
}

/// The complete runs of a worker in ms (the first and last are cut by the window
/// and left out).
pub fn inner_runs_ms(t: &Worker) -> Vec<f64> {
    let r = t.runs();
    if r.len() > 2 {
        r[1..r.len() - 1]
            .iter()
            .map(|(a, b)| (b - a) as f64 / 1e6)
            .collect()
    } else {
        vec![]
    }
}

/// What one worker's record says.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct WorkerStats {
    /// Complete runs (the first and last are cut by the window and left out).
    pub slices: usize,
    pub slice_p10_ms: f64,
    pub slice_p50_ms: f64,
    pub slice_p90_ms: f64,
    /// Median time off the CPU between runs, ms.
    pub wait_p50_ms: f64,
    /// Share of the window it ran.
    pub share: f64,
}

pub fn stats(t: &Worker) -> WorkerStats {
    let wall = t.wall_ns().max(1) as f64;
    let ran: u64 = t.runs().iter().map(|(a, b)| b - a).sum();
    let inner = inner_runs_ms(t);
    // a damaged record can hold a gap that ends before it starts: no wait, no panic
    let waits: Vec<f64> = t
        .gaps
        .iter()
        .map(|(a, b)| b.saturating_sub(*a) as f64 / 1e6)
        .collect();
    let q = |v: &[f64], p| oslab_stats::quantile(v, p).unwrap_or(f64::NAN);
    WorkerStats {
        slices: inner.len(),
        slice_p10_ms: q(&inner, 0.1),
        slice_p50_ms: q(&inner, 0.5),
        slice_p90_ms: q(&inner, 0.9),
        wait_p50_ms: q(&waits, 0.5),
        share: ran as f64 / wall,
    }
}

/// A worker's turns on a CPU it shares with others: a turn ends when another
/// worker takes the CPU (a handover). A gap in which no other worker ran (the
/// host took the vCPU, an interrupt, another task) interrupts a turn without
/// ending it.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Turns {
    /// Complete turns (the first and last are cut by the window): the run time
    /// of each, ms (its wall time less the interruptions inside it).
    pub turns_ms: Vec<f64>,
    /// Gaps inside complete turns in which no other worker ran.
    pub interruptions: usize,
    /// Their total length, ms.
    pub interrupted_ms: f64,
}

/// The turns of `workers[i]` among the others.
pub fn turns(workers: &[Worker], i: usize) -> Turns {
    let mut others: Vec<(u64, u64)> = workers
        .iter()
        .enumerate()
        .filter(|(j, _)| *j != i)
        .flat_map(|(_, w)| w.runs())
        .collect();
    others.sort_unstable();
    // the latest end among the runs that start before each index
    let reach: Vec<u64> = others
        .iter()
        .scan(0u64, |m, r| {
            *m = (*m).max(r.1);
            Some(*m)
        })
        .collect();
    let someone_ran = |a: u64, b: u64| {
        let k = others.partition_point(|r| r.0 < b);
        k > 0 && reach[k - 1] > a
    };
    let Some(w) = workers.get(i) else {
        return Turns::default();
    };
    // (turn start, turn end, interruptions inside, their length)
    let mut all: Vec<(u64, u64, usize, u64)> = Vec::new();
    let mut cur = (w.start_ns, 0usize, 0u64);
    for &(a, b) in &w.gaps {
        if someone_ran(a, b) {
            all.push((cur.0, a, cur.1, cur.2));
            cur = (b, 0, 0);
        } else {
            cur.1 += 1;
            cur.2 += b - a;
        }
    }
    all.push((cur.0, w.end_ns, cur.1, cur.2));
    let inner = if all.len() > 2 {
        &all[1..all.len() - 1]
    } else {
        &[][..]
    };
    Turns {
        turns_ms: inner
            .iter()
            .map(|t| t.1.saturating_sub(t.0).saturating_sub(t.3) as f64 / 1e6)
            .collect(),
        interruptions: inner.iter().map(|t| t.2).sum(),
        interrupted_ms: inner.iter().map(|t| t.3).sum::<u64>() as f64 / 1e6,
    }
}

/// The usual CONFIG_HZ values.
pub const USUAL_HZ: [u32; 4] = [100, 250, 300, 1000];

/// The CONFIG_HZ a busy CPU's local timer interrupt rate points to. The count is
/// the tick plus every other timer that fired there (a sleeping task's hrtimer),
/// so the rate is HZ or more: the largest usual HZ at most 5 % above the rate (a
/// few ticks may be lost while the host holds the vCPU); 100 below that.
pub fn hz_from_timer_rate(rate: f64) -> u32 {
    USUAL_HZ
        .into_iter()
        .filter(|hz| f64::from(*hz) <= rate * 1.05)
        .max()
        .unwrap_or(USUAL_HZ[0])
}

/// The median, NaN when there is nothing.
pub fn median(v: &[f64]) -> f64 {
    oslab_stats::median(v).unwrap_or(f64::NAN)
}

/// The median, `None` when there is nothing.
pub fn median_opt(v: &[f64]) -> Option<f64> {
    oslab_stats::median(v).filter(|m| m.is_finite())
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;

    pub(crate) fn worker(start: u64, end: u64, gaps: &[(u64, u64)]) -> Worker {
        Worker {
            start_ns: start,
            end_ns: end,
            gaps: gaps.to_vec(),
            ..Default::default()
        }
    }

    #[test]
    fn a_gap_that_ends_before_it_starts_waits_nothing() {
        let t = worker(0, 26 * MS, &[(12 * MS, 4 * MS)]);
        assert_eq!(stats(&t).wait_p50_ms, 0.0);
    }

    #[test]
    fn runs_and_slices_by_hand() {
        // runs 0-4, 8-12, 16-20, 24-26 ms: complete inner runs 4 and 4 ms
        let t = worker(
            0,
            26 * MS,
            &[(4 * MS, 8 * MS), (12 * MS, 16 * MS), (20 * MS, 24 * MS)],
        );
        assert_eq!(
            t.runs(),
            vec![
                (0, 4 * MS),
                (8 * MS, 12 * MS),
                (16 * MS, 20 * MS),
                (24 * MS, 26 * MS)
            ]
        );
        let s = stats(&t);
        assert_eq!(s.slices, 2);
        assert_eq!(s.slice_p50_ms, 4.0);
        assert_eq!(s.wait_p50_ms, 4.0);
        assert!((s.share - 14.0 / 26.0).abs() < 1e-12);
        assert_eq!(t.ran_between(2 * MS, 10 * MS), 4 * MS);
        // never off the CPU: one run, no complete slice, share 1
        let s = stats(&worker(0, 10, &[]));
        assert_eq!((s.slices, s.share), (0, 1.0));
    }

    #[test]
    fn run_time_by_interval_is_ran_between_each() {
        let t = Worker {
            start_ns: 3,
            end_ns: 95,
            gaps: vec![(10, 12), (20, 41), (41, 45), (70, 71)],
            ..Default::default()
        };
        for (from, step, n) in [
            (0, 10, 10),
            (5, 7, 13),
            (0, 1, 100),
            (50, 100, 1),
            (0, 10, 0),
        ] {
            let each: Vec<u64> = (0..n)
                .map(|k| t.ran_between(from + step * k as u64, from + step * (k as u64 + 1)))
                .collect();
            assert_eq!(
                ran_by_interval(&t, from, step, n),
                each,
                "{from} {step} {n}"
            );
        }
    }

    #[test]
    fn turns_end_at_handovers_only() {
        // a: runs 0-10, 20-25 (a 1 ms gap at 25 where nobody ran), 26-30, 40-50
        // b: runs 10-20, 30-40
        let a = worker(
            0,
            50 * MS,
            &[(10 * MS, 20 * MS), (25 * MS, 26 * MS), (30 * MS, 40 * MS)],
        );
        let b = worker(10 * MS, 40 * MS, &[(20 * MS, 30 * MS)]);
        let ws = [a, b];
        let t = turns(&ws, 0);
        // turns 0-10 | 20-30 | 40-50: the inner one runs 9 ms, with 1 interruption
        assert_eq!(t.turns_ms, vec![9.0]);
        assert_eq!(t.interruptions, 1);
        assert_eq!(t.interrupted_ms, 1.0);
        // runs split by the interruption: 5 and 4 ms
        assert_eq!(inner_runs_ms(&ws[0]), vec![5.0, 4.0]);
        let tb = turns(&ws, 1);
        assert_eq!((tb.turns_ms.len(), tb.interruptions), (0, 0));
        assert_eq!(turns(&ws, 5), Turns::default());
    }

    #[test]
    fn the_weight_table_and_hz() {
        assert_eq!(weight(0), 1024);
        assert_eq!(weight(5), 335);
        assert_eq!(weight(19), 15);
        assert_eq!(weight(-20), 88761);
        assert_eq!(hz_from_timer_rate(248.7), 250);
        assert_eq!(hz_from_timer_rate(990.0), 1000);
        assert_eq!(hz_from_timer_rate(104.0), 100);
        // other timers add to the tick: 281 interrupts a second at HZ 250
        assert_eq!(hz_from_timer_rate(281.4), 250);
        assert_eq!(hz_from_timer_rate(1100.0), 1000);
        assert_eq!(hz_from_timer_rate(20.0), 100);
    }
}
