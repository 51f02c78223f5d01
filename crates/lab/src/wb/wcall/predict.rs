//! The simulator beside each real cell: the cell's writers as wb.wcall started
//! them (the paced writer's size, period and class, dd as a bulk writer, the
//! competitors' head start), on the same testbed, from the state the kernel
//! carried into the cell as its trace shows it (the same seeding as `sim
//! validate`, [`crate::simrun::testbed`]). A cell with a user's command, or
//! without the kernel's trace, gets no prediction: the model would be guessing
//! the workload or the state it starts from.

use oslab_wbsim::{Class, Kind, Outcome, WriterCfg};

use super::writers::{WriterKind, writers_for};
use super::{Cell, Plan, Raw};
use crate::simrun::testbed::model::{Bench, Seed};
use crate::simrun::testbed::traced::{busiest_bdi, traced};

/// bs of the dd competitors.
const DD_CHUNK: u64 = 1 << 20;

/// The simulator's writers for `cell`: None when one of them is a user's command.
pub fn writer_cfgs(plan: &Plan, cell: &Cell) -> Option<Vec<WriterCfg>> {
    let high_start_ms = cell.first().start_s.first().copied().unwrap_or(0.0) * 1e3;
    let high_end_ms = high_start_ms + cell.span_s() * 1e3;
    writers_for(cell.scenario, plan)
        .iter()
        .enumerate()
        .map(|(i, w)| {
            let (kind, class) = match &w.kind {
                WriterKind::Paced {
                    bytes,
                    period_ms,
                    count,
                    fifo,
                    nice,
                } => (
                    Kind::Periodic {
                        bytes: *bytes,
                        period_ms: *period_ms,
                        count: *count,
                    },
                    match fifo {
                        0 => Class::Normal { nice: *nice },
                        p => Class::Rt { priority: *p },
                    },
                ),
                WriterKind::Dd => (Kind::Bulk { chunk: DD_CHUNK }, Class::Normal { nice: 0 }),
                WriterKind::User(_) => return None,
            };
            Some(WriterCfg {
                name: w.name.clone(),
                kind,
                class,
                group: None,
                fsync_every: None,
                // the competitors start with the cell and are stopped when the
                // first writer ends
                start_ms: if i == 0 { high_start_ms } else { 0.0 },
                stop_ms: (i > 0).then_some(high_end_ms),
            })
        })
        .collect()
}

/// The testbed of the run as the simulator takes it; page costs are the
/// simulator's defaults (wb.wcall does not probe them, `sim validate` does).
fn bench(plan: &Plan, raw: &Raw, hz: u64) -> Bench {
    let defaults = oslab_wbsim::Config::new(oslab_wbsim::RuleSet::Linux6, 0, Vec::new(), 0.0, 1);
    Bench {
        dirty_bytes: raw.dirty_bytes,
        dirty_background_bytes: raw.dirty_background_bytes,
        cap_bytes_s: plan.bandwidth as f64,
        measured_bytes_s: raw.testbed_measured_bytes_s,
        copy_bytes_s: defaults.copy_bytes_s,
        alloc_ns: defaults.page_alloc_ns,
        hz,
    }
}

/// The simulation of `cell`, from the state the kernel carried into it; None
/// without the kernel's trace or with a user's command.
pub fn simulate(plan: &Plan, raw: &Raw, cell: &Cell) -> Option<Outcome> {
    let captured = cell.kernel.captured()?;
    let dev = busiest_bdi(captured)?;
    let t = traced(cell, &dev, raw.dirty_bytes / 4096)?;
    let writers = writer_cfgs(plan, cell)?;
    let hz = u64::from(captured.hz.max(1));
    let end_s = cell.first().start_s.first().copied().unwrap_or(0.0) + cell.span_s();
    let cfg = bench(plan, raw, hz).config(
        cell.policy,
        writers,
        end_s + 1.0,
        Seed::Carried(Some(&t)),
        None,
    );
    Some(oslab_wbsim::simulate(&cfg))
}

/// The first writer's predicted latencies over every cell of `cells` that could
/// be simulated, pooled; empty when none could.
pub fn pooled<'a>(plan: &Plan, raw: &Raw, cells: impl Iterator<Item = &'a Cell>) -> Vec<f64> {
    cells
        .filter_map(|c| simulate(plan, raw, c))
        .flat_map(|o| {
            o.writers
                .into_iter()
                .next()
                .map(|w| w.latency_ms)
                .unwrap_or_default()
        })
        .collect()
}
