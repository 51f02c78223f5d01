//! The policies as the governor (crates/wcall) runs them. Every `pass_ms` its
//! coordinator reads each group's dirty and write-back bytes (cachestat, exact at
//! that moment) and the writers active in the last `active_ms`, and asks
//! [`crate::policy::gates`] (the code the governor itself calls) for each group's
//! hold, limit and retry time; a group over its share under wcall-fair has its
//! files pushed (sync_file_range). Before each write the interposer waits while its
//! group is held or while the pass's figures plus the bytes written since would
//! take it over the limit, sleeping the retry time between looks. With `pass_ms`
//! 0 the policy decides at every write from the current state (the paper's
//! in-kernel version).

use super::{Ev, Sim};
use crate::config::MS;
use crate::policy::{self, Gate, GroupState, Policy};

/// What the last pass decided for each group (the governor's table).
#[derive(Debug, Default)]
pub(super) struct Governor {
    hold: Vec<bool>,
    /// u64::MAX: no limit.
    limit: Vec<u64>,
    limit_if_active: Vec<u64>,
    charged: Vec<u64>,
    pending: Vec<u64>,
    tasks: Vec<u64>,
    retry_ns: Vec<u64>,
}

impl Governor {
    pub(super) fn new(groups: usize) -> Governor {
        Governor {
            hold: vec![false; groups],
            limit: vec![u64::MAX; groups],
            limit_if_active: vec![u64::MAX; groups],
            charged: vec![0; groups],
            pending: vec![0; groups],
            tasks: vec![0; groups],
            retry_ns: vec![0; groups],
        }
    }
}

/// The limit a gate sets, u64::MAX for none (as the coordinator stores it).
fn limit_of(gate: &Gate) -> u64 {
    if gate.limit.unlimited || gate.limit.hard == u64::MAX {
        u64::MAX
    } else {
        gate.limit.hard
    }
}

impl<'a> Sim<'a> {
    fn pass_ns(&self) -> u64 {
        (self.cfg.governor.pass_ms * MS as f64) as u64
    }

    fn block_ns(&self) -> u64 {
        (self.cfg.wcall_block_ms * MS as f64) as u64
    }

    pub(super) fn start_governor(&mut self) {
        if self.cfg.policy != Policy::Vanilla && self.pass_ns() > 0 {
            self.push(0, Ev::GovernorPass);
        }
    }

    /// Each group's writers and page-cache bytes; active: seen writing within
    /// `active_ms` (the governor), or started and not finished (per write).
    fn group_states(&self, by_last_write: bool) -> Vec<GroupState> {
        let mut out = Vec::new();
        self.fill_group_states(by_last_write, &mut out);
        out
    }

    /// [`Self::group_states`] into `out` (reused: this runs before every write
    /// when the policy decides per write).
    fn fill_group_states(&self, by_last_write: bool, out: &mut Vec<GroupState>) {
        let active_ns = (self.cfg.governor.active_ms * MS as f64) as u64;
        out.clear();
        out.extend((0..self.groups.len()).map(|g| GroupState {
            tasks: 0,
            weight: policy::weight(&self.groups[g]),
            dirty: self.group_dirty[g],
            writeback: self.group_wb[g],
        }));
        for (i, w) in self.ws.iter().enumerate() {
            let active = if by_last_write {
                w.last_write
                    .is_some_and(|t| self.now.saturating_sub(t) <= active_ns)
            } else {
                w.started && !w.finished
            };
            if active {
                out[self.group_of_writer[i]].tasks += 1;
            }
        }
    }

    /// The kernel's limits as the policy divides them, with `hard` as the hard one.
    fn room(&self, hard: u64) -> policy::Room {
        policy::Room {
            bg: self.normal.bg,
            hard,
            freerun: self.normal.freerun(),
            ungoverned: 0,
            headroom: 0,
        }
    }

    fn gates_for(&self, states: &[GroupState], hard: u64) -> Vec<Gate> {
        policy::gates_in(self.cfg.policy, states, &self.room(hard), self.block_ns())
    }

    /// Starts write back of every dirty file of group `g` (sync_file_range).
    fn push_group(&mut self, g: usize) {
        for i in 0..self.inodes.len() {
            if self.inodes[i].group == g && self.inodes[i].dirty > 0 {
                let d = self.inodes[i].dirty;
                self.writepages(i, d);
            }
        }
    }

    /// One coordinator pass.
    pub(super) fn governor_pass(&mut self) {
        let states = self.group_states(true);
        let gates = self.gates_for(&states, self.normal.hard);
        for (g, gate) in gates.iter().enumerate() {
            let if_active = if states[g].tasks > 0 {
                limit_of(gate)
            } else {
                let mut with = states.clone();
                with[g].tasks = 1;
                limit_of(&self.gates_for(&with, self.normal.hard)[g])
            };
            let gov = &mut self.gov;
            gov.tasks[g] = states[g].tasks;
            gov.charged[g] = policy::charged(self.cfg.policy, &states[g]);
            gov.limit[g] = limit_of(gate);
            gov.limit_if_active[g] = if_active;
            gov.retry_ns[g] = gate.retry_ns;
            gov.hold[g] = gate.hold;
            gov.pending[g] = 0;
            if gate.push {
                self.push_group(g);
            }
        }
        if self.ws.iter().any(|w| !w.finished) {
            let at = self.now + self.pass_ns();
            self.push(at, Ev::GovernorPass);
        }
    }

    /// How long writer `w` must wait before it may write now, if at all.
    pub(super) fn gate_wait(&mut self, w: usize) -> Option<u64> {
        if self.cfg.policy == Policy::Vanilla {
            return None;
        }
        let g = self.group_of_writer[w];
        if self.pass_ns() == 0 {
            let mut states = std::mem::take(&mut self.states_buf);
            self.fill_group_states(false, &mut states);
            let room = self.room(self.limits_of(w).hard);
            let gate = policy::gate_in(self.cfg.policy, &states, &room, self.block_ns(), g);
            self.states_buf = states;
            if !gate.hold {
                return None;
            }
            if gate.push {
                self.push_group(g);
            }
            return Some(gate.retry_ns);
        }
        let n = self.bytes_of(w);
        let gov = &self.gov;
        let limit = if gov.tasks[g] == 0 {
            gov.limit_if_active[g]
        } else {
            gov.limit[g]
        };
        let used = gov.charged[g].saturating_add(gov.pending[g]);
        let exceeds = limit != u64::MAX && used > 0 && used.saturating_add(n) > limit;
        (gov.hold[g] || exceeds).then(|| gov.retry_ns[g].clamp(MS, 1000 * MS))
    }

    /// A governed write of `bytes` went through: counted until the next pass.
    pub(super) fn wrote(&mut self, w: usize, bytes: u64) {
        if self.cfg.policy != Policy::Vanilla {
            let g = self.group_of_writer[w];
            self.gov.pending[g] = self.gov.pending[g].saturating_add(bytes);
        }
    }
}
