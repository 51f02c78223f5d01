//! `wb.periodic`: Dirty drops to ~0 every expire + (up to) one writeback interval.
//!
//! What: with the dirty limits far away, only the periodic flusher writes: it wakes
//! every dirty_writeback_centisecs and writes the inodes dirtied longer ago than
//! dirty_expire_centisecs, so a steady writer's Dirty climbs for
//! writeback x ceil(expire / writeback) seconds and drops to ~0.
//!
//! Method, rules and pitfalls: see [`crate::wb::common::sawtooth`] (shared with wb.background).
//! The background and hard limits are set to twice what the writer can write in the
//! run plus 256 MiB (and twice that), so they never trigger; the kernel's limits
//! while writing are read back to show it. The flusher wakes an interval after its
//! previous pass ended, not on a fixed grid, so the period may exceed the
//! prediction by the length of a pass; and a file dirtied again right after a pass
//! can expire just after a wake-up, a whole interval late.
//!
//! References: Documentation/admin-guide/sysctl/vm.rst (dirty_expire_centisecs,
//! dirty_writeback_centisecs), fs/fs-writeback.c (wb_check_old_data_flush,
//! wb_writeback with for_kupdate); material section 4, seed 001, experiment B
//! (../shared/spec/material.md); ../shared/spec/writeback-kernel.md.

use std::time::Duration;

use oslab_model::Environment;
use oslab_stats::sawtooth::Sawtooth;
use oslab_sys::parse::size::human_bytes;
use serde::{Deserialize, Serialize};

use crate::harness::check::{Check, Outcome};
use crate::harness::{Context, LabError, Meta, Needs, Output};
use crate::harness::{Experiment, Measured, Planner};
use crate::services::dirty_rules::{self, Prediction};
use crate::settings::{AnySetting, Declared, Seconds, Setting};
use crate::wb::common::sawtooth::flusher;
use crate::wb::common::sawtooth::{
    self, Rules, SawRaw, TOLERANCE, matches_prediction, others_text, output, run_sawtooth,
    sawtooth_of,
};
use oslab_trace::records::FlushReason;

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
    quick_s: 25.0,
    full_s: 60.0,
    internal: false,
};

static EXPIRE: Setting<Seconds> = Setting {
    name: "expire",
    help: "vm.dirty_expire_centisecs in seconds",
    quick: 10.0,
    full: 10.0,
    bounds: Some((1.0, 600.0)),
    names: &[],
};
static INTERVAL: Setting<Seconds> = Setting {
    name: "interval",
    help: "vm.dirty_writeback_centisecs in seconds",
    quick: 5.0,
    full: 5.0,
    bounds: Some((1.0, 600.0)),
    names: &[],
};
static SETTINGS: [&dyn AnySetting; 4] = [&sawtooth::RATE, &EXPIRE, &INTERVAL, &sawtooth::DURATION];

const EXPIRY: Check = Check {
    id: "periodic-expiry",
    text: "The flusher wakes every dirty_writeback_centisecs and writes pages older than dirty_expire_centisecs, so Dirty drops to ~0 periodically",
    source: "material 4 (seed 001, experiment B: ~9.5 MB peaks with expire 10 s)",
};

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

    fn settings(&self) -> Declared {
        &SETTINGS
    }

    fn plan(&self, p: &mut Planner) -> Plan {
        Plan {
            rate: p.get(&sawtooth::RATE),
            expire: p.get(&EXPIRE),
            interval: p.get(&INTERVAL),
            duration: p.get(&sawtooth::DURATION),
        }
    }

    fn measure(&self, plan: &Plan, ctx: &mut Context) -> Result<Measured<SawRaw>, LabError> {
        let duration = Duration::from_secs_f64(plan.duration);
        run_sawtooth(ctx, META.id, &plan.knobs(), plan.rate, duration).map(Measured::Raw)
    }

    fn judge(&self, plan: &Plan, raw: &SawRaw, env: &Environment) -> Output {
        judge(plan, raw, env.seed)
    }
}

fn judge(plan: &Plan, raw: &SawRaw, seed: u64) -> Output {
    let p = dirty_rules::periodic(plan.rate, plan.expire, plan.interval);
    let saw = sawtooth_of(raw, plan.rate);
    let rules = Rules {
        peak: format!(
            "rate x period, {}/s x {:.1} s",
            human_bytes(plan.rate),
            p.period_s
        ),
        period: format!(
            "writeback interval x ceil(expire / writeback interval) = {} s x ceil({} / {})",
            plan.interval, plan.expire, plan.interval
        ),
        trough: "~0: expiry writes the whole file".into(),
    };
    let claim = matches_prediction(&EXPIRY, raw, &saw, &p, &rules, |o| {
        expiry_why(o, plan, raw, &saw, &p)
    });
    let far = plan.far();
    let mut notes = vec![format!(
        "writer {}/s; expire {} s, writeback interval {} s; background and hard limits set to {} and {} so they never trigger (journaled, restored)",
        human_bytes(plan.rate),
        plan.expire,
        plan.interval,
        human_bytes(far),
        human_bytes(far * 2)
    )];
    notes.push(raw.kernel.note());
    let mut out = output(
        raw,
        plan.rate,
        &p,
        &saw,
        vec![claim],
        "Dirty under periodic write back",
        notes,
        seed,
    );
    if let Some(k) = flusher::kernel_flush(raw, FlushReason::Periodic, far * 2) {
        out.findings
            .extend(flusher::findings(&k, FlushReason::Periodic));
    }
    out
}

fn expiry_why(o: &Outcome, plan: &Plan, raw: &SawRaw, saw: &Sawtooth, p: &Prediction) -> String {
    if o.holds() {
        return "the kernel flushed where its rules say".into();
    }
    let mut parts = Vec::new();
    match saw.period {
        Some(t) if o.failed(1) && (t - p.period_s - plan.interval).abs() <= TOLERANCE * plan.interval => {
            parts.push(format!(
                "Dirty dropped every {t:.2} s, one writeback interval ({} s) later than {:.1} s: the writer dirties the file again right after each pass, so its new dirtied_when expires just after a wake-up and waits for the next",
                plan.interval, p.period_s
            ))
        }
        Some(t) if o.failed(1) && t > p.period_s => parts.push(format!(
            "Dirty dropped every {t:.2} s, later than {:.1} s: the flusher wakes an interval after its previous pass ended, not on a fixed grid, so a long pass delays the next",
            p.period_s
        )),
        Some(t) if o.failed(1) => parts.push(format!(
            "Dirty dropped every {t:.2} s, sooner than {:.1} s: other flushes wrote (a sync, other programs' expired pages, or the background limit, {} by /proc/vmstat)",
            p.period_s,
            raw.threshold_mib(raw.thresholds.background_pages)
                .map_or_else(|| "unread".into(), |m| format!("{m:.1} MiB"))
        )),
        _ => {}
    }
    let others = others_text(raw, plan.rate, p.peak_mib);
    if o.failed(0) || o.failed(2) {
        parts.push(format!(
            "peaks of {:.1} MiB and troughs of {:.1} MiB against {:.1} and ~0",
            saw.peak_median.unwrap_or(f64::NAN),
            saw.trough_median.unwrap_or(f64::NAN),
            p.peak_mib
        ));
    }
    parts.extend(others);
    for (name, set, now) in raw.sysctls_changed() {
        parts.push(format!("{name} read {now} at the end, not the {set} set"));
    }
    if parts.is_empty() {
        "the measured sawtooth is off the prediction by more than the tolerance".into()
    } else {
        parts.join("; ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wb::common::sawtooth::tests::{saw_raw, sawtooth_polls};
    use oslab_model::Verdict;

    #[test]
    fn expire_ten_writeback_five_gives_ten_seconds() {
        let p = dirty_rules::periodic(4 << 20, 10.0, 5.0);
        assert_eq!(p.period_s, 10.0);
        assert_eq!(p.peak_mib, 40.0);
        // expire 12 s with 5 s wake-ups: the third wake-up (15 s) writes
        assert_eq!(dirty_rules::periodic(1 << 20, 12.0, 5.0).period_s, 15.0);
    }

    fn plan() -> Plan {
        Plan {
            rate: 4 << 20,
            expire: 2.0,
            interval: 1.0,
            duration: 20.0,
        }
    }

    #[test]
    fn every_verdict() {
        let claim = |raw: &SawRaw| judge(&plan(), raw, 1).claims[0].clone();
        // 8 MiB every 2 s, down to 0
        let c = claim(&saw_raw(sawtooth_polls(4.0, 8.0, 0.0, 20.0), 0));
        assert_eq!(c.verdict, Verdict::Holds, "{c:?}");
        assert!(
            c.expectation.contains("ceil(expire / writeback interval)"),
            "{}",
            c.expectation
        );
        // every 3 s: one interval late (the file dirtied again just after each pass)
        let c = claim(&saw_raw(sawtooth_polls(4.0, 12.0, 0.0, 20.0), 0));
        assert_eq!(c.verdict, Verdict::Differs);
        assert!(
            c.why.contains("one writeback interval (1 s) later"),
            "{}",
            c.why
        );
        // every 4 s: later still
        let c = claim(&saw_raw(sawtooth_polls(4.0, 16.0, 0.0, 20.0), 0));
        assert!(
            c.why.contains("later than 2.0 s: the flusher wakes"),
            "{}",
            c.why
        );
        // other programs' dirty pages keep the troughs up
        let c = claim(&saw_raw(sawtooth_polls(4.0, 14.0, 6.0, 20.0), 6));
        assert_eq!(c.verdict, Verdict::Differs);
        assert!(c.why.contains("other programs kept 6.0 MiB"), "{}", c.why);
        assert!(
            c.why.contains("own dirty pages sawed between 7.6"),
            "{}",
            c.why
        );
        // no drop at all
        let c = claim(&saw_raw(sawtooth_polls(4.0, 100.0, 0.0, 20.0), 0));
        assert_eq!(c.verdict, Verdict::NotJudged);
    }
}
