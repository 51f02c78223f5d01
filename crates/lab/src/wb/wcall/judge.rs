//! Judging the matrix: per cell the latency figures of the first writer, the
//! competitors' throughput, what the governor held back, the simulator's
//! prediction beside; then the claims ([`super::claims`]), the plots
//! ([`super::plots`]) and the notes. Pure: everything comes from the plan, the
//! raw data and the environment.

use oslab_model::Environment;
use oslab_units::human_bytes;
use oslab_wbsim::config::Kernel;
use oslab_wbsim::policy::Policy;

use super::matrix::Matrix;
use super::predict::Predicted;
use super::{Plan, Raw};
use crate::wb::common::stall_causes;
use oslab_harness::check::figure;
use oslab_harness::{Output, finding, measurement};
use oslab_services::cells::record::{Cell, POLICIES, Scenario, Start};
use oslab_services::write_latency::{LatencyStats, latency_stats};

/// The latency figures in words, each with the digits its size needs, so a
/// maximum never prints below the p99 it bounds.
pub fn stats_text(r: &LatencyStats) -> String {
    format!(
        "mean {}, p50 {}, p90 {}, p99 {}, max {} ms",
        figure(r.mean, ""),
        figure(r.p50, ""),
        figure(r.p90, ""),
        figure(r.p99, ""),
        figure(r.max, "")
    )
}

fn mib_s(bytes_s: f64) -> f64 {
    bytes_s / (1 << 20) as f64
}

/// What the governor held back in the cells of `p` x `s`, per group over all
/// runs, and how its coordinator fared; None under vanilla.
fn governor_note(m: &Matrix, p: Policy, s: Scenario) -> Option<String> {
    let governors: Vec<_> = m.of(p, s).filter_map(|c| c.governor.as_ref()).collect();
    let mut held: Vec<(String, f64, u64, u64)> = Vec::new();
    for g in governors
        .iter()
        .flat_map(|g| g.groups.iter().filter(|x| x.writes > 0))
    {
        match held.iter_mut().find(|h| h.0 == g.group) {
            Some(h) => {
                h.1 += g.held_ms;
                h.2 += g.delayed_writes;
                h.3 += g.writes;
            }
            None => held.push((g.group.clone(), g.held_ms, g.delayed_writes, g.writes)),
        }
    }
    if held.is_empty() {
        return None;
    }
    let mut parts: Vec<String> = held
        .iter()
        .map(|(g, ms, d, w)| format!("{g} held {ms:.0} ms in all, {d} of {w} writes delayed"))
        .collect();
    let passes: u64 = governors.iter().map(|g| g.passes).sum();
    let busy_us: f64 = governors
        .iter()
        .map(|g| g.pass_mean_us * g.passes as f64)
        .sum();
    let longest = governors.iter().map(|g| g.pass_max_us).fold(0.0, f64::max);
    parts.push(format!(
        "coordinator: {passes} passes of {:.0} µs on average, the longest {longest:.0} µs",
        busy_us / passes.max(1) as f64
    ));
    Some(format!(
        "{}.{} ({} run(s)): {}",
        p.name(),
        s.name(),
        m.runs,
        parts.join("; ")
    ))
}

/// The p99 finding's words: the figures and the writes over 200 ms per run, or
/// that the run never measured this cell (its figures are none, not 0 ms).
fn latency_detail(m: &Matrix, p: Policy, s: Scenario, r: &LatencyStats) -> String {
    if r.writes == 0 {
        return format!(
            "not measured: this run has no {}.{} cell",
            p.name(),
            s.name()
        );
    }
    let per_run: Vec<String> = (0..m.runs)
        .flat_map(|k| m.of(p, s).filter(move |c| c.run == k))
        .map(|c| latency_stats(&c.first().latency_ms).over_200.to_string())
        .collect();
    format!(
        "{}; over 200 ms: {} (per run: {})",
        stats_text(r),
        r.over_200,
        per_run.join(", ")
    )
}

/// The measurement and findings of one cell kind (policy x scenario), and its
/// mean latency (measured, then simulated) for the Fig. 6 bars.
fn cell_figures(
    (m, raw, seed): (&Matrix, &Raw, u64),
    predicted: &Predicted,
    p: Policy,
    s: Scenario,
    out: &mut Output,
    rows_mean: &mut Vec<(String, f64)>,
) {
    let lat = m.pooled(p, s);
    let key = format!("{}.{}", p.name(), s.name());
    let who = if s == Scenario::Fig7 {
        "the nice-4 writer"
    } else {
        "the SCHED_FIFO 55 writer"
    };
    let r = latency_stats(&lat);
    out.measurements.push(measurement(
        &format!("latency.{key}"),
        &format!(
            "every write() of 512 KiB by {who}, {} run(s) pooled",
            m.runs
        ),
        "ms",
        lat,
        seed,
        None,
    ));
    out.findings.push(finding(
        &format!("p99_ms.{key}"),
        r.p99,
        "ms",
        latency_detail(m, p, s, &r),
    ));
    rows_mean.push((key.clone(), r.mean));
    if Scenario::CONTESTED.contains(&s) {
        let device = raw.testbed_measured_bytes_s;
        let got: Vec<f64> = m.of(p, s).filter_map(Cell::competitors_bytes_s).collect();
        let left: Vec<f64> = m.of(p, s).map(|c| c.left_for_competitors(device)).collect();
        if let (Some(mean), Some(left)) = (oslab_stats::mean(&got), oslab_stats::mean(&left)) {
            out.findings.push(finding(
                &format!("competitors_mib_s.{key}"),
                mib_s(mean),
                "MiB/s",
                format!(
                    "both competitors' files written back to the device over the RT-55 writer's span; the device leaves them {:.1} MiB/s ({:.0} %)",
                    mib_s(left),
                    if left > 0.0 { mean / left * 100.0 } else { 0.0 }
                ),
            ));
        }
    }
    kernel_figures(m, p, s, &key, out);
    if let Some(note) = governor_note(m, p, s) {
        out.notes.push(note);
    }
    let sim = predicted.pooled(m.of(p, s));
    if !sim.is_empty() {
        let predicted = latency_stats(&sim);
        let error = if r.p99 > 0.0 {
            format!("{:+.0} %", (predicted.p99 - r.p99) / r.p99 * 100.0)
        } else {
            "n/a".into()
        };
        out.findings.push(finding(
            &format!("sim.p99_ms.{key}"),
            predicted.p99,
            "ms",
            format!(
                "simulator, each cell from the state the kernel carried into it (seeded as `oslab sim validate` seeds its cells; page costs the simulator's defaults): {}, over 200 ms {}; measured p99 {} ms, error {error}",
                stats_text(&predicted),
                predicted.over_200,
                figure(r.p99, "")
            ),
        ));
        rows_mean.push((format!("sim {key}"), predicted.mean));
    }
}

/// "4 scenarios" for the whole set, "1 scenario of 4 (rt45x2)" for part of it.
fn counted(names: &[&str], all: usize, one: &str, many: &str) -> String {
    let word = if names.len() == 1 { one } else { many };
    if names.len() == all {
        format!("{} {word}", names.len())
    } else {
        format!("{} {word} of {all} ({})", names.len(), names.join(", "))
    }
}

/// What ran: runs x the scenarios and policies present, the workload, the knobs.
fn matrix_note(m: &Matrix, plan: &Plan, raw: &Raw) -> String {
    let (scenarios, policies) = m.present();
    let s: Vec<&str> = scenarios.iter().map(|s| s.name()).collect();
    let p: Vec<&str> = policies.iter().map(|p| p.name()).collect();
    format!(
        "{} run(s) x {} x {}; {} writes of 512 KiB every 20 ms by the RT-55 writer; dirty_bytes {}, dirty_background_bytes {}; groups from each writer's scheduling class",
        m.runs,
        counted(&s, Scenario::ALL.len(), "scenario", "scenarios"),
        counted(&p, POLICIES.len(), "policy", "policies"),
        plan.writes,
        human_bytes(raw.dirty_bytes),
        human_bytes(raw.dirty_background_bytes)
    )
}

/// What a run without `--quick`, at its default settings, would add to this
/// one's cells, if anything (only for the scenarios and policies this run has).
fn full_run_adds(plan: &Plan) -> Option<String> {
    use oslab_services::cells::settings::{RUNS, WRITES};
    let mut adds = Vec::new();
    let contested = plan
        .scenarios
        .iter()
        .any(|s| Scenario::CONTESTED.contains(s));
    if contested && !plan.starts.contains(&Start::Together) {
        adds.push("competitors that start together with the high writer".to_string());
    }
    let governed = plan.policies.iter().any(|p| *p != Policy::Vanilla);
    if governed && plan.scenarios.contains(&Scenario::Alone) && !plan.alone_governed {
        adds.push("the high writer alone under the governed policies".to_string());
    }
    if plan.writes < WRITES.full {
        adds.push(format!(
            "{} writes a cell, not {}, so longer pauses can show",
            WRITES.full, plan.writes
        ));
    }
    if (plan.runs as u64) < RUNS.full {
        adds.push(format!(
            "{} runs of the matrix, not {}",
            RUNS.full, plan.runs
        ));
    }
    (!adds.is_empty()).then(|| {
        format!(
            "a full run (without --quick, default settings) adds: {}",
            adds.join("; ")
        )
    })
}

/// What this machine's memory does to every writer, measured on its own: the
/// first touch of fresh memory against a second, and whether the governor's
/// recycling of written-back pages was on for the governed cells.
pub fn memory_note(raw: &Raw, env: &Environment) -> String {
    let touch = raw.first_touch.map_or(String::new(), |t| {
        format!(
            "touching {} of fresh memory took {:.2} µs a page the first time and {:.2} µs again",
            human_bytes(t.bytes),
            t.first_ns_per_page / 1e3,
            t.again_ns_per_page / 1e3
        )
    });
    let machine = match (raw.page_reporting, &env.machine.hypervisor.name) {
        (true, _) => {
            "this machine reports free memory to its hypervisor (free page reporting), so a write into memory the host took back pays a host page fault per page; the governor drops written-back pages of governed files (its --recycle, on here by default) so new writes reuse backed memory, and the governed cells measure that; vanilla cells get no such help"
        }
        (false, Some(_)) => {
            "this machine runs under a hypervisor without free page reporting: freed memory stays backed, and the governor leaves the page cache alone (--recycle auto)"
        }
        (false, None) => {
            "this machine shows no hypervisor: no host page faults arise, and the governor leaves the page cache alone (--recycle auto)"
        }
    };
    if touch.is_empty() {
        machine.to_string()
    } else {
        format!("{touch}: {machine}")
    }
}

/// Where the first writer's time in write() went, by the kernel's account, all
/// runs of the cell pooled: the share of each cause in its writes over 20 ms,
/// and how long the kernel paused it at most.
fn kernel_figures(m: &Matrix, p: Policy, s: Scenario, key: &str, out: &mut Output) {
    let cells: Vec<&Cell> = m
        .of(p, s)
        .filter(|c| c.kernel.captured().is_some())
        .collect();
    if cells.is_empty() {
        return;
    }
    let calls: Vec<&oslab_trace::records::WriteCall> = cells
        .iter()
        .flat_map(|c| stall_causes::calls_of(&c.kernel, &[c.first().tid]))
        .collect();
    out.findings
        .extend(stall_causes::findings(&format!("kernel.{key}"), &calls));
    let longest = cells
        .iter()
        .filter_map(|c| {
            let k = c.kernel.captured()?;
            k.pauses
                .iter()
                .filter(|x| x.pid == c.first().tid && x.pause_jiffies > 0)
                .map(|x| oslab_trace::analysis::jiffies_ns(x.pause_jiffies, k.hz) as f64 / 1e6)
                .reduce(f64::max)
        })
        .reduce(f64::max);
    if let Some(ms) = longest {
        out.findings.push(finding(
            &format!("kernel.{key}.max_pause_ms"),
            ms,
            "ms",
            "the longest balance_dirty_pages pause of the first writer",
        ));
    }
}

pub fn judge(plan: &Plan, raw: &Raw, env: &Environment) -> Output {
    let m = Matrix::new(&raw.cells);
    let (scenarios, policies) = m.present();
    let mut out = Output::default();
    let mut rows_mean = Vec::new();
    let predicted = Predicted::new(plan, raw, Kernel::of_uname(&env.machine.kernel.release));
    for &s in &scenarios {
        for &p in &policies {
            cell_figures(
                (&m, raw, env.seed),
                &predicted,
                p,
                s,
                &mut out,
                &mut rows_mean,
            );
        }
    }
    out.findings.push(finding(
        "testbed_measured_mib_s",
        mib_s(raw.testbed_measured_bytes_s),
        "MiB/s",
        format!("cap {}/s", human_bytes(plan.bandwidth)),
    ));
    out.claims = super::claims::claims(&m, plan, raw, env);
    out.plots = super::plots::plots(&m, &rows_mean, &predicted);
    out.notes.push(matrix_note(&m, plan, raw));
    out.notes.extend(full_run_adds(plan));
    out.notes.push(format!(
        "slow device {}: {}",
        raw.testbed_device,
        raw.testbed_cap.describe()
    ));
    out.notes.push("`oslab sim validate` holds the simulator to targets on similar workloads (its RT-45 competitors write 512 KiB every 20 ms, these 1 MiB every 10 ms), write by write, with a blind prediction beside".into());
    out.notes.push(memory_note(raw, env));
    if let Some(t) = raw.first_touch {
        out.findings.push(finding(
            "machine.first_touch_us_per_page",
            t.first_ns_per_page / 1e3,
            "µs",
            format!(
                "fresh anonymous memory, {:.2} µs a page when touched again: the machine's own cost, paid alike by every writer",
                t.again_ns_per_page / 1e3
            ),
        ));
    }
    if let Some(c) = raw.cells.first() {
        out.notes.push(c.kernel.note());
    }
    out.notes.extend(
        raw.teardown_errors
            .iter()
            .map(|e| format!("testbed teardown: {e}")),
    );
    out
}
