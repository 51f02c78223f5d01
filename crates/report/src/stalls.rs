//! `oslab stalls` output: an 80-column block per interval and JSON lines (the
//! trace events for ui.perfetto.dev are `oslab_trace::timeline`'s).

use std::fmt::Write;

use oslab_model::trace::{IntervalSummary, StallLine};
use oslab_term_text::one_line;
use oslab_units::human_bytes;

const MIB: f64 = 1024.0 * 1024.0;

fn ms(ns: u64) -> String {
    format!("{:.1}", ns as f64 / 1e6)
}

fn mib(bytes: u64) -> String {
    format!("{:.1}", bytes as f64 / MIB)
}

/// The format of the JSON lines; 2 since calls other than writes are named
/// (`call` may be "read", "fsync", "page fault", ...) and lines carry `file`
/// and `cgroup`.
pub const JSON_FORMAT: u32 = 2;

/// A name from another process (command, cgroup, file), cut to `width`
/// characters after it is escaped for the terminal.
fn cut(s: &str, width: usize) -> String {
    let s = one_line(s);
    if s.chars().count() <= width {
        s
    } else {
        let mut t: String = s.chars().take(width.saturating_sub(1)).collect();
        t.push('~');
        t
    }
}

/// Each cgroup path of one table by a name no other of them shares: the whole
/// path where it fits `width`, else its shortest unique tail of components after
/// ".../" (two paths cut to the same first characters read alike; their tails do
/// not), escaped for the terminal.
fn cgroup_names(paths: &[&str], width: usize) -> std::collections::HashMap<String, String> {
    let tail = |p: &str, k: usize| -> String {
        let parts: Vec<&str> = p.split('/').collect();
        parts[parts.len().saturating_sub(k)..].join("/")
    };
    let mut out = std::collections::HashMap::new();
    for p in paths {
        let depth = p.split('/').count();
        let name = if p.chars().count() <= width {
            p.to_string()
        } else {
            // a tail of every component but the root's is the whole path
            (1..depth.saturating_sub(1))
                .map(|k| tail(p, k))
                .find(|t| {
                    let end = format!("/{t}");
                    paths
                        .iter()
                        .filter(|q| q.ends_with(&end) || **q == t)
                        .count()
                        == 1
                })
                .map_or_else(|| p.to_string(), |t| format!(".../{t}"))
        };
        out.insert(p.to_string(), one_line(&name));
    }
    out
}

/// "3 slow calls over 1 ms".
fn calls_head(s: &IntervalSummary, threshold_ns: u64) -> String {
    let n = s.stalls;
    format!(
        "{n} slow {} over {} ms",
        if n == 1 { "call" } else { "calls" },
        crate::num::fmt(threshold_ns as f64 / 1e6),
    )
}

/// "  calls: fsync 1, write 2", wrapped to 80 columns.
fn calls_text(o: &mut String, s: &IntervalSummary) {
    let last = s.by_call.len().saturating_sub(1);
    let mut line = String::from("  calls:");
    for (i, (call, n)) in s.by_call.iter().enumerate() {
        let piece = format!(" {} {n}{}", cut(call, 20), if i < last { "," } else { "" });
        if line.chars().count() + piece.chars().count() > 80 {
            let _ = writeln!(o, "{line}");
            line = String::from("       ");
        }
        line.push_str(&piece);
    }
    let _ = writeln!(o, "{line}");
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
    let _ = writeln!(o, "{clock}  {}{head}", calls_head(s, threshold_ns));
    if s.stalls > 0 {
        calls_text(&mut o, s);
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

/// Where the interval's slow calls spent their time, and where blocked ones
/// waited.
fn causes_text(o: &mut String, s: &IntervalSummary) {
    let _ = writeln!(
        o,
        "  {:<19} {:>6} {:>10} {:>6} {:>9} {:>9}",
        "where the time went", "calls", "total ms", "share", "p99 ms", "max ms"
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
        let mut paths: Vec<&str> = s.dirtiers.iter().map(|d| d.cgroup.as_str()).collect();
        paths.extend(s.cgroups.iter().map(|c| c.cgroup.as_str()));
        paths.sort_unstable();
        paths.dedup();
        let names = cgroup_names(&paths, 20);
        for d in &s.dirtiers {
            let _ = writeln!(
                o,
                "  {:<16} {:>7}  {:<15} {:<20} {:>10}",
                cut(&d.comm, 16),
                d.tgid,
                cut(&d.class, 15),
                names[&d.cgroup],
                human_bytes(d.bytes)
            );
        }
        if s.cgroups.len() > 1 {
            let parts: Vec<String> = s
                .cgroups
                .iter()
                .map(|c| format!("{} {}", names[&c.cgroup], human_bytes(c.bytes)))
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
            one_line(&f.bdi),
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
            one_line(&b.bdi),
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
        m.insert("format".into(), JSON_FORMAT.into());
    }
    format!("{v}\n")
}

/// An interval as a JSON line.
pub fn interval_json(s: &IntervalSummary, unix_time: f64) -> String {
    let mut v = serde_json::to_value(s).unwrap_or_default();
    if let Some(m) = v.as_object_mut() {
        m.insert("type".into(), "interval".into());
        m.insert("format".into(), JSON_FORMAT.into());
        m.insert("time".into(), unix_time.into());
    }
    format!("{v}\n")
}

/// The header of `--each`.
pub fn each_header() -> String {
    format!(
        "{:<12} {:<16} {:>7} {:<15} {:>9} {:>9}  {:<17} {}\n",
        "TIME", "COMM", "PID", "CALL", "BYTES", "LAT(ms)", "CAUSE", "FILE"
    )
}

/// What a read waited behind at its device: "; behind 12.0 MiB of writes
/// queued (dirtied there by dd (4242))".
fn queue_text(l: &StallLine) -> String {
    if l.queued_write_bytes == 0 {
        return String::new();
    }
    let by = if l.writers_there.is_empty() {
        String::new()
    } else {
        format!(
            " (dirtied there by {})",
            one_line(&l.writers_there.join(", "))
        )
    };
    format!(
        "; behind {} of writes queued{by}",
        human_bytes(l.queued_write_bytes)
    )
}

/// The main cause, made precise for a read blocked on the device.
fn cause_label(l: &StallLine) -> &str {
    match (&l.read_wait, l.main_cause) {
        (Some(w), oslab_model::trace::Cause::Blocked) => w.as_str(),
        _ => l.main_cause.label(),
    }
}

/// One slow call as `--each` prints it; `clock` is when it ended.
pub fn each_line(clock: &str, l: &StallLine) -> String {
    format!(
        "{:<12} {:<16} {:>7} {:<15} {:>9} {:>9.1}  {:<17} {}{}\n",
        clock,
        cut(&l.comm, 16),
        l.pid,
        cut(&l.call, 15),
        l.bytes,
        l.dur_ns as f64 / 1e6,
        cause_label(l),
        one_line(&l.file),
        queue_text(l)
    )
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
            by_call: [("fsync".to_string(), 1), ("write".to_string(), 1)]
                .into_iter()
                .collect(),
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
                decisions: 40,
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

    /// Regression: two cgroups cut to 20 characters read the same
    /// ("/process_api/2ebfac217b~" twice); each gets the shortest tail of its
    /// path that no other has.
    #[test]
    fn cgroups_are_named_by_their_shortest_unique_tail() {
        let mut s = summary();
        let row = s.dirtiers[0].clone();
        let long = "/process_api/2ebfac217b4a9c0d11e8f/";
        s.dirtiers = ["build", "tests", "build/inner"]
            .iter()
            .enumerate()
            .map(|(i, leaf)| DirtierRow {
                tgid: 100 + i as u32,
                cgroup: format!("{long}{leaf}"),
                ..row.clone()
            })
            .chain([DirtierRow {
                cgroup: "/".into(),
                ..row.clone()
            }])
            .collect();
        let text = interval_text("14:02:03", &s, 10_000_000, 4096);
        for name in [".../build ", ".../tests ", ".../inner ", " / "] {
            assert!(text.contains(name), "{name} in\n{text}");
        }
        // no cgroup cut to its first characters (the commands' names may be)
        assert!(!text.contains("2ebfac217b~"), "{text}");
        let names = cgroup_names(&["/a/x/same", "/b/x/same", "/p/q/aaaa", "/s"], 6);
        assert_eq!(names["/a/x/same"], "/a/x/same", "no shorter tail is unique");
        assert_eq!(names["/p/q/aaaa"], ".../aaaa");
        assert_eq!(names["/s"], "/s");
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
        assert!(text.contains("2 slow calls over 10 ms: 60.0 ms in all, p99 40.0, max 40.0 ms"));
        assert!(text.contains("\n  calls: fsync 1, write 1\n"), "{text}");
    }

    #[test]
    fn each_line_names_the_call_and_shows_no_control_character() {
        let l = StallLine {
            tgid: 9,
            pid: 10,
            comm: "evil\x1b[2J\u{202E}".into(),
            cgroup: "/".into(),
            call: "page fault".into(),
            fd: -1,
            file: "/mnt/x\ny".into(),
            bytes: 0,
            start_ns: 0,
            dur_ns: 86_400_000,
            main_cause: Cause::DirtyThrottle,
            throttle_ns: 86_000_000,
            wbwait_ns: 0,
            blocked_ns: 0,
            runq_ns: 0,
            on_cpu_ns: 400_000,
            pauses: 1,
            blocked_in: vec![],
            queued_write_bytes: 0,
            queued_read_bytes: 0,
            writers_there: vec![],
            read_wait: None,
        };
        let text = each_line("02:33:02.123", &l);
        assert_eq!(text.lines().count(), 1);
        assert!(!text.trim_end().chars().any(char::is_control), "{text:?}");
        assert!(!text.contains('\u{202E}'), "{text:?}");
        assert!(text.contains("page fault"), "{text}");
        assert!(text.contains("86.4  dirty throttle"), "{text}");
        assert!(text.contains("/mnt/x\\ny"), "{text}");
        assert_eq!(
            each_header().find("LAT(ms)").map(|i| i + 7),
            text.find("86.4").map(|i| i + 4),
            "the latency is right-aligned under its heading"
        );
    }

    #[test]
    fn json_lines_carry_their_type() {
        let v: serde_json::Value = serde_json::from_str(&interval_json(&summary(), 1.5)).unwrap();
        assert_eq!(v["type"], "interval");
        assert_eq!(v["format"], JSON_FORMAT);
        assert_eq!(v["causes"][0]["cause"], "dirty_throttle");
        assert_eq!(v["dirtiers"][0]["tgid"], 4242);
    }
}
