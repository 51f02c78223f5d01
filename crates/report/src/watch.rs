//! `oslab watch` output: sar-like text lines, JSON lines, and OpenMetrics text.

use std::fmt::Write;

use oslab_sys::sar::SarRecord;

/// Devices worth a line: those that moved any data, or the ones asked for.
pub fn shown_devices<'a>(r: &'a SarRecord, only: &[String]) -> Vec<&'a str> {
    r.devices
        .iter()
        .filter(|(name, d)| {
            if only.is_empty() {
                d.tps > 0.0 && !name.starts_with("loop") && !name.starts_with("ram")
            } else {
                only.iter().any(|o| o == *name)
            }
        })
        .map(|(n, _)| n.as_str())
        .collect()
}

/// The column header, with units.
pub fn header() -> String {
    format!(
        "{:<8} {:>8} {:>8} {:>8} {:>7} {:>7} | {:>9} {:>9} {:>8} {:>7} {:>9} {:>9} {:>6} | {:>8} {:>4} | {:>5} {:>5} {:>5} {:>5}\n{:<8} {:>8} {:>8} {:>8} {:>7} {:>7} | {:>9} {:>9} {:>8} {:>7} {:>9} {:>9} {:>6} | {:>8} {:>4} | {:>5} {:>5} {:>5} {:>5}\n",
        "time",
        "memfree",
        "avail",
        "cached",
        "dirty",
        "wback",
        "pgpgin",
        "pgpgout",
        "fault",
        "majflt",
        "pgscan",
        "pgsteal",
        "vmeff",
        "cswch",
        "runq",
        "usr",
        "sys",
        "iowt",
        "steal",
        "",
        "MiB",
        "MiB",
        "MiB",
        "MiB",
        "MiB",
        "KiB/s",
        "KiB/s",
        "/s",
        "/s",
        "/s",
        "/s",
        "%",
        "/s",
        "",
        "%",
        "%",
        "%",
        "%"
    )
}

/// One interval as a line, plus one line per shown device.
pub fn line(clock: &str, r: &SarRecord, devices: &[&str]) -> String {
    let mib = |kb: u64| kb as f64 / 1024.0;
    let m = &r.memory;
    let p = &r.paging;
    let mut s = format!(
        "{:<8} {:>8.0} {:>8.0} {:>8.0} {:>7.1} {:>7.1} | {:>9.0} {:>9.0} {:>8.0} {:>7.0} {:>9.0} {:>9.0} {:>6.1} | {:>8.0} {:>4} | {:>5.1} {:>5.1} {:>5.1} {:>5.1}\n",
        clock,
        mib(m.kbmemfree),
        mib(m.kbavail),
        mib(m.kbcached),
        mib(m.kbdirty),
        mib(m.kbwriteback),
        p.pgpgin_kb_s,
        p.pgpgout_kb_s,
        p.fault_s,
        p.majflt_s,
        p.pgscank_s + p.pgscand_s,
        p.pgsteal_s,
        p.vmeff_pct,
        r.cswch_s,
        r.runq_sz,
        r.cpu.user + r.cpu.nice,
        r.cpu.system,
        r.cpu.iowait,
        r.cpu.steal,
    );
    for name in devices {
        if let Some(d) = r.devices.get(*name) {
            let _ = writeln!(
                s,
                "  {name:<10} tps {:>8.1}  rkB/s {:>9.0}  wkB/s {:>9.0}  dkB/s {:>7.0}  areq-sz {:>6.1} KiB  aqu-sz {:>5.2}  await {:>6.2} ms  %util {:>5.1}",
                d.tps, d.rkb_s, d.wkb_s, d.dkb_s, d.areq_kb, d.aqu_sz, d.await_ms, d.util_pct
            );
        }
    }
    s
}

/// One record as one line of JSON.
pub fn json_line(unix_time_s: f64, r: &SarRecord) -> String {
    let mut v = serde_json::to_value(r).expect("record serialises");
    v["unix_time_s"] = serde_json::json!(unix_time_s);
    let mut s = serde_json::to_string(&v).expect("value serialises");
    s.push('\n');
    s
}

/// The content type of [`openmetrics`] text.
pub const OPENMETRICS_CONTENT_TYPE: &str =
    "application/openmetrics-text; version=1.0.0; charset=utf-8";

struct Family<'a> {
    out: &'a mut String,
}

impl Family<'_> {
    fn gauge(
        &mut self,
        name: &str,
        unit: &str,
        help: &str,
        samples: &[(Option<(&str, &str)>, f64)],
    ) {
        let full = if unit.is_empty() {
            format!("oslab_{name}")
        } else {
            format!("oslab_{name}_{unit}")
        };
        let _ = writeln!(self.out, "# TYPE {full} gauge");
        if !unit.is_empty() {
            let _ = writeln!(self.out, "# UNIT {full} {unit}");
        }
        let _ = writeln!(self.out, "# HELP {full} {help}");
        for (label, v) in samples {
            match label {
                Some((k, val)) => {
                    let val = val.replace('\\', "\\\\").replace('"', "\\\"");
                    let _ = writeln!(self.out, "{full}{{{k}=\"{val}\"}} {v}");
                }
                None => {
                    let _ = writeln!(self.out, "{full} {v}");
                }
            }
        }
    }
}

/// The record as OpenMetrics text (the Prometheus exposition format's successor).
pub fn openmetrics(r: &SarRecord) -> String {
    let mut out = String::new();
    let mut f = Family { out: &mut out };
    let kib = |k: u64| (k * 1024) as f64;
    let m = &r.memory;
    f.gauge(
        "memory_free",
        "bytes",
        "Free memory (MemFree).",
        &[(None, kib(m.kbmemfree))],
    );
    f.gauge(
        "memory_available",
        "bytes",
        "Memory available for new work (MemAvailable).",
        &[(None, kib(m.kbavail))],
    );
    f.gauge(
        "memory_buffers",
        "bytes",
        "Buffers.",
        &[(None, kib(m.kbbuffers))],
    );
    f.gauge(
        "memory_cached",
        "bytes",
        "Page cache (Cached).",
        &[(None, kib(m.kbcached))],
    );
    f.gauge(
        "memory_dirty",
        "bytes",
        "Dirty page-cache memory waiting for write back.",
        &[(None, kib(m.kbdirty))],
    );
    f.gauge(
        "memory_writeback",
        "bytes",
        "Memory under write back right now.",
        &[(None, kib(m.kbwriteback))],
    );
    let p = &r.paging;
    f.gauge(
        "paging_in",
        "bytes_per_second",
        "Paged in from devices (sar pgpgin/s).",
        &[(None, p.pgpgin_kb_s * 1024.0)],
    );
    f.gauge(
        "paging_out",
        "bytes_per_second",
        "Paged out to devices (sar pgpgout/s).",
        &[(None, p.pgpgout_kb_s * 1024.0)],
    );
    f.gauge(
        "page_faults",
        "per_second",
        "Page faults (sar fault/s).",
        &[(None, p.fault_s)],
    );
    f.gauge(
        "major_faults",
        "per_second",
        "Major page faults (sar majflt/s).",
        &[(None, p.majflt_s)],
    );
    f.gauge(
        "pages_freed",
        "per_second",
        "Pages freed (sar pgfree/s).",
        &[(None, p.pgfree_s)],
    );
    f.gauge(
        "pages_scanned_kswapd",
        "per_second",
        "Pages scanned by kswapd (sar pgscank/s).",
        &[(None, p.pgscank_s)],
    );
    f.gauge(
        "pages_scanned_direct",
        "per_second",
        "Pages scanned directly (sar pgscand/s).",
        &[(None, p.pgscand_s)],
    );
    f.gauge(
        "pages_stolen",
        "per_second",
        "Pages reclaimed (sar pgsteal/s).",
        &[(None, p.pgsteal_s)],
    );
    f.gauge(
        "vm_efficiency",
        "ratio",
        "Reclaimed over scanned pages (sar %vmeff / 100).",
        &[(None, p.vmeff_pct / 100.0)],
    );
    f.gauge(
        "context_switches",
        "per_second",
        "Context switches (sar cswch/s).",
        &[(None, r.cswch_s)],
    );
    f.gauge(
        "run_queue",
        "",
        "Runnable tasks (sar runq-sz).",
        &[(None, r.runq_sz as f64)],
    );
    f.gauge(
        "cpu_steal",
        "ratio",
        "Share of CPU time stolen by the hypervisor.",
        &[(None, r.cpu.steal / 100.0)],
    );
    f.gauge(
        "cpu_iowait",
        "ratio",
        "Share of CPU time idle waiting for I/O.",
        &[(None, r.cpu.iowait / 100.0)],
    );
    let devs: Vec<(&String, &oslab_sys::sar::DeviceRates)> = r.devices.iter().collect();
    let per = |g: fn(&oslab_sys::sar::DeviceRates) -> f64| -> Vec<(Option<(&str, &str)>, f64)> {
        devs.iter()
            .map(|(n, d)| (Some(("device", n.as_str())), g(d)))
            .collect()
    };
    f.gauge(
        "device_transfers",
        "per_second",
        "Device requests (sar tps).",
        &per(|d| d.tps),
    );
    f.gauge(
        "device_read",
        "bytes_per_second",
        "Device reads (sar rkB/s).",
        &per(|d| d.rkb_s * 1024.0),
    );
    f.gauge(
        "device_written",
        "bytes_per_second",
        "Device writes (sar wkB/s).",
        &per(|d| d.wkb_s * 1024.0),
    );
    f.gauge(
        "device_discarded",
        "bytes_per_second",
        "Device discards (sar dkB/s).",
        &per(|d| d.dkb_s * 1024.0),
    );
    f.gauge(
        "device_queue",
        "",
        "Average queue size (sar aqu-sz).",
        &per(|d| d.aqu_sz),
    );
    f.gauge(
        "device_await",
        "seconds",
        "Average time per request (sar await).",
        &per(|d| d.await_ms / 1000.0),
    );
    f.gauge(
        "device_utilization",
        "ratio",
        "Share of time the device was busy (sar %util / 100).",
        &per(|d| d.util_pct / 100.0),
    );
    out.push_str("# EOF\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use oslab_sys::sar::DeviceRates;

    #[test]
    fn openmetrics_declares_every_sample_and_ends_with_eof() {
        let mut r = SarRecord::default();
        r.memory.kbdirty = 2048;
        r.devices.insert(
            "vda".into(),
            DeviceRates {
                util_pct: 50.0,
                ..Default::default()
            },
        );
        let text = openmetrics(&r);
        assert!(text.ends_with("# EOF\n"));
        assert!(text.contains("oslab_memory_dirty_bytes 2097152\n"));
        assert!(text.contains("oslab_device_utilization_ratio{device=\"vda\"} 0.5\n"));
    }

    #[test]
    fn only_active_devices_are_shown() {
        let mut r = SarRecord::default();
        r.devices.insert(
            "vda".into(),
            DeviceRates {
                tps: 3.0,
                ..Default::default()
            },
        );
        r.devices.insert("sdb".into(), DeviceRates::default());
        r.devices.insert(
            "loop0".into(),
            DeviceRates {
                tps: 1.0,
                ..Default::default()
            },
        );
        assert_eq!(shown_devices(&r, &[]), vec!["vda"]);
        assert_eq!(shown_devices(&r, &["sdb".into()]), vec!["sdb"]);
    }
}
