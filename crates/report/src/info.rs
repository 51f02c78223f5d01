//! The readable layout of `oslab info`.

use oslab_model::machine::GeometryCheck;
use oslab_model::machine::{MachineInfo, Probed};
use oslab_sys::parse::cpulist::format_cpulist;
use oslab_units::human_bytes;

use crate::table::simple;

fn opt<T: ToString>(v: &Option<T>) -> String {
    v.as_ref().map_or_else(|| "-".into(), |x| x.to_string())
}

fn probed<T>(p: &Probed<T>, show: impl Fn(&T) -> String) -> String {
    match p {
        Probed::Value(v) => show(v),
        Probed::Unavailable(why) => format!("unavailable ({why})"),
    }
}

fn bytes(v: Option<u64>) -> String {
    v.map_or_else(|| "-".into(), human_bytes)
}

/// `oslab info` as text.
pub fn render(m: &MachineInfo) -> String {
    let c = &m.cpu;
    let mut out = String::new();
    out.push_str(&format!("host: {}\n\nCPU\n", m.hostname));
    let mut kv = |k: &str, v: String| out.push_str(&format!("  {k:<22} {v}\n"));
    kv("model", format!("{} ({})", c.model, c.vendor));
    kv(
        "logical CPUs",
        format!(
            "{} ({} cores, {} socket(s), {} thread(s) per core)",
            c.logical_cpus, c.cores, c.sockets, c.threads_per_core
        ),
    );
    kv(
        "SMT siblings",
        c.cpus
            .iter()
            .map(|l| format!("cpu{}: {}", l.cpu, format_cpulist(&l.thread_siblings)))
            .collect::<Vec<_>>()
            .join(", "),
    );
    kv("SMT control", probed(&c.smt_control, |s| s.clone()));
    kv(
        "TSC",
        format!(
            "constant_tsc {}, nonstop_tsc {}{}",
            yes(c.tsc.constant_tsc),
            yes(c.tsc.nonstop_tsc),
            c.mhz.map_or(String::new(), |m| format!(", {m:.0} MHz"))
        ),
    );

    out.push_str("\nCaches (sysfs)\n");
    let rows: Vec<Vec<String>> = m
        .caches
        .distinct
        .iter()
        .map(|d| {
            vec![
                format!(
                    "L{}{}",
                    d.level,
                    match d.kind.as_str() {
                        "Data" => "d",
                        "Instruction" => "i",
                        _ => "",
                    }
                ),
                d.kind.to_lowercase(),
                bytes(d.size_bytes),
                opt(&d.line_bytes),
                opt(&d.sets),
                opt(&d.ways),
                opt(&d.partitions),
                opt(&d.id),
                format_cpulist(&d.shared_cpus),
                match &d.geometry {
                    GeometryCheck::Consistent => "ok".into(),
                    GeometryCheck::Inconsistent { computed_bytes } => {
                        format!("MISMATCH: geometry gives {}", human_bytes(*computed_bytes))
                    }
                    GeometryCheck::Unknown => "unknown".into(),
                },
            ]
        })
        .collect();
    out.push_str(&simple(
        &[
            "cache",
            "type",
            "size",
            "line",
            "sets",
            "ways",
            "parts",
            "id",
            "CPUs",
            "sets x ways x line x parts",
        ],
        &rows,
        &[2, 3, 4, 5, 6, 7],
    ));
    out.push('\n');
    for d in &m.caches.distinct {
        out.push_str(&format!("  {}\n", d.description));
    }

    let mem = &m.memory;
    out.push_str("\nMemory\n");
    let mut kv = |k: &str, v: String| out.push_str(&format!("  {k:<22} {v}\n"));
    kv("total", human_bytes(mem.total_bytes));
    kv("available", bytes(mem.available_bytes));
    kv("cached", human_bytes(mem.cached_bytes));
    kv(
        "dirty / writeback",
        format!(
            "{} / {}",
            human_bytes(mem.dirty_bytes),
            human_bytes(mem.writeback_bytes)
        ),
    );
    kv(
        "huge page sizes",
        mem.huge_page_sizes_bytes
            .iter()
            .map(|b| human_bytes(*b))
            .collect::<Vec<_>>()
            .join(", "),
    );
    kv(
        "transparent huge pages",
        format!(
            "{} (defrag {})",
            opt(&mem.thp_enabled),
            opt(&mem.thp_defrag)
        ),
    );

    let k = &m.kernel;
    out.push_str("\nKernel\n");
    let mut kv = |k: &str, v: String| out.push_str(&format!("  {k:<22} {v}\n"));
    kv("release", k.release.clone());
    kv(
        "scheduler",
        format!(
            "{} (implied by the release: EEVDF from 6.6, CFS before)",
            k.scheduler.label()
        ),
    );
    kv("HZ", probed(&k.hz, |h| format!("{} ({})", h.hz, h.source)));
    kv(
        "clocksource",
        format!(
            "{} (available: {})",
            opt(&k.clocksource),
            k.available_clocksources.join(" ")
        ),
    );
    kv(
        "sched knobs",
        k.sched_knobs
            .iter()
            .map(|(n, v)| format!("{n}={v}"))
            .collect::<Vec<_>>()
            .join(" "),
    );
    kv(
        "debugfs sched",
        probed(&k.debug_sched, |m| {
            m.iter()
                .map(|(n, v)| format!("{n}={v}"))
                .collect::<Vec<_>>()
                .join(" ")
        }),
    );

    let h = &m.hypervisor;
    out.push_str("\nVirtualisation\n");
    let mut kv = |k: &str, v: String| out.push_str(&format!("  {k:<22} {v}\n"));
    kv(
        "hypervisor",
        match &h.name {
            Some(n) => format!("{n} (context switches can cost 2.5-3x bare metal, material 5)"),
            None => "none detected (bare metal)".into(),
        },
    );
    kv("cpu flag", yes(h.cpu_flag).into());
    if let Some(r) = h.balloon_free_page_reporting {
        kv(
            "balloon page reporting",
            if r {
                "on (freed memory goes back to the host; first touches of new pages cost more)"
                    .into()
            } else {
                "off".into()
            },
        );
    }
    kv("CPUID signature", opt(&h.cpuid_vendor));
    kv("/sys/hypervisor", opt(&h.sys_hypervisor_type));
    kv(
        "DMI",
        format!("{} / {}", opt(&h.dmi_sys_vendor), opt(&h.dmi_product_name)),
    );

    let d = &m.dirty;
    out.push_str("\nDirty-page write back (vm.dirty_*)\n");
    let mut kv = |k: &str, v: String| out.push_str(&format!("  {k:<22} {v}\n"));
    kv(
        "background",
        format!(
            "ratio {} %, bytes {}",
            opt(&d.dirty_background_ratio),
            opt(&d.dirty_background_bytes)
        ),
    );
    kv(
        "hard limit",
        format!(
            "ratio {} %, bytes {}",
            opt(&d.dirty_ratio),
            opt(&d.dirty_bytes)
        ),
    );
    kv(
        "flusher",
        format!(
            "wakes every {} cs, writes pages older than {} cs",
            opt(&d.dirty_writeback_centisecs),
            opt(&d.dirty_expire_centisecs)
        ),
    );
    kv(
        "kernel thresholds now",
        match (
            d.nr_dirty_background_threshold_pages,
            d.nr_dirty_threshold_pages,
        ) {
            (Some(b), Some(h)) => format!(
                "background {}, hard {} ({b} / {h} pages of {})",
                // saturating: a results file read back may hold anything
                human_bytes(b.saturating_mul(m.memory.page_bytes)),
                human_bytes(h.saturating_mul(m.memory.page_bytes)),
                human_bytes(m.memory.page_bytes)
            ),
            _ => "-".into(),
        },
    );

    out.push_str("\nBlock devices\n");
    // Unattached loop devices (size 0) are noise: name them on one line.
    let (idle_loops, devices): (Vec<_>, Vec<_>) = m
        .block_devices
        .iter()
        .partition(|b| b.name.starts_with("loop") && b.size_bytes == Some(0));
    let rows: Vec<Vec<String>> = devices
        .iter()
        .map(|b| {
            vec![
                b.name.clone(),
                b.dev.clone(),
                bytes(b.size_bytes),
                opt(&b.scheduler),
                b.rotational
                    .map_or("-".into(), |r| if r { "yes" } else { "no" }.into()),
                opt(&b.write_cache),
                if b.holds_scratch { "<- scratch" } else { "" }.into(),
            ]
        })
        .collect();
    out.push_str(&simple(
        &[
            "device",
            "dev",
            "size",
            "scheduler",
            "rotational",
            "write cache",
            "",
        ],
        &rows,
        &[2],
    ));
    out.push('\n');
    if !idle_loops.is_empty() {
        out.push_str(&format!(
            "  unattached: {}\n",
            idle_loops
                .iter()
                .map(|b| b.name.as_str())
                .collect::<Vec<_>>()
                .join(" ")
        ));
    }
    let sc = &m.scratch;
    out.push_str(&format!(
        "  scratch {} on {} ({}), {} free\n",
        sc.dir.display(),
        sc.device.as_deref().unwrap_or("no block device"),
        sc.fs_type.as_deref().unwrap_or("?"),
        bytes(sc.free_bytes)
    ));
    out.push_str(&format!(
        "\nprivileges: {}\n",
        if m.root {
            "root (system-changing experiments can run)"
        } else {
            "not root (experiments that change the system will be skipped)"
        }
    ));
    out
}

fn yes(b: bool) -> &'static str {
    if b { "yes" } else { "no" }
}
