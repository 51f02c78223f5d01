//! One interval of `oslab stalls`, summarised from the records: the slow writes
//! by cause, where blocked ones waited, who dirtied pages (per process and per
//! cgroup, with their scheduling class), what the flusher did and why, the
//! device's bandwidth estimate and the throttling state. Pure: the caller names
//! processes and cgroups.

use std::collections::{BTreeMap, HashMap};

use oslab_model::trace::{
    Bandwidth, CgroupRow, DirtierRow, IntervalSummary, StallLine, Throttling,
};

use crate::analysis::{
    blocker, blockers, flusher_table, jiffies_ns, latest_bandwidth, main_cause, read_wait,
    stall_table,
};
use crate::records::{Dirtier, FlushPass, OffCpu, Pause, WriteCall, class_label};

/// What the caller knows of a process.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ProcessInfo {
    pub comm: String,
    pub cgroup: String,
}

/// The records of one interval.
pub struct Interval<'a> {
    pub start_ns: u64,
    pub end_ns: u64,
    pub writes: &'a [WriteCall],
    pub offcpu: &'a [OffCpu],
    pub pauses: &'a [Pause],
    pub bandwidth: &'a [Bandwidth],
    pub flushes: &'a [FlushPass],
    pub lost: u64,
    pub hz: u32,
    pub page_size: u64,
}

/// Pages dirtied per process since the previous snapshot (`before`, tgid to
/// pages), largest first; a process seen for the first time counts whole.
pub fn dirtied_since(before: &HashMap<u32, u64>, now: &[Dirtier]) -> Vec<(Dirtier, u64)> {
    let mut out: Vec<(Dirtier, u64)> = now
        .iter()
        .map(|d| {
            let delta = d
                .pages
                .saturating_sub(before.get(&d.tgid).copied().unwrap_or(0));
            (d.clone(), delta)
        })
        .filter(|(_, delta)| *delta > 0)
        .collect();
    out.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.tgid.cmp(&b.0.tgid)));
    out
}

/// The blocked stretches of call `w`.
fn own_stretches<'a>(w: &'a WriteCall, offcpu: &'a [OffCpu]) -> impl Iterator<Item = &'a OffCpu> {
    offcpu
        .iter()
        .filter(|o| o.pid == w.pid && o.start_ns >= w.start_ns && o.start_ns < w.end_ns())
}

/// The stall lines of an interval, with where blocked stretches waited;
/// `file` names each call's file.
pub fn stall_lines(
    writes: &[WriteCall],
    offcpu: &[OffCpu],
    info: &dyn Fn(u32) -> ProcessInfo,
    file: &dyn Fn(&WriteCall) -> String,
) -> Vec<StallLine> {
    writes
        .iter()
        .map(|w| {
            let who = info(w.tgid);
            (w, who)
        })
        .map(|(w, who)| StallLine {
            tgid: w.tgid,
            pid: w.pid,
            comm: if who.comm.is_empty() {
                w.comm.clone()
            } else {
                who.comm
            },
            cgroup: who.cgroup,
            call: w.call.clone(),
            fd: w.fd,
            file: file(w),
            bytes: w.count,
            start_ns: w.start_ns,
            dur_ns: w.dur_ns,
            main_cause: main_cause(w),
            throttle_ns: w.throttle_ns,
            wbwait_ns: w.wbwait_ns,
            blocked_ns: w.blocked_ns,
            runq_ns: w.runq_ns,
            on_cpu_ns: w.on_cpu_ns(),
            pauses: w.pauses,
            blocked_in: own_stretches(w, offcpu)
                .map(|o| blocker(&o.stack))
                .collect(),
            read_wait: own_stretches(w, offcpu)
                .max_by_key(|o| o.dur_ns)
                .and_then(|o| read_wait(&o.stack))
                .map(String::from),
            queued_write_bytes: w.queued_write_bytes,
            queued_read_bytes: w.queued_read_bytes,
            writers_there: Vec::new(),
        })
        .collect()
}

pub fn summarize(
    iv: &Interval<'_>,
    dirtied: &[(Dirtier, u64)],
    info: &dyn Fn(u32) -> ProcessInfo,
    top: usize,
) -> IntervalSummary {
    let writes: Vec<&WriteCall> = iv.writes.iter().collect();
    let mut durs: Vec<u64> = writes.iter().map(|w| w.dur_ns).collect();
    durs.sort_unstable();
    let p99 = if durs.is_empty() {
        0
    } else {
        let sorted: Vec<f64> = durs.iter().map(|&d| d as f64).collect();
        oslab_stats::describe::quantile_sorted(&sorted, 0.99).map_or(0, |x| x.round() as u64)
    };
    let offcpu: Vec<&OffCpu> = iv.offcpu.iter().collect();
    let flushes: Vec<&FlushPass> = iv.flushes.iter().collect();
    let bw: Vec<&Bandwidth> = iv.bandwidth.iter().collect();

    let rows: Vec<DirtierRow> = dirtied
        .iter()
        .map(|(d, delta)| {
            let who = info(d.tgid);
            DirtierRow {
                tgid: d.tgid,
                comm: if who.comm.is_empty() {
                    d.comm.clone()
                } else {
                    who.comm
                },
                class: class_label(d.policy, d.prio),
                cgroup: who.cgroup,
                bytes: delta * iv.page_size,
                total_bytes: d.pages * iv.page_size,
            }
        })
        .collect();
    let mut by_cgroup: BTreeMap<String, CgroupRow> = BTreeMap::new();
    for r in &rows {
        let row = by_cgroup.entry(r.cgroup.clone()).or_insert(CgroupRow {
            cgroup: r.cgroup.clone(),
            bytes: 0,
            processes: 0,
        });
        row.bytes += r.bytes;
        row.processes += 1;
    }
    let mut cgroups: Vec<CgroupRow> = by_cgroup.into_values().collect();
    cgroups.sort_by(|a, b| b.bytes.cmp(&a.bytes).then(a.cgroup.cmp(&b.cgroup)));

    IntervalSummary {
        end_ns: iv.end_ns,
        seconds: iv.end_ns.saturating_sub(iv.start_ns) as f64 / 1e9,
        stalls: writes.len(),
        by_call: writes.iter().fold(BTreeMap::new(), |mut m, w| {
            *m.entry(w.call.clone()).or_insert(0) += 1;
            m
        }),
        stall_ns: durs.iter().sum(),
        p99_ns: p99,
        max_ns: durs.last().copied().unwrap_or(0),
        causes: stall_table(&writes),
        blocked_in: blockers(&offcpu).into_iter().take(top).collect(),
        dirtiers: rows.into_iter().take(top).collect(),
        cgroups: cgroups.into_iter().take(top).collect(),
        flusher: flusher_table(&flushes),
        bandwidth: latest_bandwidth(&bw),
        throttling: throttling(iv.pauses, iv.hz),
        lost: iv.lost,
    }
}

fn throttling(pauses: &[Pause], hz: u32) -> Option<Throttling> {
    let last = pauses.iter().max_by_key(|p| p.ts_ns)?;
    let slept: Vec<&Pause> = pauses.iter().filter(|p| p.pause_jiffies > 0).collect();
    Some(Throttling {
        decisions: pauses.len(),
        pauses: slept.len(),
        max_pause_ns: slept
            .iter()
            .map(|p| jiffies_ns(p.pause_jiffies, hz))
            .max()
            .unwrap_or(0),
        dirty_pages: last.dirty,
        thresh_pages: last.thresh,
        bg_thresh_pages: last.bg_thresh,
        setpoint_pages: last.setpoint(),
        dirty_ratelimit: last.dirty_ratelimit,
        min_task_ratelimit: pauses.iter().map(|p| p.task_ratelimit).min().unwrap_or(0),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use oslab_model::trace::{Cause, FlushReason};

    fn write(pid: u32, start: u64, dur: u64, throttle: u64) -> WriteCall {
        WriteCall {
            pid,
            tgid: pid,
            call: "write".into(),
            fd: 3,
            count: 524288,
            ret: 524288,
            start_ns: start,
            dur_ns: dur,
            throttle_ns: throttle,
            wbwait_ns: 0,
            blocked_ns: dur - throttle,
            runq_ns: 0,
            pauses: 1,
            prio: 44,
            ..WriteCall::default()
        }
    }

    fn dirtier(tgid: u32, pages: u64, policy: u32, prio: i32) -> Dirtier {
        Dirtier {
            tgid,
            comm: format!("w{tgid}"),
            pages,
            first_ns: 0,
            last_ns: 0,
            cgroup_id: 0,
            policy,
            prio,
            rt_priority: 0,
            memcg_id: 0,
            flushes: 0,
        }
    }

    #[test]
    fn dirtied_pages_count_since_the_last_look() {
        let before: HashMap<u32, u64> = [(1, 100), (2, 50)].into_iter().collect();
        let now = [
            dirtier(1, 150, 0, 120),
            dirtier(2, 50, 0, 120),
            dirtier(3, 10, 1, 44),
        ];
        let d = dirtied_since(&before, &now);
        assert_eq!(
            d.iter().map(|(d, n)| (d.tgid, *n)).collect::<Vec<_>>(),
            vec![(1, 50), (3, 10)]
        );
    }

    #[test]
    fn an_interval_names_dirtiers_with_class_and_cgroup_and_sums_cgroups() {
        let writes = [write(7, 1_000, 40_000_000, 38_000_000)];
        let offcpu = [OffCpu {
            pid: 7,
            tgid: 7,
            call: "write".into(),
            start_ns: 2_000,
            dur_ns: 2_000_000,
            stack: vec![
                "schedule".into(),
                "jbd2_log_wait_commit".into(),
                "ext4_sync_file".into(),
            ],
        }];
        let flushes = [FlushPass {
            start_ns: 0,
            end_ns: 10,
            bdi_id: 1,
            bdi: "7:0".into(),
            reason: FlushReason::Background,
            pages: 256,
            avg_write_bw: 0,
            write_bw: 0,
            dirty_ratelimit: 0,
        }];
        let iv = Interval {
            start_ns: 0,
            end_ns: 1_000_000_000,
            writes: &writes,
            offcpu: &offcpu,
            pauses: &[],
            bandwidth: &[],
            flushes: &flushes,
            lost: 0,
            hz: 250,
            page_size: 4096,
        };
        let dirtied = vec![
            (dirtier(7, 300, 1, 44), 256),
            (dirtier(8, 100, 0, 120), 100),
        ];
        let info = |tgid: u32| ProcessInfo {
            comm: String::new(),
            cgroup: if tgid == 7 {
                "/rt".into()
            } else {
                "/bulk".into()
            },
        };
        let s = summarize(&iv, &dirtied, &info, 5);
        assert_eq!((s.stalls, s.max_ns, s.seconds), (1, 40_000_000, 1.0));
        assert_eq!(s.dirtiers[0].class, "FIFO 55");
        assert_eq!(s.dirtiers[0].comm, "w7");
        assert_eq!(s.dirtiers[0].bytes, 256 * 4096);
        assert_eq!(s.dirtiers[0].total_bytes, 300 * 4096);
        assert_eq!(s.cgroups[0].cgroup, "/rt");
        assert_eq!(
            s.blocked_in[0].place,
            "jbd2_log_wait_commit <- ext4_sync_file"
        );
        assert_eq!(s.flusher[0].pages, 256);
        assert!(s.throttling.is_none());
        let lines = stall_lines(&writes, &offcpu, &info, &|w| format!("fd {}", w.fd));
        assert_eq!(
            (lines[0].file.as_str(), lines[0].cgroup.as_str()),
            ("fd 3", "/rt")
        );
        assert_eq!(lines[0].main_cause, Cause::DirtyThrottle);
        assert_eq!(
            lines[0].blocked_in,
            vec!["jbd2_log_wait_commit <- ext4_sync_file"]
        );
    }
}
