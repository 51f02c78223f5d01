//! From the gaps a worker recorded to its runs on the CPU: slice lengths, turns,
//! share, and the kernel's nice-to-weight table.

use oslab_sys::spinners::Trace;

/// The kernel's sched_prio_to_weight table, nice -20 to 19 (kernel/sched/core.c).
pub const NICE_WEIGHTS: [u64; 40] = [
    88761, 71755, 56483, 46273, 36291, 29154, 23254, 18705, 14949, 11916, 9548, 7620, 6100, 4904,
    3906, 3121, 2501, 1991, 1586, 1277, 1024, 820, 655, 526, 423, 335, 272, 215, 172, 137, 110, 87,
    70, 56, 45, 36, 29, 23, 18, 15,
];

pub fn weight(nice: i32) -> u64 {
    NICE_WEIGHTS[(nice.clamp(-20, 19) + 20) as usize]
}

/// The run intervals of a worker: between its start, its gaps and its end.
pub fn runs(t: &Trace) -> Vec<(u64, u64)> {
    let mut out = Vec::new();
    let mut from = t.start_ns;
    for &(a, b) in &t.gaps {
        if a > from {
            out.push((from, a));
        }
        from = b;
    }
    if t.end_ns > from {
        out.push((from, t.end_ns));
    }
    out
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

pub fn stats(t: &Trace) -> WorkerStats {
    let r = runs(t);
    let wall = t.end_ns.saturating_sub(t.start_ns).max(1) as f64;
    let ran: u64 = r.iter().map(|(a, b)| b - a).sum();
    let inner: Vec<f64> = if r.len() > 2 {
        r[1..r.len() - 1]
            .iter()
            .map(|(a, b)| (b - a) as f64 / 1e6)
            .collect()
    } else {
        vec![]
    };
    let waits: Vec<f64> = t.gaps.iter().map(|(a, b)| (b - a) as f64 / 1e6).collect();
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

/// The workers' runs as Chrome trace events (ui.perfetto.dev and chrome://tracing
/// open it): one complete ("X") event per run, one thread per worker.
pub fn chrome_trace(traces: &[Trace], names: &[String]) -> serde_json::Value {
    let t0 = traces.iter().map(|t| t.start_ns).min().unwrap_or(0);
    let mut events = Vec::new();
    for (i, t) in traces.iter().enumerate() {
        let name = names
            .get(i)
            .cloned()
            .unwrap_or_else(|| format!("worker {i}"));
        events.push(serde_json::json!({"name": "thread_name", "ph": "M", "pid": 1, "tid": i + 1, "args": {"name": name}}));
        for (a, b) in runs(t) {
            events.push(serde_json::json!({
                "name": "run", "ph": "X", "pid": 1, "tid": i + 1,
                "ts": (a - t0) as f64 / 1e3, "dur": (b - a) as f64 / 1e3
            }));
        }
    }
    serde_json::json!({"traceEvents": events, "displayTimeUnit": "ms"})
}

/// A lane chart of the first `window_ms` of the runs: for worker i, points at
/// (ms since the first start, i + 1) every `step_ms` while it ran.
pub fn timeline(traces: &[Trace], window_ms: f64, step_ms: f64) -> Vec<Vec<[f64; 2]>> {
    let t0 = traces.iter().map(|t| t.start_ns).min().unwrap_or(0);
    traces
        .iter()
        .enumerate()
        .map(|(i, t)| {
            let mut pts = Vec::new();
            for (a, b) in runs(t) {
                let (a, b) = (
                    (a - t0) as f64 / 1e6,
                    ((b - t0) as f64 / 1e6).min(window_ms),
                );
                let mut x = a;
                while x <= b {
                    pts.push([x, (i + 1) as f64]);
                    x += step_ms;
                }
            }
            pts
        })
        .collect()
}

/// Each worker's run time so far vs wall time (ms), one point per run boundary.
pub fn progress(traces: &[Trace]) -> Vec<Vec<[f64; 2]>> {
    let t0 = traces.iter().map(|t| t.start_ns).min().unwrap_or(0);
    traces
        .iter()
        .map(|t| {
            let mut done = 0.0;
            let mut pts = vec![[(t.start_ns - t0) as f64 / 1e6, 0.0]];
            for (a, b) in runs(t) {
                pts.push([(a - t0) as f64 / 1e6, done]);
                done += (b - a) as f64 / 1e6;
                pts.push([(b - t0) as f64 / 1e6, done]);
            }
            pts
        })
        .collect()
}

/// Local timer interrupts of `cpu` so far, from /proc/interrupts text (the LOC row).
pub fn local_timer_count(text: &str, cpu: usize) -> Option<u64> {
    let row = text.lines().find(|l| l.trim_start().starts_with("LOC:"))?;
    row.trim_start()
        .strip_prefix("LOC:")?
        .split_whitespace()
        .nth(cpu)?
        .parse()
        .ok()
}

/// Run time and wait time (ns) and timeslices from /proc/PID/schedstat text.
pub fn schedstat(text: &str) -> Option<(u64, u64, u64)> {
    let mut it = text.split_whitespace().map(|v| v.parse::<u64>().ok());
    Some((it.next()??, it.next()??, it.next()??))
}

/// The usual CONFIG_HZ value nearest a measured tick rate on a busy CPU.
pub fn nearest_hz(rate: f64) -> u32 {
    [100u32, 250, 300, 1000]
        .into_iter()
        .min_by(|a, b| {
            ((*a as f64) - rate)
                .abs()
                .total_cmp(&((*b as f64) - rate).abs())
        })
        .unwrap_or(250)
}

/// se.slice (ns) and se.load.weight of a task, from /proc/PID/sched text.
pub fn sched_fields(text: &str) -> (Option<u64>, Option<u64>) {
    let field = |k: &str| {
        text.lines().find_map(|l| {
            let (a, b) = l.split_once(':')?;
            (a.trim() == k).then(|| b.trim().split('.').next()?.parse().ok())?
        })
    };
    (field("se.slice"), field("se.load.weight"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn trace(start: u64, end: u64, gaps: &[(u64, u64)]) -> Trace {
        Trace {
            start_ns: start,
            end_ns: end,
            gaps: gaps.to_vec(),
            ..Default::default()
        }
    }

    #[test]
    fn runs_and_slices_by_hand() {
        // runs 0-4, 8-12, 16-20, 24-26 ms: complete inner runs 4 and 4 ms
        let ms = 1_000_000;
        let t = trace(
            0,
            26 * ms,
            &[(4 * ms, 8 * ms), (12 * ms, 16 * ms), (20 * ms, 24 * ms)],
        );
        assert_eq!(
            runs(&t),
            vec![
                (0, 4 * ms),
                (8 * ms, 12 * ms),
                (16 * ms, 20 * ms),
                (24 * ms, 26 * ms)
            ]
        );
        let s = stats(&t);
        assert_eq!(s.slices, 2);
        assert_eq!(s.slice_p50_ms, 4.0);
        assert_eq!(s.wait_p50_ms, 4.0);
        assert!((s.share - 14.0 / 26.0).abs() < 1e-12);
        // never off the CPU: one run, no complete slice, share 1
        let s = stats(&trace(0, 10, &[]));
        assert_eq!((s.slices, s.share), (0, 1.0));
    }

    #[test]
    fn timeline_and_progress_by_hand() {
        let ms = 1_000_000;
        let t = trace(0, 10 * ms, &[(4 * ms, 8 * ms)]);
        let lanes = timeline(std::slice::from_ref(&t), 100.0, 1.0);
        // runs 0-4 and 8-10 ms, a point per ms: 5 + 3
        assert_eq!(lanes[0].len(), 8);
        assert!(lanes[0].iter().all(|p| p[1] == 1.0));
        let p = progress(&[t]);
        assert_eq!(p[0].last().unwrap(), &[10.0, 6.0]);
    }

    #[test]
    fn the_weight_table() {
        assert_eq!(weight(0), 1024);
        assert_eq!(weight(5), 335);
        assert_eq!(weight(19), 15);
        assert_eq!(weight(-20), 88761);
        // nice 0 vs 5: 1024 / (1024 + 335)
        assert!((super::super::nice::predicted_share(5) - 0.7535).abs() < 1e-3);
    }

    #[test]
    fn chrome_trace_parses_back() {
        let ms = 1_000_000;
        let t = trace(0, 10 * ms, &[(4 * ms, 8 * ms)]);
        let v = chrome_trace(&[t], &["a".into()]);
        let text = serde_json::to_string(&v).unwrap();
        let back: serde_json::Value = serde_json::from_str(&text).unwrap();
        let ev = back["traceEvents"].as_array().unwrap();
        let runs: Vec<_> = ev.iter().filter(|e| e["ph"] == "X").collect();
        assert_eq!(runs.len(), 2);
        assert_eq!(runs[1]["ts"], 8000.0);
        assert_eq!(runs[1]["dur"], 2000.0);
        assert!(
            ev.iter()
                .any(|e| e["ph"] == "M" && e["args"]["name"] == "a")
        );
    }

    #[test]
    fn timer_interrupts_and_hz() {
        let text = "           CPU0       CPU1       \n  0:         44          0   IO-APIC    2-edge      timer\nLOC:    1288477    1339925   Local timer interrupts\n";
        assert_eq!(local_timer_count(text, 0), Some(1288477));
        assert_eq!(local_timer_count(text, 1), Some(1339925));
        assert_eq!(local_timer_count(text, 2), None);
        assert_eq!(nearest_hz(248.7), 250);
        assert_eq!(nearest_hz(990.0), 1000);
        assert_eq!(nearest_hz(104.0), 100);
    }

    #[test]
    fn schedstat_fields() {
        assert_eq!(schedstat("123 456 7\n"), Some((123, 456, 7)));
        assert_eq!(schedstat("1 2"), None);
    }

    #[test]
    fn proc_sched_fields() {
        let text = "se.load.weight                               :              1048576\nse.slice                                     :              1400000\n";
        assert_eq!(sched_fields(text), (Some(1400000), Some(1048576)));
    }
}

/// Property tests of the readers of /proc/PID/schedstat, /proc/PID/sched and
/// /proc/interrupts: any text gives values or nothing, never a panic; the kernel's
/// lines read back. A fuzz-like run with many cases (PROPTEST_CASES wins over the
/// default here; failures are printed, not saved to proptest-regressions/):
/// `PROPTEST_CASES=100000 cargo test -p oslab-lab --lib -- sched::analysis::props`
#[cfg(test)]
mod props {
    use super::*;
    use oslab_sys::testing::proptest_config as config;
    use proptest::prelude::*;

    proptest! {
        #![proptest_config(config(512))]

        #[test]
        fn any_text_never_panics(text in "(?s).{0,160}", cpu in any::<usize>()) {
            let _ = schedstat(&text);
            let _ = sched_fields(&text);
            let _ = local_timer_count(&text, cpu);
            let _ = local_timer_count(&text, cpu % 8);
        }

        #[test]
        fn schedstat_reads_the_kernels_line(
            v in any::<(u64, u64, u64)>(),
            sep in "[ \t]{1,3}",
            end in "\n?",
        ) {
            let text = format!("{}{sep}{}{sep}{}{end}", v.0, v.1, v.2);
            prop_assert_eq!(schedstat(&text), Some(v));
        }

        #[test]
        fn schedstat_needs_three_numbers(
            v in proptest::collection::vec(any::<u64>(), 0..3),
            junk in "[^0-9\\s]{1,5}",
        ) {
            let few = v.iter().map(u64::to_string).collect::<Vec<_>>().join(" ");
            prop_assert_eq!(schedstat(&few), None);
            prop_assert_eq!(schedstat(&format!("{junk} {few} 1 2 3")), None);
        }

        #[test]
        fn sched_fields_read_the_kernels_lines(
            slice in any::<u64>(),
            frac in "[0-9]{0,6}",
            weight in any::<u64>(),
            others in proptest::collection::vec("[a-z_.]{1,20} {1,30}: {1,4}[0-9.]{1,12}", 0..6),
        ) {
            let mut lines: Vec<String> = others
                .into_iter()
                .filter(|l| !matches!(l.split(':').next().map(str::trim), Some("se.slice" | "se.load.weight")))
                .collect();
            lines.insert(lines.len() / 2, format!("se.slice                                     :          {slice}.{frac}"));
            lines.push(format!("se.load.weight                               :              {weight}"));
            prop_assert_eq!(sched_fields(&lines.join("\n")), (Some(slice), Some(weight)));
        }

        #[test]
        fn local_timer_count_reads_the_loc_row(
            counts in proptest::collection::vec(any::<u64>(), 1..9),
            cpu in any::<proptest::sample::Index>(),
        ) {
            let row: String = counts.iter().map(|c| format!(" {c:>10}")).collect();
            let text = format!(
                "           CPU0       CPU1\n  0:         33          0   IO-APIC    2-edge      timer\nLOC:{row}   Local timer interrupts\nSPU:          0          0   Spurious interrupts\n"
            );
            let i = cpu.index(counts.len());
            prop_assert_eq!(local_timer_count(&text, i), Some(counts[i]));
        }
    }
}
