//! Which process slots of the table hold governed processes, as the kernel
//! confirms them (`crate::trust`, `crate::family`): each pid is checked once and
//! then held by its pidfd; an exited process gives its slot back.

use std::sync::atomic::Ordering;

use crate::cgroups::GroupCgroups;
use crate::shm::{GROUPS, MAX_PROCS, Table, group_index};
use crate::trust::{Budget, Member, Refusal, process_exists};

/// What the coordinator knows of the process in one slot of the table.
#[derive(Debug)]
enum Known {
    /// Not checked yet.
    Unknown,
    /// Shown to be governed.
    Member(Member),
    /// This pid was refused (or is gone); not checked again while the slot holds it.
    Refused(u32),
}

/// A governed process found in a pass.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Row {
    pub slot: usize,
    pub pid: u32,
    pub group: usize,
    /// It runs the interposer (its write() calls can be held).
    pub holdable: bool,
    pub last_write_ns: u64,
}

pub struct Members {
    known: Vec<Known>,
    /// The pid placed in a cgroup from each slot, so each is moved once.
    placed: Vec<u32>,
}

impl Default for Members {
    fn default() -> Self {
        Members {
            known: (0..MAX_PROCS).map(|_| Known::Unknown).collect(),
            placed: vec![0; MAX_PROCS],
        }
    }
}

impl Members {
    /// One pass over the process slots: exited processes retired, new ones
    /// checked, governed ones placed in their group's cgroup. `refused` counts
    /// each entry the kernel did not confirm.
    pub fn pass(
        &mut self,
        t: &Table,
        table_id: (u64, u64),
        budget: &mut Budget,
        cgroups: Option<&GroupCgroups>,
        refused: &dyn Fn(),
    ) -> Vec<Row> {
        let mut rows = Vec::new();
        for (i, p) in t.procs.iter().enumerate() {
            let pid = p.pid.load(Ordering::Acquire);
            if pid == 0 {
                continue;
            }
            if !process_exists(pid) {
                t.retire(i);
                self.known[i] = Known::Unknown;
                continue;
            }
            if self.member(t, i, pid, table_id, budget, refused).is_none() {
                continue;
            }
            let g = group_index(p.group.load(Ordering::Relaxed));
            if let Some(cg) = cgroups
                && self.placed[i] != pid
            {
                cg.place(pid, g);
                self.placed[i] = pid;
            }
            rows.push(Row {
                slot: i,
                pid,
                group: g,
                holdable: p.holdable.load(Ordering::Relaxed) != 0,
                last_write_ns: p.last_write_ns.load(Ordering::Relaxed),
            });
        }
        rows
    }

    fn member(
        &mut self,
        t: &Table,
        i: usize,
        pid: u32,
        table_id: (u64, u64),
        budget: &mut Budget,
        refused: &dyn Fn(),
    ) -> Option<&Member> {
        let fresh = match &self.known[i] {
            Known::Member(m) if m.pid == pid => {
                if !m.alive() {
                    self.known[i] = Known::Refused(pid);
                    return None;
                }
                false
            }
            Known::Refused(p) if *p == pid => return None,
            _ => true,
        };
        if fresh {
            let p = &t.procs[i];
            let checked = if p.holdable.load(Ordering::Relaxed) != 0 {
                crate::trust::verify_member(pid, table_id, budget)
            } else {
                // the launcher need not have a slot of its own: it maps the table
                let launcher = p.launcher.load(Ordering::Relaxed);
                crate::trust::verify_member(launcher, table_id, budget)
                    .and_then(|l| crate::family::verify_launched(pid, &l, budget))
            };
            self.known[i] = match checked {
                Ok(m) => Known::Member(m),
                Err(Refusal::Later) => Known::Unknown,
                Err(Refusal::Gone) => Known::Refused(pid),
                Err(Refusal::No(_)) => {
                    refused();
                    Known::Refused(pid)
                }
            };
        }
        match &self.known[i] {
            Known::Member(m) => Some(m),
            _ => None,
        }
    }

    /// The governed process `pid`, from any slot: Later while some slot with that
    /// pid waits to be checked.
    pub fn by_pid(&self, t: &Table, pid: u32) -> Result<&Member, Refusal> {
        let mut waiting = false;
        for (i, k) in self.known.iter().enumerate() {
            match k {
                Known::Member(m) if m.pid == pid => return Ok(m),
                Known::Unknown if pid != 0 && t.procs[i].pid.load(Ordering::Relaxed) == pid => {
                    waiting = true
                }
                _ => {}
            }
        }
        Err(if waiting {
            Refusal::Later
        } else {
            Refusal::No("the process is not a governed one")
        })
    }
}

/// Per group: governed processes alive, and those that wrote within `active_ns`.
pub fn counts(rows: &[Row], now: u64, active_ns: u64) -> ([u32; GROUPS], [u64; GROUPS]) {
    let mut members = [0u32; GROUPS];
    let mut tasks = [0u64; GROUPS];
    for r in rows {
        members[r.group] += 1;
        if r.last_write_ns > 0 && now.saturating_sub(r.last_write_ns) <= active_ns {
            tasks[r.group] += 1;
        }
    }
    (members, tasks)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn members_count_when_registered_and_tasks_when_writing() {
        let row = |group, last| Row {
            slot: 0,
            pid: 1,
            group,
            holdable: true,
            last_write_ns: last,
        };
        let rows = [row(0, 0), row(1, 950), row(1, 100), row(2, 990)];
        let (m, t) = counts(&rows, 1000, 100);
        assert_eq!(m, [1, 2, 1]);
        // registered but not writing yet, and a writer quiet too long: no task
        assert_eq!(t, [0, 1, 1]);
    }
}
