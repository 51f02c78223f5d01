//! Judging the validation: every real cell simulated from the state it began in,
//! each figure's real runs beside the predictions, the targets, the claims, the
//! plots. Pure: from the plan, the raw data and the environment.

use oslab_model::{Axis, Environment, Plot, Scale, Series, SeriesStyle};
use oslab_wbsim::config::Kernel;

use super::figures::{self, Compared, Fig, Verdict};
use super::groups::{Group, groups};
use super::sawtooth_cells::SawDeviceRaw;
use super::sawtooth_cells::judge::{Restore, SawJudged, SawVerdicts};
use super::{Plan, Raw};
use oslab_harness::check::{Check, Condition, Rule, figure};
use oslab_harness::{Output, finding};
use oslab_services::cells::record::Scenario;

const PREDICTS: Check = Check {
    id: "sim-predicts-testbed",
    tolerates: &oslab_harness::interference::TIMES,
    text: "The simulator predicts the contested writers' write() latency on the testbed: p50, p90, p99 within 30 % (1 ms below 3 ms), writes over 200 ms within max(3, 30 %), the competitors' throughput within 15 %, for every workload and policy",
    source: "docs/sim-scenarios.md, \"Validation: oslab sim validate\" (the targets)",
};

/// The headline: the prediction a user gets, made before the cell's run is read.
const BLIND: Check = Check {
    id: "sim-predicts-testbed-blind",
    tolerates: &oslab_harness::interference::TIMES,
    text: "The simulator predicts this machine blind (from the writers, the limits, the device's probed bandwidth and the page costs, nothing measured in any run): at least 95 % of the targeted figures of every cell run (contested writers at the main setting and at the sweep's when it runs, and one writer's Dirty sawtooth on the root disk and the testbed) within target",
    source: "docs/sim-scenarios.md, \"Validation: oslab sim validate\" (the blind prediction's targets)",
};

/// Every cell from the live state read just before it: what a user's `oslab
/// sim run --live` starts from.
const LIVE: Check = Check {
    id: "sim-predicts-testbed-live",
    tolerates: &oslab_harness::interference::TIMES,
    text: "The simulator predicts this machine from its live state read just before each run (the writers' description and the kernel's estimates as `oslab sim run --live` reads them, nothing else of the run): at least 95 % of the targeted figures of every cell run (contested writers and one writer's Dirty sawtooth) within target",
    source: "docs/sim-scenarios.md, \"Validation: oslab sim validate\" (the live column)",
};

const SWEEP: Check = Check {
    id: "sim-predicts-sweep",
    tolerates: &oslab_harness::interference::TIMES,
    text: "The same targets hold at settings no test names (device 10 and 80 MiB/s, dirty_bytes 32 and 256 MiB)",
    source: "docs/sim-scenarios.md, \"Validation: oslab sim validate\" (the sweep: settings not named in any test)",
};

/// The kernel's tick rate: as traced, else as the machine's config says, else 250.
fn hz_of(raw: &Raw, env: &Environment) -> u64 {
    raw.settings
        .iter()
        .flat_map(|s| &s.cells)
        .find_map(|c| c.cell.kernel.captured().map(|k| k.hz as u64))
        .or_else(|| {
            raw.sawtooth
                .iter()
                .flat_map(|d| &d.runs)
                .find_map(|r| r.saw.kernel.captured().map(|k| k.hz as u64))
        })
        // a recorded tick rate is untrusted: the kernel's are 100 to 1000
        .filter(|h| (100..=1000).contains(h))
        .or_else(|| env.machine.kernel.hz.value().map(|h| h.hz as u64))
        .unwrap_or(250)
}

fn verdict_text(v: &Verdict, unit: &str) -> String {
    let range = if v.real_min < v.real_max {
        format!(" ({}-{})", figure(v.real_min, ""), figure(v.real_max, ""))
    } else {
        String::new()
    };
    let target = match v.of_allowance {
        None => "reported".to_string(),
        Some(_) if v.holds() => "within target".to_string(),
        Some(a) => format!("missed ({a:.1}x the allowance)"),
    };
    let err = if v.error.is_finite() {
        format!("{:+.0} %", v.error * 100.0)
    } else {
        "n/a".into()
    };
    format!(
        "real {}{range}, predicted {}, error {err}, {target}",
        figure(v.real_median, unit),
        figure(v.predicted, unit)
    )
}

/// A finding's value: the prediction's error as its target measures it, a count's
/// difference or a percentage of the real median (NaN when that is 0).
fn error_figure(f: Fig, v: &Verdict) -> (f64, &'static str) {
    match f.target() {
        figures::Target::Count => (v.predicted - v.real_median, "count"),
        _ if v.error.is_finite() => (v.error * 100.0, "%"),
        _ => (f64::NAN, "%"),
    }
}

/// The targeted figures that missed, as "scenario policy figure: real, predicted".
fn misses(groups: &[&Group], fig: Fig) -> Vec<String> {
    missed(groups, fig, |g, f| g.compared(f))
}

fn missed(groups: &[&Group], fig: Fig, compare: impl Fn(&Group, Fig) -> Compared) -> Vec<String> {
    groups
        .iter()
        .filter_map(|g| {
            let v = compare(g, fig).verdict()?;
            (!v.holds()).then(|| {
                format!(
                    "{} {}: real {}, predicted {}",
                    g.key(),
                    fig.key(),
                    figure(v.real_median, ""),
                    figure(v.predicted, "")
                )
            })
        })
        .collect()
}

pub(super) const TARGETED: [Fig; 5] = [Fig::P50, Fig::P90, Fig::P99, Fig::Over200, Fig::Throughput];

fn claim(check: &Check, groups: &[&Group], what: &str) -> oslab_model::Claim {
    if groups.is_empty() {
        return check.not_judged(
            "no cell missing a target",
            format!("no {what} cell ran (or the run was skipped)"),
        );
    }
    let conditions: Vec<Condition> = TARGETED
        .iter()
        .map(|f| {
            Condition::new(
                format!("cells missing the {} target", f.key()),
                "",
                Rule::Exactly(0.0),
                misses(groups, *f).len() as f64,
            )
        })
        .collect();
    let all: Vec<String> = TARGETED.iter().flat_map(|f| misses(groups, *f)).collect();
    check.judge(
        &conditions,
        &format!("{} workload x policy cells compared", groups.len()),
        |o| {
            if o.holds() {
                "every prediction fell inside the real runs' range or within the target of their median".into()
            } else {
                format!("missed: {}", all.join("; "))
            }
        },
    )
}

fn latency_plot(g: &Group) -> Option<Plot> {
    let (i, sim) = g.cells.first()?;
    let real = &g.setting.cells[*i].cell.first().latency_ms;
    let pred = &sim.outcome.writers.first()?.latency_ms;
    let pts = |v: &[f64]| v.iter().enumerate().map(|(k, l)| [k as f64, *l]).collect();
    Some(Plot {
        id: format!("latency-{}", g.key()),
        title: format!(
            "RT-55 write() latency, {} under {}: real (run 1) and predicted",
            g.scenario.name(),
            g.policy.name()
        ),
        x: Axis::new("write", "", Scale::Linear),
        y: Axis::new("latency", "ms", Scale::Linear),
        series: vec![
            Series {
                name: "real".into(),
                style: SeriesStyle::Line,
                points: pts(real),
            },
            Series {
                name: "predicted".into(),
                style: SeriesStyle::Line,
                points: pts(pred),
            },
        ],
        markers: vec![],
        x_labels: vec![],
    })
}

fn ratelimit_plot(g: &Group) -> Option<Plot> {
    let (_, sim) = g.cells.first()?;
    let t = sim.traced.as_ref().filter(|t| !t.ratelimit.is_empty())?;
    let mib = (1u64 << 20) as f64;
    Some(Plot {
        id: format!("ratelimit-{}", g.key()),
        title: format!(
            "dirty_ratelimit, {} under {}: the kernel's and the model's",
            g.scenario.name(),
            g.policy.name()
        ),
        x: Axis::new("time", "s", Scale::Linear),
        y: Axis::new("dirty_ratelimit", "MiB/s", Scale::Linear),
        series: vec![
            Series {
                name: "kernel".into(),
                style: SeriesStyle::Line,
                points: t.ratelimit.iter().map(|(x, r)| [*x, r / mib]).collect(),
            },
            Series {
                name: "model".into(),
                style: SeriesStyle::Line,
                points: sim
                    .outcome
                    .ratelimits
                    .iter()
                    .map(|r| [r.t_s, r.dirty_ratelimit / mib])
                    .collect(),
            },
        ],
        markers: vec![],
        x_labels: vec![],
    })
}

pub fn judge(plan: &Plan, raw: &Raw, env: &Environment) -> Output {
    let hz = hz_of(raw, env);
    // the release that ran the cells: where rules differ, the model takes its
    let kernel = Kernel::of_uname(&env.machine.kernel.release);
    let all = groups(raw, hz, kernel);
    let mut out = Output::default();
    for g in &all {
        judge_group(g, &mut out);
    }
    let main: Vec<&Group> = all
        .iter()
        .filter(|g| g.setting.spec.name == "main")
        .collect();
    let sweep: Vec<&Group> = all
        .iter()
        .filter(|g| g.setting.spec.name != "main")
        .collect();
    let everything: Vec<&Group> = all.iter().collect();
    let restore = Restore::of_machine(env.machine.dirty.dirty_writeback_centisecs);
    let saw = super::sawtooth_cells::judge::judge(&raw.sawtooth, hz, plan.sawtooth_cycles, restore);
    out.findings.extend(saw_findings(&saw));
    out.claims.push(blind_claim(&everything, &saw.blind));
    let reads = LiveReads::of(raw);
    match share_claim(&LIVE_COLUMN, &everything, &saw.live) {
        Some(c) => out.claims.push(c),
        None => {
            if let Some(why) = &reads.first_refusal {
                out.claims.push(LIVE.not_judged(
                    "95 % of the targeted figures within target",
                    format!("the live state was read before no run: {why}"),
                ));
            }
        }
    }
    out.claims.push(claim(&PREDICTS, &main, "testbed"));
    if raw.settings.iter().any(|s| s.spec.name != "main") {
        out.claims.push(claim(&SWEEP, &sweep, "sweep"));
    }
    out.notes = super::judge_notes::notes(raw, &all, hz);
    out.notes.push(blind_note(&all));
    out.notes.extend(saw_notes(&saw, &raw.sawtooth));
    out.notes.extend(reads.note());
    out
}

/// How the live reads before the runs went: read, not read (and why), or read
/// without the probe's flusher pass (its estimates then the steady state's).
#[derive(Debug, Default)]
struct LiveReads {
    read: usize,
    not_read: usize,
    first_refusal: Option<String>,
    /// Read, but with no traced avg_write_bandwidth.
    untraced: usize,
}

impl LiveReads {
    fn of(raw: &Raw) -> LiveReads {
        let mut r = LiveReads::default();
        let runs = raw
            .settings
            .iter()
            .flat_map(|s| &s.cells)
            .map(|c| (&c.live, &c.live_not_read))
            .chain(
                raw.sawtooth
                    .iter()
                    .flat_map(|d| &d.runs)
                    .map(|r| (&r.live, &r.live_not_read)),
            );
        for (live, not_read) in runs {
            match (live, not_read) {
                (Some(l), _) => {
                    r.read += 1;
                    if l.avg_write_bw.source != crate::sim::live::Source::Traced {
                        r.untraced += 1;
                    }
                }
                (None, Some(why)) => {
                    r.not_read += 1;
                    r.first_refusal.get_or_insert_with(|| why.clone());
                }
                (None, None) => {}
            }
        }
        r
    }

    /// None where no run was meant to be read (raw files from before).
    fn note(&self) -> Option<String> {
        if self.read + self.not_read == 0 {
            return None;
        }
        let mut s = format!(
            "the live state (what `sim run --live` starts from) was read before {} of {} runs",
            self.read,
            self.read + self.not_read
        );
        if let Some(why) = &self.first_refusal {
            s += &format!("; not before {} ({why})", self.not_read);
        }
        if self.untraced > 0 {
            s += &format!(
                "; in {} the probe's flusher pass was not seen, so the steady state stood in for the estimates it did not show",
                self.untraced
            );
        }
        Some(s)
    }
}

/// A group's findings, seeded then blind, and its plots where it ran contested
/// at the main setting.
fn judge_group(g: &Group, out: &mut Output) {
    let seeded = Fig::ALL.map(|f| (format!("{}.{}", g.key(), f.key()), g.compared(f)));
    let blind = TARGETED.map(|f| {
        (
            format!("blind.{}.{}", g.key(), f.key()),
            g.compared_blind(f),
        )
    });
    let live = TARGETED.map(|f| (format!("live.{}.{}", g.key(), f.key()), g.compared_live(f)));
    for (name, c) in seeded.into_iter().chain(blind).chain(live) {
        if let Some(v) = c.verdict() {
            let (value, unit) = error_figure(c.fig, &v);
            out.findings
                .push(finding(&name, value, unit, verdict_text(&v, c.fig.unit())));
        }
    }
    let contested = g.scenario != Scenario::Alone;
    if g.setting.spec.name == "main" && contested {
        out.plots.extend(latency_plot(g));
        out.plots.extend(ratelimit_plot(g));
    }
}

/// The sawtooth cells' findings: the Dirty figures blind and seeded, then the
/// flusher's.
fn saw_findings(saw: &SawVerdicts) -> Vec<oslab_model::Finding> {
    let mut out = Vec::new();
    for (prefix, judged) in [
        ("blind.", &saw.blind),
        ("live.", &saw.live),
        ("", &saw.seeded),
        ("blind.", &saw.flush_blind),
        ("live.", &saw.flush_live),
        ("", &saw.flush_seeded),
    ] {
        out.extend(judged.iter().map(|j| saw_finding(prefix, j)));
    }
    out
}

/// What the sawtooth cells' notes say: how they fared, the cells not judged, and
/// the devices whose cells did not run or whose testbed was not taken down.
fn saw_notes(saw: &SawVerdicts, devices: &[SawDeviceRaw]) -> Vec<String> {
    let mut notes = Vec::new();
    if !saw.blind.is_empty() {
        notes.push(saw.note());
    }
    if !saw.flush_blind.is_empty() {
        notes.push(saw.flush_note());
    }
    if !saw.empty.is_empty() {
        notes.push(format!(
            "sawtooth cells not judged: {}",
            saw.empty.join("; ")
        ));
    }
    for d in devices {
        if let Some(e) = &d.error {
            notes.push(format!(
                "the sawtooth cells on the {} did not run: {e}",
                d.device.name()
            ));
        }
        if !d.teardown_errors.is_empty() {
            notes.push(format!(
                "taking the sawtooth cells' testbed down failed (`oslab restore` undoes what is left): {}",
                d.teardown_errors.join("; ")
            ));
        }
    }
    notes
}

/// A sawtooth cell's figure, named with `prefix` ("blind." or none): predicted
/// less the real median, in the figure's unit (a percentage of a trough near zero
/// says nothing).
fn saw_finding(prefix: &str, j: &SawJudged) -> oslab_model::Finding {
    let name = format!("{prefix}{}", j.key());
    match &j.verdict {
        Some(v) => finding(
            &name,
            v.predicted - v.real_median,
            j.fig.unit(),
            verdict_text(v, j.fig.unit()),
        ),
        None => finding(
            &name,
            f64::NAN,
            j.fig.unit(),
            format!("{}; missed", j.miss_text(prefix)),
        ),
    }
}

/// One way of predicting every cell, judged by the share of its targeted
/// figures within target: the blind one (the headline) or the one from the
/// live state.
struct Column {
    check: &'static Check,
    /// "blind", "from the live state": how the condition names it.
    words: &'static str,
    /// "blind.", "live.": the findings' prefix.
    prefix: &'static str,
    /// What the why says when nothing missed.
    all_held: &'static str,
    compare: fn(&Group, Fig) -> Compared,
}

const BLIND_COLUMN: Column = Column {
    check: &BLIND,
    words: "blind",
    prefix: "blind.",
    all_held: "every blind prediction fell inside the real runs' range or within the target of their median",
    compare: |g, f| g.compared_blind(f),
};

const LIVE_COLUMN: Column = Column {
    check: &LIVE,
    words: "from the live state",
    prefix: "live.",
    all_held: "every prediction from the live state fell inside the real runs' range or within the target of their median",
    compare: |g, f| g.compared_live(f),
};

/// The share of `col`'s targeted figures within target over every cell that
/// has them (contested groups and sawtooth cells); each miss named. None where
/// no cell has one.
fn share_claim(col: &Column, groups: &[&Group], saw: &[SawJudged]) -> Option<oslab_model::Claim> {
    let verdicts: Vec<bool> = groups
        .iter()
        .flat_map(|g| {
            TARGETED
                .iter()
                .filter_map(|f| (col.compare)(g, *f).verdict())
        })
        .map(|v| v.holds())
        .chain(saw.iter().map(SawJudged::holds))
        .collect();
    if verdicts.is_empty() {
        return None;
    }
    let held = verdicts.iter().filter(|v| **v).count();
    let share = held as f64 / verdicts.len() as f64;
    let misses: Vec<String> = TARGETED
        .iter()
        .flat_map(|f| missed(groups, *f, col.compare))
        .chain(
            saw.iter()
                .filter(|j| !j.holds())
                .map(|j| j.miss_text(col.prefix)),
        )
        .collect();
    let judged_groups = groups
        .iter()
        .filter(|g| {
            TARGETED
                .iter()
                .any(|f| (col.compare)(g, *f).verdict().is_some())
        })
        .count();
    let cells = judged_groups + super::sawtooth_cells::judge::cells(saw);
    let condition = Condition::new(
        format!("the share of targeted figures within target, {}", col.words),
        "",
        Rule::AtLeast(0.95),
        share,
    );
    Some(col.check.judge(
        &[condition],
        &format!("{held} of {} figures over {cells} cells", verdicts.len()),
        |o| match (o.holds(), misses.is_empty()) {
            (_, true) => col.all_held.into(),
            (true, false) => format!("within the share; missed: {}", misses.join("; ")),
            (false, false) => format!("missed: {}", misses.join("; ")),
        },
    ))
}

/// The headline: the blind column's claim, not judged where no cell ran.
fn blind_claim(groups: &[&Group], saw: &[SawJudged]) -> oslab_model::Claim {
    share_claim(&BLIND_COLUMN, groups, saw).unwrap_or_else(|| {
        BLIND.not_judged("95 % of the targeted figures within target", "no cell ran")
    })
}

/// How the blind prediction fared beside the one from the carried state: the
/// targeted figures within target of each, and the blind one's misses.
fn blind_note(groups: &[Group]) -> String {
    let all: Vec<&Group> = groups.iter().collect();
    let count = |compare: &dyn Fn(&Group, Fig) -> Compared| -> (usize, usize) {
        let verdicts: Vec<Verdict> = all
            .iter()
            .flat_map(|g| TARGETED.iter().filter_map(|f| compare(g, *f).verdict()))
            .collect();
        let held = verdicts.iter().filter(|v| v.holds()).count();
        (held, verdicts.len())
    };
    let (seeded, n) = count(&|g, f| g.compared(f));
    let (blind, _) = count(&|g, f| g.compared_blind(f));
    let misses: Vec<String> = TARGETED
        .iter()
        .flat_map(|f| missed(&all, *f, |g, x| g.compared_blind(x)))
        .collect();
    let tail = if misses.is_empty() {
        String::new()
    } else {
        format!("; blind misses: {}", misses.join("; "))
    };
    format!(
        "the model's accuracy without the kernel's state (the blind.* findings: each cell simulated again from what a user could describe: its writers over the real cell's length, the limits, the page costs, the device's measured bandwidth, no other disk's write back, and the kernel's estimates where a simulated warm-up of the same writers settles them, the simulator's steady-state start): {blind} of {n} targeted figures within target, against {seeded} of {n} when it starts from the state the kernel carried into the cell{tail}"
    )
}
