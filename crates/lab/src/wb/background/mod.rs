//! `wb.background`: Dirty saws under the background limit with periodic write back off.
//!
//! What: with dirty_writeback_centisecs = 0, a background limit in bytes and a
//! steady writer, Dirty climbs to the limit and the background flusher then writes
//! chunks until it is under it again: the peaks, troughs and period of that
//! sawtooth against the kernel's rules.
//!
//! Method, rules and pitfalls: see [`crate::wb::common::sawtooth`] (shared with wb.periodic). The
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

use std::time::Duration;

use oslab_model::{Claim, Environment};
use oslab_stats::sawtooth::Sawtooth;
use oslab_sys::parse::size::human_bytes;
use oslab_trace::records::FlushReason;
use serde::{Deserialize, Serialize};

use crate::harness::check::{Check, Condition, Outcome, Rule};
use crate::harness::{Context, LabError, Meta, Needs, Output, finding};
use crate::harness::{Experiment, Measured, Planner};
use crate::services::dirty_rules::{self, Prediction};
use crate::settings::{AnySetting, Bytes, Declared, Setting};
use crate::wb::common::sawtooth::flusher;
use crate::wb::common::sawtooth::{
    self, Rules, SawRaw, TOLERANCE, best_window, device_rates, matches_prediction, other_dirty_mib,
    others_text, output, run_sawtooth, sawtooth_of,
};

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
    quick_s: 25.0,
    full_s: 60.0,
    internal: false,
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

const SAWTOOTH: Check = Check {
    id: "background-sawtooth",
    text: "With periodic write back off, Dirty climbs to the background limit and the background flusher then holds it there",
    source: "material 4 (seed 001, experiment A)",
};

const FALLS_TO_ZERO: Check = Check {
    id: "background-falls-to-zero",
    text: "After the background flush Dirty falls to about 0 and climbs again",
    source: "material 4 (seed 001, experiment A: 83-85 MB, then ~0)",
};

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
        let duration = Duration::from_secs_f64(plan.duration);
        run_sawtooth(ctx, META.id, &plan.knobs(), plan.rate, duration).map(Measured::Raw)
    }

    fn judge(&self, plan: &Plan, raw: &SawRaw, env: &Environment) -> Output {
        judge(plan, raw, env.seed)
    }
}

/// The chunk each flush wrote: the median period times the writer's rate, MiB.
fn implied_chunk_mib(plan: &Plan, saw: &Sawtooth) -> Option<f64> {
    saw.period.map(|p| p * plan.rate as f64 / MIB)
}

fn judge(plan: &Plan, raw: &SawRaw, seed: u64) -> Output {
    let hard = plan.hard();
    let kernel = flusher::kernel_flush(raw, FlushReason::Background, hard);
    // The chunk the kernel's own estimate gave when it flushed; without a trace,
    // the rule's hard-limit term (a device faster than hard limit / 4).
    let (chunk, period_rule) = match &kernel {
        Some(k) => {
            let chunk = (k.predicted_chunk_mib * MIB) as u64;
            (
                chunk,
                format!(
                    "chunk / rate, chunk = round_down(min(the kernel's avg_write_bandwidth {:.1} MiB/s / 2, hard limit {} / 8) + 4 MiB, 4 MiB) = {} (median over its {} background passes)",
                    k.avg_write_bw_mib_s,
                    human_bytes(hard),
                    human_bytes(chunk),
                    k.passes
                ),
            )
        }
        None => {
            let chunk = dirty_rules::background_chunk(hard);
            (
                chunk,
                format!(
                    "chunk / rate, chunk = round_down(min(write bandwidth / 2, hard limit {} / 8) + 4 MiB, 4 MiB) = {}, the hard-limit term",
                    human_bytes(hard),
                    human_bytes(chunk)
                ),
            )
        }
    };
    let p = dirty_rules::background_with_chunk(plan.rate, plan.background, chunk);
    let saw = sawtooth_of(raw, plan.rate);
    let rules = Rules {
        peak: "dirty_background_bytes".into(),
        period: period_rule,
        trough: "the background limit less one chunk".into(),
    };
    let sawtooth = matches_prediction(&SAWTOOTH, raw, &saw, &p, &rules, |o| {
        sawtooth_why(o, plan, raw, &saw, chunk, kernel.as_ref())
    });
    let claims = vec![sawtooth, falls_to_zero(&saw, &p, chunk, plan)];
    let notes = vec![
        format!(
            "writer {}/s in 10 writes a second; dirty_writeback_centisecs=0, dirty_background_bytes={}, dirty_bytes={} (journaled, restored)",
            human_bytes(plan.rate),
            human_bytes(plan.background),
            human_bytes(hard)
        ),
        raw.kernel.note(),
    ];
    let mut out = output(
        raw,
        plan.rate,
        &p,
        &saw,
        claims,
        "Dirty with periodic write back off",
        notes,
        seed,
    );
    out.findings.push(finding(
        "implied_chunk_mib",
        implied_chunk_mib(plan, &saw).unwrap_or(f64::NAN),
        "MiB",
        format!(
            "median period x the writer's rate: what each background flush wrote (the rule gives {})",
            human_bytes(chunk)
        ),
    ));
    if let Some(k) = &kernel {
        out.findings
            .extend(flusher::findings(k, FlushReason::Background));
    }
    out
}

/// The write bandwidth estimates (MiB/s) for which the rule gives chunks of
/// `chunk_mib` (a multiple of 4): round_down(bw / 2 + 4, 4) = chunk.
fn bandwidth_for_chunk(chunk_mib: f64) -> (f64, f64) {
    let c = (chunk_mib / 4.0).round().max(1.0) * 4.0;
    (2.0 * (c - 4.0), 2.0 * c)
}

fn sawtooth_why(
    o: &Outcome,
    plan: &Plan,
    raw: &SawRaw,
    saw: &Sawtooth,
    chunk: u64,
    kernel: Option<&flusher::KernelFlush>,
) -> String {
    if o.holds() {
        return match kernel {
            Some(k) => format!(
                "the kernel flushed where its rules say, in chunks its own bandwidth estimate ({:.1} MiB/s) gave",
                k.avg_write_bw_mib_s
            ),
            None => {
                "the kernel flushed where its rules say: chunks from the hard-limit term".into()
            }
        };
    }
    let chunk_mib = chunk as f64 / MIB;
    let mut parts = Vec::new();
    if o.failed(0) {
        parts.push(format!(
            "peaks at {:.1} MiB against a background limit of {} ({} by /proc/vmstat); Dirty beside the test file was {:.1} MiB (other dirtiers)",
            saw.peak_median.unwrap_or(f64::NAN),
            human_bytes(plan.background),
            raw.threshold_mib(raw.thresholds.background_pages)
                .map_or_else(|| "unread".into(), |m| format!("{m:.1} MiB")),
            other_dirty_mib(&raw.polls).unwrap_or(f64::NAN)
        ));
    }
    if !o.failed(0)
        && let Some(t) = others_text(raw, plan.rate, plan.background as f64 / MIB)
    {
        parts.push(t);
    }
    let implied = implied_chunk_mib(plan, saw);
    let off = o.failed(1) || o.failed(2);
    match (implied, kernel) {
        (Some(c), Some(k)) if off => parts.push(format!(
            "Dirty fell by about {c:.1} MiB per flush; the kernel's passes wrote {:.1} MiB each where its estimate gives {:.1} MiB: {}",
            k.written_mib,
            k.predicted_chunk_mib,
            if (k.written_mib - k.predicted_chunk_mib).abs() <= TOLERANCE * k.predicted_chunk_mib {
                "the flusher kept to its rule, so the sawtooth's shape came from elsewhere (other dirty data, or the poll missing short drops)"
            } else {
                "a pass wrote another amount than one chunk (the file had fewer dirty pages, or several inodes shared the pass)"
            }
        )),
        (Some(c), None) if off && c < chunk_mib * (1.0 - TOLERANCE) => {
            let (lo, hi) = bandwidth_for_chunk(c);
            let bdi: Vec<f64> = raw
                .polls
                .iter()
                .filter_map(|p| p.bdi_write_bandwidth_kbps.map(|b| b as f64 / 1024.0))
                .collect();
            let estimate = oslab_stats::median(&bdi).map_or_else(
                || format!("; the estimate itself is not readable here ({})", raw.kernel.note()),
                |b| format!("; debugfs read {b:.1} MiB/s"),
            );
            parts.push(format!(
                "Dirty fell by about {c:.1} MiB per flush ({:.2} s at {}/s), not {chunk_mib:.0} MiB: the rule's min(write bandwidth / 2, hard limit / 8) took the bandwidth term, which gives that chunk for a write bandwidth estimate of {lo:.0} to {hi:.0} MiB/s for the device{estimate}; the device wrote at most {:.1} MiB/s in any second of the run",
                saw.period.unwrap_or(f64::NAN),
                human_bytes(plan.rate),
                best_window(&device_rates(&raw.polls), 10).unwrap_or(f64::NAN)
            ));
        }
        (Some(c), None) if off && c > chunk_mib * (1.0 + TOLERANCE) => {
            parts.push(format!(
                "Dirty fell by about {c:.1} MiB per flush, more than one chunk of {chunk_mib:.0} MiB: another flush (a sync, or write back of other dirty data) joined"
            ));
        }
        _ if o.failed(2) => parts.push(format!(
            "troughs at {:.1} MiB with flushes of the predicted size: Dirty beside the test file was {:.1} MiB",
            saw.trough_median.unwrap_or(f64::NAN),
            other_dirty_mib(&raw.polls).unwrap_or(f64::NAN)
        )),
        _ => {}
    }
    for (name, set, now) in raw.sysctls_changed() {
        parts.push(format!("{name} read {now} at the end, not the {set} set"));
    }
    if parts.is_empty() {
        "the measured sawtooth is off the prediction by more than the tolerance".into()
    } else {
        parts.join("; ")
    }
}

fn falls_to_zero(saw: &Sawtooth, p: &Prediction, chunk: u64, plan: &Plan) -> Claim {
    let conditions = [Condition::from_option(
        "median trough",
        "MiB",
        Rule::Below(TOLERANCE * p.peak_mib),
        saw.trough_median,
        "Dirty never dropped by half a second of writing in the run: run longer (full mode)",
    )];
    let context = format!("peaks {:.1} MiB", saw.peak_median.unwrap_or(f64::NAN));
    FALLS_TO_ZERO.judge(&conditions, &context, |o| {
        if o.holds() {
            "the flusher wrote everything".into()
        } else {
            format!(
                "today's background flusher stops as soon as Dirty is under the limit, after chunks of {} (round_down(min(write bandwidth / 2, hard limit / 8) + 4 MiB, 4 MiB)){}",
                human_bytes(chunk),
                implied_chunk_mib(plan, saw)
                    .map(|c| format!("; here Dirty fell by about {c:.1} MiB per flush"))
                    .unwrap_or_default()
            )
        }
    })
}

#[cfg(test)]
mod tests;
