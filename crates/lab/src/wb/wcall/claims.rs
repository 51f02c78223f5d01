//! The claims of the WCALL evaluation, each judged by [`Check`] on conditions
//! computed from the cells. A claim whose cells were not run (`--set
//! scenarios=...,policies=...`) is not judged, with the cells it needs as the
//! reason. Every "why" is written from the outcome (which condition failed) and
//! the run's facts: the governor's holds, Dirty + Writeback against the limits.

use oslab_model::{Claim, Environment};
use oslab_units::human_bytes;
use oslab_wbsim::policy::Policy;

use super::cell_checks::{judge_all, judge_any, left_out, load_text};
use super::matrix::{Matrix, meets_latency_target};
use super::{Plan, Raw};
use oslab_harness::check::{Check, Condition, Rule, figure};
use oslab_services::cells::record::{Cell, Scenario};
use oslab_services::timed_writer::mib;
use oslab_services::write_latency::{LatencyStats, latency_stats};

pub const VANILLA_STALLS: Check = Check {
    id: "vanilla-stalls-the-high-writer",
    tolerates: &oslab_harness::interference::TIMES,
    text: "On vanilla Linux, lower-priority writers make a high-priority writer's write() stall (often past 200 ms)",
    source: "Kim and Park, \"A Dynamic Allocation of Write Cache to Improve I/O Real-Time Responsiveness in Linux\" (2009), Fig. 2/4; seen again on 6.18 on oslab's testbed",
};
pub const WCALL_KEEPS: Check = Check {
    id: "wcall-keeps-latency",
    tolerates: &oslab_harness::interference::TIMES,
    text: "Under the governor (wcall) the high-priority writer keeps its latency among competitors",
    source: "Kim and Park, \"A Dynamic Allocation of Write Cache to Improve I/O Real-Time Responsiveness in Linux\" (2009), Fig. 5/6; oslab's target for its governor",
};
pub const FAIR_KEEPS: Check = Check {
    id: "wcall-fair-keeps-latency",
    tolerates: &oslab_harness::interference::TIMES,
    text: "Under the governor (wcall-fair) the high-priority writer keeps its latency among competitors",
    source: "Kim and Park, \"A Dynamic Allocation of Write Cache to Improve I/O Real-Time Responsiveness in Linux\" (2009), Fig. 5/6; oslab's target for its governor",
};
pub const NOT_STARVED: Check = Check {
    id: "competitors-not-starved",
    tolerates: &oslab_harness::interference::TIMES,
    text: "The competitors keep at least 80 % of the device bandwidth the high writer leaves them",
    source: "oslab's target for its governor (a global gate starved them in a trial: shares must be per group)",
};
pub const FIG7: Check = Check {
    id: "fig7-no-overhead",
    tolerates: &oslab_harness::interference::TIMES,
    text: "With no competition the governor does not make a writer slower (paper Fig. 7)",
    source: "Kim and Park, \"A Dynamic Allocation of Write Cache to Improve I/O Real-Time Responsiveness in Linux\" (2009), Fig. 7 (nice-4 writer, 1000 writes)",
};

/// A stall: a p99 of 100 ms, or any write over 200 ms (the paper's mark).
const STALL_P99_MS: f64 = 100.0;
/// Throttled at all: a p99 of ten page-cache copies or more.
const THROTTLED_P99_MS: f64 = 10.0;
/// The governor's target: p99 with competitors within 2x of p99 alone.
const TARGET_RATIO: f64 = 2.0;
/// The competitors' share of the bandwidth the RT-55 writer leaves.
const FAIR_SHARE_PCT: f64 = 80.0;
/// "Not slower" allows the run-to-run noise of a page-cache copy: 10 % or 0.2 ms.
const FIG7_REL: f64 = 0.10;
const FIG7_ABS_MS: f64 = 0.2;

/// The group the RT-55 writer is in (group auto: SCHED_FIFO above 50).
const HIGH_GROUP: &str = "rt-high";

pub fn claims(m: &Matrix, plan: &Plan, raw: &Raw, env: &Environment) -> Vec<Claim> {
    let load = load_text(env);
    vec![
        vanilla_stalls(m, plan, raw),
        keeps_latency(m, plan, raw, Policy::Wcall, &WCALL_KEEPS, &load),
        keeps_latency(m, plan, raw, Policy::WcallFair, &FAIR_KEEPS, &load),
        not_starved(m, plan, raw),
        fig7(m, plan, &load),
        super::intact::no_byte_lost(&raw.cells),
    ]
}

/// Per run and scenario with competitors: the first writer's p99 (with the
/// target's limit when the reference is known) and its writes over 200 ms.
fn per_run(m: &Matrix, p: Policy, limit: Option<f64>) -> Vec<String> {
    let mut seen = Vec::new();
    for run in 0..m.runs {
        for s in Scenario::CONTESTED {
            for c in m.of(p, s).filter(|c| c.run == run) {
                let r = latency_stats(&c.first().latency_ms);
                let limit =
                    limit.map_or(String::new(), |l| format!(" (limit {})", figure(l, "ms")));
                seen.push(format!(
                    "run {} {} {}: p99 {}{limit}, {} over 200 ms",
                    run + 1,
                    s.name(),
                    c.start.name(),
                    figure(r.p99, "ms"),
                    r.over_200
                ));
            }
        }
    }
    seen
}

/// The cells of `p` with competitors, with the first writer's figures.
fn contested<'a>(m: &Matrix<'a>, p: Policy) -> Vec<(&'a Cell, LatencyStats)> {
    Scenario::CONTESTED
        .iter()
        .flat_map(|s| m.of(p, *s))
        .map(|c| (c, latency_stats(&c.first().latency_ms)))
        .collect()
}

/// The kernel's free-run point: (hard + background) / 2.
fn freerun(raw: &Raw) -> u64 {
    (raw.dirty_bytes + raw.dirty_background_bytes) / 2
}

fn peak_of<'a>(cells: impl Iterator<Item = &'a Cell>) -> u64 {
    cells.map(Cell::peak_dirty_writeback).max().unwrap_or(0)
}

/// Milliseconds and delayed writes the governor held the groups `which` picks,
/// over `cells`.
fn held<'a>(cells: impl Iterator<Item = &'a Cell>, which: impl Fn(&str) -> bool) -> (f64, u64) {
    cells
        .filter_map(|c| c.governor.as_ref())
        .flat_map(|g| g.groups.iter())
        .filter(|g| which(&g.group))
        .fold((0.0, 0), |(ms, d), g| {
            (ms + g.held_ms, d + g.delayed_writes)
        })
}

fn vanilla_stalls(m: &Matrix, plan: &Plan, raw: &Raw) -> Claim {
    let cells = contested(m, Policy::Vanilla);
    let none = left_out(
        plan,
        "no vanilla cell with competitors (rt45x2, bulkx2) was run",
    );
    let worst_p99 = cells.iter().map(|(_, r)| r.p99).reduce(f64::max);
    let over = (!cells.is_empty()).then(|| cells.iter().map(|(_, r)| r.over_200).sum::<usize>());
    let conditions = [
        Condition::from_option(
            "the RT-55 writer's worst p99 with competitors",
            "ms",
            Rule::AtLeast(STALL_P99_MS),
            worst_p99,
            none.clone(),
        ),
        Condition::from_option(
            "its writes over 200 ms",
            "",
            Rule::Above(0.0),
            over.map(|n| n as f64),
            none,
        ),
    ];
    let peak = peak_of(cells.iter().map(|(c, _)| *c));
    let worst = worst_p99.unwrap_or(0.0);
    judge_any(
        &VANILLA_STALLS,
        &conditions,
        &per_run(m, Policy::Vanilla, None).join("; "),
        |o| {
            if o.holds() {
                format!(
                    "the global dirty limit throttles every writer, whatever its priority: Dirty + Writeback peaked at {:.1} MiB against the {} hard limit",
                    mib(peak),
                    human_bytes(raw.dirty_bytes)
                )
            } else if worst >= THROTTLED_P99_MS {
                format!(
                    "the kernel did throttle the writer (p99 {}, over {THROTTLED_P99_MS:.0} ms), but the pauses stayed short of the paper's marks; a run of {} writes ({:.0} s) per cell can end before they grow",
                    figure(worst, "ms"),
                    plan.writes,
                    plan.writes as f64 * oslab_services::cells::record::PERIOD_MS / 1000.0
                )
            } else if peak < freerun(raw) {
                format!(
                    "Dirty + Writeback peaked at {:.1} MiB, below the kernel's free-run point ({}): the device (measured {:.1} MiB/s) kept up with all writers, so nobody reached the limit",
                    mib(peak),
                    human_bytes(freerun(raw)),
                    raw.testbed_measured_bytes_s / (1 << 20) as f64
                )
            } else {
                format!(
                    "Dirty + Writeback reached {:.1} MiB, past the kernel's free-run point ({}), yet the RT-55 writer's p99 stayed at {}: the kernel's pauses fell on the other writers",
                    mib(peak),
                    human_bytes(freerun(raw)),
                    figure(worst, "ms")
                )
            }
        },
    )
}

/// Why the RT-55 writer was held back under `p`: the governor, the kernel, or
/// neither, from the holds of its group and the peak of Dirty + Writeback.
fn held_back_by(
    p: Policy,
    high_held_ms: f64,
    peak: u64,
    kernel_pauses: Option<usize>,
    raw: &Raw,
    load: &str,
) -> String {
    let fr = freerun(raw);
    // past the free-run point the kernel may pause a writer; its trace says whether
    // it paused this one
    let kernel_paused = peak >= fr && kernel_pauses != Some(0);
    if high_held_ms > 0.0 {
        let how = if p == Policy::Wcall {
            ": Algorithm 1 divides the hard limit by tasks x weight x dirty pages, so shares follow whoever dirtied most, and holds any group over its share for HZ/10, the high-priority group included"
        } else {
            ""
        };
        format!("the governor held the RT-55 writer's own group {high_held_ms:.0} ms in all{how}")
    } else if kernel_paused {
        let how = if p == Policy::Wcall {
            ": Algorithm 1 holds the competitors only near the hard limit, past the point where the kernel already throttles"
        } else {
            ""
        };
        format!(
            "the governor never held the RT-55 writer's group, but Dirty + Writeback reached {:.1} MiB, past the kernel's free-run point ({}), so the kernel throttled it{how}",
            mib(peak),
            human_bytes(fr)
        )
    } else if peak >= fr {
        format!(
            "neither the governor (it never held the RT-55 writer's group) nor the kernel (Dirty + Writeback reached {:.1} MiB, past the free-run point {}, but the kernel's trace shows no balance_dirty_pages sleep of the RT-55 writer) held it back: its slow writes waited elsewhere (CPU, page allocation or device queue){load}",
            mib(peak),
            human_bytes(fr)
        )
    } else {
        format!(
            "neither the governor (it never held the RT-55 writer's group) nor the kernel (Dirty + Writeback peaked at {:.1} MiB, below the free-run point {}) held it back: its slow writes waited elsewhere (CPU or device queue){load}",
            mib(peak),
            human_bytes(fr)
        )
    }
}

/// The kernel's balance_dirty_pages sleeps of the first writer over `cells`;
/// None where no cell was traced.
fn first_writer_pauses<'a>(cells: impl Iterator<Item = &'a Cell>) -> Option<usize> {
    let mut traced = false;
    let mut n = 0;
    for c in cells {
        if let Some(k) = c.kernel.captured() {
            traced = true;
            let tid = c.first().tid;
            n += k
                .pauses
                .iter()
                .filter(|p| p.pid == tid && p.pause_jiffies > 0)
                .count();
        }
    }
    traced.then_some(n)
}

fn keeps_latency(
    m: &Matrix,
    plan: &Plan,
    raw: &Raw,
    p: Policy,
    check: &Check,
    load: &str,
) -> Claim {
    let alone = m.pooled(Policy::Vanilla, Scenario::Alone);
    let alone_p99 = (!alone.is_empty()).then(|| latency_stats(&alone).p99);
    let cells = contested(m, p);
    let none = left_out(
        plan,
        &format!(
            "no {} cell with competitors (rt45x2, bulkx2) was run",
            p.name()
        ),
    );
    let reference = left_out(plan, "the reference cell (vanilla, alone) was not run");
    let worst = alone_p99.and_then(|a| worst_ratio(&cells, a));
    let over = (!cells.is_empty()).then(|| cells.iter().map(|(_, r)| r.over_200).sum::<usize>());
    let conditions = [
        Condition::from_option(
            "the RT-55 writer's worst p99 with competitors, as a multiple of its p99 alone (vanilla)",
            "x",
            Rule::AtMost(TARGET_RATIO),
            worst.map(|w| w.1),
            if alone_p99.is_none() {
                reference
            } else {
                none.clone()
            },
        ),
        Condition::from_option(
            "its writes over 200 ms with competitors",
            "",
            Rule::AtMost(0.0),
            over.map(|n| n as f64),
            none,
        ),
    ];
    let context = latency_context(m, p, &cells, alone_p99);
    let peak = peak_of(cells.iter().map(|(c, _)| *c));
    let (high_ms, _) = held(cells.iter().map(|(c, _)| *c), |g| g == HIGH_GROUP);
    let (others_ms, others_delayed) = held(cells.iter().map(|(c, _)| *c), |g| g != HIGH_GROUP);
    judge_all(check, &conditions, &context, |o| {
        if o.holds() {
            return format!(
                "the over-share groups waited ({others_ms:.0} ms in all, {others_delayed} writes delayed), so the RT-55 writer's writes were not throttled; Dirty + Writeback peaked at {:.1} MiB (free-run point {})",
                mib(peak),
                human_bytes(freerun(raw))
            );
        }
        let mut what = Vec::new();
        if o.failed(0)
            && let Some((c, r)) = worst
        {
            what.push(format!(
                "its p99 reached {} its p99 alone (run {} {})",
                figure(r, "x"),
                c.run + 1,
                c.scenario.name()
            ));
        }
        if o.failed(1) {
            what.push(format!(
                "{} of its writes took over 200 ms",
                over.unwrap_or(0)
            ));
        }
        format!(
            "{}; {}",
            what.join(" and "),
            held_back_by(
                p,
                high_ms,
                peak,
                first_writer_pauses(cells.iter().map(|(c, _)| *c)),
                raw,
                load
            )
        )
    })
}

/// The contested cell whose p99 is the largest multiple of `alone_p99`, and that
/// multiple.
fn worst_ratio<'a>(cells: &[(&'a Cell, LatencyStats)], alone_p99: f64) -> Option<(&'a Cell, f64)> {
    let ratio = |r: &LatencyStats| r.p99 / alone_p99.max(0.001);
    cells
        .iter()
        .max_by(|x, y| ratio(&x.1).total_cmp(&ratio(&y.1)))
        .map(|(c, r)| (*c, ratio(r)))
}

/// How many runs met the latency target, each run's worst figure, and the
/// writer's p99 alone.
fn latency_context(
    m: &Matrix,
    p: Policy,
    cells: &[(&Cell, LatencyStats)],
    alone_p99: Option<f64>,
) -> String {
    let runs_ok = (0..m.runs)
        .filter(|run| {
            cells.iter().filter(|(c, _)| c.run == *run).all(|(c, _)| {
                alone_p99.is_some_and(|a| meets_latency_target(a, &c.first().latency_ms))
            })
        })
        .count();
    let mut parts = Vec::new();
    if !cells.is_empty() {
        let runs = per_run(m, p, alone_p99.map(|a| TARGET_RATIO * a.max(0.001)));
        parts.push(format!(
            "{runs_ok} of {} runs met it: {}",
            m.runs,
            runs.join("; ")
        ));
    }
    if let Some(a) = alone_p99 {
        parts.push(format!(
            "the writer alone (vanilla, all runs pooled) p99 {}",
            figure(a, "ms")
        ));
    }
    parts.join("; ")
}

fn not_starved(m: &Matrix, plan: &Plan, raw: &Raw) -> Claim {
    let cells = contested(m, Policy::WcallFair);
    let device = raw.testbed_measured_bytes_s;
    // per cell: (got, left), both at the device
    let shares: Vec<(f64, f64)> = cells
        .iter()
        .filter_map(|(c, _)| Some((c.competitors_bytes_s()?, c.left_for_competitors(device))))
        .filter(|(_, left)| *left > 0.0)
        .collect();
    let worst = shares
        .iter()
        .copied()
        .min_by(|a, b| (a.0 / a.1).total_cmp(&(b.0 / b.1)));
    let mib_s = |b: f64| b / (1 << 20) as f64;
    let why_none = if cells.is_empty() {
        left_out(
            plan,
            "no wcall-fair cell with competitors (rt45x2, bulkx2) was run",
        )
    } else {
        format!(
            "the RT-55 writer took all of the testbed's measured {:.1} MiB/s, or the device bytes were not measured: nothing to share",
            mib_s(device)
        )
    };
    let conditions = [Condition::from_option(
        "the competitors' worst throughput at the device under wcall-fair, as a share of what the RT-55 writer leaves",
        "%",
        Rule::AtLeast(FAIR_SHARE_PCT),
        worst.map(|(got, left)| got / left * 100.0),
        why_none,
    )];
    let context = worst.map_or(String::new(), |(got, left)| {
        format!(
            "worst {:.1} MiB/s written back of {:.1} MiB/s left (testbed measured {:.1} MiB/s)",
            mib_s(got),
            mib_s(left),
            mib_s(device)
        )
    });
    let (ms, delayed) = held(cells.iter().map(|(c, _)| *c), |g| g != HIGH_GROUP);
    judge_all(&NOT_STARVED, &conditions, &context, |o| {
        if o.holds() {
            format!(
                "held writers resume as soon as their group is under its share: the competitors' groups were held {ms:.0} ms in all ({delayed} writes delayed)"
            )
        } else {
            let (got, left) = worst.unwrap_or((0.0, 0.0));
            format!(
                "the governor held the competitors' groups {ms:.0} ms in all ({delayed} writes delayed), more than the device needed: {:.1} MiB/s of theirs reached it where {:.1} were free",
                mib_s(got),
                mib_s(left)
            )
        }
    })
}

fn fig7(m: &Matrix, plan: &Plan, load: &str) -> Claim {
    let mean_of = |p: Policy| {
        m.has(p, Scenario::Fig7)
            .then(|| oslab_stats::mean(&m.pooled(p, Scenario::Fig7)).unwrap_or(0.0))
    };
    let vanilla = mean_of(Policy::Vanilla);
    let mut governed: Vec<Policy> = [Policy::Wcall, Policy::WcallFair]
        .into_iter()
        .filter(|p| m.has(*p, Scenario::Fig7))
        .collect();
    let none_governed = governed.is_empty();
    if none_governed {
        governed = vec![Policy::Wcall, Policy::WcallFair];
    }
    let allowance = vanilla.map_or(FIG7_ABS_MS, |v| (v * FIG7_REL).max(FIG7_ABS_MS));
    let conditions: Vec<Condition> = governed
        .iter()
        .map(|p| {
            let why = if vanilla.is_none() {
                left_out(plan, "the vanilla fig7-nice4 cell was not run")
            } else {
                left_out(
                    plan,
                    "no governed (wcall, wcall-fair) fig7-nice4 cell was run",
                )
            };
            Condition::from_option(
                format!("{} mean write() above vanilla's", p.name()),
                "ms",
                Rule::AtMost(allowance),
                vanilla.zip(mean_of(*p)).map(|(v, x)| x - v),
                why,
            )
        })
        .collect();
    let means: Vec<String> = std::iter::once(Policy::Vanilla)
        .chain(governed.iter().copied())
        .filter_map(|p| mean_of(p).map(|x| format!("{} {}", p.name(), figure(x, "ms"))))
        .collect();
    let context = fig7_context(&means);
    judge_all(&FIG7, &conditions, &context, |o| {
        let parts: Vec<String> = governed
            .iter()
            .enumerate()
            .filter(|(i, _)| o.holds() || o.failed(*i))
            .map(|(i, p)| fig7_held(m, *p, o.failed(i)))
            .collect();
        if o.holds() {
            format!(
                "a lone group is not held back: {}; the interposer adds only its bookkeeping to each write (wb.wcall-overhead measures it)",
                parts.join("; ")
            )
        } else {
            format!(
                "slower than vanilla beyond the allowance: {}{load}",
                parts.join("; ")
            )
        }
    })
}

/// The means of fig7-nice4 by policy and the allowance.
fn fig7_context(means: &[String]) -> String {
    let allowance = format!(
        "the allowance is the larger of {:.0} % of vanilla's mean and {FIG7_ABS_MS} ms",
        FIG7_REL * 100.0
    );
    if means.is_empty() {
        allowance
    } else {
        format!("mean: {}; {allowance}", means.join(", "))
    }
}

/// How long the governor held the lone writer of fig7-nice4 under `p`, and, when
/// `p` was slower than allowed, whether its holds explain it.
fn fig7_held(m: &Matrix, p: Policy, failed: bool) -> String {
    let p99_of = |p: Policy| latency_stats(&m.pooled(p, Scenario::Fig7)).p99;
    let (ms, delayed) = held(m.of(p, Scenario::Fig7), |_| true);
    let held = if ms > 0.0 {
        format!("the governor held the lone writer's group {ms:.0} ms ({delayed} writes delayed)")
    } else {
        "the governor never held the lone writer's group".to_string()
    };
    if failed {
        format!(
            "{}: {held}, so the extra time is {}its p99 was {} against vanilla's {}",
            p.name(),
            if ms > 0.0 {
                "its holds; "
            } else {
                "not its holds: "
            },
            figure(p99_of(p), "ms"),
            figure(p99_of(Policy::Vanilla), "ms")
        )
    } else {
        format!("{}: {held}", p.name())
    }
}
