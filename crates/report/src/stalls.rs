//! `oslab stalls` output: an 80-column block per interval and JSON lines (the
//! trace events for ui.perfetto.dev are `oslab_trace::timeline`'s).

use std::fmt::Write;

use oslab_model::trace::{IntervalSummary, StallLine};
use oslab_units::human_bytes;

const MIB: f64 = 1024.0 * 1024.0;

fn ms(ns: u64) -> String {
    format!("{:.1}", ns as f64 / 1e6)
}

fn mib(bytes: u64) -> String {
    format!("{:.1}", bytes as f64 / MIB)
}

fn cut(s: &str, width: usize) -> String {
    if s.chars().count() <= width {
        s.to_string()
    } else {
        let mut t: String = s.chars().take(width.saturating_sub(1)).collect();
        t.push('~');
        t
    }
}

/// The block for one interval; `clock` is the wall-clock time to head it.
pub fn interval_text(
    clock: &str,
    s: &IntervalSummary,
    threshold_ns: u64,
    page_size: u64,
) -> String {
    let mut o = String::new();
    let head = if s.stalls > 0 {
        format!(
            ": {} ms in all, p99 {}, max {} ms",
            ms(s.stall_ns),
            ms(s.p99_ns),
            ms(s.max_ns)
        )
    } else {
        String::new()
    };
    let _ = writeln!(
        o,
        "{clock}  {} writes over {} ms{head}",
        s.stalls,
        crate::num::fmt(threshold_ns as f64 / 1e6),
    );
    if s.stalls > 0 {
        causes_text(&mut o, s);
    }
    throttling_text(&mut o, s, page_size);
    dirtiers_text(&mut o, s);
    kernel_text(&mut o, s, page_size);
    if s.lost > 0 {
        let _ = writeln!(
            o,
            "  {} records lost so far (the ring buffer was full): figures are incomplete",
            s.lost
        );
    }
    o
}

/// Where the interval's stalled writes spent their time, and where blocked ones
/// waited.
fn causes_text(o: &mut String, s: &IntervalSummary) {
    let _ = writeln!(
        o,
        "  {:<19} {:>6} {:>10} {:>6} {:>9} {:>9}",
        "where the time went", "writes", "total ms", "share", "p99 ms", "max ms"
    );
    for r in &s.causes {
        let (p99, max) = if r.writes > 0 {
            (ms(r.p99_ns), ms(r.max_ns))
        } else {
            ("-".into(), "-".into())
        };
        let _ = writeln!(
            o,
            "  {:<19} {:>6} {:>10} {:>5.1}% {:>9} {:>9}",
            r.cause.label(),
            r.writes,
            ms(r.total_ns),
            r.share * 100.0,
            p99,
            max
        );
    }
    for b in &s.blocked_in {
        let _ = writeln!(
            o,
            "    blocked in {} ({} x, {} ms)",
            cut(&b.place, 44),
            b.count,
            ms(b.total_ns)
        );
    }
}

fn throttling_text(o: &mut String, s: &IntervalSummary, page_size: u64) {
    if let Some(t) = &s.throttling {
        let to_mib = |p: u64| mib(p * page_size);
        let _ = writeln!(
            o,
            "  throttled {} x (max {} ms); dirty {} MiB, setpoint {}, limit {}",
            t.pauses,
            ms(t.max_pause_ns.max(0) as u64),
            to_mib(t.dirty_pages),
            to_mib(t.setpoint_pages),
            to_mib(t.thresh_pages)
        );
    }
}

/// Who dirtied pages in the interval, per process and per cgroup.
fn dirtiers_text(o: &mut String, s: &IntervalSummary) {
    if !s.dirtiers.is_empty() {
        let _ = writeln!(
            o,
            "  {:<16} {:>7}  {:<15} {:<20} {:>10}",
            "dirtied by", "pid", "class", "cgroup", "bytes"
        );
        for d in &s.dirtiers {
            let _ = writeln!(
                o,
                "  {:<16} {:>7}  {:<15} {:<20} {:>10}",
                cut(&d.comm, 16),
                d.tgid,
                cut(&d.class, 15),
                cut(&d.cgroup, 20),
                human_bytes(d.bytes)
            );
        }
        if s.cgroups.len() > 1 {
            let parts: Vec<String> = s
                .cgroups
                .iter()
                .map(|c| format!("{} {}", cut(&c.cgroup, 24), human_bytes(c.bytes)))
                .collect();
            let _ = writeln!(o, "  per cgroup: {}", parts.join(", "));
        }
    }
}

/// The flusher's passes and the devices' bandwidth estimates.
fn kernel_text(o: &mut String, s: &IntervalSummary, page_size: u64) {
    for f in &s.flusher {
        if f.pages == 0 {
            continue;
        }
        let _ = writeln!(
            o,
            "  flusher {} {}: {} {}, {}",
            f.bdi,
            f.reason.name(),
            f.passes,
            if f.passes == 1 { "pass" } else { "passes" },
            human_bytes(f.pages * page_size)
        );
    }
    for b in &s.bandwidth {
        let rate = |pages: u64| mib(pages * page_size);
        let _ = writeln!(
            o,
            "  {} estimates: write {} MiB/s (avg {}), dirty rate {}, ratelimit {}",
            b.bdi,
            rate(b.write_bw),
            rate(b.avg_write_bw),
            rate(b.dirty_rate),
            rate(b.dirty_ratelimit)
        );
    }
}

/// A stall as a JSON line.
pub fn stall_json(line: &StallLine) -> String {
    let mut v = serde_json::to_value(line).unwrap_or_default();
    if let Some(m) = v.as_object_mut() {
        m.insert("type".into(), "stall".into());
    }
    format!("{v}\n")
}

/// An interval as a JSON line.
pub fn interval_json(s: &IntervalSummary, unix_time: f64) -> String {
    let mut v = serde_json::to_value(s).unwrap_or_default();
    if let Some(m) = v.as_object_mut() {
        m.insert("type".into(), "interval".into());
        m.insert("time".into(), unix_time.into());
    }
    format!("{v}\n")
}

#[cfg(test)]
mod tests {
    use super::*;
    use oslab_model::trace::{Cause, CauseRow, DirtierRow, Throttling};

    fn summary() -> IntervalSummary {
        IntervalSummary {
            end_ns: 0,
            seconds: 1.0,
            stalls: 2,
            stall_ns: 60_000_000,
            p99_ns: 40_000_000,
            max_ns: 40_000_000,
            causes: Cause::ALL
                .iter()
                .map(|&c| CauseRow {
                    cause: c,
                    writes: usize::from(c == Cause::DirtyThrottle) * 2,
                    total_ns: if c == Cause::DirtyThrottle {
                        57_000_000
                    } else {
                        0
                    },
                    share: if c == Cause::DirtyThrottle { 0.95 } else { 0.0 },
                    p99_ns: 38_000_000,
                    max_ns: 38_000_000,
                })
                .collect(),
            blocked_in: vec![],
            dirtiers: vec![DirtierRow {
                tgid: 4242,
                comm: "a-very-long-command-name".into(),
                class: "FIFO 45".into(),
                cgroup: "/oslab-wcall-1/rt-low".into(),
                bytes: 40 << 20,
                total_bytes: 80 << 20,
            }],
            cgroups: vec![],
            flusher: vec![],
            bandwidth: vec![],
            throttling: Some(Throttling {
                pauses: 12,
                max_pause_ns: 200_000_000,
                dirty_pages: 12288,
                thresh_pages: 16384,
                bg_thresh_pages: 8192,
                setpoint_pages: 14336,
                dirty_ratelimit: 2560,
                min_task_ratelimit: 100,
            }),
            lost: 0,
        }
    }

    #[test]
    fn an_interval_fits_eighty_columns_and_names_causes() {
        let text = interval_text("14:02:03", &summary(), 10_000_000, 4096);
        for line in text.lines() {
            assert!(line.chars().count() <= 80, "too wide: {line}");
        }
        assert!(text.contains("dirty throttle"));
        assert!(text.contains("FIFO 45"));
        assert!(text.contains("dirty 48.0 MiB, setpoint 56.0, limit 64.0"));
        assert!(text.contains("2 writes over 10 ms: 60.0 ms in all, p99 40.0, max 40.0 ms"));
    }

    #[test]
    fn json_lines_carry_their_type() {
        let v: serde_json::Value = serde_json::from_str(&interval_json(&summary(), 1.5)).unwrap();
        assert_eq!(v["type"], "interval");
        assert_eq!(v["causes"][0]["cause"], "dirty_throttle");
        assert_eq!(v["dirtiers"][0]["tgid"], 4242);
    }
}
