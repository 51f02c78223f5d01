//! The simulator beside each real cell: the cell's writers as wb.wcall started
//! them (the paced writer's size, period and class, dd as a bulk writer, the
//! competitors' head start), on the same testbed, from the state the kernel
//! carried into the cell as its trace shows it (the same seeding as `sim
//! validate`, `oslab_lab::sim::validate`). A cell with a user's command, or
//! without the kernel's trace, gets no prediction: the model would be guessing
//! the workload or the state it starts from.

use oslab_wbsim::config::Kernel;
use oslab_wbsim::{Class, Kind, Outcome, WriterCfg};

use super::writers::{DD_BLOCK, WriterKind, writers_for};
use super::{Plan, Raw};
use oslab_services::cells::record::Cell;
use oslab_services::cells::sim_config::{Seed, TestbedSpec, class_of};
use oslab_services::cells::traced::{busiest_bdi, traced};

/// The simulator's writers for `cell`: None when one of them is a user's command.
/// The competitors write from the cell's start to the end of the simulation (the
/// real ones were stopped when the first writer ended, which in the model may be
/// later).
pub fn writer_cfgs(plan: &Plan, cell: &Cell) -> Option<Vec<WriterCfg>> {
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
                    class_of(*fifo, *nice),
                ),
                WriterKind::Dd => (Kind::Bulk { chunk: DD_BLOCK }, Class::Normal { nice: 0 }),
                WriterKind::User(_) => return None,
            };
            Some(WriterCfg {
                name: w.name.clone(),
                kind,
                class,
                group: None,
                fsync_every: None,
                start_ms: if i == 0 {
                    high_start_s(cell) * 1e3
                } else {
                    0.0
                },
                stop_ms: None,
            })
        })
        .collect()
}

/// When the first writer's first write began, s from the cell's start (its
/// competitors' start).
fn high_start_s(cell: &Cell) -> f64 {
    cell.first().start_s.first().copied().unwrap_or(0.0)
}

/// The testbed of the run as the simulator takes it; page costs are the
/// simulator's defaults (wb.wcall does not probe them, `sim validate` does).
fn testbed(plan: &Plan, raw: &Raw, hz: u64) -> TestbedSpec {
    TestbedSpec::without_page_costs(
        (raw.dirty_bytes, raw.dirty_background_bytes),
        plan.bandwidth,
        raw.testbed_measured_bytes_s,
        hz,
    )
}

/// The simulation of `cell`, from the state the kernel carried into it; None
/// without the kernel's trace, with a user's command, or where the governor was
/// killed on purpose (the model has no governor that dies).
pub fn simulate(plan: &Plan, raw: &Raw, cell: &Cell, kernel: Kernel) -> Option<Outcome> {
    if cell.coordinator_killed_at_s.is_some() {
        return None;
    }
    let captured = cell.kernel.captured()?;
    let dev = raw.testbed_bdi.clone().or_else(|| busiest_bdi(captured))?;
    let t = traced(cell, &dev, raw.dirty_bytes / 4096, kernel)?;
    let writers = writer_cfgs(plan, cell)?;
    let hz = u64::from(captured.hz.max(1));
    // room for the first writer to finish its writes even if the model has it
    // wait longer than the kernel did
    let real_end_s = high_start_s(cell) + cell.span_s();
    let mut cfg = testbed(plan, raw, hz).config(
        cell.policy,
        writers,
        2.0 * real_end_s + 1.0,
        Seed::Carried(Some(&t)),
        None,
    );
    cfg.kernel = kernel;
    Some(oslab_wbsim::simulate(&cfg))
}

/// Every cell of a run simulated once, for the findings and the plots alike.
pub struct Predicted<'a> {
    cells: &'a [Cell],
    outcomes: Vec<Option<Outcome>>,
}

impl<'a> Predicted<'a> {
    /// `kernel`: the rules of the release that ran the cells.
    pub fn new(plan: &Plan, raw: &'a Raw, kernel: Kernel) -> Predicted<'a> {
        Predicted {
            cells: &raw.cells,
            outcomes: raw
                .cells
                .iter()
                .map(|c| simulate(plan, raw, c, kernel))
                .collect(),
        }
    }

    /// The simulation of `cell` (one of the run's cells), if it could be made.
    pub fn of(&self, cell: &Cell) -> Option<&Outcome> {
        let i = self.cells.iter().position(|c| std::ptr::eq(c, cell))?;
        self.outcomes[i].as_ref()
    }

    /// The first writer's predicted latencies over `cells`, pooled; empty when
    /// none could be simulated.
    pub fn pooled<'b>(&self, cells: impl Iterator<Item = &'b Cell>) -> Vec<f64> {
        cells
            .filter_map(|c| self.of(c)?.writers.first())
            .flat_map(|w| w.latency_ms.iter().copied())
            .collect()
    }
}
