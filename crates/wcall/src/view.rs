//! A snapshot of the board for `oslab wcall status` and for results (the types
//! are the result model's, `oslab_model::governor`).
//!
//! The board is written by the coordinator alone, with each process's counters
//! already bounded by the kernel's (`crate::roster`); sums still saturate and
//! group numbers out of range count as the lowest group.

use std::sync::atomic::Ordering;

use oslab_model::governor::{GroupView, ProcView, Snapshot};

use crate::shm::{Board, GROUP_NAMES, GROUPS, MemberSlot, group_index};

/// The picture of a board, taking the coordinator's pid from the board itself.
pub fn snapshot(t: &Board, now_ns: u64) -> Snapshot {
    snapshot_of(t, now_ns, t.header.coordinator_pid.load(Ordering::Relaxed))
}

/// The picture of the board of the coordinator `coordinator_pid` (as the kernel
/// named it: the peer of the socket, or this process).
pub fn snapshot_of(t: &Board, now_ns: u64, coordinator_pid: u32) -> Snapshot {
    let h = &t.header;
    let mut groups = group_views(t);
    let kernel = h.monitor.load(Ordering::Relaxed) == crate::shm::board::MONITOR_KERNEL;
    let mut processes = Vec::new();
    let groups_at = crate::trust::valid_pid(coordinator_pid)
        .and_then(|pid| crate::cgroups::hierarchy_path_of(&oslab_sys::fsread::Root::live(), pid));
    for p in &t.members {
        let pid = p.pid.load(Ordering::Acquire);
        if pid == 0 {
            continue;
        }
        let g = group_index(p.group.load(Ordering::Relaxed));
        processes.push(proc_view(p, pid, g, kernel, groups_at.as_deref()));
        let v = &mut groups[g];
        v.processes += 1;
        v.held_ms += p.held_ns.load(Ordering::Relaxed) as f64 / 1e6;
        add(&mut v.delayed_writes, &p.delayed_writes);
        add(&mut v.writes, &p.writes);
        add(&mut v.bytes, &p.bytes);
        add(&mut v.passed_through, &p.passed_through);
        add(&mut v.mmap_writable, &p.mmap_writable);
    }
    let passes = h.passes.load(Ordering::Relaxed);
    add_memcg_usage(&mut groups, coordinator_pid);
    Snapshot {
        policy: crate::coordinator::policy_of(h.policy.load(Ordering::Relaxed))
            .name()
            .into(),
        coordinator_pid,
        coordinator_alive: t.coordinator_alive(now_ns, crate::MAX_SILENCE_NS),
        passes,
        pass_mean_us: h.pass_ns_total.load(Ordering::Relaxed) as f64 / passes.max(1) as f64 / 1e3,
        pass_max_us: h.pass_ns_max.load(Ordering::Relaxed) as f64 / 1e3,
        global_dirty_bytes: h.global_dirty.load(Ordering::Relaxed),
        global_writeback_bytes: h.global_writeback.load(Ordering::Relaxed),
        bg_thresh_bytes: h.bg_thresh.load(Ordering::Relaxed),
        thresh_bytes: h.thresh.load(Ordering::Relaxed),
        freerun_bytes: h.freerun.load(Ordering::Relaxed),
        refused_entries: h.refused.load(Ordering::Relaxed),
        monitor: if kernel { "kernel" } else { "cachestat" }.into(),
        ungoverned_bytes: h.ungoverned_bytes.load(Ordering::Relaxed),
        headroom_bytes: h.headroom_bytes.load(Ordering::Relaxed),
        cpu_percent: {
            let wall = now_ns.saturating_sub(h.started_ns.load(Ordering::Relaxed));
            if wall > 0 {
                (h.cpu_ns.load(Ordering::Relaxed) as f64 / wall as f64 * 100.0).min(100.0)
            } else {
                0.0
            }
        },
        kernel_lost: h.kernel_lost.load(Ordering::Relaxed),
        guard: guard_view(h, now_ns),
        groups,
        processes,
    }
}

/// The sync guard as the board says (also read alone, every 100 ms, by
/// wb.database to keep the governor's choices over a cell).
pub fn guard_view(h: &crate::shm::board::Header, now_ns: u64) -> oslab_model::governor::GuardView {
    let ago = |ns: u64| (ns > 0).then(|| now_ns.saturating_sub(ns) as f64 / 1e9);
    let bytes = h.guard_bytes.load(Ordering::Relaxed);
    let setting = h.guard_setting.load(Ordering::Relaxed);
    let acting = bytes > 0
        && (setting == crate::shm::GUARD_FIXED || h.guard_since_ns.load(Ordering::Relaxed) > 0);
    let pid = h.guard_pid.load(Ordering::Relaxed);
    let bw = h.guard_bandwidth.load(Ordering::Relaxed);
    oslab_model::governor::GuardView {
        setting: match setting {
            crate::shm::GUARD_AUTO => "auto",
            crate::shm::GUARD_FIXED => "fixed",
            _ => "off",
        }
        .into(),
        acting_bytes: acting.then_some(bytes),
        acting_s: ago(h.guard_since_ns.load(Ordering::Relaxed)),
        last_durable_s: ago(h.guard_durable_ns.load(Ordering::Relaxed)),
        durable_pid: (pid > 0).then_some(pid),
        quiet_s: h.guard_quiet_ns.load(Ordering::Relaxed) as f64 / 1e9,
        bandwidth_bytes_s: (bw > 0).then_some(bw),
    }
}

/// Adds `x` to `sum`, saturating.
fn add(sum: &mut u64, x: &std::sync::atomic::AtomicU64) {
    *sum = sum.saturating_add(x.load(Ordering::Relaxed));
}

/// Each group's figures from the board, with what its departed processes left.
fn group_views(t: &Board) -> Vec<GroupView> {
    let mut groups: Vec<GroupView> = (0..GROUPS)
        .map(|g| {
            let s = &t.groups[g];
            let limit = s.limit_bytes.load(Ordering::Relaxed);
            GroupView {
                group: GROUP_NAMES[g].into(),
                tasks: s.tasks.load(Ordering::Relaxed),
                dirty_bytes: s.dirty_bytes.load(Ordering::Relaxed),
                writeback_bytes: s.writeback_bytes.load(Ordering::Relaxed),
                share: s.share_ppm.load(Ordering::Relaxed) as f64 / 1e6,
                limit_bytes: (limit != u64::MAX).then_some(limit),
                held: s.hold.load(Ordering::Relaxed) != 0,
                pushes: s.pushes.load(Ordering::Relaxed),
                ..GroupView::default()
            }
        })
        .collect();
    for (v, g) in groups.iter_mut().zip(&t.groups) {
        let r = &g.retired;
        v.held_ms += r.held_ns.load(Ordering::Relaxed) as f64 / 1e6;
        add(&mut v.delayed_writes, &r.delayed_writes);
        add(&mut v.writes, &r.writes);
        add(&mut v.bytes, &r.bytes);
        add(&mut v.passed_through, &r.passed_through);
        add(&mut v.mmap_writable, &r.mmap_writable);
    }
    groups
}

/// The kernel's count for each group's memory cgroup, where the coordinator placed
/// its processes in one.
fn add_memcg_usage(groups: &mut [GroupView], coordinator_pid: u32) {
    if let Some(pid) = crate::trust::valid_pid(coordinator_pid)
        && let Some(usage) = crate::cgroups::usage_of(&oslab_sys::fsread::Root::live(), pid)
    {
        for (v, u) in groups.iter_mut().zip(usage) {
            v.memcg_dirty_bytes = Some(u.dirty);
            v.memcg_writeback_bytes = Some(u.writeback);
            v.memory_high_bytes = u.memory_high;
            v.io_weight = u.io_weight;
        }
    }
}

/// The systemd service `pid` runs in, read as its exe is (never waited for);
/// none in the governor's own group cgroups (`groups_at`).
fn service_of(pid: u32, groups_at: Option<&str>) -> Option<String> {
    let pid = crate::trust::valid_pid(pid)?;
    let file = format!("/proc/{pid}/cgroup");
    let text = crate::slowproc::read_of(pid, crate::slowproc::DEADLINE, move || {
        std::fs::read_to_string(file).ok()
    })
    .flatten()?;
    let path = crate::services::manager_path(&text)?;
    crate::services::service_outside(path, groups_at).map(str::to_string)
}

fn proc_view(
    p: &MemberSlot,
    pid: u32,
    g: usize,
    kernel: bool,
    groups_at: Option<&str>,
) -> ProcView {
    let bytes = p.bytes.load(Ordering::Relaxed);
    let dirtied = kernel.then(|| p.kernel_dirtied.load(Ordering::Relaxed));
    ProcView {
        pid,
        uid: p.uid.load(Ordering::Relaxed),
        group: GROUP_NAMES[g].into(),
        // the link waits on the process's exec (crate::slowproc): a process
        // held in one is shown without its program, never waited for
        exe: crate::trust::valid_pid(pid)
            .and_then(|pid| {
                let link = format!("/proc/{pid}/exe");
                crate::slowproc::read_of(pid, crate::slowproc::DEADLINE, move || {
                    std::fs::read_link(link).ok()
                })
                .flatten()
            })
            .map(|e| e.display().to_string()),
        service: service_of(pid, groups_at),
        holdable: p.holdable.load(Ordering::Relaxed) != 0,
        writes: p.writes.load(Ordering::Relaxed),
        bytes,
        delayed_writes: p.delayed_writes.load(Ordering::Relaxed),
        held_ms: p.held_ns.load(Ordering::Relaxed) as f64 / 1e6,
        kernel_dirtied_bytes: dirtied,
        unheld_files: p.unheld_files.load(Ordering::Relaxed),
        pushes: p.pushes.load(Ordering::Relaxed),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::shm::BoardMap;

    #[test]
    fn figures_at_the_top_of_their_range_do_not_break_the_picture() {
        let b = BoardMap::create("test", 2).unwrap();
        let t = b.board();
        for (i, group) in [(0, 77), (1, u32::MAX), (2, crate::shm::AUTO)] {
            let p = &t.members[i];
            p.pid.store(1000 + i as u32, Ordering::Relaxed);
            p.group.store(group, Ordering::Relaxed);
            for c in [
                &p.writes,
                &p.bytes,
                &p.delayed_writes,
                &p.passed_through,
                &p.mmap_writable,
            ] {
                c.store(u64::MAX, Ordering::Relaxed);
            }
            p.held_ns.store(u64::MAX, Ordering::Relaxed);
        }
        t.header.policy.store(u32::MAX, Ordering::Relaxed);
        let s = snapshot_of(t, 0, u32::MAX);
        let normal = &s.groups[crate::shm::NORMAL as usize];
        assert_eq!(normal.processes, 3);
        assert_eq!(normal.writes, u64::MAX, "saturated, not wrapped");
        assert_eq!(normal.bytes, u64::MAX);
        assert_eq!(
            s.groups[0].writes, 0,
            "nothing out of range lands in rt-high"
        );
        assert_eq!(s.policy, "vanilla");
        assert!(s.groups.iter().all(|g| g.memcg_dirty_bytes.is_none()));
    }
}
