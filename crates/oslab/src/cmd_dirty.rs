//! `oslab dirty explain` (and, later, `advise`).

use oslab_lab::wb::explain::{Explanation, bytes, explain};
use oslab_report::table::simple;

use crate::CmdResult;
use crate::cli::{AdviseArgs, DirtyCommand, ExplainArgs};
use crate::cmd_info::scratch_base;
use crate::failure::Failure;
use crate::output::print;

pub fn run(c: DirtyCommand) -> CmdResult {
    match c {
        DirtyCommand::Explain(a) => run_explain(a),
        DirtyCommand::Advise(a) => run_advise(a),
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

fn rate_arg(flag: &str, text: &str) -> Result<f64, Failure> {
    oslab_lab::wb::testbed::parse_bandwidth(text)
        .map(|b| b as f64)
        .or_else(|_| {
            oslab_sys::parse::size::parse_human_size(text.trim().trim_end_matches("/s"))
                .map(|b| b as f64)
                .map_err(|_| ())
        })
        .map_err(|_| {
            Failure::usage(if text.trim_start().starts_with('-') {
                format!("{flag} {text}: a rate cannot be negative (e.g. 4MiB/s)")
            } else {
                format!("{flag} {text}: not a rate such as 4MiB/s")
            })
        })
}

/// Writes 256 MiB into `dir` and syncs it: the sustained write-back bandwidth.
fn measure_device(dir: &std::path::Path) -> Result<f64, Failure> {
    use std::io::Write;
    let bytes: u64 = 256 << 20;
    // journaled, so a kill leaves nothing behind that `oslab restore` misses
    let scratch = oslab_lab::scratch::Scratch::create(dir, "dirty-advise", bytes + (16 << 20))
        .map_err(|e| Failure::runtime(e.to_string()))?;
    let path = scratch.file("device-probe.dat");
    let chunk = vec![0x5au8; 1 << 20];
    let t0 = oslab_sys::clock::monotonic_ns();
    let r = (|| -> std::io::Result<()> {
        let mut f = std::fs::File::create(&path)?;
        for _ in 0..(bytes >> 20) {
            f.write_all(&chunk)?;
        }
        f.sync_all()
    })();
    let secs = (oslab_sys::clock::monotonic_ns() - t0) as f64 / 1e9;
    drop(scratch);
    r.map_err(|e| Failure::runtime(format!("measuring the device in {}: {e}", dir.display())))?;
    Ok(bytes as f64 / secs)
}

fn nr_dirtied() -> Option<u64> {
    let t = std::fs::read_to_string("/proc/vmstat").ok()?;
    t.lines()
        .find_map(|l| l.strip_prefix("nr_dirtied ")?.trim().parse().ok())
}

fn run_advise(a: AdviseArgs) -> CmdResult {
    use oslab_lab::wb::advise::{AdviceInputs, advise};
    if !(a.target_latency.is_finite() && (0.05..=60.0).contains(&a.target_latency)) {
        return Err(Failure::usage(format!(
            "--target-latency {} is out of range: give 0.05 to 60 seconds",
            a.target_latency
        )));
    }
    if !(a.window.is_finite() && (0.5..=600.0).contains(&a.window)) {
        return Err(Failure::usage("--window must be 0.5 to 600 seconds"));
    }
    let (device_bw, device_src) = if let Some(t) = &a.device_bandwidth {
        let bw = rate_arg("--device-bandwidth", t)?;
        if bw <= 0.0 {
            return Err(Failure::usage(format!(
                "--device-bandwidth {t}: a device that writes nothing cannot be advised for; give its rate, e.g. 50MiB/s"
            )));
        }
        (bw, "given".to_string())
    } else if a.testbed {
        let tb = crate::cmd_testbed::current().ok_or_else(|| {
            Failure::usage(
                "no testbed is up: start one with 'oslab testbed up --bandwidth 10MiB/s'",
            )
        })?;
        (
            oslab_lab::wb::testbed::measure_bandwidth(&tb)
                .map_err(|e| Failure::runtime(e.to_string()))?,
            format!("measured on the testbed {}", tb.device.display()),
        )
    } else {
        let dir = scratch_base(a.scratch.as_deref())?;
        eprintln!(
            "oslab: measuring the device under {} (256 MiB written and synced)",
            dir.display()
        );
        (
            measure_device(&dir)?,
            format!("measured in {}", dir.display()),
        )
    };
    let (rate, rate_src) = if let Some(t) = &a.rate {
        (rate_arg("--rate", t)?, "given".to_string())
    } else {
        eprintln!("oslab: watching the dirtying rate for {} s", a.window);
        let before =
            nr_dirtied().ok_or_else(|| Failure::runtime("no nr_dirtied in /proc/vmstat"))?;
        std::thread::sleep(std::time::Duration::from_secs_f64(a.window));
        let after = nr_dirtied().unwrap_or(before);
        (
            (after.saturating_sub(before) * oslab_sys::machine::page_size()) as f64 / a.window,
            format!("measured over {} s (nr_dirtied)", a.window),
        )
    };
    let advice = advise(AdviceInputs {
        device_bytes_s: device_bw,
        dirty_rate_bytes_s: rate,
        target_latency_s: a.target_latency,
    });
    if a.json {
        print(&(serde_json::to_string_pretty(&advice).expect("serialises") + "\n"));
    } else {
        let mib = |b: f64| b / (1u64 << 20) as f64;
        let mut out = format!(
            "device writes {:.1} MiB/s ({device_src}); workload dirties {:.2} MiB/s ({rate_src}); target wait {} s\n\n",
            mib(device_bw),
            mib(rate),
            a.target_latency
        );
        for r in &advice.reasons {
            out.push_str(&format!("  - {r}\n"));
        }
        out.push_str(&format!("\npredicted: {}\n", advice.prediction));
        for w in &advice.warnings {
            out.push_str(&format!("warning: {w}\n"));
        }
        out.push_str("\nto apply (as root):\n");
        for (k, v) in advice.sysctl_lines() {
            out.push_str(&format!("  sysctl -w {k}={v}\n"));
        }
        print(&out);
    }
    if a.apply {
        if !oslab_sys::process::is_root() {
            return Err(Failure {
                code: crate::failure::EXIT_PRIVILEGE,
                message: "--apply needs root; nothing was changed".into(),
            });
        }
        let dir = oslab_sys::journal::journal_dir();
        if oslab_sys::journal::Journal::load(&dir, "advise")
            .ok()
            .flatten()
            .is_some()
        {
            return Err(Failure::usage(
                "advice applied earlier is still in force; 'oslab restore' puts the old settings back first",
            ));
        }
        let mut j = oslab_sys::journal::Journal::named(&dir, "advise");
        for (k, v) in advice.sysctl_lines() {
            oslab_sys::sysctl::set(&mut j, &k, &v)
                .map_err(|e| Failure::runtime(format!("{k}: {e}")))?;
        }
        print("applied; 'oslab restore' puts the previous settings back\n");
    }
    Ok(0)
}
