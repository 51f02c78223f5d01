//! The Trace Event Format (JSON) that ui.perfetto.dev, chrome://tracing and
//! Perfetto's trace processor read: slices, counters and names, with real process
//! and thread ids and CLOCK_MONOTONIC timestamps in microseconds, so a trace lines
//! up with perf and ftrace captures of the same moments.
//!
//! [`Writer`] streams the JSON array form one event per line; the format allows
//! the closing bracket to be missing, so a trace cut short by Ctrl-C still loads.

use serde::Serialize;
use serde_json::{Map, Value, json};

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TraceEvent {
    pub name: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub cat: String,
    pub ph: &'static str,
    pub ts: f64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dur: Option<f64>,
    pub pid: u32,
    pub tid: u32,
    #[serde(skip_serializing_if = "Map::is_empty")]
    pub args: Map<String, Value>,
}

fn us(ns: u64) -> f64 {
    ns as f64 / 1000.0
}

/// A slice from `start_ns` lasting `dur_ns` on thread `tid` of process `pid`.
pub fn slice(name: &str, cat: &str, pid: u32, tid: u32, start_ns: u64, dur_ns: u64) -> TraceEvent {
    TraceEvent {
        name: name.to_string(),
        cat: cat.to_string(),
        ph: "X",
        ts: us(start_ns),
        dur: Some(us(dur_ns)),
        pid,
        tid,
        args: Map::new(),
    }
}

/// A counter track named `name` in process `pid`, with one or more series.
pub fn counter(name: &str, pid: u32, ts_ns: u64, series: &[(&str, f64)]) -> TraceEvent {
    let mut args = Map::new();
    for (k, v) in series {
        args.insert((*k).to_string(), json!(v));
    }
    TraceEvent {
        name: name.to_string(),
        cat: String::new(),
        ph: "C",
        ts: us(ts_ns),
        dur: None,
        pid,
        tid: 0,
        args,
    }
}

/// The name shown for a process (`thread` false) or a thread.
pub fn name(pid: u32, tid: u32, thread: bool, text: &str) -> TraceEvent {
    let mut args = Map::new();
    args.insert("name".into(), json!(text));
    TraceEvent {
        name: if thread {
            "thread_name"
        } else {
            "process_name"
        }
        .to_string(),
        cat: String::new(),
        ph: "M",
        ts: 0.0,
        dur: None,
        pid,
        tid,
        args,
    }
}

impl TraceEvent {
    pub fn arg(mut self, key: &str, value: impl Into<Value>) -> TraceEvent {
        self.args.insert(key.to_string(), value.into());
        self
    }
}

/// Streams events as a JSON array, one per line.
#[derive(Debug, Default)]
pub struct Writer {
    started: bool,
}

impl Writer {
    /// The text for the next events (the array's opening bracket first).
    pub fn chunk(&mut self, events: &[TraceEvent]) -> String {
        let mut out = String::new();
        for e in events {
            out.push_str(if self.started { ",\n" } else { "[\n" });
            self.started = true;
            out.push_str(&serde_json::to_string(e).unwrap_or_default());
        }
        out
    }

    /// The closing text (an empty array if nothing was written).
    pub fn end(&mut self) -> String {
        let s = if self.started { "\n]\n" } else { "[]\n" };
        self.started = true;
        s.to_string()
    }
}

/// A whole trace as one JSON document (`{"traceEvents": [...]}`).
pub fn document(events: &[TraceEvent]) -> Value {
    json!({ "traceEvents": events, "displayTimeUnit": "ms" })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_streamed_trace_parses_whole_and_cut_short() {
        let mut w = Writer::default();
        let a = slice("write", "stall", 10, 11, 2_000_000, 500_000).arg("bytes", 4096);
        let b = counter(
            "dirty (MiB)",
            0,
            2_100_000,
            &[("dirty", 48.0), ("limit", 64.0)],
        );
        let c = name(10, 11, true, "writer");
        let mut text = w.chunk(&[a, b]);
        text.push_str(&w.chunk(&[c]));
        // Cut short: a loader closes the array itself.
        let cut: Vec<Value> = serde_json::from_str(&format!("{text}]")).unwrap();
        assert_eq!(cut.len(), 3);
        text.push_str(&w.end());
        let whole: Vec<Value> = serde_json::from_str(&text).unwrap();
        assert_eq!(whole[0]["ph"], "X");
        assert_eq!(whole[0]["ts"], 2000.0);
        assert_eq!(whole[0]["dur"], 500.0);
        assert_eq!(whole[0]["args"]["bytes"], 4096);
        assert_eq!(whole[1]["args"]["limit"], 64.0);
        assert_eq!(whole[2]["args"]["name"], "writer");
        assert_eq!(Writer::default().end(), "[]\n");
    }
}
