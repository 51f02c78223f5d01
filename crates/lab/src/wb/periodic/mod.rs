//! `wb.periodic`: Dirty drops to ~0 every expire + (up to) one writeback interval.
//!
//! What: with the dirty limits far away, only the periodic flusher writes: it wakes
//! every dirty_writeback_centisecs and writes the inodes dirtied longer ago than
//! dirty_expire_centisecs, so a steady writer's Dirty climbs for
//! writeback x ceil(expire / writeback) seconds and drops to ~0.
//!
//! Method, rules and pitfalls: see [`oslab_services::sawtooth`] (shared with wb.background).
//! The background and hard limits are set to twice what the writer can write in the
//! run plus 256 MiB (and twice that), so they never trigger; the kernel's limits
//! while writing are read back to show it. The flusher wakes an interval after its
//! previous pass ended, not on a fixed grid, so the period may exceed the
//! prediction by the length of a pass; and a file dirtied again right after a pass
//! can expire just after a wake-up, a whole interval late. A quick run takes expire
//! 6 s and interval 3 s, two whole periods in 14 s; the full run the book's 10 s
//! and 5 s.
//!
//! References: Documentation/admin-guide/sysctl/vm.rst (dirty_expire_centisecs,
//! dirty_writeback_centisecs), fs/fs-writeback.c (wb_check_old_data_flush,
//! wb_writeback with for_kupdate); material section 4, seed 001, experiment B
//! (../shared/spec/material.md); ../shared/spec/writeback-kernel.md.

mod claims;
mod judge;
mod measure;
#[cfg(test)]
mod tests;

use oslab_model::Environment;
use serde::{Deserialize, Serialize};

use crate::settings::{AnySetting, Declared, Seconds, Setting};
use oslab_harness::{Context, LabError, Meta, Needs, Output};
use oslab_harness::{Experiment, Measured, Planner};
use oslab_services::sawtooth::{self, SawRaw};

pub struct Periodic;

static META: Meta = Meta {
    id: "wb.periodic",
    title: "Periodic write back: Dirty drops to ~0 every expire + (up to) one interval",
    section: "4",
    summary: "limits far away, expire and writeback intervals set, a steady writer: peaks and period vs prediction",
    needs: Needs {
        root: true,
        min_cpus: 1,
        free_disk_bytes: 0,
    },
    quick_s: 15.0,
    full_s: 60.0,
    internal: false,
    full_lab_only: false,
};

static EXPIRE: Setting<Seconds> = Setting {
    name: "expire",
    help: "vm.dirty_expire_centisecs in seconds",
    // quick: two whole periods in 14 s; the full run has the book's 10 s
    quick: 6.0,
    full: 10.0,
    bounds: Some((1.0, 600.0)),
    names: &[],
};
static INTERVAL: Setting<Seconds> = Setting {
    name: "interval",
    help: "vm.dirty_writeback_centisecs in seconds",
    quick: 3.0,
    full: 5.0,
    bounds: Some((1.0, 600.0)),
    names: &[],
};
static DURATION: Setting<Seconds> = Setting {
    quick: 14.0,
    ..sawtooth::DURATION
};
static SETTINGS: [&dyn AnySetting; 4] = [&sawtooth::RATE, &EXPIRE, &INTERVAL, &DURATION];

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Plan {
    /// The writer's bytes per second.
    pub rate: u64,
    /// vm.dirty_expire_centisecs, seconds.
    pub expire: f64,
    /// vm.dirty_writeback_centisecs, seconds.
    pub interval: f64,
    /// Seconds of writing.
    pub duration: f64,
}

impl Plan {
    /// The background limit, far above what the writer can reach (the hard limit
    /// is twice it).
    pub fn far(&self) -> u64 {
        (self.rate as f64 * self.duration * 2.0) as u64 + (256 << 20)
    }

    fn knobs(&self) -> [(&'static str, String); 4] {
        let cs = |s: f64| ((s * 100.0).round() as u64).to_string();
        [
            ("vm.dirty_background_bytes", self.far().to_string()),
            ("vm.dirty_bytes", (self.far() * 2).to_string()),
            ("vm.dirty_expire_centisecs", cs(self.expire)),
            ("vm.dirty_writeback_centisecs", cs(self.interval)),
        ]
    }
}

impl Experiment for Periodic {
    type Plan = Plan;
    type Raw = SawRaw;

    fn meta(&self) -> &Meta {
        &META
    }
    fn headline(&self) -> &'static str {
        "peak_mib"
    }

    fn settings(&self) -> Declared {
        &SETTINGS
    }

    fn plan(&self, p: &mut Planner) -> Plan {
        Plan {
            rate: p.get(&sawtooth::RATE),
            expire: p.get(&EXPIRE),
            interval: p.get(&INTERVAL),
            duration: p.get(&DURATION),
        }
    }

    fn measure(&self, plan: &Plan, ctx: &mut Context) -> Result<Measured<SawRaw>, LabError> {
        measure::measure(plan, ctx)
    }

    fn judge(&self, plan: &Plan, raw: &SawRaw, env: &Environment) -> Output {
        judge::judge(plan, raw, env.seed)
    }
}
