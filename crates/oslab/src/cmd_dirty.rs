//! `oslab dirty explain` (and, later, `advise`).

use oslab_lab::wb::explain::{Explanation, bytes, explain};
use oslab_report::table::simple;

use crate::CmdResult;
use crate::cli::{DirtyCommand, ExplainArgs};
use crate::cmd_info::scratch_base;
use crate::failure::Failure;
use crate::output::print;

pub fn run(c: DirtyCommand) -> CmdResult {
    match c {
        DirtyCommand::Explain(a) => run_explain(a),
    }
}

fn pct(part: u64, whole: u64) -> String {
    format!("{:.2} %", part as f64 * 100.0 / whole.max(1) as f64)
}

fn render(e: &Explanation) -> String {
    let page = e.inputs.page_bytes;
    let total_pages = e.total_memory_bytes / page;
    let d = e.limits.dirtyable_pages;
    let mut out = String::new();
    out.push_str(&format!(
        "Dirtyable memory: {} = free {} - reserve {} + file pages {} (active {} + inactive {})\n",
        bytes(e, d),
        bytes(e, e.inputs.free_pages),
        bytes(e, e.inputs.totalreserve_pages.min(e.inputs.free_pages)),
        bytes(e, e.inputs.active_file_pages + e.inputs.inactive_file_pages),
        bytes(e, e.inputs.active_file_pages),
        bytes(e, e.inputs.inactive_file_pages)
    ));
    out.push_str(&format!(
        "Settings: dirty_ratio {} %, dirty_bytes {}, dirty_background_ratio {} %, dirty_background_bytes {}\n\n",
        e.inputs.dirty_ratio, e.inputs.dirty_bytes, e.inputs.dirty_background_ratio, e.inputs.dirty_background_bytes
    ));
    let row = |name: &str, pages: u64| {
        vec![
            name.to_string(),
            bytes(e, pages),
            pages.to_string(),
            pct(pages, total_pages),
            pct(pages, d),
        ]
    };
    let l = &e.limits;
    let rows = vec![
        row("background (normal task)", l.normal.bg_thresh),
        row("free-run ceiling (normal)", l.normal.freerun),
        row("hard limit (normal task)", l.normal.thresh),
        row("background (real-time task)", l.realtime.bg_thresh),
        row("free-run ceiling (real-time)", l.realtime.freerun),
        row("hard limit (real-time task)", l.realtime.thresh),
    ];
    out.push_str(&simple(
        &["limit", "size", "pages", "of total", "of dirtyable"],
        &rows,
        &[1, 2, 3, 4],
    ));
    out.push('\n');
    let src = |b: bool| if b { "from *_bytes" } else { "from *_ratio" };
    out.push_str(&format!(
        "hard limit {}, background {}{}\n",
        src(l.thresh_from_bytes),
        src(l.bg_from_bytes),
        if l.bg_halved {
            "; background was not below the hard limit and was halved"
        } else {
            ""
        }
    ));
    match (e.kernel_thresh, e.kernel_bg_thresh) {
        (Some(kt), Some(kb)) => out.push_str(&format!(
            "kernel's own figures (/proc/vmstat): hard {kt} pages (ours {:+}, {:+.3} %), background {kb} pages (ours {:+}, {:+.3} %)\n",
            l.normal.thresh as i64 - kt as i64,
            (l.normal.thresh as f64 - kt as f64) * 100.0 / kt.max(1) as f64,
            l.normal.bg_thresh as i64 - kb as i64,
            (l.normal.bg_thresh as f64 - kb as f64) * 100.0 / kb.max(1) as f64,
        )),
        _ => out.push_str("kernel's own figures: not in /proc/vmstat on this kernel\n"),
    }
    out.push_str(
        "real-time tasks: both limits + 1/4 + 1/32 of the hard limit (every RT priority alike)\n",
    );
    let f = &e.flusher;
    out.push_str(&format!(
        "\nPeriodic flusher: {}; pages older than {:.1} s are written{}\n",
        if f.writeback_centisecs == 0 {
            "off (dirty_writeback_centisecs = 0)".to_string()
        } else {
            format!(
                "wakes {:.1} s after its previous run ended",
                f.writeback_centisecs as f64 / 100.0
            )
        },
        f.expire_centisecs as f64 / 100.0,
        if f.writeback_centisecs == 0 {
            " only by background or explicit flushes".to_string()
        } else {
            format!(
                ", so a page waits at most about {:.1} s",
                (f.expire_centisecs + f.writeback_centisecs) as f64 / 100.0
            )
        }
    ));
    out.push_str("\nRules from the material (section 4)\n");
    for c in &e.rules {
        out.push_str(&format!(
            "  [{}] {}\n      expected: {}\n      observed: {}\n      why: {}\n",
            c.verdict.label().to_uppercase(),
            c.text,
            c.expectation,
            c.observed,
            c.why
        ));
    }
    out
}

fn run_explain(a: ExplainArgs) -> CmdResult {
    let scratch = scratch_base(a.scratch.as_deref())?;
    let e = explain(!a.no_live, &scratch).map_err(|e| Failure::runtime(e.to_string()))?;
    if a.json {
        print(&(serde_json::to_string_pretty(&e).expect("serialises") + "\n"));
    } else {
        print(&render(&e));
    }
    Ok(0)
}
