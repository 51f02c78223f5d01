//! `cpu.ctxsw-ws`: what a switch costs once each side touches a working set
//! (material section 5, seed 002's working-set sweep).
//!
//! What: ns per handoff, minus the time to write the working set alone, against W,
//! the bytes each side writes between handoffs, for three placements: both tasks on
//! one CPU, on two CPUs (the first pair class `cpu.ctxsw` finds), and unpinned.
//!
//! Method: two processes ping-pong on a futex as in `cpu.ctxsw`; between handoffs
//! each side writes the whole of a W-byte working set that both map (a shared
//! anonymous mapping, not System V memory). The time one side needs to write W bytes
//! with no switching, pinned like the placement and warm, is measured first and
//! subtracted, as the article does, so what remains is the switch plus the cache and
//! TLB misses the switch causes. W runs from 0 doubling (x4 in quick mode) up to
//! `max_ws`; the round trips per batch are chosen from the write time so a batch
//! lasts about 20 ms (quick) or 60 ms (full).
//!
//! The claim: past about half of L2 the cost rises sharply, and pinning keeps it far
//! lower. The rise is the first W whose cost exceeds 1.5x the cost at W = 0 and
//! stays above at the next size; it must lie between L2/4 and 2x L2 (sysfs's L2).
//! When the sweep shows no rise it is judged only if it reached 2x L2 (the cost at
//! the largest size over the cost at W = 0 must then exceed 1.5x, which it does
//! not), and is not judged otherwise. "Far lower" is the pinned cost below half the
//! two-CPU placement's at the largest size. The two-CPU placement, not the unpinned
//! one, is the comparison: unpinned batches fall into two modes when the scheduler
//! moves the tasks between one and two CPUs (see `cpu.ctxsw`), and such a curve is
//! a mix of placements; a note names the sizes where that happened.
//!
//! Pitfalls: both sides write the same shared lines, so on two CPUs every handoff
//! also moves them between the CPUs' caches; the subtracted write time is measured
//! pinned and warm, so a placement that migrates pays more than the subtraction
//! removes; sysfs may describe a host-sized last-level cache to a guest, so the
//! full-mode default stops at twice the last level or 64 MiB, whichever is less.
//!
//! References: futex(2), sched_setaffinity(2), mmap(2) (MAP_SHARED|MAP_ANONYMOUS);
//! Li, Ding, Shen 2007, "Quantifying the cost of context switch"; material section 5
//! (../shared/spec/material.md); docs/ctxsw.md.

mod judge;
mod measure;
#[cfg(test)]
mod tests;

use oslab_model::Environment;
use oslab_model::machine::MachineInfo;
use serde::{Deserialize, Serialize};

use crate::cpu::ctxsw::{CellRaw, Placement, placements};
use crate::settings::{AnySetting, Bytes, Declared, Setting};
use oslab_harness::{Context, LabError, Meta, Needs, Output};
use oslab_harness::{Experiment, Measured, Planner};

pub use judge::rise_point;

pub struct CtxswWs;

static META: Meta = Meta {
    id: "cpu.ctxsw-ws",
    title: "Context switches with a working set: the cost of the caches a switch loses",
    section: "5",
    summary: "ns per switch vs bytes each side writes between switches, write time subtracted, pinned vs not",
    needs: Needs {
        root: false,
        min_cpus: 1,
        free_disk_bytes: 0,
    },
    quick_s: 8.0,
    full_s: 90.0,
    internal: false,
    full_lab_only: false,
};

static MAX_WS: Setting<Bytes> = Setting {
    name: "max_ws",
    help: "largest working set (full mode by default: twice the last-level cache, at most 64MiB)",
    quick: 4 << 20,
    full: DEFAULT_CAP,
    bounds: Some((4096, 1 << 30)),
    names: &[],
};
static SETTINGS: [&dyn AnySetting; 1] = [&MAX_WS];

/// The largest working set swept when none is given: twice the last-level cache,
/// capped so one point stays under a few seconds (sysfs may report a host-sized L3).
pub const DEFAULT_CAP: u64 = 64 << 20;

pub fn last_level_bytes(m: &MachineInfo) -> Option<u64> {
    m.caches.last_level().and_then(|l| l.size_bytes)
}

/// 0, then `first` doubling (or x4 when `coarse`) up to `max`.
pub fn sizes(first: u64, max: u64, coarse: bool) -> Vec<u64> {
    let mut out = vec![0];
    let mut w = first.max(1);
    while w <= max {
        out.push(w);
        w *= if coarse { 4 } else { 2 };
    }
    out
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Plan {
    /// The largest working set, bytes.
    pub max_ws: u64,
    /// Batches per point (one sample each).
    pub samples: usize,
    /// Working-set sizes swept, bytes, from 0.
    pub sizes: Vec<u64>,
    /// One CPU, two CPUs (when there are two), unpinned.
    pub placements: Vec<Placement>,
    /// About how long a batch lasts, ns.
    pub target_batch_ns: f64,
}

/// One placement at one working-set size.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PointRaw {
    /// Bytes each side writes between handoffs.
    pub ws: u64,
    /// ns for one side to write `ws` bytes alone, pinned like the placement, warm.
    pub write_only_ns: Vec<f64>,
    /// The ping-pong: one launch, processes on a futex.
    pub cell: CellRaw,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Raw {
    pub points: Vec<PointRaw>,
}

impl Experiment for CtxswWs {
    type Plan = Plan;
    type Raw = Raw;

    fn meta(&self) -> &Meta {
        &META
    }
    fn headline(&self) -> &'static str {
        "ns.same-cpu.0"
    }

    fn settings(&self) -> Declared {
        &SETTINGS
    }

    fn plan(&self, p: &mut Planner) -> Plan {
        let quick = p.quick();
        let default_max = last_level_bytes(p.machine)
            .map(|b| (2 * b).min(DEFAULT_CAP))
            .unwrap_or(DEFAULT_CAP);
        let max_ws = match p.get(&MAX_WS) {
            // the full default depends on this machine's cache
            v if !quick && v == DEFAULT_CAP => default_max,
            v => v,
        };
        // one placement of each kind: one CPU, two CPUs (the first pair class), unpinned
        let all = placements(p.machine);
        let mut places: Vec<Placement> = all.first().cloned().into_iter().collect();
        places.extend(
            all.iter()
                .find(|p| p.name.starts_with("cross-cpu"))
                .cloned(),
        );
        places.extend(all.iter().find(|p| p.name == "unpinned").cloned());
        Plan {
            max_ws,
            samples: p.samples(5, 7),
            sizes: sizes(if quick { 4096 } else { 1024 }, max_ws, quick),
            placements: places,
            target_batch_ns: if quick { 20e6 } else { 60e6 },
        }
    }

    fn measure(&self, plan: &Plan, ctx: &mut Context) -> Result<Measured<Raw>, LabError> {
        measure::measure(plan, ctx)
    }

    fn judge(&self, plan: &Plan, raw: &Raw, env: &Environment) -> Output {
        judge::judge(plan, raw, env)
    }
}
