//! Judging the sawtooth cells: each cell simulated blind (its settings, the
//! writer's rate and the device's probed bandwidth; nothing of its runs), its
//! median peak, trough and period beside the range of the real runs, and the
//! flusher's background episodes and bandwidth estimate beside the traced ones.

use oslab_stats::sawtooth::{Sawtooth, cycle_confirmed_at};
use oslab_wbsim::Config;
use oslab_wbsim::config::{Initial, Start};

use oslab_model::trace::FlushReason;

use super::{HARD_LIMIT, SawCell, SawDevice, SawDeviceRaw};
use crate::sim::validate::figures::{Compared, Fig, Verdict};
use oslab_services::sawtooth::SawRaw;
use oslab_services::sawtooth::flusher::{KernelFlush, kernel_flush, simulated_flush};
use oslab_services::sawtooth::model::{self, DIRTYABLE_FAR};
use oslab_services::sawtooth::sawtooth_of;

/// One run of a sawtooth cell, simulated: the sawtooth of Dirty and the
/// flusher's background write back.
#[derive(Debug, Clone, PartialEq)]
pub struct Predicted {
    pub saw: Sawtooth,
    pub flush: Option<KernelFlush>,
}

/// The simulator's configuration for `cell` on the device of `dev`, blind.
pub fn blind_config(dev: &SawDeviceRaw, cell: &SawCell, hz: u64) -> Config {
    let sysctls = cell.sysctls();
    let mut cfg = model::config(cell.rate as f64, cell.duration_s(), sysctls, DIRTYABLE_FAR);
    cfg.hz = hz;
    match dev.cap_bytes_s {
        None => model::on_device(cfg, dev.measured_bytes_s, false, dev.measured_bytes_s),
        Some(cap) => model::on_device(cfg, cap as f64, true, dev.measured_bytes_s),
    }
}

/// The kernel's write bandwidth estimate for `dev` when its first sawtooth run
/// begins, bytes per second, from what the plan did to the device before: the
/// testbed was just made (mkfs writes its inode tables through the page cache at
/// the device's speed, which the estimator measures: the probe's figure); the
/// root disk got nothing the estimator sees from oslab for minutes (the
/// contested cells write to the testbed, the probe uses direct I/O), and a disk
/// that writes next to nothing for minutes has its estimate fall to next to
/// nothing: the kernel's trace read 0.0 MiB/s at the root disk's first cell in
/// every full run so far. One page a second here.
pub fn first_estimate(dev: &SawDeviceRaw) -> f64 {
    match dev.device {
        SawDevice::Testbed => dev.measured_bytes_s,
        SawDevice::Root => 4096.0,
    }
}

/// The blind prediction of every run of `dev`, in the order the runs went: the
/// device's runs simulated as one session, each from the estimates the
/// simulation of the run before it handed on (where it ended, or after its end
/// flush, see [`Restore`]; the first from
/// [`first_estimate`]), so that the model carries its own history from cell to
/// cell as the kernel carries its. Nothing measured in any run is read: the
/// order, the cells' settings and the probe only. None for a cell sim.validate
/// does not run (a raw file is untrusted).
pub fn blind_chain(
    dev: &SawDeviceRaw,
    hz: u64,
    cycles: usize,
    restore: Restore,
) -> Vec<Option<Predicted>> {
    let first = first_estimate(dev);
    let mut at = Initial {
        write_bw_bytes_s: Some(first),
        avg_write_bw_bytes_s: Some(first),
        ..Initial::default()
    };
    dev.runs
        .iter()
        .map(|r| {
            if !r.cell.is_known() {
                return None;
            }
            let mut cfg = blind_config(dev, &r.cell, hz);
            cfg.start = Start::Given;
            cfg.initial = at;
            let (run, end) = run_as_measured(&cfg, &r.cell, cycles, restore);
            at = end;
            Some(run)
        })
        .collect()
}

/// What putting the machine's vm.dirty_writeback_centisecs back after a run does
/// to the device: writing a new non-zero value wakes the flushers to write back
/// everything dirty (dirty_writeback_centisecs_handler -> wakeup_flusher_threads),
/// so a run whose cell set another interval (periodic write back off sets 0) has
/// its leftover Dirty go to the device at once, and the estimate carried into the
/// next run has seen it (the kernel's trace shows these passes, reason periodic,
/// at the end of every periodic-off run). Holds the machine's interval,
/// centiseconds (0: nothing to put back that wakes anyone).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Restore(pub u64);

impl Restore {
    /// Nothing happens at a run's end (a machine with periodic write back off, or
    /// a run that is not part of a session).
    pub const NOTHING: Restore = Restore(0);

    /// From the machine's interval before the runs (None: the kernel's default,
    /// 500).
    pub fn of_machine(writeback_centisecs: Option<u64>) -> Restore {
        Restore(writeback_centisecs.unwrap_or(500))
    }

    /// Whether putting the machine's interval back after a run of `cell` wakes
    /// the flushers: it is not 0 and not the cell's own.
    pub fn wakes_after(self, cell: &SawCell) -> bool {
        self.0 != 0 && self.0 != cell.periodic_centisecs().0
    }
}

/// How long after the writer's end the setting is put back in the simulation, s.
const RESTORE_AFTER_S: f64 = 0.01;

/// `cfg`, one run of `cell`, simulated as the real runs went: stopped once
/// `cycles` whole cycles of Dirty are seen (0: its whole length, as runs before
/// 2026-11-27 went); what it predicts and the estimates it hands on to the next
/// run (after the flush its end wakes, see [`Restore`]).
pub fn run_as_measured(
    cfg: &Config,
    cell: &SawCell,
    cycles: usize,
    restore: Restore,
) -> (Predicted, Initial) {
    let whole = model::simulated_run(cfg);
    let stop = match cycles {
        0 => None,
        n => cycle_confirmed_at(&whole.t, &whole.y, cell.min_drop_mib(), n),
    };
    let (run, length) = match stop {
        Some(at) if at < cfg.duration_s => {
            let mut short = cfg.clone();
            short.duration_s = at;
            (model::simulated_run(&short), at)
        }
        _ => (whole, cfg.duration_s),
    };
    let flush = simulated_flush(&run.outcome, FlushReason::Background, HARD_LIMIT);
    let end = if restore.wakes_after(cell) {
        after_restore(cfg, length, &run.outcome).end_estimates
    } else {
        run.outcome.end_estimates
    };
    (
        Predicted {
            saw: run.saw,
            flush,
        },
        end,
    )
}

/// The longest drain after a run the simulation gives the end flush, s: a raw
/// file is untrusted, and a device that needs longer has no sawtooth worth
/// judging anyway.
const MOST_DRAIN_S: f64 = 60.0;

/// The run of `cfg` that ended at `length` s (as `out`) followed by the flush
/// that putting periodic write back on again wakes: the writer stopped, then
/// everything dirty written back, and the bandwidth update that follows the last
/// completion (200 ms later) done. From the estimates `cfg.initial` gives, as the
/// session's runs start.
pub(super) fn after_restore(
    cfg: &Config,
    length: f64,
    out: &oslab_wbsim::Outcome,
) -> oslab_wbsim::Outcome {
    let mut tail = cfg.clone();
    tail.start = Start::Given;
    for w in &mut tail.writers {
        w.stop_ms = Some(length * 1e3);
    }
    let left = (out.end_dirty + out.end_writeback) as f64;
    let drain = (left / cfg.device.bandwidth_bytes_s).clamp(0.0, MOST_DRAIN_S);
    tail.duration_s = length + RESTORE_AFTER_S + drain + 1.0;
    // nothing reads the tail's samples
    tail.sample_ms = tail.sample_ms.max(1000.0);
    oslab_wbsim::engine::simulate_flush_all_at(&tail, length + RESTORE_AFTER_S)
}

/// The kernel's write bandwidth estimates (write_bw, avg_write_bw, bytes per
/// second) when `run` began: its first traced flusher pass on the run's device.
pub fn carried(run: &SawRaw) -> Option<(f64, f64)> {
    let c = run.kernel.captured()?;
    let bdi = run.bdi.as_deref()?;
    let page = c.page_size.max(1) as f64;
    c.flushes
        .iter()
        .find(|f| f.bdi == bdi)
        .map(|f| (f.write_bw as f64 * page, f.avg_write_bw as f64 * page))
}

/// The diagnosis beside the blind prediction: `cell` simulated from the
/// estimates the kernel carried into `run` (no warm-up), None where the run was
/// not traced.
pub fn seeded_config(dev: &SawDeviceRaw, cell: &SawCell, hz: u64, run: &SawRaw) -> Option<Config> {
    let (bw, avg) = carried(run)?;
    let mut cfg = blind_config(dev, cell, hz);
    cfg.start = Start::Given;
    cfg.initial.write_bw_bytes_s = Some(bw);
    cfg.initial.avg_write_bw_bytes_s = Some(avg);
    Some(cfg)
}

/// The column a user's `oslab sim run --live` gives: `cell` simulated from the
/// live state read just before the run (the kernel's estimates as the probe's
/// flusher pass showed them, the steady state's for any it did not), from a
/// clean cache.
pub fn live_config(
    dev: &SawDeviceRaw,
    cell: &SawCell,
    hz: u64,
    live: &crate::sim::live::LiveState,
) -> Config {
    let mut cfg = blind_config(dev, cell, hz);
    cfg.start = Start::Live;
    cfg.initial = live.initial();
    // the same run `simulate` makes of it, without the search for when the
    // writers would settle, which only the user's record reads
    oslab_wbsim::engine::given_from_live(&cfg)
}

/// One figure of one cell, blind or seeded: its verdict, or None where the real
/// runs show the figure and the simulation does not (a miss).
#[derive(Debug, Clone)]
pub struct SawJudged {
    pub cell: SawCell,
    pub fig: Fig,
    pub real: Vec<f64>,
    pub verdict: Option<Verdict>,
}

impl SawJudged {
    /// "saw.root.5mib_s.bg32mib.periodic_off.peak_mib"
    pub fn key(&self) -> String {
        format!("saw.{}.{}", self.cell.key(), self.fig.key())
    }

    pub fn holds(&self) -> bool {
        self.verdict.is_some_and(|v| v.holds())
    }

    /// "PREFIXsaw.KEY: real 33.9, predicted 35.9" (the real median), the finding
    /// named with `prefix` ("blind." or none).
    pub fn miss_text(&self, prefix: &str) -> String {
        let real = oslab_stats::median(&self.real).unwrap_or(f64::NAN);
        match self.verdict {
            Some(v) => format!(
                "{prefix}{}: real {}, predicted {}",
                self.key(),
                oslab_harness::check::figure(v.real_median, ""),
                oslab_harness::check::figure(v.predicted, "")
            ),
            None if Fig::FLUSHER.contains(&self.fig) => format!(
                "{prefix}{}: real {}, the simulation has no such figure (fewer than two episodes)",
                self.key(),
                oslab_harness::check::figure(real, "")
            ),
            None => format!(
                "{prefix}{}: real {}, the simulation shows no sawtooth",
                self.key(),
                oslab_harness::check::figure(real, "")
            ),
        }
    }
}

fn value(s: &Sawtooth, fig: Fig) -> Option<f64> {
    match fig {
        Fig::SawPeak => s.peak_median,
        Fig::SawTrough => s.trough_median,
        Fig::SawPeriod => s.period,
        _ => None,
    }
}

fn flush_value(f: &KernelFlush, fig: Fig) -> Option<f64> {
    match fig {
        Fig::FlushMib => Some(f.episode_mib),
        Fig::FlushInterval => f.episode_interval_s,
        Fig::FlushEstimate => Some(f.avg_write_bw_mib_s),
        _ => None,
    }
    .filter(|v| v.is_finite())
}

/// The real runs of `cell` beside its predictions (one per run, blind or
/// seeded; their median is judged): one entry per figure the real runs show.
pub fn compare(cell: SawCell, real: &[Sawtooth], predicted: &[Sawtooth]) -> Vec<SawJudged> {
    judged(cell, &Fig::SAWTOOTH, |fig| {
        let values = |v: &[Sawtooth]| v.iter().filter_map(|s| value(s, fig)).collect();
        (values(real), values(predicted))
    })
}

/// The flusher's background episodes and estimate of the real runs of `cell`
/// (None where a run was not traced) beside the predicted ones, reported.
pub fn compare_flush(
    cell: SawCell,
    real: &[Option<KernelFlush>],
    predicted: &[Option<KernelFlush>],
) -> Vec<SawJudged> {
    judged(cell, &Fig::FLUSHER, |fig| {
        let values = |v: &[Option<KernelFlush>]| {
            v.iter()
                .flatten()
                .filter_map(|f| flush_value(f, fig))
                .collect()
        };
        (values(real), values(predicted))
    })
}

/// `figs` of `cell` judged from (real, predicted) values per figure; a figure
/// no real run shows is left out.
fn judged(
    cell: SawCell,
    figs: &[Fig],
    values: impl Fn(Fig) -> (Vec<f64>, Vec<f64>),
) -> Vec<SawJudged> {
    figs.iter()
        .filter_map(|&fig| {
            let (r, p) = values(fig);
            if r.is_empty() {
                return None;
            }
            let verdict = Compared {
                fig,
                real: r.clone(),
                predicted: p,
            }
            .verdict();
            Some(SawJudged {
                cell,
                fig,
                real: r,
                verdict,
            })
        })
        .collect()
}

/// The most runs of one device sim.validate records (at most 9 cells on one
/// device, 10 runs each, with room):
/// a raw file is untrusted, and each run costs up to seven simulations (the
/// blind run, again cut at its stop, and its end flush; the same run from the
/// carried state and from the live state, each whole and cut).
pub const MAX_RUNS: usize = 120;

/// The sawtooth cells judged: blind (the headline) and seeded (the diagnosis),
/// and the cells not judged, with the reason.
#[derive(Debug, Clone, Default)]
pub struct SawVerdicts {
    pub blind: Vec<SawJudged>,
    pub seeded: Vec<SawJudged>,
    /// From the live state read before each run (runs that have one).
    pub live: Vec<SawJudged>,
    /// The flusher's figures, blind, seeded and live: reported, not in the claim.
    pub flush_blind: Vec<SawJudged>,
    pub flush_seeded: Vec<SawJudged>,
    pub flush_live: Vec<SawJudged>,
    pub empty: Vec<String>,
}

impl SawVerdicts {
    /// How the cells fared blind, from the live state and from the kernel's
    /// carried estimates.
    pub fn note(&self) -> String {
        let held = |v: &[SawJudged]| v.iter().filter(|j| j.holds()).count();
        // runs recorded before the live state was read have no live column
        let live = if self.live.is_empty() {
            String::new()
        } else {
            format!(
                " {} of {} from the live state read just before each run (what `sim run --live` starts from; the live.saw.* findings);",
                held(&self.live),
                self.live.len()
            )
        };
        format!(
            "the sawtooth cells: {} of {} figures within target blind;{live} {} of {} when each run is simulated from the write bandwidth estimates the kernel carried into it (its first traced flusher pass; the saw.* findings), which is how far the model's flusher and estimator follow the kernel's once they start from the same state",
            held(&self.blind),
            self.blind.len(),
            held(&self.seeded),
            self.seeded.len()
        )
    }
}

impl SawVerdicts {
    /// How the model's flusher followed the traced one: per figure, how many
    /// cells' predictions fell within 10 % of the real median or inside the real
    /// runs' range, blind and seeded.
    pub fn flush_note(&self) -> String {
        let close = |v: &[SawJudged], fig: Fig| {
            let of: Vec<&SawJudged> = v.iter().filter(|j| j.fig == fig).collect();
            let near = of
                .iter()
                .filter(|j| {
                    j.verdict
                        .is_some_and(|v| v.in_range || v.error.abs() <= FLUSH_NEAR)
                })
                .count();
            format!("{near} of {}", of.len())
        };
        let per = |v: &[SawJudged]| {
            Fig::FLUSHER
                .iter()
                .map(|&f| format!("{} {}", f.key(), close(v, f)))
                .collect::<Vec<_>>()
                .join(", ")
        };
        let live = if self.flush_live.is_empty() {
            String::new()
        } else {
            format!("; from the live state: {}", per(&self.flush_live))
        };
        format!(
            "the flusher on the sawtooth cells' devices, the model's background episodes (passes less than 100 ms apart: MiB each, seconds between) and its write bandwidth estimate when they began (avg_write_bandwidth) beside the kernel's writeback_start/writeback_written trace (the *.flush_* findings, reported, not in the claim): within 10 % of the real median or inside the real runs' range, blind: {}{live}; from the kernel's carried estimates: {}",
            per(&self.flush_blind),
            per(&self.flush_seeded)
        )
    }
}

/// How close a flusher figure must come to count in [`SawVerdicts::flush_note`].
const FLUSH_NEAR: f64 = 0.1;

/// How many cells `judged` covers.
pub fn cells(judged: &[SawJudged]) -> usize {
    let mut seen: Vec<SawCell> = Vec::new();
    for j in judged {
        if !seen.contains(&j.cell) {
            seen.push(j.cell);
        }
    }
    seen.len()
}

/// Every cell of every device simulated blind, and from each run's carried
/// estimates, and compared.
pub fn judge(devices: &[SawDeviceRaw], hz: u64, cycles: usize, restore: Restore) -> SawVerdicts {
    let mut out = SawVerdicts::default();
    for dev in devices {
        if let Some(why) = not_judged(dev) {
            out.empty.push(why);
            continue;
        }
        let chain = blind_chain(dev, hz, cycles, restore);
        for cell in cells_run(dev) {
            if !cell.is_known() {
                out.empty.push(format!(
                    "{}: not one of the cells sim.validate runs",
                    cell.label()
                ));
                continue;
            }
            judge_cell(dev, cell, &chain, hz, cycles, &mut out);
        }
    }
    out
}

/// Why none of a device's runs is judged: more runs than sim.validate makes, or
/// no usable bandwidth recorded for the runs there are.
fn not_judged(dev: &SawDeviceRaw) -> Option<String> {
    let bandwidth_ok = |b: f64| {
        b.is_finite()
            && b >= oslab_wbsim::settings::MIN_RATE as f64
            && b <= oslab_wbsim::settings::MAX_BYTES as f64
    };
    let usable = bandwidth_ok(dev.measured_bytes_s)
        && dev.cap_bytes_s.is_none_or(|c| bandwidth_ok(c as f64));
    if dev.runs.len() > MAX_RUNS {
        return Some(format!(
            "{}: {} runs recorded, more than sim.validate makes ({MAX_RUNS})",
            dev.device.name(),
            dev.runs.len()
        ));
    }
    if !dev.runs.is_empty() && !usable {
        return Some(format!(
            "{}: no usable device bandwidth recorded",
            dev.device.name()
        ));
    }
    None
}

/// The cells a device ran, in the order of their first runs.
fn cells_run(dev: &SawDeviceRaw) -> Vec<SawCell> {
    let mut cells: Vec<SawCell> = Vec::new();
    for r in &dev.runs {
        if !cells.contains(&r.cell) {
            cells.push(r.cell);
        }
    }
    cells
}

/// One cell's runs beside the blind predictions of the device's `chain` and
/// beside each run simulated from the estimates it carried.
fn judge_cell(
    dev: &SawDeviceRaw,
    cell: SawCell,
    chain: &[Option<Predicted>],
    hz: u64,
    cycles: usize,
    out: &mut SawVerdicts,
) {
    let runs: Vec<&SawRaw> = dev
        .runs
        .iter()
        .filter(|r| r.cell == cell)
        .map(|r| &r.saw)
        .collect();
    let real: Vec<Sawtooth> = runs.iter().map(|r| sawtooth_of(r, cell.rate)).collect();
    let real_flush: Vec<Option<KernelFlush>> = runs
        .iter()
        .map(|r| kernel_flush(r, FlushReason::Background, HARD_LIMIT))
        .collect();
    let blind: Vec<&Predicted> = dev
        .runs
        .iter()
        .zip(chain)
        .filter(|(r, _)| r.cell == cell)
        .filter_map(|(_, p)| p.as_ref())
        .collect();
    let blind_saw: Vec<Sawtooth> = blind.iter().map(|p| p.saw.clone()).collect();
    let blind_flush: Vec<Option<KernelFlush>> = blind.iter().map(|p| p.flush.clone()).collect();
    out.flush_blind
        .extend(compare_flush(cell, &real_flush, &blind_flush));
    let v = compare(cell, &real, &blind_saw);
    if v.is_empty() {
        out.empty.push(format!(
            "{}: its runs show no sawtooth (no drop of Dirty of half a second of writing)",
            cell.label()
        ));
    }
    out.blind.extend(v);
    let seeded: Vec<Predicted> = runs
        .iter()
        .filter_map(|r| seeded_config(dev, &cell, hz, r))
        .map(|c| run_as_measured(&c, &cell, cycles, Restore::NOTHING).0)
        .collect();
    let column = (cell, real.as_slice(), real_flush.as_slice());
    add_column(column, &seeded, &mut out.seeded, &mut out.flush_seeded);
    // the live column against the runs that had their state read
    let read: Vec<&super::SawRunRaw> = dev
        .runs
        .iter()
        .filter(|r| r.cell == cell && r.live.is_some())
        .collect();
    let live: Vec<Predicted> = read
        .iter()
        .filter_map(|r| r.live.as_ref())
        .map(|l| {
            let cfg = live_config(dev, &cell, hz, l);
            run_as_measured(&cfg, &cell, cycles, Restore::NOTHING).0
        })
        .collect();
    let real_read: Vec<Sawtooth> = read
        .iter()
        .map(|r| sawtooth_of(&r.saw, cell.rate))
        .collect();
    let flush_read: Vec<Option<KernelFlush>> = read
        .iter()
        .map(|r| kernel_flush(&r.saw, FlushReason::Background, HARD_LIMIT))
        .collect();
    let column = (cell, real_read.as_slice(), flush_read.as_slice());
    add_column(column, &live, &mut out.live, &mut out.flush_live);
}

/// One column's predictions of a cell (`(cell, real sawtooth, real flusher)`)
/// compared into its sawtooth and flusher verdicts; none where it has none.
fn add_column(
    (cell, real, real_flush): (SawCell, &[Sawtooth], &[Option<KernelFlush>]),
    predicted: &[Predicted],
    saw_out: &mut Vec<SawJudged>,
    flush_out: &mut Vec<SawJudged>,
) {
    if predicted.is_empty() {
        return;
    }
    let saw: Vec<Sawtooth> = predicted.iter().map(|p| p.saw.clone()).collect();
    saw_out.extend(compare(cell, real, &saw));
    let flush: Vec<Option<KernelFlush>> = predicted.iter().map(|p| p.flush.clone()).collect();
    flush_out.extend(compare_flush(cell, real_flush, &flush));
}
