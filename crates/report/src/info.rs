//! The readable layout of `oslab info`.

use oslab_model::machine::GeometryCheck;
use oslab_model::machine::{MachineInfo, Probed};
use oslab_sys::parse::cpulist::format_cpulist;
use oslab_term_text::one_line;
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
    // everything here is read from the machine or a results file: shown escaped
    let mut out = format!("host: {}\n", one_line(&m.hostname));
    cpu_section(&mut out, m);
    caches_section(&mut out, m);
    memory_section(&mut out, m);
    kernel_section(&mut out, m);
    virtualisation_section(&mut out, m);
    dirty_section(&mut out, m);
    block_section(&mut out, m);
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

/// One `key  value` line of a section.
fn kv(out: &mut String, k: &str, v: String) {
    out.push_str(&format!("  {k:<22} {}\n", one_line(&v)));
}

fn cpu_section(out: &mut String, m: &MachineInfo) {
    let c = &m.cpu;
    out.push_str("\nCPU\n");
    kv(out, "model", format!("{} ({})", c.model, c.vendor));
    kv(
        out,
        "logical CPUs",
        format!(
            "{} ({} cores, {} socket(s), {} thread(s) per core)",
            c.logical_cpus, c.cores, c.sockets, c.threads_per_core
        ),
    );
    kv(
        out,
        "SMT siblings",
        c.cpus
            .iter()
            .map(|l| format!("cpu{}: {}", l.cpu, format_cpulist(&l.thread_siblings)))
            .collect::<Vec<_>>()
            .join(", "),
    );
    kv(out, "SMT control", probed(&c.smt_control, |s| s.clone()));
    kv(
        out,
        "TSC",
        format!(
            "constant_tsc {}, nonstop_tsc {}{}",
            yes(c.tsc.constant_tsc),
            yes(c.tsc.nonstop_tsc),
            c.mhz.map_or(String::new(), |m| format!(", {m:.0} MHz"))
        ),
    );
}

fn caches_section(out: &mut String, m: &MachineInfo) {
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
        out.push_str(&format!("  {}\n", one_line(&d.description)));
    }
}

fn memory_section(out: &mut String, m: &MachineInfo) {
    let mem = &m.memory;
    out.push_str("\nMemory\n");
    kv(out, "total", human_bytes(mem.total_bytes));
    kv(out, "available", bytes(mem.available_bytes));
    kv(out, "cached", human_bytes(mem.cached_bytes));
    kv(
        out,
        "dirty / writeback",
        format!(
            "{} / {}",
            human_bytes(mem.dirty_bytes),
            human_bytes(mem.writeback_bytes)
        ),
    );
    kv(
        out,
        "huge page sizes",
        mem.huge_page_sizes_bytes
            .iter()
            .map(|b| human_bytes(*b))
            .collect::<Vec<_>>()
            .join(", "),
    );
    kv(
        out,
        "transparent huge pages",
        format!(
            "{} (defrag {})",
            opt(&mem.thp_enabled),
            opt(&mem.thp_defrag)
        ),
    );
}

fn kernel_section(out: &mut String, m: &MachineInfo) {
    let k = &m.kernel;
    out.push_str("\nKernel\n");
    kv(out, "release", k.release.clone());
    let (major, minor) = oslab_sys::machine::MIN_KERNEL;
    kv(
        out,
        "supported",
        match oslab_sys::machine::release_supported(&k.release) {
            Some(true) => format!(
                "yes ({major}.{minor} or newer; tested from {major}.{minor} on in the kernel matrix)"
            ),
            Some(false) => format!(
                "older than {major}.{minor}, the oldest oslab supports: experiments check what they need and skip with the reason where it is missing"
            ),
            None => "the release does not read as MAJOR.MINOR".into(),
        },
    );
    kv(
        out,
        "scheduler",
        format!(
            "{} (implied by the release: EEVDF from 6.6, CFS before)",
            k.scheduler.label()
        ),
    );
    kv(
        out,
        "HZ",
        probed(&k.hz, |h| format!("{} ({})", h.hz, h.source)),
    );
    kv(
        out,
        "clocksource",
        format!(
            "{} (available: {})",
            opt(&k.clocksource),
            k.available_clocksources.join(" ")
        ),
    );
    kv(
        out,
        "sched knobs",
        k.sched_knobs
            .iter()
            .map(|(n, v)| format!("{n}={v}"))
            .collect::<Vec<_>>()
            .join(" "),
    );
    kv(
        out,
        "debugfs sched",
        probed(&k.debug_sched, |m| {
            m.iter()
                .map(|(n, v)| format!("{n}={v}"))
                .collect::<Vec<_>>()
                .join(" ")
        }),
    );
}

fn virtualisation_section(out: &mut String, m: &MachineInfo) {
    let h = &m.hypervisor;
    out.push_str("\nVirtualisation\n");
    kv(
        out,
        "hypervisor",
        match &h.name {
            Some(n) => format!(
                "{n} (context switches can cost 2.5-3x bare metal: B. Sigoure, \
                 \"How long does it take to make a context switch?\", 2010)"
            ),
            None => "none detected (bare metal)".into(),
        },
    );
    kv(out, "cpu flag", yes(h.cpu_flag).into());
    if let Some(r) = h.balloon_free_page_reporting {
        kv(
            out,
            "balloon page reporting",
            if r {
                "on (freed memory goes back to the host; first touches of new pages cost more)"
                    .into()
            } else {
                "off".into()
            },
        );
    }
    kv(out, "CPUID signature", opt(&h.cpuid_vendor));
    kv(out, "/sys/hypervisor", opt(&h.sys_hypervisor_type));
    kv(
        out,
        "DMI",
        format!("{} / {}", opt(&h.dmi_sys_vendor), opt(&h.dmi_product_name)),
    );
}

fn dirty_section(out: &mut String, m: &MachineInfo) {
    let d = &m.dirty;
    out.push_str("\nDirty-page write back (vm.dirty_*)\n");
    kv(
        out,
        "background",
        format!(
            "ratio {} %, bytes {}",
            opt(&d.dirty_background_ratio),
            opt(&d.dirty_background_bytes)
        ),
    );
    kv(
        out,
        "hard limit",
        format!(
            "ratio {} %, bytes {}",
            opt(&d.dirty_ratio),
            opt(&d.dirty_bytes)
        ),
    );
    kv(
        out,
        "flusher",
        format!(
            "wakes every {} cs, writes pages older than {} cs",
            opt(&d.dirty_writeback_centisecs),
            opt(&d.dirty_expire_centisecs)
        ),
    );
    kv(
        out,
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
}

fn block_section(out: &mut String, m: &MachineInfo) {
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
        let names: Vec<&str> = idle_loops.iter().map(|b| b.name.as_str()).collect();
        out.push_str(&format!("  unattached: {}\n", one_line(&names.join(" "))));
    }
    let sc = &m.scratch;
    let scratch = format!(
        "scratch {} on {} ({}), {} free",
        sc.dir.display(),
        sc.device.as_deref().unwrap_or("no block device"),
        sc.fs_type.as_deref().unwrap_or("?"),
        bytes(sc.free_bytes)
    );
    out.push_str(&format!("  {}\n", one_line(&scratch)));
}

fn yes(b: bool) -> &'static str {
    if b { "yes" } else { "no" }
}
