//! System statistics the way `sar` reports them, from /proc snapshots.
//!
//! A [`Snapshot`] is the raw counters of one instant, parsed from the text of
//! /proc/vmstat, /proc/meminfo, /proc/diskstats, /proc/stat and /proc/loadavg.
//! [`derive`] turns two snapshots into one [`SarRecord`] of rates and levels with the
//! same definitions sysstat uses (sar -B, -d, -r, -w, -q, -u):
//! - paging: pgpgin/s and pgpgout/s in KiB/s (vmstat's pgpgin/pgpgout are KiB),
//!   fault/s, majflt/s, pgfree/s, pgscank/s, pgscand/s, pgsteal/s, and
//!   %vmeff = pgsteal / (pgscank + pgscand);
//! - devices: tps, rkB/s, wkB/s, dkB/s, areq-sz (KiB per request), aqu-sz (weighted
//!   time in queue / interval), await (ms per request), %util (time busy / interval);
//! - memory levels in KiB; context switches per second; the run queue.
//!
//! Counters that go backwards are handled: a 32-bit counter that wrapped (previous
//! value below 2^32) adds 2^32, anything else (a device re-created, a counter reset)
//! counts from zero. A device present in only one of the two snapshots has no rates
//! for that interval.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::fsread::Root;
use crate::parse::meminfo::{MemSnapshot, parse_meminfo};
use crate::parse::procstat::{CpuTimes, cpu_times, per_cpu_times};
use crate::parse::vmstat;

/// Raw per-device counters from one /proc/diskstats line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct DiskCounters {
    pub reads: u64,
    pub sectors_read: u64,
    pub read_ms: u64,
    pub writes: u64,
    pub sectors_written: u64,
    pub write_ms: u64,
    pub in_flight: u64,
    pub busy_ms: u64,
    pub weighted_ms: u64,
    pub discards: u64,
    pub sectors_discarded: u64,
    pub discard_ms: u64,
}

/// The counters of one instant.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Snapshot {
    /// CLOCK_MONOTONIC time of the reading, ns.
    pub t_ns: u64,
    pub vmstat: BTreeMap<String, u64>,
    pub mem: Option<MemSnapshot>,
    pub disks: BTreeMap<String, DiskCounters>,
    pub cpu: CpuTimes,
    /// Each CPU's times by CPU number (for /metrics; not kept in raw data,
    /// where it would multiply a sampler's size by the CPUs).
    #[serde(default, skip_serializing)]
    pub per_cpu: BTreeMap<u32, CpuTimes>,
    pub ctxt: u64,
    pub procs_running: u64,
    pub procs_blocked: u64,
    pub loadavg: [f64; 3],
    pub tasks_total: u64,
    /// Processes and threads created since boot (/proc/stat `processes`).
    #[serde(default)]
    pub forks: u64,
    /// Interrupts serviced since boot (/proc/stat `intr`, its total).
    #[serde(default)]
    pub interrupts: u64,
}

const VMSTAT_KEYS: [&str; 17] = [
    "pgpgin",
    "pgpgout",
    "pgfault",
    "pgmajfault",
    "pgfree",
    "pgscan_kswapd",
    "pgscan_direct",
    "pgsteal_kswapd",
    "pgsteal_direct",
    "nr_dirty",
    "nr_writeback",
    "nr_dirty_threshold",
    "nr_dirty_background_threshold",
    "nr_dirtied",
    "nr_written",
    "pswpout",
    "pswpin",
];

/// Parses /proc/vmstat (`crate::parse::vmstat`), keeping the counters oslab uses.
pub fn parse_vmstat(text: &str) -> BTreeMap<String, u64> {
    vmstat::select(text, &VMSTAT_KEYS)
}

/// Parses /proc/diskstats; lines that do not parse are skipped.
pub fn parse_diskstats(text: &str) -> BTreeMap<String, DiskCounters> {
    text.lines()
        .filter_map(|l| procfs_core::DiskStat::from_line(l).ok())
        .map(|d| {
            (
                d.name.clone(),
                DiskCounters {
                    reads: d.reads,
                    sectors_read: d.sectors_read,
                    read_ms: d.time_reading,
                    writes: d.writes,
                    sectors_written: d.sectors_written,
                    write_ms: d.time_writing,
                    in_flight: d.in_progress,
                    busy_ms: d.time_in_progress,
                    weighted_ms: d.weighted_time_in_progress,
                    discards: d.discards.unwrap_or(0),
                    sectors_discarded: d.sectors_discarded.unwrap_or(0),
                    discard_ms: d.time_discarding.unwrap_or(0),
                },
            )
        })
        .collect()
}

fn stat_field(stat: &str, key: &str) -> u64 {
    stat.lines()
        .find_map(|l| l.strip_prefix(key)?.trim().parse().ok())
        .unwrap_or(0)
}

/// The texts a snapshot is made of; all optional so a missing file degrades a field.
#[derive(Debug, Clone, Default)]
pub struct SnapshotTexts {
    pub vmstat: String,
    pub meminfo: String,
    pub diskstats: String,
    pub stat: String,
    pub loadavg: String,
}

impl SnapshotTexts {
    pub fn read(root: &Root) -> SnapshotTexts {
        let r = |p: &str| root.read(p).unwrap_or_default();
        SnapshotTexts {
            vmstat: r("/proc/vmstat"),
            meminfo: r("/proc/meminfo"),
            diskstats: r("/proc/diskstats"),
            stat: r("/proc/stat"),
            loadavg: r("/proc/loadavg"),
        }
    }
}

/// Builds a snapshot from the texts, stamped `t_ns`.
pub fn snapshot_from(texts: &SnapshotTexts, t_ns: u64) -> Snapshot {
    let mut la = texts.loadavg.split_whitespace();
    let mut next_f = || la.next().and_then(|x| x.parse().ok()).unwrap_or(0.0);
    let loadavg = [next_f(), next_f(), next_f()];
    let tasks_total = texts
        .loadavg
        .split_whitespace()
        .nth(3)
        .and_then(|x| x.split_once('/'))
        .and_then(|(_, t)| t.parse().ok())
        .unwrap_or(0);
    Snapshot {
        t_ns,
        vmstat: parse_vmstat(&texts.vmstat),
        mem: parse_meminfo(&texts.meminfo).ok(),
        disks: parse_diskstats(&texts.diskstats),
        cpu: cpu_times(&texts.stat).unwrap_or_default(),
        per_cpu: per_cpu_times(&texts.stat),
        ctxt: stat_field(&texts.stat, "ctxt"),
        procs_running: stat_field(&texts.stat, "procs_running"),
        procs_blocked: stat_field(&texts.stat, "procs_blocked"),
        loadavg,
        tasks_total,
        forks: stat_field(&texts.stat, "processes"),
        interrupts: texts
            .stat
            .lines()
            .find_map(|l| {
                l.strip_prefix("intr ")?
                    .split_whitespace()
                    .next()?
                    .parse()
                    .ok()
            })
            .unwrap_or(0),
    }
}

/// Reads a snapshot of the live system now.
pub fn snapshot(root: &Root) -> Snapshot {
    let t = crate::clock::monotonic_ns();
    snapshot_from(&SnapshotTexts::read(root), t)
}

/// The increase of a counter, allowing for a 32-bit wrap or a reset.
pub fn counter_delta(prev: u64, cur: u64) -> u64 {
    if cur >= prev {
        cur - prev
    } else if prev <= u64::from(u32::MAX) {
        cur + (1u64 << 32) - prev
    } else {
        cur
    }
}

// The record's types are the result schema's (`oslab_model::system`); `derive` fills
// them.
use oslab_model::system::{CpuPct, DeviceRates, Memory, Paging, SarRecord};

fn rate(prev: &BTreeMap<String, u64>, cur: &BTreeMap<String, u64>, key: &str, dt: f64) -> f64 {
    match (prev.get(key), cur.get(key)) {
        (Some(a), Some(b)) => counter_delta(*a, *b) as f64 / dt,
        _ => 0.0,
    }
}

fn device_rates(a: &DiskCounters, b: &DiskCounters, dt_s: f64) -> DeviceRates {
    let d = |x: u64, y: u64| counter_delta(x, y) as f64;
    let ios = d(a.reads, b.reads) + d(a.writes, b.writes) + d(a.discards, b.discards);
    let rsec = d(a.sectors_read, b.sectors_read);
    let wsec = d(a.sectors_written, b.sectors_written);
    let dsec = d(a.sectors_discarded, b.sectors_discarded);
    let ticks = d(a.read_ms, b.read_ms) + d(a.write_ms, b.write_ms) + d(a.discard_ms, b.discard_ms);
    let dt_ms = dt_s * 1000.0;
    DeviceRates {
        tps: ios / dt_s,
        rkb_s: rsec / 2.0 / dt_s,
        wkb_s: wsec / 2.0 / dt_s,
        dkb_s: dsec / 2.0 / dt_s,
        areq_kb: if ios > 0.0 {
            (rsec + wsec + dsec) / 2.0 / ios
        } else {
            0.0
        },
        aqu_sz: d(a.weighted_ms, b.weighted_ms) / dt_ms,
        await_ms: if ios > 0.0 { ticks / ios } else { 0.0 },
        util_pct: (d(a.busy_ms, b.busy_ms) / dt_ms * 100.0).min(100.0),
    }
}

/// The record for the interval from `prev` to `cur`; `origin_ns` is the time of the
/// series' first snapshot. `None` when no time passed.
pub fn derive(prev: &Snapshot, cur: &Snapshot, origin_ns: u64) -> Option<SarRecord> {
    if cur.t_ns <= prev.t_ns {
        return None;
    }
    let dt = (cur.t_ns - prev.t_ns) as f64 / 1e9;
    let (pv, cv) = (&prev.vmstat, &cur.vmstat);
    let scank = rate(pv, cv, "pgscan_kswapd", dt);
    let scand = rate(pv, cv, "pgscan_direct", dt);
    let steal = rate(pv, cv, "pgsteal_kswapd", dt) + rate(pv, cv, "pgsteal_direct", dt);
    let paging = Paging {
        pgpgin_kb_s: rate(pv, cv, "pgpgin", dt),
        pgpgout_kb_s: rate(pv, cv, "pgpgout", dt),
        fault_s: rate(pv, cv, "pgfault", dt),
        majflt_s: rate(pv, cv, "pgmajfault", dt),
        pgfree_s: rate(pv, cv, "pgfree", dt),
        pgscank_s: scank,
        pgscand_s: scand,
        pgsteal_s: steal,
        pswpin_s: rate(pv, cv, "pswpin", dt),
        pswpout_s: rate(pv, cv, "pswpout", dt),
        vmeff_pct: if scank + scand > 0.0 {
            (steal / (scank + scand) * 100.0).min(100.0)
        } else {
            0.0
        },
    };
    let devices = cur
        .disks
        .iter()
        .filter_map(|(name, b)| Some((name.clone(), device_rates(prev.disks.get(name)?, b, dt))))
        .collect();
    let memory = cur
        .mem
        .as_ref()
        .map(|m| Memory {
            kbmemfree: m.free_bytes / 1024,
            kbavail: m.available_bytes.unwrap_or(0) / 1024,
            kbbuffers: m.buffers_bytes / 1024,
            kbcached: m.cached_bytes / 1024,
            kbdirty: m.dirty_bytes / 1024,
            kbwriteback: m.writeback_bytes / 1024,
            kbswpused: m.swap_total_bytes.saturating_sub(m.swap_free_bytes) / 1024,
            kbcommit: m.committed_bytes / 1024,
        })
        .unwrap_or_default();
    Some(SarRecord {
        t_s: cur.t_ns.saturating_sub(origin_ns) as f64 / 1e9,
        interval_s: dt,
        paging,
        devices,
        memory,
        cpu: shares(&cur.cpu.since(&prev.cpu)),
        cswch_s: counter_delta(prev.ctxt, cur.ctxt) as f64 / dt,
        proc_s: counter_delta(prev.forks, cur.forks) as f64 / dt,
        intr_s: counter_delta(prev.interrupts, cur.interrupts) as f64 / dt,
        runq_sz: runnable_besides_reader(cur),
        blocked: cur.procs_blocked,
        plist_sz: cur.tasks_total,
        ldavg_1: cur.loadavg[0],
        ldavg_5: cur.loadavg[1],
        ldavg_15: cur.loadavg[2],
    })
}

/// CPU time spent in each state as percentages of all of it (sar -u; irq and
/// softirq count as %sys).
fn shares(c: &CpuTimes) -> CpuPct {
    let total = c.total().max(1) as f64;
    let pct = |x: u64| x as f64 * 100.0 / total;
    CpuPct {
        user: pct(c.user),
        nice: pct(c.nice),
        system: pct(c.system.saturating_add(c.irq).saturating_add(c.softirq)),
        iowait: pct(c.iowait),
        steal: pct(c.steal),
        idle: pct(c.idle),
    }
}

/// Each CPU's shares between two snapshots, as `sar -P ALL` shows them; a CPU in
/// only one of the two (brought on or off line), or with no time counted between
/// them, is left out (it has no shares to give, not 0 % of everything).
pub fn per_cpu_shares(prev: &Snapshot, cur: &Snapshot) -> BTreeMap<u32, CpuPct> {
    cur.per_cpu
        .iter()
        .filter_map(|(n, c)| Some((*n, c.since(prev.per_cpu.get(n)?))))
        .filter(|(_, d)| d.total() > 0)
        .map(|(n, d)| (n, shares(&d)))
        .collect()
}

/// Tasks runnable at the snapshot, less the one that read /proc/stat: it was
/// running while it read, so procs_running always counts it (sysstat's sadc takes
/// itself off the same way).
pub fn runnable_besides_reader(s: &Snapshot) -> u64 {
    s.procs_running.saturating_sub(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_cpu_gets_its_own_shares_and_a_cpu_in_one_snapshot_none() {
        let times = |user: u64, idle: u64| CpuTimes {
            user,
            idle,
            irq: 1,
            ..CpuTimes::default()
        };
        let mut a = Snapshot::default();
        let mut b = Snapshot::default();
        a.per_cpu.insert(0, times(100, 100));
        b.per_cpu.insert(0, times(130, 199));
        a.per_cpu.insert(1, times(0, 0));
        b.per_cpu.insert(1, times(0, 50));
        b.per_cpu.insert(2, times(5, 5));
        a.per_cpu.insert(3, times(7, 7));
        b.per_cpu.insert(3, times(7, 7));
        let s = per_cpu_shares(&a, &b);
        assert_eq!(s.keys().copied().collect::<Vec<_>>(), [0, 1]);
        assert!((s[&0].user - 30.0 / 129.0 * 100.0).abs() < 1e-9);
        assert!((s[&0].idle - 99.0 / 129.0 * 100.0).abs() < 1e-9);
        assert_eq!(s[&1].idle, 100.0);
    }

    #[test]
    fn counters_wrap_and_reset() {
        assert_eq!(counter_delta(10, 15), 5);
        assert_eq!(counter_delta(u64::from(u32::MAX) - 1, 3), 5);
        // a 64-bit counter cannot have wrapped: treat as a reset
        assert_eq!(counter_delta(1 << 40, 7), 7);
    }
}

/// Property tests: /proc/vmstat, /proc/diskstats, /proc/stat and /proc/loadavg text
/// of any shape gives a snapshot (fields it cannot read are zero or absent), never a
/// panic, and two such snapshots give a record without a panic. A fuzz-like run with
/// many cases (PROPTEST_CASES wins over the default here; failures are printed, not
/// saved to proptest-regressions/):
/// `PROPTEST_CASES=100000 cargo test -p oslab-sys --lib -- sar::props`
#[cfg(test)]
mod props {
    use super::*;
    use crate::testing::proptest_config as config;
    use proptest::prelude::*;

    /// A number as the kernel prints one, or not quite.
    fn number() -> impl Strategy<Value = String> {
        prop_oneof![
            any::<u64>().prop_map(|n| n.to_string()),
            any::<i64>().prop_map(|n| n.to_string()),
            (0u64..1000).prop_map(|n| n.to_string()),
            "[0-9a-z.+-]{0,5}",
        ]
    }

    /// Lines of `name value value ...` with names known to a parser or not.
    fn lines(names: &'static [&'static str], max_values: usize) -> impl Strategy<Value = String> {
        proptest::collection::vec(
            (
                prop_oneof![
                    proptest::sample::select(names).prop_map(String::from),
                    "\\PC{0,8}"
                ],
                proptest::collection::vec(number(), 0..max_values),
            )
                .prop_map(|(n, v)| format!("{n} {}", v.join(" "))),
            0..12,
        )
        .prop_map(|l| l.join("\n"))
    }

    fn texts() -> impl Strategy<Value = SnapshotTexts> {
        (
            lines(&VMSTAT_KEYS, 3),
            prop_oneof![
                "(?s).{0,80}",
                lines(&["MemTotal:", "MemFree:", "Dirty:", "Writeback:", "é"], 3)
            ],
            // diskstats: major minor name, then up to 17 counters
            proptest::collection::vec(
                (
                    number(),
                    number(),
                    "[a-z0-9]{1,6}",
                    proptest::collection::vec(number(), 0..18),
                )
                    .prop_map(|(a, b, n, v)| format!("{a} {b} {n} {}", v.join(" "))),
                0..4,
            )
            .prop_map(|l| l.join("\n")),
            lines(
                &["cpu", "cpu0", "ctxt", "procs_running", "procs_blocked"],
                11,
            ),
            (number(), number(), number(), number(), number())
                .prop_map(|(a, b, c, d, e)| format!("{a} {b} {c} {d}/{e} 1234")),
        )
            .prop_map(
                |(vmstat, meminfo, diskstats, stat, loadavg)| SnapshotTexts {
                    vmstat,
                    meminfo,
                    diskstats,
                    stat,
                    loadavg,
                },
            )
    }

    proptest! {
        #![proptest_config(config(256))]

        #[test]
        fn vmstat_of_any_text_never_panics(text in "(?s).{0,200}") {
            let _ = parse_vmstat(&text);
        }

        /// Every line `name number` is kept for the keys oslab uses; a negative
        /// counter (the kernel's per-cpu drift) reads as zero.
        #[test]
        fn vmstat_reads_back(values in proptest::collection::vec(any::<i64>(), VMSTAT_KEYS.len())) {
            let text: String = VMSTAT_KEYS
                .iter()
                .zip(&values)
                .map(|(k, v)| format!("{k} {v}\nunused_{k} 7\n"))
                .collect();
            let got = parse_vmstat(&text);
            for (k, v) in VMSTAT_KEYS.iter().zip(&values) {
                prop_assert_eq!(got.get(*k).copied(), Some((*v).max(0) as u64));
            }
            prop_assert_eq!(got.len(), VMSTAT_KEYS.len());
        }

        #[test]
        fn diskstats_of_any_text_never_panic(text in "(?s).{0,200}") {
            let _ = parse_diskstats(&text);
        }

        #[test]
        fn snapshots_and_records_of_any_texts_never_panic(
            a in texts(),
            b in texts(),
            t in any::<(u64, u64, u64)>(),
        ) {
            let s1 = snapshot_from(&a, t.0);
            let s2 = snapshot_from(&b, t.1);
            let _ = derive(&s1, &s2, t.2);
            let _ = derive(&s2, &s1, t.2);
        }
    }

    /// Regression (found by the property above): system + irq + softirq of a
    /// corrupt /proc/stat overflowed in `derive`.
    #[test]
    fn huge_cpu_counters_give_a_record() {
        let a = SnapshotTexts {
            stat: "cpu 0 0 4860404065893669988 0 0 13586340007815881628".into(),
            ..Default::default()
        };
        let r = derive(
            &snapshot_from(&SnapshotTexts::default(), 0),
            &snapshot_from(&a, 1),
            0,
        )
        .expect("time passed");
        assert!(r.cpu.system.is_finite());
    }
}
