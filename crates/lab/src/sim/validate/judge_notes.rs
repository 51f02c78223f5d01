//! The validation's notes: what each setting measured of the machine and the
//! state each simulation started from, so a reader can see what was an input.

use super::Raw;
use super::groups::Group;
use oslab_services::page_costs::costs;

const MIB: f64 = (1u64 << 20) as f64;

/// "a-b" of the values, or "a" when they agree, or "-" when there are none.
fn span(v: &[f64], digits: usize) -> String {
    let lo = v.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = v.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    if v.is_empty() {
        "-".into()
    } else if (hi - lo).abs() < 0.5 * 10f64.powi(-(digits as i32)) {
        format!("{lo:.digits$}")
    } else {
        format!("{lo:.digits$}-{hi:.digits$}")
    }
}

pub fn notes(raw: &Raw, groups: &[Group], hz: u64) -> Vec<String> {
    let mut notes = Vec::new();
    for s in &raw.settings {
        let (copy, alloc) = costs(&s.costs);
        let alloc_med = oslab_stats::median(&alloc).unwrap_or(0.0);
        let alloc_p90 = oslab_stats::quantile(&alloc, 0.9).unwrap_or(0.0);
        notes.push(format!(
            "{}: testbed {} capped at {:.0} MiB/s ({}; measured {:.1}), dirty_bytes {:.0} MiB, background {:.0} MiB; a write costs {:.0} ns per page to copy ({:.1} GB/s) and {:.0} ns more per new page-cache page (median of the free-run probe; p90 {:.0} ns)",
            s.spec.name,
            s.testbed_dev,
            s.bandwidth as f64 / MIB,
            oslab_services::testbed::Cap::describe_recorded(s.testbed_cap.as_ref()),
            s.testbed_measured_bytes_s / MIB,
            s.dirty_bytes as f64 / MIB,
            s.dirty_background_bytes as f64 / MIB,
            4096.0 / copy * 1e9,
            copy / 1e9,
            alloc_med,
            alloc_p90
        ));
        if !s.teardown_errors.is_empty() {
            notes.push(format!(
                "{}: taking the testbed down reported: {}",
                s.spec.name,
                s.teardown_errors.join("; ")
            ));
        }
    }
    let sims: Vec<_> = groups.iter().flat_map(|g| g.cells.iter()).collect();
    let pick = |f: &dyn Fn(&oslab_services::cells::traced::Traced) -> Option<f64>| -> Vec<f64> {
        sims.iter()
            .filter_map(|(_, c)| c.traced.as_ref().and_then(f))
            .collect()
    };
    let drl = pick(&|t| t.dirty_ratelimit.map(|x| x / MIB));
    let avg = pick(&|t| t.avg_write_bw.map(|x| x / MIB));
    let others: Vec<f64> = groups
        .iter()
        .flat_map(|g| {
            g.cells.iter().filter_map(|(i, c)| {
                g.setting.cells[*i]
                    .io
                    .others_bytes_s()
                    .or_else(|| c.traced.as_ref().and_then(|t| t.others_bytes_s))
                    .map(|b| b / MIB)
            })
        })
        .collect();
    notes.push(format!(
        "each cell was simulated from the state the kernel carried into it: avg_write_bandwidth {} MiB/s and dirty_ratelimit {} MiB/s at its start (the trace), other devices' write back {} MiB/s over it (which shrinks the testbed's share of the limits); HZ {hz}",
        span(&avg, 1),
        span(&drl, 1),
        span(&others, 1)
    ));
    if let Some(c) = raw.settings.iter().flat_map(|s| &s.cells).next() {
        notes.push(c.cell.kernel.note());
    }
    if raw.page_reporting {
        notes.push("this machine reports free memory to its hypervisor: a new page-cache page can cost a host fault, which the per-page cost above includes (memory was touched before each cell, as wb.wcall does)".into());
    }
    notes
}
