//! The workers' runs drawn: a Chrome trace, a lane chart and run time vs wall time.

use oslab_model::{Axis, Plot, Scale, Series, SeriesStyle};

use oslab_trace::chrome::{self, TraceEvent};

use crate::sched::common::analysis::Worker;

/// The workers' runs as they noticed them, as Chrome trace events (for when the
/// kernel's own switches are not available): one "running" slice per run on the
/// worker's real pid, CLOCK_MONOTONIC timestamps.
pub fn chrome_trace(workers: &[Worker], names: &[String]) -> Vec<TraceEvent> {
    let mut events = Vec::new();
    for (i, t) in workers.iter().enumerate() {
        let name = names
            .get(i)
            .cloned()
            .unwrap_or_else(|| format!("worker {i}"));
        events.push(chrome::name(t.pid, t.pid, false, &name));
        events.push(chrome::name(t.pid, t.pid, true, &name));
        for (a, b) in t.runs() {
            events.push(chrome::slice("running", "sched", t.pid, t.pid, a, b - a));
        }
    }
    events
}

/// A lane chart of the first `window_ms` of the runs: for worker i, points at
/// (ms since the first start, i + 1) every `step_ms` while it ran.
pub fn timeline(workers: &[Worker], window_ms: f64, step_ms: f64) -> Vec<Vec<[f64; 2]>> {
    let t0 = workers.iter().map(|t| t.start_ns).min().unwrap_or(0);
    workers
        .iter()
        .enumerate()
        .map(|(i, t)| {
            let mut pts = Vec::new();
            for (a, b) in t.runs() {
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
pub fn progress(workers: &[Worker]) -> Vec<Vec<[f64; 2]>> {
    let t0 = workers.iter().map(|t| t.start_ns).min().unwrap_or(0);
    workers
        .iter()
        .map(|t| {
            let mut done = 0.0;
            let mut pts = vec![[(t.start_ns - t0) as f64 / 1e6, 0.0]];
            for (a, b) in t.runs() {
                pts.push([(a - t0) as f64 / 1e6, done]);
                done += (b - a) as f64 / 1e6;
                pts.push([(b - t0) as f64 / 1e6, done]);
            }
            pts
        })
        .collect()
}

/// The three plots of the slices: who ran when (the largest N), run time vs wall
/// time, and the median slice vs N beside max(se.slice, tick).
pub fn plots(last: &[Worker], medians: Vec<[f64; 2]>, predicted: Vec<[f64; 2]>) -> Vec<Plot> {
    let n_last = last.len();
    let lanes = |pts: Vec<Vec<[f64; 2]>>, style: SeriesStyle| -> Vec<Series> {
        pts.into_iter()
            .enumerate()
            .map(|(i, p)| Series {
                name: format!("process {}", i + 1),
                style,
                points: p,
            })
            .collect()
    };
    vec![
        Plot {
            id: "timeline".into(),
            title: format!("who ran when: {n_last} processes on one CPU, the first 100 ms"),
            x: Axis::new("time", "ms", Scale::Linear),
            y: Axis::new("process", "", Scale::Linear),
            series: lanes(timeline(last, 100.0, 0.25), SeriesStyle::Points),
            markers: vec![],
            x_labels: vec![],
        },
        Plot {
            id: "progress".into(),
            title: format!("run time vs wall time, {n_last} processes on one CPU"),
            x: Axis::new("wall time", "ms", Scale::Linear),
            y: Axis::new("run time", "ms", Scale::Linear),
            series: lanes(progress(last), SeriesStyle::Line),
            markers: vec![],
            x_labels: vec![],
        },
        Plot {
            id: "slices".into(),
            title: "median slice vs processes sharing one CPU".into(),
            x: Axis::new("processes", "", Scale::Linear),
            y: Axis::new("slice", "ms", Scale::Linear),
            series: vec![
                Series {
                    name: "measured".into(),
                    style: SeriesStyle::LinePoints,
                    points: medians,
                },
                Series {
                    name: "max(se.slice, tick)".into(),
                    style: SeriesStyle::Line,
                    points: predicted,
                },
            ],
            markers: vec![],
            x_labels: vec![],
        },
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;

    fn worker(start: u64, end: u64, gaps: &[(u64, u64)]) -> Worker {
        Worker {
            start_ns: start,
            end_ns: end,
            gaps: gaps.to_vec(),
            ..Default::default()
        }
    }

    #[test]
    fn timeline_and_progress_by_hand() {
        let t = worker(0, 10 * MS, &[(4 * MS, 8 * MS)]);
        let lanes = timeline(std::slice::from_ref(&t), 100.0, 1.0);
        // runs 0-4 and 8-10 ms, a point per ms: 5 + 3
        assert_eq!(lanes[0].len(), 8);
        assert!(lanes[0].iter().all(|p| p[1] == 1.0));
        let p = progress(&[t]);
        assert_eq!(p[0].last().unwrap(), &[10.0, 6.0]);
    }

    #[test]
    fn chrome_trace_uses_real_pids_and_monotonic_time() {
        let t = worker(0, 10 * MS, &[(4 * MS, 8 * MS)]);
        let pid = t.pid;
        let v = chrome::document(&chrome_trace(&[t], &["a".into()]));
        let text = serde_json::to_string(&v).unwrap();
        let back: serde_json::Value = serde_json::from_str(&text).unwrap();
        let ev = back["traceEvents"].as_array().unwrap();
        let runs: Vec<_> = ev.iter().filter(|e| e["ph"] == "X").collect();
        assert_eq!(runs.len(), 2);
        assert_eq!(runs[1]["ts"], 8000.0);
        assert_eq!(runs[1]["dur"], 2000.0);
        assert!(runs.iter().all(|r| r["pid"] == pid && r["tid"] == pid));
        assert!(
            ev.iter()
                .any(|e| e["ph"] == "M" && e["args"]["name"] == "a")
        );
    }
}
