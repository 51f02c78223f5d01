//! `oslab stalls` output: an 80-column block per interval, JSON lines, and trace
//! events for ui.perfetto.dev.

use std::fmt::Write;

use oslab_trace::analysis::Cause;
use oslab_trace::chrome::{self, TraceEvent};
use oslab_trace::records::{Bandwidth, FlushPass, OffCpu, Pause};
use oslab_trace::stalls::{IntervalSummary, StallLine};
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
    if s.lost > 0 {
        let _ = writeln!(
            o,
            "  {} records lost so far (the ring buffer was full): figures are incomplete",
            s.lost
        );
    }
    o
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

/// The kernel's own tracks: flusher passes and bandwidth estimates live under
/// this made-up process, the rest under the real pids and tids.
pub const KERNEL_TRACK_PID: u32 = 0;

/// Trace events for an interval's records: each slow call as a slice with its
/// causes in the arguments, dirty-throttle pauses and blocked stretches as
/// slices on the same thread, flusher passes, and counters for Dirty against the
/// limits and for the device's bandwidth estimate.
pub fn trace_events(
    stalls: &[StallLine],
    pauses: &[Pause],
    offcpu: &[OffCpu],
    flushes: &[FlushPass],
    bandwidth: &[Bandwidth],
    hz: u32,
    page_size: u64,
) -> Vec<TraceEvent> {
    let mut ev = Vec::new();
    for s in stalls {
        ev.push(
            chrome::slice(&s.call, "stall", s.tgid, s.pid, s.start_ns, s.dur_ns)
                .arg("fd", s.fd)
                .arg("bytes", s.bytes)
                .arg("main_cause", Cause::label(s.main_cause))
                .arg("throttle_ms", s.throttle_ns as f64 / 1e6)
                .arg("writeback_wait_ms", s.wbwait_ns as f64 / 1e6)
                .arg("blocked_ms", s.blocked_ns as f64 / 1e6)
                .arg("run_queue_ms", s.runq_ns as f64 / 1e6)
                .arg("on_cpu_ms", s.on_cpu_ns as f64 / 1e6),
        );
    }
    let to_mib = |p: u64| (p * page_size) as f64 / MIB;
    for p in pauses {
        if p.pause_jiffies > 0 {
            let dur = oslab_trace::analysis::jiffies_ns(p.pause_jiffies, hz).max(0) as u64;
            ev.push(
                chrome::slice(
                    "dirty throttle pause",
                    "throttle",
                    p.tgid,
                    p.pid,
                    p.ts_ns,
                    dur,
                )
                .arg("dirty_mib", to_mib(p.dirty))
                .arg("setpoint_mib", to_mib(p.setpoint()))
                .arg("limit_mib", to_mib(p.thresh))
                .arg("task_ratelimit_mib_s", to_mib(p.task_ratelimit))
                .arg("pause_jiffies", p.pause_jiffies),
            );
        }
        ev.push(chrome::counter(
            "dirty + writeback (MiB)",
            KERNEL_TRACK_PID,
            p.ts_ns,
            &[
                ("dirty", to_mib(p.dirty)),
                ("setpoint", to_mib(p.setpoint())),
                ("limit", to_mib(p.thresh)),
            ],
        ));
    }
    for o in offcpu {
        let place = oslab_trace::analysis::blocker(&o.stack);
        ev.push(
            chrome::slice(
                &format!("blocked: {place}"),
                "blocked",
                o.tgid,
                o.pid,
                o.start_ns,
                o.dur_ns,
            )
            .arg("stack", o.stack.join(" <- ")),
        );
    }
    for f in flushes {
        ev.push(
            chrome::slice(
                &format!("flush {}", f.reason.name()),
                "flusher",
                KERNEL_TRACK_PID,
                f.bdi_id as u32 + 1,
                f.start_ns,
                f.end_ns.saturating_sub(f.start_ns),
            )
            .arg("device", f.bdi.as_str())
            .arg("mib", to_mib(f.pages)),
        );
    }
    for b in bandwidth {
        ev.push(chrome::counter(
            &format!("bandwidth {} (MiB/s)", b.bdi),
            KERNEL_TRACK_PID,
            b.ts_ns,
            &[
                ("write", to_mib(b.write_bw)),
                ("avg_write", to_mib(b.avg_write_bw)),
                ("dirty_rate", to_mib(b.dirty_rate)),
                ("dirty_ratelimit", to_mib(b.dirty_ratelimit)),
            ],
        ));
    }
    ev
}

#[cfg(test)]
mod tests {
    use super::*;
    use oslab_trace::analysis::CauseRow;
    use oslab_trace::stalls::{DirtierRow, Throttling};

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
