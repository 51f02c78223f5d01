//! `oslab watch --prometheus`: the system as OpenMetrics text, after
//! node_exporter's conventions. What the kernel counts since boot is a counter
//! (`_total`), so `rate()` works over any scrape interval; levels (memory, Dirty,
//! Writeback, the run queue, load) are gauges. Devices that never did any I/O since
//! boot (unused loop and zram devices) are left out.

use std::fmt::Write;

use oslab_sys::parse::procstat::CpuTimes;
use oslab_sys::sar::{DiskCounters, Snapshot, runnable_besides_reader};

/// The content type of [`openmetrics`] text.
pub const OPENMETRICS_CONTENT_TYPE: &str =
    "application/openmetrics-text; version=1.0.0; charset=utf-8";
/// The content type of [`text_format`] (Prometheus's classic text format).
pub const TEXT_CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

/// Which exposition format: OpenMetrics 1.0, or Prometheus's classic text format
/// 0.0.4, where HELP and TYPE name a counter's samples (`_total`), there are no
/// UNIT lines and no `# EOF` (what `promtool check metrics` reads).
#[derive(Clone, Copy, PartialEq)]
enum Format {
    OpenMetrics,
    Text,
}

/// Clock ticks per second of /proc/stat's CPU times (USER_HZ, 100 on every Linux
/// architecture oslab builds for).
const USER_HZ: f64 = 100.0;
const SECTOR: f64 = 512.0;

#[derive(Clone, Copy, PartialEq)]
enum Kind {
    Counter,
    Gauge,
}

/// A sample's labels: (name, value) pairs.
type Labels<'a> = Vec<(&'a str, &'a str)>;

struct Families {
    out: String,
    format: Format,
}

impl Families {
    /// One family: `name` without `_total`, with its unit as the name's last word.
    fn family(
        &mut self,
        kind: Kind,
        name: &str,
        unit: &str,
        help: &str,
        samples: &[(Labels, f64)],
    ) {
        let full = if unit.is_empty() {
            format!("oslab_{name}")
        } else {
            format!("oslab_{name}_{unit}")
        };
        let (ty, suffix) = match kind {
            Kind::Counter => ("counter", "_total"),
            Kind::Gauge => ("gauge", ""),
        };
        let o = &mut self.out;
        if self.format == Format::Text {
            let _ = writeln!(o, "# HELP {full}{suffix} {help}");
            let _ = writeln!(o, "# TYPE {full}{suffix} {ty}");
        } else {
            let _ = writeln!(o, "# TYPE {full} {ty}");
            if !unit.is_empty() {
                let _ = writeln!(o, "# UNIT {full} {unit}");
            }
            let _ = writeln!(o, "# HELP {full} {help}");
        }
        for (labels, v) in samples {
            if labels.is_empty() {
                let _ = writeln!(o, "{full}{suffix} {v}");
                continue;
            }
            let pairs: Vec<String> = labels
                .iter()
                .map(|(k, val)| {
                    let val = val
                        .replace('\\', "\\\\")
                        .replace('"', "\\\"")
                        .replace('\n', "\\n");
                    format!("{k}=\"{val}\"")
                })
                .collect();
            let _ = writeln!(o, "{full}{suffix}{{{}}} {v}", pairs.join(","));
        }
    }

    fn counter(&mut self, name: &str, unit: &str, help: &str, v: f64) {
        self.family(Kind::Counter, name, unit, help, &[(Vec::new(), v)]);
    }

    fn gauge(&mut self, name: &str, unit: &str, help: &str, v: f64) {
        self.family(Kind::Gauge, name, unit, help, &[(Vec::new(), v)]);
    }
}

/// Seconds per mode, in /proc/stat's order.
fn by_mode(c: &CpuTimes) -> [(&'static str, f64); 8] {
    [
        ("user", c.user),
        ("nice", c.nice),
        ("system", c.system),
        ("idle", c.idle),
        ("iowait", c.iowait),
        ("irq", c.irq),
        ("softirq", c.softirq),
        ("steal", c.steal),
    ]
    .map(|(m, t)| (m, t as f64 / USER_HZ))
}

fn vm(s: &Snapshot, key: &str) -> f64 {
    s.vmstat.get(key).copied().unwrap_or(0) as f64
}

fn bytes_of(sectors: u64) -> f64 {
    sectors as f64 * SECTOR
}

fn seconds_of(ms: u64) -> f64 {
    ms as f64 / 1000.0
}

/// Devices that did any I/O since boot.
fn active(s: &Snapshot) -> Vec<(&String, &DiskCounters)> {
    s.disks
        .iter()
        .filter(|(_, d)| (d.reads | d.writes | d.discards) != 0)
        .collect()
}

/// The snapshot as OpenMetrics text, ending with `# EOF`; vmstat's page counts are
/// turned into bytes with `page_bytes`, the page size of the machine sampled.
pub fn openmetrics(s: &Snapshot, version: &str, page_bytes: u64) -> String {
    exposition(s, version, page_bytes, Format::OpenMetrics)
}

/// The snapshot in Prometheus's classic text format (0.0.4): the same families
/// and samples as [`openmetrics`].
pub fn text_format(s: &Snapshot, version: &str, page_bytes: u64) -> String {
    exposition(s, version, page_bytes, Format::Text)
}

fn exposition(s: &Snapshot, version: &str, page_bytes: u64, format: Format) -> String {
    let mut f = Families {
        out: String::new(),
        format,
    };
    f.family(
        Kind::Gauge,
        "build_info",
        "",
        "The oslab that serves these metrics (always 1).",
        &[(vec![("version", version)], 1.0)],
    );
    kernel_counters(&mut f, s);
    vm_counters(&mut f, s);
    levels(&mut f, s, page_bytes);
    devices(&mut f, s);
    if format == Format::OpenMetrics {
        f.out.push_str("# EOF\n");
    }
    f.out
}

fn kernel_counters(f: &mut Families, s: &Snapshot) {
    let cpu: Vec<(Labels, f64)> = by_mode(&s.cpu)
        .into_iter()
        .map(|(m, secs)| (vec![("mode", m)], secs))
        .collect();
    f.family(
        Kind::Counter,
        "cpu",
        "seconds",
        "CPU time of all CPUs by mode since boot (/proc/stat).",
        &cpu,
    );
    // each CPU, labelled as node_exporter's node_cpu_seconds_total
    let ids: Vec<(String, &CpuTimes)> = s.per_cpu.iter().map(|(n, t)| (n.to_string(), t)).collect();
    let per_cpu: Vec<(Labels, f64)> = ids
        .iter()
        .flat_map(|(id, t)| {
            by_mode(t)
                .into_iter()
                .map(move |(m, secs)| (vec![("cpu", id.as_str()), ("mode", m)], secs))
        })
        .collect();
    f.family(
        Kind::Counter,
        "cpu_core",
        "seconds",
        "CPU time of each CPU by mode since boot (/proc/stat cpuN lines).",
        &per_cpu,
    );
    f.counter(
        "context_switches",
        "",
        "Context switches since boot.",
        s.ctxt as f64,
    );
    f.counter(
        "forks",
        "",
        "Processes and threads created since boot.",
        s.forks as f64,
    );
    f.counter(
        "interrupts",
        "",
        "Interrupts serviced since boot.",
        s.interrupts as f64,
    );
}

/// The paging, reclaim, swap and write-back counters of /proc/vmstat.
fn vm_counters(f: &mut Families, s: &Snapshot) {
    f.counter(
        "pages_in",
        "bytes",
        "Paged in from devices (pgpgin).",
        vm(s, "pgpgin") * 1024.0,
    );
    f.counter(
        "pages_out",
        "bytes",
        "Paged out to devices (pgpgout).",
        vm(s, "pgpgout") * 1024.0,
    );
    f.counter(
        "page_faults",
        "",
        "Page faults (pgfault).",
        vm(s, "pgfault"),
    );
    f.counter(
        "major_page_faults",
        "",
        "Major page faults (pgmajfault).",
        vm(s, "pgmajfault"),
    );
    f.counter("pages_freed", "", "Pages freed (pgfree).", vm(s, "pgfree"));
    f.counter(
        "pages_scanned_kswapd",
        "",
        "Pages scanned by kswapd.",
        vm(s, "pgscan_kswapd"),
    );
    f.counter(
        "pages_scanned_direct",
        "",
        "Pages scanned in direct reclaim.",
        vm(s, "pgscan_direct"),
    );
    let stolen = vm(s, "pgsteal_kswapd") + vm(s, "pgsteal_direct");
    f.counter("pages_reclaimed", "", "Pages reclaimed (pgsteal).", stolen);
    f.counter(
        "swap_in_pages",
        "",
        "Pages swapped in (pswpin).",
        vm(s, "pswpin"),
    );
    f.counter(
        "swap_out_pages",
        "",
        "Pages swapped out (pswpout).",
        vm(s, "pswpout"),
    );
    f.counter(
        "pages_dirtied",
        "",
        "Pages dirtied (nr_dirtied).",
        vm(s, "nr_dirtied"),
    );
    f.counter(
        "pages_written",
        "",
        "Pages written back (nr_written).",
        vm(s, "nr_written"),
    );
}

fn levels(f: &mut Families, s: &Snapshot, page_bytes: u64) {
    if let Some(m) = &s.mem {
        let b = |x: u64| x as f64;
        f.gauge(
            "memory_free",
            "bytes",
            "Free memory (MemFree).",
            b(m.free_bytes),
        );
        let avail = m.available_bytes.unwrap_or(0);
        f.gauge("memory_available", "bytes", "MemAvailable.", b(avail));
        f.gauge("memory_buffers", "bytes", "Buffers.", b(m.buffers_bytes));
        f.gauge(
            "memory_cached",
            "bytes",
            "Page cache (Cached).",
            b(m.cached_bytes),
        );
        f.gauge(
            "memory_dirty",
            "bytes",
            "Dirty page cache waiting for write back.",
            b(m.dirty_bytes),
        );
        f.gauge(
            "memory_writeback",
            "bytes",
            "Memory under write back now.",
            b(m.writeback_bytes),
        );
        f.gauge(
            "memory_committed",
            "bytes",
            "Committed_AS.",
            b(m.committed_bytes),
        );
        let used = m.swap_total_bytes.saturating_sub(m.swap_free_bytes);
        f.gauge("swap_used", "bytes", "Swap in use.", b(used));
    }
    let page = page_bytes as f64;
    let dirty_limit = vm(s, "nr_dirty_threshold") * page;
    let bg = vm(s, "nr_dirty_background_threshold") * page;
    f.gauge(
        "dirty_limit",
        "bytes",
        "The kernel's dirty limit now (vmstat nr_dirty_threshold pages times the page size).",
        dirty_limit,
    );
    f.gauge(
        "dirty_background_limit",
        "bytes",
        "The background write-back threshold now (vmstat nr_dirty_background_threshold pages times the page size).",
        bg,
    );
    let runq = runnable_besides_reader(s) as f64;
    f.gauge(
        "run_queue",
        "",
        "Runnable tasks, oslab's reader not counted (sar runq-sz).",
        runq,
    );
    f.gauge(
        "blocked",
        "",
        "Tasks blocked on I/O (procs_blocked).",
        s.procs_blocked as f64,
    );
    f.gauge(
        "tasks",
        "",
        "Tasks (processes and threads) now.",
        s.tasks_total as f64,
    );
    for (i, name) in ["load1", "load5", "load15"].iter().enumerate() {
        f.gauge(name, "", "Load average (/proc/loadavg).", s.loadavg[i]);
    }
}

/// A per-device family: its name, unit, help and the figure of one device.
type DeviceFamily = (
    &'static str,
    &'static str,
    &'static str,
    fn(&DiskCounters) -> f64,
);

/// The device counters, in the order they are served.
const DEVICE_COUNTERS: [DeviceFamily; 10] = [
    ("device_reads", "", "Reads completed.", |d| d.reads as f64),
    ("device_writes", "", "Writes completed.", |d| {
        d.writes as f64
    }),
    ("device_discards", "", "Discards completed.", |d| {
        d.discards as f64
    }),
    ("device_read", "bytes", "Bytes read.", |d| {
        bytes_of(d.sectors_read)
    }),
    ("device_written", "bytes", "Bytes written.", |d| {
        bytes_of(d.sectors_written)
    }),
    ("device_discarded", "bytes", "Bytes discarded.", |d| {
        bytes_of(d.sectors_discarded)
    }),
    (
        "device_io_time",
        "seconds",
        "Time the device was busy (rate() = %util / 100).",
        |d| seconds_of(d.busy_ms),
    ),
    (
        "device_io_time_weighted",
        "seconds",
        "Time requests spent queued and in service (rate() = aqu-sz).",
        |d| seconds_of(d.weighted_ms),
    ),
    ("device_read_time", "seconds", "Time spent reading.", |d| {
        seconds_of(d.read_ms)
    }),
    ("device_write_time", "seconds", "Time spent writing.", |d| {
        seconds_of(d.write_ms)
    }),
];

fn devices(f: &mut Families, s: &Snapshot) {
    let devs = active(s);
    let per = |g: fn(&DiskCounters) -> f64| -> Vec<(Labels, f64)> {
        devs.iter()
            .map(|(n, d)| (vec![("device", n.as_str())], g(d)))
            .collect()
    };
    for (name, unit, help, figure) in DEVICE_COUNTERS {
        f.family(Kind::Counter, name, unit, help, &per(figure));
    }
    f.family(
        Kind::Gauge,
        "device_in_flight",
        "",
        "Requests in flight now.",
        &per(|d| d.in_flight as f64),
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use oslab_sys::sar::{SnapshotTexts, snapshot_from};

    fn snap() -> Snapshot {
        let texts = SnapshotTexts {
            vmstat: "pgpgin 10\npgpgout 20\npgfault 30\npgscan_kswapd 4\npgscan_direct 5\n".into(),
            meminfo: include_str!("../../../sys/tests/fixtures/kvm-xeon-2cpu/proc/meminfo").into(),
            diskstats: "253 0 vda 10 0 80 5 10 0 160 15 0 20 25\n 7 0 loop0 0 0 0 0 0 0 0 0 0 0 0\n"
                .into(),
            stat: "cpu  100 5 100 800 7 0 0 3 0 0\ncpu0 60 5 50 400 7 0 0 2 0 0\ncpu1 40 0 50 400 0 0 0 1 0 0\nintr 900 1 2\nctxt 5000\nprocesses 77\nprocs_running 3\nprocs_blocked 1\n"
                .into(),
            loadavg: "0.50 0.40 0.30 3/200 999\n".into(),
        };
        snapshot_from(&texts, 1)
    }

    #[test]
    fn what_the_kernel_counts_is_a_counter_and_levels_are_gauges() {
        let text = openmetrics(&snap(), "9.9.9", 4096);
        assert!(text.ends_with("# EOF\n"));
        assert!(text.starts_with("# TYPE oslab_build_info gauge\n"));
        assert!(text.contains("# TYPE oslab_context_switches counter\n"));
        assert!(text.contains("\noslab_context_switches_total 5000\n"));
        assert!(
            text.contains(
                "# TYPE oslab_context_switches counter\noslab_context_switches_total 5000\n"
            ) || text.contains("oslab_context_switches_total 5000\n")
        );
        assert!(
            text.contains("# TYPE oslab_cpu_seconds counter\n# UNIT oslab_cpu_seconds seconds\n")
        );
        assert!(text.contains("oslab_cpu_seconds_total{mode=\"user\"} 1\n"));
        assert!(text.contains("oslab_cpu_seconds_total{mode=\"steal\"} 0.03\n"));
        assert!(text.contains("oslab_cpu_core_seconds_total{cpu=\"0\",mode=\"user\"} 0.6\n"));
        assert!(text.contains("oslab_cpu_core_seconds_total{cpu=\"1\",mode=\"steal\"} 0.01\n"));
        assert!(text.contains("oslab_pages_in_bytes_total 10240\n"));
        assert!(text.contains("oslab_pages_scanned_kswapd_total 4\n"));
        assert!(text.contains("oslab_pages_scanned_direct_total 5\n"));
        assert!(text.contains("oslab_forks_total 77\n"));
        assert!(text.contains("oslab_interrupts_total 900\n"));
        assert!(text.contains("oslab_device_read_bytes_total{device=\"vda\"} 40960\n"));
        assert!(text.contains("# TYPE oslab_memory_dirty_bytes gauge\n"));
        assert!(text.contains("\noslab_memory_dirty_bytes "));
        // the reader of /proc/stat is not in the run queue
        assert!(text.contains("oslab_run_queue 2\n"));
        assert!(!text.contains("per_second"));
    }

    #[test]
    fn the_classic_text_format_names_a_counters_samples_in_help_and_type() {
        let text = text_format(&snap(), "9.9.9", 4096);
        assert!(text.starts_with("# HELP oslab_build_info "));
        assert!(text.contains(
            "# TYPE oslab_context_switches_total counter\noslab_context_switches_total 5000\n"
        ));
        assert!(text.contains("# HELP oslab_cpu_seconds_total "));
        assert!(!text.contains("# UNIT") && !text.contains("# EOF"));
        let samples = |t: &str| t.lines().filter(|l| !l.starts_with('#')).count();
        assert_eq!(
            samples(&text),
            samples(&openmetrics(&snap(), "9.9.9", 4096))
        );
    }

    #[test]
    fn devices_without_any_io_since_boot_are_left_out() {
        let text = openmetrics(&snap(), "0", 4096);
        assert!(text.contains("device=\"vda\""));
        assert!(!text.contains("loop0"));
    }

    #[test]
    fn every_sample_belongs_to_a_declared_family() {
        let text = openmetrics(&snap(), "0", 4096);
        let mut declared: Vec<(String, String)> = Vec::new();
        for line in text.lines() {
            if let Some(rest) = line.strip_prefix("# TYPE ") {
                let (name, ty) = rest.split_once(' ').unwrap();
                declared.push((name.into(), ty.into()));
            } else if !line.starts_with('#') {
                let name = line.split(['{', ' ']).next().unwrap();
                let (family, ty) = declared.last().unwrap();
                let expected = if ty == "counter" {
                    format!("{family}_total")
                } else {
                    family.clone()
                };
                assert_eq!(name, expected, "{line}");
            }
        }
        let names: Vec<&String> = declared.iter().map(|(n, _)| n).collect();
        let mut unique = names.clone();
        unique.dedup();
        assert_eq!(names.len(), unique.len(), "a family declared twice");
    }
}
