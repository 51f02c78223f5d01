//! The Trace Event Format (the JSON that ui.perfetto.dev, chrome://tracing and
//! Perfetto's trace processor load), checked as its specification states it:
//! "Trace Event Format", Google, the phases, fields and metadata events. Perfetto's
//! trace processor cannot run here offline (its Python package downloads the
//! binary when first used, and no registry this project uses packages it), so the
//! tests hold oslab's traces to the format instead.

use std::collections::BTreeMap;

use serde_json::Value;

/// Every breach of the format in `doc`, in words; `now_us` is CLOCK_MONOTONIC now,
/// in microseconds, for traces whose timestamps must be on that clock.
pub fn faults(doc: &Value, now_us: Option<f64>) -> Vec<String> {
    let events = match doc {
        Value::Array(a) => a,
        Value::Object(o) => match o.get("traceEvents") {
            Some(Value::Array(a)) => a,
            _ => return vec!["an object without a traceEvents array".into()],
        },
        _ => return vec!["neither an array nor an object".into()],
    };
    let mut out = Vec::new();
    if let Some(u) = doc.get("displayTimeUnit")
        && !matches!(u.as_str(), Some("ms" | "ns"))
    {
        out.push(format!("displayTimeUnit {u}"));
    }
    // complete events of one thread, to check that they nest
    let mut slices: Slices = BTreeMap::new();
    for (i, e) in events.iter().enumerate() {
        for why in event_faults(e, now_us, &mut slices) {
            out.push(format!("event {i} {why}: {e}"));
        }
    }
    out.extend(overlaps(slices));
    out
}

/// The complete events of each (pid, tid): their start and end in microseconds.
type Slices = BTreeMap<(u64, u64), Vec<(f64, f64)>>;

/// What is wrong with one event; a complete event's span goes to `slices`.
fn event_faults(e: &Value, now_us: Option<f64>, slices: &mut Slices) -> Vec<&'static str> {
    let mut bad = Vec::new();
    let Some(ph) = e["ph"].as_str() else {
        return vec!["has no ph"];
    };
    if !matches!(
        ph,
        "X" | "B" | "E" | "i" | "I" | "C" | "M" | "b" | "e" | "n" | "s" | "t" | "f" | "P"
    ) {
        bad.push("has an unknown phase");
    }
    if e["name"].as_str().is_none() && ph != "E" {
        bad.push("has no name");
    }
    let (pid, tid) = (e["pid"].as_u64(), e["tid"].as_u64());
    if pid.is_none() || (ph != "C" && tid.is_none() && ph != "M") {
        bad.push("lacks an integer pid or tid");
    }
    if ph == "M" {
        bad.extend(metadata_faults(e));
        return bad;
    }
    let Some(ts) = e["ts"].as_f64() else {
        bad.push("has no numeric ts");
        return bad;
    };
    if ts < 0.0 || now_us.is_some_and(|n| ts > n) {
        bad.push("is not on CLOCK_MONOTONIC (before boot or after now)");
    }
    match ph {
        "X" => match e["dur"].as_f64() {
            Some(d) if d >= 0.0 => slices
                .entry((pid.unwrap_or(0), tid.unwrap_or(0)))
                .or_default()
                .push((ts, ts + d)),
            _ => bad.push("is a complete event without a duration"),
        },
        "C" if !e["args"]
            .as_object()
            .is_some_and(|a| !a.is_empty() && a.values().all(Value::is_number)) =>
        {
            bad.push("is a counter whose args are not numbers")
        }
        "i" | "I"
            if !matches!(
                e.get("s").and_then(Value::as_str),
                None | Some("g" | "p" | "t")
            ) =>
        {
            bad.push("has an instant scope other than g, p, t")
        }
        _ => {}
    }
    bad
}

/// What is wrong with a metadata event (phase M).
fn metadata_faults(e: &Value) -> Vec<&'static str> {
    let mut bad = Vec::new();
    let name = e["name"].as_str().unwrap_or("");
    if !matches!(
        name,
        "process_name"
            | "thread_name"
            | "process_sort_index"
            | "thread_sort_index"
            | "process_labels"
    ) {
        bad.push("is metadata of an unknown kind");
    }
    if name.ends_with("_name") && e["args"]["name"].as_str().is_none() {
        bad.push("names nothing");
    }
    bad
}

/// Slices on one thread either nest or follow each other; a partial overlap is
/// what trace viewers reject or draw wrongly. Timestamps are microseconds in
/// floating point: within a nanosecond (the trace processor's resolution) is
/// the same instant.
fn overlaps(slices: Slices) -> Vec<String> {
    const NS: f64 = 1e-3;
    let mut out = Vec::new();
    for ((pid, tid), mut s) in slices {
        s.sort_by(|a, b| a.0.total_cmp(&b.0).then(b.1.total_cmp(&a.1)));
        let mut open: Vec<f64> = Vec::new();
        for (start, end) in s {
            while open.last().is_some_and(|e| *e <= start + NS) {
                open.pop();
            }
            if open.last().is_some_and(|e| end > *e + NS) {
                out.push(format!(
                    "pid {pid} tid {tid}: a slice {start}-{end} overlaps the one around it"
                ));
            }
            open.push(end);
        }
    }
    out
}
