//! `oslab dirty explain` and `oslab dirty advise` for people.
//!
//! The figures come from the lab (`services::dirty_explain`,
//! `services::dirty_advice`); report does not depend on the lab (the lab will
//! use report's formatting helpers), so the binary hands them over as the borrowed
//! views below.

use oslab_model::Claim;
use oslab_sys::dirty::{DirtyInputs, DirtyLimits};
use oslab_units::{human_bytes, human_rate};

use crate::table::simple;

/// What `oslab dirty explain` shows: the kernel's inputs, the limits computed from
/// them, the kernel's own figures and the material's rules judged live.
pub struct Explained<'a> {
    pub inputs: &'a DirtyInputs,
    pub total_memory_bytes: u64,
    pub limits: &'a DirtyLimits,
    /// The kernel's nr_dirty_threshold / nr_dirty_background_threshold (pages).
    pub kernel_thresh: Option<u64>,
    pub kernel_bg_thresh: Option<u64>,
    /// The periodic flusher's interval and expiry.
    pub writeback_centisecs: u64,
    pub expire_centisecs: u64,
    pub rules: &'a [Claim],
}

fn pct(part: u64, whole: u64) -> String {
    format!("{:.2} %", part as f64 * 100.0 / whole.max(1) as f64)
}

/// The explanation as text.
pub fn explain(e: &Explained) -> String {
    let page = e.inputs.page_bytes;
    let bytes = |pages: u64| human_bytes(pages * page);
    let d = e.limits.dirtyable_pages;
    let mut out = String::new();
    out.push_str(&format!(
        "Dirtyable memory: {} = free {} - reserve {} + file pages {} (active {} + inactive {})\n",
        bytes(d),
        bytes(e.inputs.free_pages),
        bytes(e.inputs.totalreserve_pages.min(e.inputs.free_pages)),
        bytes(e.inputs.active_file_pages + e.inputs.inactive_file_pages),
        bytes(e.inputs.active_file_pages),
        bytes(e.inputs.inactive_file_pages)
    ));
    out.push_str(&format!(
        "Settings: dirty_ratio {} %, dirty_bytes {}, dirty_background_ratio {} %, dirty_background_bytes {}\n\n",
        e.inputs.dirty_ratio, e.inputs.dirty_bytes, e.inputs.dirty_background_ratio, e.inputs.dirty_background_bytes
    ));
    out.push_str(&limits_text(e));
    out.push_str(
        "real-time tasks: both limits + 1/4 + 1/32 of the hard limit (every RT priority alike)\n",
    );
    out.push_str(&flusher_text(e));
    out.push_str(
        "\nRules from Kang Jin-woo, \"Linux Kernel Story for DevOps and SE\" \
         (in Korean, Insight 2017), ch. 10\n",
    );
    for c in e.rules {
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

/// The limits as a table, where they come from, and the kernel's own figures.
fn limits_text(e: &Explained) -> String {
    let page = e.inputs.page_bytes;
    let bytes = |pages: u64| human_bytes(pages * page);
    let total_pages = e.total_memory_bytes / page;
    let d = e.limits.dirtyable_pages;
    let mut out = String::new();
    let row = |name: &str, pages: u64| {
        vec![
            name.to_string(),
            bytes(pages),
            pages.to_string(),
            pct(pages, total_pages),
            pct(pages, d),
        ]
    };
    let l = e.limits;
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
    out
}

/// When the periodic flusher wakes and how long a page may wait for it.
fn flusher_text(e: &Explained) -> String {
    format!(
        "\nPeriodic flusher: {}; pages older than {:.1} s are written{}\n",
        if e.writeback_centisecs == 0 {
            "off (dirty_writeback_centisecs = 0)".to_string()
        } else {
            format!(
                "wakes {:.1} s after its previous run ended",
                e.writeback_centisecs as f64 / 100.0
            )
        },
        e.expire_centisecs as f64 / 100.0,
        if e.writeback_centisecs == 0 {
            " only by background or explicit flushes".to_string()
        } else {
            format!(
                ", so a page waits at most about {:.1} s",
                (e.expire_centisecs + e.writeback_centisecs) as f64 / 100.0
            )
        }
    )
}

/// What `oslab dirty advise` recommends and why.
pub struct Advised<'a> {
    /// The device's write bandwidth and where it came from ("given", "measured in ...").
    pub device_bytes_s: f64,
    pub device_source: &'a str,
    /// The workload's dirtying rate and where it came from.
    pub dirty_rate_bytes_s: f64,
    pub rate_source: &'a str,
    pub target_latency_s: f64,
    pub reasons: &'a [String],
    pub prediction: &'a str,
    pub warnings: &'a [String],
    /// `(name, value)` of each sysctl to set.
    pub sysctl_lines: &'a [(String, String)],
}

/// The advice as text, ending with the `sysctl -w` lines.
pub fn advice(a: &Advised) -> String {
    let mut out = format!(
        "device writes {} ({}); workload dirties {} ({}); target wait {} s\n\n",
        human_rate(a.device_bytes_s),
        a.device_source,
        human_rate(a.dirty_rate_bytes_s),
        a.rate_source,
        a.target_latency_s
    );
    for r in a.reasons {
        out.push_str(&format!("  - {r}\n"));
    }
    out.push_str(&format!("\npredicted: {}\n", a.prediction));
    for w in a.warnings {
        out.push_str(&format!("warning: {w}\n"));
    }
    out.push_str("\nto apply (as root):\n");
    for (k, v) in a.sysctl_lines {
        out.push_str(&format!("  sysctl -w {k}={v}\n"));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use oslab_sys::dirty::compute;

    #[test]
    fn the_explanation_names_every_limit_and_the_kernel_figures() {
        let inputs = DirtyInputs {
            page_bytes: 4096,
            free_pages: 1 << 20,
            totalreserve_pages: 1 << 12,
            active_file_pages: 1 << 16,
            inactive_file_pages: 1 << 16,
            dirty_ratio: 20,
            dirty_bytes: 0,
            dirty_background_ratio: 10,
            dirty_background_bytes: 0,
        };
        let limits = compute(&inputs);
        let text = explain(&Explained {
            inputs: &inputs,
            total_memory_bytes: 8 << 30,
            limits: &limits,
            kernel_thresh: Some(limits.normal.thresh),
            kernel_bg_thresh: None,
            writeback_centisecs: 0,
            expire_centisecs: 3000,
            rules: &[],
        });
        assert!(text.starts_with("Dirtyable memory: "), "{text}");
        assert!(text.contains("hard limit (real-time task)"));
        assert!(text.contains("not in /proc/vmstat on this kernel"));
        assert!(text.contains("off (dirty_writeback_centisecs = 0)"));
        assert!(text.ends_with(
            "Rules from Kang Jin-woo, \"Linux Kernel Story for DevOps and SE\" \
             (in Korean, Insight 2017), ch. 10\n"
        ));
    }

    #[test]
    fn the_advice_ends_with_the_sysctl_lines() {
        let text = advice(&Advised {
            device_bytes_s: 50.0 * (1 << 20) as f64,
            device_source: "given",
            dirty_rate_bytes_s: (1 << 20) as f64,
            rate_source: "given",
            target_latency_s: 1.0,
            reasons: &["a reason".into()],
            prediction: "flat",
            warnings: &[],
            sysctl_lines: &[("vm.dirty_bytes".into(), "1".into())],
        });
        assert!(text.starts_with(
            "device writes 50 MiB/s (given); workload dirties 1 MiB/s (given); target wait 1 s\n\n  - a reason\n"
        ));
        assert!(text.ends_with("\nto apply (as root):\n  sysctl -w vm.dirty_bytes=1\n"));
        let slow = advice(&Advised {
            device_bytes_s: 1.5 * (1 << 20) as f64,
            device_source: "given",
            dirty_rate_bytes_s: 1.0,
            rate_source: "given",
            target_latency_s: 1.0,
            reasons: &[],
            prediction: "",
            warnings: &[],
            sysctl_lines: &[],
        });
        assert!(
            slow.starts_with("device writes 1.50 MiB/s (given); workload dirties 1 B/s (given)"),
            "{slow}"
        );
    }
}
