//! `wb.background`: Dirty saws under the background limit with periodic write back off.
//!
//! What: with dirty_writeback_centisecs = 0, a background limit in bytes and a
//! steady writer, Dirty climbs to the limit and the background flusher then writes
//! chunks until it is under it again: the peaks, troughs and period of that
//! sawtooth against the kernel's rules.
//!
//! Method, rules and pitfalls: see [`oslab_services::sawtooth`] (shared with wb.periodic). The
//! hard limit is twice the background one. The prediction takes the chunk's
//! hard-limit term (hard limit / 8); when the kernel's bandwidth estimate for the
//! device is lower (below hard limit / 4), the chunk and the period shrink, and the
//! "why" of a differing run says which chunk the measured period implies and which
//! bandwidth estimate that needs. The raw data keep the sysctls and limits the
//! kernel reported, every poll of Dirty, Writeback and the device's written bytes,
//! and the kernel's estimate where debugfs shows it.
//!
//! References: Documentation/admin-guide/sysctl/vm.rst, fs/fs-writeback.c
//! (writeback_chunk_size, wb_check_background_flush); material section 4, seed 001,
//! experiment A (../shared/spec/material.md); ../shared/spec/writeback-kernel.md.

mod chunk;
mod claims;
mod judge;
mod measure;

use oslab_model::Environment;
use serde::{Deserialize, Serialize};

use crate::settings::{AnySetting, Bytes, Declared, Setting};
use oslab_harness::{Context, LabError, Meta, Needs, Output};
use oslab_harness::{Experiment, Measured, Planner};
use oslab_services::sawtooth::{self, SawRaw};

pub struct Background;

static META: Meta = Meta {
    id: "wb.background",
    title: "Background write back: Dirty saws under the background limit",
    section: "4",
    summary: "periodic flush off, background limit in bytes, a steady writer: peaks, troughs, period vs prediction",
    needs: Needs {
        root: true,
        min_cpus: 1,
        free_disk_bytes: 0,
    },
    quick_s: 16.0,
    full_s: 60.0,
    internal: false,
    full_lab_only: false,
};

static BACKGROUND: Setting<Bytes> = Setting {
    name: "background",
    help: "vm.dirty_background_bytes; the hard limit is twice it",
    quick: 32 << 20,
    full: 32 << 20,
    bounds: Some((8 << 20, 4 << 30)),
    names: &[],
};
static SETTINGS: [&dyn AnySetting; 3] = [&sawtooth::RATE, &BACKGROUND, &sawtooth::DURATION];

const MIB: f64 = (1u64 << 20) as f64;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Plan {
    /// The writer's bytes per second.
    pub rate: u64,
    /// vm.dirty_background_bytes; vm.dirty_bytes is twice it.
    pub background: u64,
    /// Seconds of writing.
    pub duration: f64,
}

impl Plan {
    pub fn hard(&self) -> u64 {
        self.background * 2
    }

    fn knobs(&self) -> [(&'static str, String); 3] {
        [
            ("vm.dirty_writeback_centisecs", "0".to_string()),
            ("vm.dirty_background_bytes", self.background.to_string()),
            ("vm.dirty_bytes", self.hard().to_string()),
        ]
    }
}

impl Experiment for Background {
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
            background: p.get(&BACKGROUND),
            duration: p.get(&sawtooth::DURATION),
        }
    }

    fn measure(&self, plan: &Plan, ctx: &mut Context) -> Result<Measured<SawRaw>, LabError> {
        measure::measure(plan, ctx)
    }

    fn judge(&self, plan: &Plan, raw: &SawRaw, env: &Environment) -> Output {
        judge::judge(plan, raw, env.seed)
    }
}

#[cfg(test)]
mod tests;
