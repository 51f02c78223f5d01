//! Judging wb.database from its raw cells: commit latencies from pgbench's log,
//! the copy's share of what the database leaves, and that nothing was lost.

use oslab_model::Claim;

use super::account::{Account, NEW_SEGMENT, SlowCall, TRACED_FROM, tally};
use super::{CellRaw, Mode, Plan, Raw};
use oslab_harness::check::{Check, Condition, Rule};
use oslab_harness::{Output, finding, measurement};

pub const GUARDED: Check = Check {
    id: "commits-guarded",
    tolerates: &oslab_harness::interference::TIMES,
    text: "Under the sync guard a database's commits beside a bulk copy stay within 20 ms at p99 and 10x their p99 alone, none over 200 ms",
    source: "oslab's target for the sync guard: docs/wcall.md, \"A database beside a bulk copy\"",
};
pub const SHARE: Check = Check {
    id: "copy-share",
    tolerates: &oslab_harness::interference::TIMES,
    text: "Under the sync guard the copy still gets at least 70 % of the bandwidth the database leaves",
    source: "oslab's target for the sync guard: docs/wcall.md, \"A database beside a bulk copy\"",
};
pub const INTACT: Check = Check {
    id: "nothing-lost",
    tolerates: &oslab_harness::interference::ANY,
    text: "No byte of either is lost: a history row per transaction, balances that add up, indexes amcheck accepts, the copy's every byte",
    source: "oslab's target for the sync guard: docs/wcall.md, \"A database beside a bulk copy\"",
};
pub const VANILLA: Check = Check {
    id: "copy-stalls-commits",
    tolerates: &oslab_harness::interference::TIMES,
    text: "Without a governor, a bulk copy on the same disk stalls the database's commits (p99 over 10x alone)",
    source: "docs/wcall.md, \"How it works\", the sync guard (1.5-3.6 s commits measured beside dd)",
};

/// The bounds: p99, p99 against alone, the slowest commit, the copy's share.
const P99_MS: f64 = 20.0;
const P99_TIMES_ALONE: f64 = 10.0;
const MAX_MS: f64 = 200.0;
const SHARE_MIN: f64 = 0.7;

/// Latency at quantile `q` (0..1) of counted values, nearest rank.
pub fn quantile(counts: &[(u64, u64)], q: f64) -> Option<u64> {
    // counts come from a raw file: saturating, a hostile one cannot overflow
    let n = counts.iter().fold(0u64, |a, c| a.saturating_add(c.1));
    if n == 0 {
        return None;
    }
    let rank = ((q * n as f64).ceil() as u64).clamp(1, n);
    let mut seen = 0u64;
    counts.iter().find_map(|(v, c)| {
        seen = seen.saturating_add(*c);
        (seen >= rank).then_some(*v)
    })
}

fn ms(us: Option<u64>) -> f64 {
    us.map_or(f64::NAN, |u| u as f64 / 1000.0)
}

/// Commits over `limit_ms`.
fn over(counts: &[(u64, u64)], limit_ms: f64) -> u64 {
    total(
        counts
            .iter()
            .filter(|(v, _)| *v as f64 > limit_ms * 1000.0)
            .map(|c| c.1),
    )
}

/// The sum, saturating: the counts come from a raw file, which may be anyone's.
fn total(counts: impl Iterator<Item = u64>) -> u64 {
    counts.fold(0, u64::saturating_add)
}

/// The copy's bytes over what the device had left after the database's own:
/// measured bandwidth x span less (device bytes less the copy's).
pub fn copy_share(c: &CellRaw, device_bytes_s: f64) -> Option<f64> {
    let database = c.device_bytes.saturating_sub(c.copy_bytes) as f64;
    let left = device_bytes_s * c.span_s - database;
    (left > 0.0).then(|| c.copy_bytes as f64 / left)
}

fn cells(raw: &Raw, mode: Mode) -> Vec<&CellRaw> {
    raw.cells.iter().filter(|c| c.mode == mode).collect()
}

fn alone_p99(raw: &Raw, run: u64) -> Option<f64> {
    raw.cells
        .iter()
        .find(|c| c.mode == Mode::Alone && c.run == run)
        .map(|c| ms(quantile(&c.latency_counts, 0.99)))
}

/// The modes this raw file measured, in order (runs recorded before the
/// restarted and governed-alone cells have three).
fn modes(raw: &Raw) -> impl Iterator<Item = Mode> + '_ {
    Mode::ALL
        .into_iter()
        .filter(|m| raw.cells.iter().any(|c| c.mode == *m))
}

pub fn judge(plan: &Plan, raw: &Raw) -> Output {
    let mut out = Output::default();
    for mode in modes(raw) {
        let of = cells(raw, mode);
        let per = |f: &dyn Fn(&CellRaw) -> f64| of.iter().map(|c| f(c)).collect::<Vec<_>>();
        let m = mode.name();
        out.measurements.push(measurement(
            &format!("{m}.commit_p99"),
            &format!("{m}: pgbench commit latency p99, per run"),
            "ms",
            per(&|c| ms(quantile(&c.latency_counts, 0.99))),
            1,
            None,
        ));
        out.measurements.push(measurement(
            &format!("{m}.commit_max"),
            &format!("{m}: the slowest commit, per run"),
            "ms",
            per(&|c| ms(c.latency_counts.last().map(|l| l.0))),
            2,
            None,
        ));
        out.measurements.push(measurement(
            &format!("{m}.commits"),
            &format!("{m}: transactions pgbench processed, per run"),
            "commits",
            per(&|c| c.transactions as f64),
            3,
            None,
        ));
        if mode.with_copy() {
            out.measurements.push(measurement(
                &format!("{m}.copy_rate"),
                &format!("{m}: the copy's bytes on the device over the span, per run"),
                "MiB/s",
                per(&|c| c.copy_bytes as f64 / c.span_s.max(1e-9) / (1 << 20) as f64),
                4,
                None,
            ));
        }
    }
    out.findings.push(finding(
        "testbed_bandwidth",
        raw.testbed_measured_bytes_s / (1 << 20) as f64,
        "MiB/s",
        format!(
            "measured on {} (cap {} MiB/s, {}); PostgreSQL {}",
            raw.testbed_device,
            plan.bandwidth >> 20,
            raw.testbed_cap.describe(),
            raw.postgres
        ),
    ));
    for mode in modes(raw) {
        if let Some((f, note)) = kernel_account(raw, mode) {
            out.findings.push(f);
            out.notes.push(note);
        }
    }
    out.notes
        .extend(modes(raw).filter_map(|m| guard_note(raw, m)));
    if let Some(f) = governed_alone(raw) {
        out.findings.push(f);
    }
    out.claims = vec![guarded(raw), share(raw), intact(raw), vanilla(raw)];
    out.notes.push(format!(
        "pgbench -N -c 2 -j 2 -T {} at scale {}, synchronous_commit on, PostgreSQL as shipped; dd if=/dev/zero bs=1M beside it; dirty_bytes 64 MiB, background 32 MiB; governed: oslab wcall daemon{}, PostgreSQL in rt-high, dd in normal. Steal over the cells: {}.",
        plan.duration,
        plan.scale,
        match plan.guard {
            Some(g) => format!(" --sync-guard {}", oslab_units::human_bytes(g).replace(' ', "")),
            None => " with its defaults (the sync guard auto)".into(),
        },
        raw.cells
            .iter()
            .map(|c| format!("{:.1} %", c.steal_pct))
            .collect::<Vec<_>>()
            .join(", ")
    ));
    out
}

/// How many of the server's calls took over 200 ms in `mode`'s cells by the
/// kernel's account, and a note naming the slowest three and what they waited
/// for; None when no cell of the mode kept an account (runs recorded before).
fn kernel_account(raw: &Raw, mode: Mode) -> Option<(oslab_model::Finding, String)> {
    let of = cells(raw, mode);
    let traced: Vec<&Account> = of.iter().filter_map(|c| c.kernel.as_ref()).collect();
    if traced.is_empty() {
        return None;
    }
    let m = mode.name();
    if let Some(why) = traced.iter().find_map(|a| a.not_traced.as_ref()) {
        return Some((
            finding(
                &format!("{m}.server_calls_over_200ms"),
                f64::NAN,
                "calls",
                why.clone(),
            ),
            format!("kernel's account, {m}: {why}"),
        ));
    }
    let over = total(traced.iter().map(|a| a.calls_over_slow));
    let lost = total(traced.iter().map(|a| a.lost));
    let short = if lost > 0 {
        format!("; the tracer lost {lost} records, so this may be short")
    } else {
        String::new()
    };
    let mut slowest: Vec<&SlowCall> = traced.iter().flat_map(|a| &a.slowest).collect();
    slowest.sort_by(|a, b| b.ms.total_cmp(&a.ms));
    let named = if slowest.is_empty() {
        format!(
            "no call of the server took {} ms or more",
            TRACED_FROM.as_millis()
        )
    } else {
        slowest
            .iter()
            .take(3)
            .map(|c| c.describe())
            .collect::<Vec<_>>()
            .join("; ")
    };
    Some((
        finding(
            &format!("{m}.server_calls_over_200ms"),
            over as f64,
            "calls",
            format!(
                "PostgreSQL's system calls over 200 ms in {} runs, by the kernel's account (eBPF){short}",
                traced.len()
            ),
        ),
        format!("kernel's account, {m}: the server's slowest calls: {named}{short}"),
    ))
}

fn guarded(raw: &Raw) -> Claim {
    let g = cells(raw, Mode::Governed);
    let worst_p99 = g
        .iter()
        .map(|c| ms(quantile(&c.latency_counts, 0.99)))
        .fold(f64::NAN, f64::max);
    let worst_ratio = g
        .iter()
        .filter_map(|c| Some(ms(quantile(&c.latency_counts, 0.99)) / alone_p99(raw, c.run)?))
        .fold(f64::NAN, f64::max);
    let slow = total(g.iter().map(|c| over(&c.latency_counts, MAX_MS)));
    // at most each cell's own count, so never more than `slow`
    let own = total(g.iter().map(|c| excused(raw, c)));
    let beyond = slow.saturating_sub(own);
    // a cell without one commit logged has no p99 to compare: it counts against
    // the claim rather than dropping out of the worst case
    let silent = g.iter().filter(|c| c.latency_counts.is_empty()).count();
    let none = || "no governed cell was measured".to_string();
    let conditions = [
        Condition::from_option(
            "worst governed p99",
            "ms",
            Rule::AtMost(P99_MS),
            finite(worst_p99),
            none(),
        ),
        Condition::from_option(
            "worst governed p99 over the same run's alone p99",
            "x",
            Rule::AtMost(P99_TIMES_ALONE),
            finite(worst_ratio),
            none(),
        ),
        Condition::new(
            "governed commits over 200 ms beyond the server's own",
            "",
            Rule::AtMost(0.0),
            beyond as f64,
        ),
        Condition::new(
            "governed runs without a commit logged",
            "",
            Rule::AtMost(0.0),
            silent as f64,
        ),
    ];
    let alone_slow = total(
        cells(raw, Mode::Alone)
            .iter()
            .map(|c| over(&c.latency_counts, MAX_MS)),
    );
    let context = format!(
        "{} governed runs; governed commits over 200 ms: {slow}, of which the server's own: {own} (its new WAL segments by the kernel's account, and as many as it showed restarted with no governor); commits over 200 ms alone, with no copy: {alone_slow}",
        g.len()
    );
    GUARDED.judge(&conditions, &context, |o| {
        if o.holds() {
            "the copy's pages never reach the flusher's long queues, its write back yields whenever its requests wait at the device, and the database's own pages go out chunk by chunk as it writes them, so a commit mostly queues behind a chunk of each (and, when the copy's dirty time expires, behind what the guard let it hold)".into()
        } else if !o.failed(0) && !o.failed(1) && !o.failed(3) && alone_slow > 0 {
            format!(
                "the p99 bounds hold; the slow commits are the database's own: alone, with no copy, {alone_slow} commits took over 200 ms{}",
                slow_kinds(raw)
            )
        } else {
            "a commit still met a full device: the copy's chunks (whole folios, 1 MiB for dd bs=1M) or the database's own write back filled it".into()
        }
    })
}

/// "; by the kernel's account the server's calls over 200 ms were, alone: fsync
/// of a new WAL segment 7; governed: ...", or nothing without accounts.
fn slow_kinds(raw: &Raw) -> String {
    let mut parts = Vec::new();
    let mut new_segments = false;
    for mode in [Mode::Alone, Mode::Governed, Mode::Restarted] {
        let accounts: Vec<&Account> = cells(raw, mode)
            .iter()
            .filter_map(|c| c.kernel.as_ref())
            .filter(|a| a.not_traced.is_none())
            .collect();
        if accounts.is_empty() {
            continue;
        }
        let by = tally(
            accounts
                .iter()
                .flat_map(|a| a.over_slow_by_kind.iter().cloned()),
        );
        new_segments |= by.iter().any(|(k, _)| k.ends_with(NEW_SEGMENT));
        let listed = if by.is_empty() {
            "none".to_string()
        } else {
            by.iter()
                .map(|(k, n)| format!("{k} {n}"))
                .collect::<Vec<_>>()
                .join(", ")
        };
        parts.push(format!("{}: {listed}", mode.name()));
    }
    if parts.is_empty() {
        return String::new();
    }
    format!(
        "; by the kernel's account the server's calls over 200 ms were, {}{}",
        parts.join("; "),
        if new_segments {
            " (PostgreSQL fills each new 16 MiB WAL segment with zeros and fsyncs it while holding its WAL write lock, so every commit waits for it)"
        } else {
            ""
        }
    )
}

/// Clients pgbench runs: each may wait on one call of the server's.
const CLIENTS: u64 = 2;

/// The governed cell's commits over 200 ms that are the server's own and not the
/// governor's: as many as the same run's ungoverned restart showed (its first
/// seconds after a copy's write back), and those behind a new WAL segment's
/// fsync by the kernel's account (every client's commit waits for it), at most
/// the cell's own count.
fn excused(raw: &Raw, governed: &CellRaw) -> u64 {
    let restarted = raw
        .cells
        .iter()
        .find(|c| c.mode == Mode::Restarted && c.run == governed.run)
        .map_or(0, |c| over(&c.latency_counts, MAX_MS));
    let segments = governed.kernel.as_ref().map_or(0, |a| {
        total(
            a.over_slow_by_kind
                .iter()
                .filter(|(k, _)| k.ends_with(NEW_SEGMENT))
                .map(|(_, n)| *n),
        )
    });
    restarted
        .saturating_add(CLIENTS.saturating_mul(segments))
        .min(over(&governed.latency_counts, MAX_MS))
}

/// The governor with no copy beside: the worst governed-alone p99 over the same
/// run's alone p99; None in runs recorded without that cell.
fn governed_alone(raw: &Raw) -> Option<oslab_model::Finding> {
    let of = cells(raw, Mode::GovernedAlone);
    if of.is_empty() {
        return None;
    }
    let worst = of
        .iter()
        .filter_map(|c| Some(ms(quantile(&c.latency_counts, 0.99)) / alone_p99(raw, c.run)?))
        .fold(f64::NAN, f64::max);
    Some(finding(
        "governed_alone.p99_over_alone",
        worst,
        "x",
        format!(
            "what the governor costs a database with no copy beside it: the worst governed-alone commit p99 over the same run's alone p99, {} runs",
            of.len()
        ),
    ))
}

fn finite(x: f64) -> Option<f64> {
    x.is_finite().then_some(x)
}

fn known(x: f64) -> Option<f64> {
    (!x.is_nan()).then_some(x)
}

fn share(raw: &Raw) -> Claim {
    let g = cells(raw, Mode::Governed);
    let worst = g
        .iter()
        .filter_map(|c| copy_share(c, raw.testbed_measured_bytes_s))
        .fold(f64::NAN, f64::min);
    let conditions = [Condition::from_option(
        "the copy's lowest share of what the database left",
        "",
        Rule::AtLeast(SHARE_MIN),
        finite(worst),
        "no governed cell left the copy any bandwidth to share",
    )];
    SHARE.judge(&conditions, &format!("{} governed runs", g.len()), |o| {
        if o.holds() {
            "the guard's write back rests only while its chunks wait, so it fills what the device has left".into()
        } else {
            "the guard's write back rested more than the device needed".into()
        }
    })
}

fn intact(raw: &Raw) -> Claim {
    let mut wrong = Vec::new();
    for c in &raw.cells {
        let at = format!("run {} {}", c.run + 1, c.mode.name());
        if c.data.history_rows != c.transactions {
            wrong.push(format!(
                "{at}: {} history rows for {} transactions",
                c.data.history_rows, c.transactions
            ));
        }
        if !c.data.balances_match {
            wrong.push(format!("{at}: balances do not add up to the history"));
        }
        if c.data.indexes_checked < 3 {
            wrong.push(format!(
                "{at}: {} indexes checked of 3",
                c.data.indexes_checked
            ));
        }
        if c.data.copy_intact == Some(false) {
            wrong.push(format!("{at}: the copy does not read back as written"));
        }
    }
    let conditions = [
        Condition::from_option(
            "cells checked",
            "",
            Rule::AtLeast(1.0),
            (!raw.cells.is_empty()).then_some(raw.cells.len() as f64),
            "no cell was measured",
        ),
        Condition::new(
            "cells with lost or damaged data",
            "",
            Rule::AtMost(0.0),
            wrong.len() as f64,
        ),
    ];
    INTACT.judge(&conditions, "", |o| {
        if o.holds() {
            "the guard only delays the copy's write() calls and writes back what they wrote; the database's commits are its own".into()
        } else {
            wrong.join("; ")
        }
    })
}

fn vanilla(raw: &Raw) -> Claim {
    let v = cells(raw, Mode::Vanilla);
    // a cell in which not one commit finished stalled the most of all
    let least = v
        .iter()
        .filter_map(|c| {
            let alone = alone_p99(raw, c.run)?;
            Some(match quantile(&c.latency_counts, 0.99) {
                Some(us) => us as f64 / 1000.0 / alone,
                None => f64::INFINITY,
            })
        })
        .fold(f64::NAN, f64::min);
    let conditions = [Condition::from_option(
        "least vanilla p99 over the same run's alone p99",
        "x",
        Rule::AtLeast(P99_TIMES_ALONE),
        known(least),
        "no vanilla cell was measured",
    )];
    VANILLA.judge(&conditions, &format!("{} vanilla runs", v.len()), |o| {
        if o.holds() {
            "each commit's fdatasync queues at the device behind the copy's write back, which the flusher sends in long runs of large requests".into()
        } else {
            "the copy did not fill the device's queue in this run".into()
        }
    })
}

/// The sync guard as the governor chose it in each of `mode`'s cells (when it
/// acted, at what size, from what bandwidth); None for cells with no record.
fn guard_note(raw: &Raw, mode: Mode) -> Option<String> {
    let runs: Vec<String> = cells(raw, mode)
        .iter()
        .filter(|c| !c.guard.is_empty())
        .map(|c| {
            format!(
                "run {}: {}",
                c.run + 1,
                super::guard_log::describe(&c.guard)
            )
        })
        .collect();
    (!runs.is_empty()).then(|| {
        format!(
            "the sync guard as the governor chose it, {}: {}",
            mode.name(),
            runs.join("; ")
        )
    })
}
