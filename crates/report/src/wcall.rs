//! The WCALL governor for people: `oslab wcall status`, the line `wcall daemon
//! --every S` prints, and what a governor did when it ends.

use oslab_model::governor::{ProcView, Snapshot};
use oslab_term_text::one_line;
use oslab_units::human_bytes;

use crate::table::simple;

/// A governor found running.
pub struct Running<'a> {
    pub name: &'a str,
    /// The process that holds its table.
    pub pid: u32,
    /// Its table, read now.
    pub snapshot: &'a Snapshot,
}

/// `oslab wcall status`: per governor a line (policy, passes, global Dirty and
/// Writeback, the kernel's limits) and a table of its groups.
pub fn status(governors: &[Running]) -> String {
    if governors.is_empty() {
        return "no governor is running (start one: oslab wcall daemon, or oslab wcall run -- CMD)\n"
            .into();
    }
    let mut out = String::new();
    for g in governors {
        let s = g.snapshot;
        out += &format!(
            "governor '{}' pid {} policy {} ({} passes of {:.0} µs, longest {:.0} µs{}); global Dirty {} Writeback {}; kernel limits: background {}, free-run {}, hard {}\n",
            one_line(g.name),
            g.pid,
            one_line(&s.policy),
            s.passes,
            s.pass_mean_us,
            s.pass_max_us,
            if s.coordinator_alive {
                ""
            } else {
                ", NOT RESPONDING"
            },
            human_bytes(s.global_dirty_bytes),
            human_bytes(s.global_writeback_bytes),
            human_bytes(s.bg_thresh_bytes),
            human_bytes(s.freerun_bytes),
            human_bytes(s.thresh_bytes)
        );
        out += &groups_table(s);
        out.push('\n');
        out += &format!(
            "  {}; headroom {}, ungoverned dirty {}; coordinator CPU {:.2} %{}\n",
            match s.monitor.as_str() {
                "kernel" =>
                    "monitor: the kernel's records (every file governed processes dirty) and cachestat()",
                _ =>
                    "monitor: cachestat() of files governed write() calls reach (no kernel tracing)",
            },
            human_bytes(s.headroom_bytes),
            human_bytes(s.ungoverned_bytes),
            s.cpu_percent,
            if s.kernel_lost > 0 {
                format!("; {} kernel records lost", s.kernel_lost)
            } else {
                String::new()
            }
        );
        out += &format!("  {}\n", guard_line(&s.guard));
        out += &processes(&s.processes);
        out.push('\n');
    }
    out
}

/// What the sync guard is set to and does now, in one line.
pub fn guard_line(g: &oslab_model::governor::GuardView) -> String {
    let bandwidth = g
        .bandwidth_bytes_s
        .map(|b| {
            format!(
                ", sized from {} measured",
                oslab_units::human_rate(b as f64)
            )
        })
        .unwrap_or_default();
    match (g.setting.as_str(), g.acting_bytes) {
        ("off", _) => "sync guard: off".into(),
        ("fixed", Some(b)) => format!(
            "sync guard: {} while an rt-high process is governed (acting now)",
            human_bytes(b)
        ),
        ("fixed", None) => "sync guard: fixed size, idle (no rt-high process governed)".into(),
        (_, Some(b)) => format!(
            "sync guard: ON at {}{bandwidth}, for {:.1} s; last durable write {:.1} s ago by pid {}; off after {:.0} s without one",
            human_bytes(b),
            g.acting_s.unwrap_or(0.0),
            g.last_durable_s.unwrap_or(0.0),
            g.durable_pid.unwrap_or(0),
            g.quiet_s
        ),
        (_, None) => format!(
            "sync guard: auto, idle (on while an rt-high process whose group root gave makes durable writes, and {:.0} s after){}",
            g.quiet_s,
            g.last_durable_s
                .map(|s| format!("; last durable write {s:.0} s ago"))
                .unwrap_or_default()
        ),
    }
}

/// A governor's groups as a table.
fn groups_table(s: &Snapshot) -> String {
    let rows: Vec<Vec<String>> = s
        .groups
        .iter()
        .map(|g| {
            vec![
                g.group.clone(),
                format!("{}/{}", g.tasks, g.processes),
                human_bytes(g.dirty_bytes),
                human_bytes(g.writeback_bytes),
                format!("{:.3}", g.share),
                g.limit_bytes
                    .map(human_bytes)
                    .unwrap_or_else(|| "none".into()),
                if g.held { "yes".into() } else { "no".into() },
                format!("{:.0}", g.held_ms),
                g.delayed_writes.to_string(),
                g.writes.to_string(),
                match (g.memcg_dirty_bytes, g.memcg_writeback_bytes) {
                    (Some(d), Some(w)) => format!("{} / {}", human_bytes(d), human_bytes(w)),
                    _ => "-".into(),
                },
                cgroup_controls(g.io_weight, g.memory_high_bytes),
            ]
        })
        .collect();
    simple(
        &[
            "group",
            "tasks/procs",
            "dirty",
            "writeback",
            "share",
            "limit",
            "held now",
            "held ms",
            "delayed",
            "writes",
            "memcg dirty / writeback",
            "io.weight / memory.high",
        ],
        &rows,
        &[1, 2, 3, 4, 5, 7, 8, 9],
    )
}

/// One line per governed process: what it is, and what the governor can do about
/// its writes ("not holdable, pushed" for those it cannot hold).
pub fn processes(ps: &[ProcView]) -> String {
    let mut out = String::new();
    for p in ps {
        // the program's path is the user's to name: shown escaped
        let exe = one_line(p.exe.as_deref().unwrap_or("?"));
        let mut what = Vec::new();
        if let Some(d) = p.kernel_dirtied_bytes {
            what.push(format!("{} dirtied", human_bytes(d)));
        }
        what.push(format!("{} writes ({})", p.writes, human_bytes(p.bytes)));
        if p.delayed_writes > 0 {
            what.push(format!(
                "{} delayed, held {:.0} ms",
                p.delayed_writes, p.held_ms
            ));
        }
        if !p.holdable {
            what.push("not holdable (static)".into());
        } else if p.unheld_files > 0 {
            what.push(format!(
                "{} file{} dirtied outside write() (shared mapping or stdio): not holdable",
                p.unheld_files,
                if p.unheld_files == 1 { "" } else { "s" }
            ));
        }
        if p.pushes > 0 {
            what.push(format!("pushed {} x", p.pushes));
        }
        if let Some(unit) = &p.service {
            what.push(format!("in {}, governed in place", one_line(unit)));
        }
        out += &format!(
            "  pid {} {} (uid {}) [{}]: {}\n",
            p.pid,
            exe,
            p.uid,
            one_line(&p.group),
            what.join(", ")
        );
    }
    out
}

/// A group cgroup's io weight and memory.high, as `status` shows them.
fn cgroup_controls(io_weight: Option<u32>, memory_high: Option<u64>) -> String {
    match (io_weight, memory_high) {
        (None, None) => "-".into(),
        (w, h) => format!(
            "{} / {}",
            w.map(|w| w.to_string()).unwrap_or_else(|| "-".into()),
            h.map(human_bytes).unwrap_or_else(|| "max".into())
        ),
    }
}

/// One line of a running governor's state, after the wall clock `clock`
/// (`wcall daemon --every S`).
pub fn status_line(clock: &str, s: &Snapshot) -> String {
    let groups: Vec<String> = s
        .groups
        .iter()
        .map(|g| {
            format!(
                "{} {}t {}/{}{}",
                one_line(&g.group),
                g.tasks,
                human_bytes(g.dirty_bytes + g.writeback_bytes),
                g.limit_bytes.map(human_bytes).unwrap_or_else(|| "-".into()),
                if g.held { " HELD" } else { "" }
            )
        })
        .collect();
    format!(
        "{clock} dirty {} writeback {} | {}",
        human_bytes(s.global_dirty_bytes),
        human_bytes(s.global_writeback_bytes),
        groups.join(" | ")
    )
}

/// What a governor did, when it ends (`wcall run`, `wcall daemon`).
pub fn summary(s: &Snapshot) -> String {
    let mut out = format!("oslab wcall: policy {}\n", one_line(&s.policy));
    for g in s
        .groups
        .iter()
        .filter(|g| g.writes + g.passed_through + g.mmap_writable > 0)
    {
        out += &format!(
            "  {:8} {} writes ({}), {} delayed, held {:.0} ms in all, files pushed {} times\n",
            one_line(&g.group),
            g.writes,
            human_bytes(g.bytes),
            g.delayed_writes,
            g.held_ms,
            g.pushes
        );
        if g.passed_through > 0 {
            out += &format!(
                "           {} writes passed through (O_DIRECT or not a regular file)\n",
                g.passed_through
            );
        }
        if g.mmap_writable > 0 {
            out += &format!(
                "           {} shared writable file mappings: their stores were not governed\n",
                g.mmap_writable
            );
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use oslab_model::governor::GroupView;

    fn snapshot() -> Snapshot {
        Snapshot {
            policy: "wcall-fair".into(),
            coordinator_alive: true,
            passes: 3,
            global_dirty_bytes: 2 << 20,
            groups: vec![
                GroupView {
                    group: "rt-high".into(),
                    tasks: 1,
                    processes: 1,
                    dirty_bytes: 1 << 20,
                    limit_bytes: Some(64 << 20),
                    writes: 10,
                    bytes: 10 << 20,
                    io_weight: Some(400),
                    ..GroupView::default()
                },
                GroupView {
                    group: "normal".into(),
                    held: true,
                    ..GroupView::default()
                },
            ],
            ..Snapshot::default()
        }
    }

    #[test]
    fn status_has_a_line_and_a_table_per_governor() {
        assert!(status(&[]).starts_with("no governor is running"));
        let s = snapshot();
        let text = status(&[Running {
            name: "g",
            pid: 42,
            snapshot: &s,
        }]);
        let mut lines = text.lines();
        assert!(
            lines
                .next()
                .unwrap()
                .starts_with("governor 'g' pid 42 policy wcall-fair (3 passes of 0 µs")
        );
        assert!(lines.next().unwrap().trim_start().starts_with("group"));
        assert!(text.contains("400 / max"), "{text}");
        assert!(text.contains("coordinator CPU"), "{text}");
        assert!(text.ends_with('\n'));
    }

    #[test]
    fn processes_the_governor_cannot_hold_are_named_so() {
        let ps = [
            ProcView {
                pid: 123,
                group: "normal".into(),
                exe: Some("/usr/bin/x".into()),
                holdable: false,
                kernel_dirtied_bytes: Some(300 << 20),
                pushes: 12,
                ..ProcView::default()
            },
            ProcView {
                pid: 124,
                group: "rt-low".into(),
                exe: Some("/usr/bin/y".into()),
                holdable: true,
                unheld_files: 1,
                ..ProcView::default()
            },
        ];
        let text = processes(&ps);
        assert!(
            text.contains("pid 123 /usr/bin/x (uid 0) [normal]: 300 MiB dirtied, 0 writes (0 B), not holdable (static), pushed 12 x"),
            "{text}"
        );
        assert!(text.contains("1 file dirtied outside write()"), "{text}");
    }

    #[test]
    fn a_governors_strings_are_shown_escaped() {
        let mut s = snapshot();
        s.policy = "p\x1b[2J".into();
        s.groups[0].group = "g\u{202E}".into();
        s.processes = vec![ProcView {
            pid: 7,
            group: "normal\x07".into(),
            exe: Some("/tmp/evil\x1b]0;owned\x07\n".into()),
            ..ProcView::default()
        }];
        let text = status(&[Running {
            name: "n\u{9b}",
            pid: 1,
            snapshot: &s,
        }]) + &status_line("12:00:00", &s)
            + &summary(&s);
        assert!(
            !text
                .chars()
                .any(|c| c != '\n' && oslab_term_text::needs_escape(c)),
            "{text:?}"
        );
        assert!(text.contains("/tmp/evil\\u{1b}]0;owned\\u{7}\\n"), "{text}");
        assert!(text.contains("governor 'n\\u{9b}'"), "{text}");
    }

    #[test]
    fn the_daemon_line_and_the_summary() {
        let s = snapshot();
        assert_eq!(
            status_line("12:00:00", &s),
            "12:00:00 dirty 2 MiB writeback 0 B | rt-high 1t 1 MiB/64 MiB | normal 0t 0 B/- HELD"
        );
        assert_eq!(
            summary(&s),
            "oslab wcall: policy wcall-fair\n  rt-high  10 writes (10 MiB), 0 delayed, held 0 ms in all, files pushed 0 times\n"
        );
    }
}
