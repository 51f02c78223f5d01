//! Judging `io.write` from its raw data: rates, where the bytes were, the two claims.

use oslab_model::{
    Axis, Claim, Environment, Finding, Measurement, Plot, Scale, Series, SeriesStyle,
};
use oslab_sys::parse::size::human_bytes;

use super::{Cell, Mode, Plan, Raw, bs_label};
use crate::harness::check::{Check, Condition, Rule};
use crate::harness::sampler;
use crate::harness::{Output, finding, measurement};
use crate::io::common::probe::mb_s;

const BUFFERED_FASTER: Check = Check {
    id: "buffered-faster-than-direct",
    text: "Buffered writes finish much faster than O_DIRECT ones because they only dirty the page cache",
    source: "material 3 (seed 000: buffered 1.3 GB/s vs O_DIRECT 429 MB/s)",
};

const DEVICE_LATER: Check = Check {
    id: "device-work-later",
    text: "With buffered writes the device work happens later, in write back",
    source: "material 3 (seed 000)",
};

/// "Much faster": buffered at least this many times the O_DIRECT rate.
const MIN_RATIO: f64 = 1.5;
/// "Later": under this share of the bytes on the device when write() returns ...
const MAX_DURING: f64 = 0.2;
/// ... and at least this share once fdatasync has returned.
const MIN_AFTER: f64 = 0.9;
/// The block size both claims compare at.
const BIG: u64 = 1 << 20;

fn med(v: &[f64]) -> f64 {
    oslab_stats::median(v).unwrap_or(f64::NAN)
}

/// The medians of one cell.
struct CellFigures {
    write_rate: f64,
    synced_rate: f64,
    /// Device bytes during / after the calls over the bytes written.
    during: f64,
    after: f64,
    during_bytes: f64,
    after_bytes: f64,
    dirty: Option<f64>,
    writeback: Option<f64>,
}

fn cell_figures(c: &Cell) -> CellFigures {
    let col = |f: fn(&super::WriteRun) -> f64| -> Vec<f64> { c.runs.iter().map(f).collect() };
    let bytes = c.runs[0].bytes as f64;
    let during_bytes = med(&col(|r| r.dev_during as f64));
    let after_bytes = med(&col(|r| r.dev_after as f64));
    let opt = |v: Vec<Option<u64>>| -> Option<f64> {
        let v: Option<Vec<f64>> = v.into_iter().map(|x| x.map(|x| x as f64)).collect();
        v.and_then(|v| oslab_stats::median(&v))
    };
    CellFigures {
        write_rate: med(&col(|r| mb_s(r.bytes, r.write_s))),
        synced_rate: med(&col(|r| mb_s(r.bytes, r.write_s + r.sync_s.unwrap_or(0.0)))),
        during: during_bytes / bytes,
        after: after_bytes / bytes,
        during_bytes,
        after_bytes,
        dirty: opt(c.runs.iter().map(|r| r.dirty_after).collect()),
        writeback: opt(c.runs.iter().map(|r| r.writeback_after).collect()),
    }
}

fn mode_of(name: &str) -> Mode {
    match name {
        "direct" => Mode::Direct,
        "dsync" => Mode::Dsync,
        _ => Mode::Buffered,
    }
}

fn opt_bytes(v: Option<f64>) -> String {
    v.map_or_else(|| "unknown".into(), |b| human_bytes(b.max(0.0) as u64))
}

/// The measurements and findings of one cell.
fn cell_outputs(
    c: &Cell,
    f: &CellFigures,
    device: &str,
    seed: u64,
) -> (Vec<Measurement>, Vec<Finding>) {
    let cell = format!("{}.{}", c.mode, bs_label(c.block));
    let bytes = c.runs[0].bytes;
    let mut m = vec![measurement(
        &format!("write_rate.{cell}"),
        &format!(
            "{} bytes through write() with {} blocks, until the last call returned",
            human_bytes(bytes),
            bs_label(c.block)
        ),
        "MB/s",
        c.runs.iter().map(|r| mb_s(r.bytes, r.write_s)).collect(),
        seed,
        None,
    )];
    if mode_of(&c.mode) == Mode::Buffered {
        m.push(measurement(
            &format!("sync_s.{cell}"),
            "the fdatasync after the buffered writes",
            "s",
            c.runs
                .iter()
                .map(|r| r.sync_s.unwrap_or(f64::NAN))
                .collect(),
            seed,
            None,
        ));
        m.push(measurement(
            &format!("synced_rate.{cell}"),
            "buffered writes plus fdatasync",
            "MB/s",
            c.runs
                .iter()
                .map(|r| mb_s(r.bytes, r.write_s + r.sync_s.unwrap_or(0.0)))
                .collect(),
            seed,
            None,
        ));
    }
    let ratio = format!(
        "a ratio, not a share: the file system's journal and metadata, or another writer on {device}, can put it above 1"
    );
    let after_until = match mode_of(&c.mode) {
        Mode::Buffered => "afterwards, until fdatasync returned (the write back lag)",
        _ => "right after the calls",
    };
    let findings = vec![
        finding(
            &format!("device_during.{cell}"),
            f.during,
            "x",
            format!(
                "{} reached the device while write() ran, of {} written; {ratio}",
                human_bytes(f.during_bytes.max(0.0) as u64),
                human_bytes(bytes)
            ),
        ),
        finding(
            &format!("device_after.{cell}"),
            f.after,
            "x",
            format!(
                "{} reached it {after_until}; Dirty {} and Writeback {} right after the calls",
                human_bytes(f.after_bytes.max(0.0) as u64),
                opt_bytes(f.dirty),
                opt_bytes(f.writeback)
            ),
        ),
    ];
    (m, findings)
}

/// The probes' figures: ns per fresh page, ns per page again, the MB/s of new pages
/// that first cost allows, the overwrite rate.
struct Probes {
    touch_new_ns: f64,
    touch_again_ns: f64,
    page_limit_mb_s: f64,
    overwrite_mb_s: f64,
}

fn probes(raw: &Raw) -> Probes {
    let pages = (raw.touch.bytes / raw.page_bytes.max(1)).max(1) as f64;
    let touch_new_ns = raw.touch.first_ns as f64 / pages;
    Probes {
        touch_new_ns,
        touch_again_ns: raw.touch.again_ns as f64 / pages,
        page_limit_mb_s: if touch_new_ns > 0.0 {
            raw.page_bytes as f64 / touch_new_ns * 1e9 / 1e6
        } else {
            f64::NAN
        },
        overwrite_mb_s: mb_s(raw.overwrite.bytes, raw.overwrite.secs),
    }
}

pub fn judge(plan: &Plan, raw: &Raw, env: &Environment) -> Output {
    let mut out = Output::default();
    let device = raw.device().unwrap_or("the device");
    let (mut labels, mut bars_write, mut bars_synced) = (Vec::new(), Vec::new(), Vec::new());
    let cells: Vec<&Cell> = raw.cells.iter().filter(|c| !c.runs.is_empty()).collect();
    for (i, c) in cells.iter().enumerate() {
        let f = cell_figures(c);
        let (m, fs) = cell_outputs(c, &f, device, env.seed);
        out.measurements.extend(m);
        out.findings.extend(fs);
        labels.push(format!("{} {}", c.mode, bs_label(c.block)));
        bars_write.push([i as f64, f.write_rate]);
        bars_synced.push([i as f64, f.synced_rate]);
    }
    let p = probes(raw);
    out.findings.extend(probe_findings(&p));
    out.claims.push(buffered_faster(raw, env, &p));
    if let Some(c) = raw.cell(Mode::Buffered, BIG) {
        out.claims.push(device_later(raw, env, &cell_figures(c)));
    }
    out.notes = notes(plan, raw, env);
    out.params
        .insert("device".into(), serde_json::json!(raw.device()));
    out.system = sampler::records(&raw.snapshots);
    out.plots.push(Plot {
        id: "rates".into(),
        title: "Write throughput by mode and block size".into(),
        x: Axis::new("", "", Scale::Linear),
        y: Axis::new("throughput", "MB/s", Scale::Linear),
        series: vec![
            Series {
                name: "until write() returns".into(),
                style: SeriesStyle::Bars,
                points: bars_write,
            },
            Series {
                name: "including fdatasync".into(),
                style: SeriesStyle::Bars,
                points: bars_synced,
            },
        ],
        markers: vec![],
        x_labels: labels,
    });
    out.plots.extend(sampler::plots(&out.system, raw.device()));
    out
}

fn probe_findings(p: &Probes) -> Vec<Finding> {
    vec![
        finding(
            "first_touch_ns_per_page",
            p.touch_new_ns,
            "ns",
            format!(
                "touching a fresh anonymous page: at most {:.0} MB/s of new pages",
                p.page_limit_mb_s
            ),
        ),
        finding(
            "second_touch_ns_per_page",
            p.touch_again_ns,
            "ns",
            "touching it again",
        ),
        finding(
            "overwrite_cached_rate",
            p.overwrite_mb_s,
            "MB/s",
            "buffered overwrite of pages already in the page cache",
        ),
    ]
}

/// The device's write cache and rotational flags: read during the run, else as the
/// environment recorded them for the same disk.
fn disk_flags(raw: &Raw, env: &Environment) -> (Option<String>, Option<bool>) {
    let Some(d) = &raw.disk else {
        return (None, None);
    };
    let recorded = env.machine.block_devices.iter().find(|b| b.name == d.disk);
    (
        d.write_cache
            .clone()
            .or_else(|| recorded.and_then(|b| b.write_cache.clone())),
        d.rotational.or_else(|| recorded.and_then(|b| b.rotational)),
    )
}

/// Why O_DIRECT kept up with buffered writes, from what the environment shows.
fn direct_not_slow(raw: &Raw, env: &Environment, p: &Probes, direct_mb_s: f64) -> String {
    let (cache, rotational) = disk_flags(raw, env);
    let disk = raw.disk.as_ref().map_or("the device", |d| d.disk.as_str());
    let cache_part = cache
        .as_deref()
        .map(|w| format!(" (it reports a '{w}' cache)"))
        .unwrap_or_default();
    let device_side = match (&env.machine.hypervisor.name, cache.as_deref(), rotational) {
        (_, _, _) if raw.disk.is_none() => {
            "the scratch directory is on no block device, so O_DIRECT writes went to memory"
                .to_string()
        }
        (Some(h), _, _) => format!(
            "{disk} is a virtual disk under {h}{cache_part}, so an O_DIRECT write can return once the host holds it, at {direct_mb_s:.0} MB/s here"
        ),
        (None, Some("write back"), _) => format!(
            "{disk} acknowledges writes from its volatile write cache ('write back'), so O_DIRECT writes returned at {direct_mb_s:.0} MB/s before reaching the medium"
        ),
        (None, _, Some(false)) => format!(
            "{disk} is solid-state{cache_part} and took 1 MiB direct writes at {direct_mb_s:.0} MB/s"
        ),
        (None, _, _) => {
            format!("{disk}{cache_part} took 1 MiB direct writes at {direct_mb_s:.0} MB/s")
        }
    };
    let balloon = match (
        env.machine.hypervisor.name.is_some(),
        env.machine.hypervisor.balloon_free_page_reporting,
    ) {
        (true, Some(true)) => {
            "; the virtio balloon's free page reporting hands freed memory to the host, so new pages fault on the host"
        }
        _ => "",
    };
    format!(
        "O_DIRECT is not slow here: {device_side}, while each new page-cache page costs {:.0} ns to touch (at most {:.0} MB/s of new pages; overwriting cached pages ran at {:.0} MB/s){balloon}",
        p.touch_new_ns, p.page_limit_mb_s, p.overwrite_mb_s
    )
}

fn buffered_faster(raw: &Raw, env: &Environment, p: &Probes) -> Claim {
    let rate = |m: Mode| raw.cell(m, BIG).map(|c| cell_figures(c).write_rate);
    let (buffered, direct) = (rate(Mode::Buffered), rate(Mode::Direct));
    let subject = "buffered write() rate over O_DIRECT's, 1 MiB blocks";
    if let (Some(why), None) = (&raw.refused, direct) {
        return BUFFERED_FASTER.not_testable(
            &Rule::AtLeast(MIN_RATIO).describe(subject, "x"),
            why.clone(),
        );
    }
    let ratio = buffered.zip(direct).map(|(b, d)| b / d);
    let conditions = [Condition::from_option(
        subject,
        "x",
        Rule::AtLeast(MIN_RATIO),
        ratio,
        "no buffered or no O_DIRECT figure at 1 MiB blocks",
    )];
    let context = format!(
        "buffered {:.0} MB/s, O_DIRECT {:.0} MB/s",
        buffered.unwrap_or(f64::NAN),
        direct.unwrap_or(f64::NAN)
    );
    BUFFERED_FASTER.judge(&conditions, &context, |o| {
        if o.holds() {
            "write() only copied into the page cache; the device work came later".into()
        } else {
            direct_not_slow(raw, env, p, direct.unwrap_or(f64::NAN))
        }
    })
}

fn device_later(raw: &Raw, env: &Environment, f: &CellFigures) -> Claim {
    let during = "device bytes while write() ran over bytes written";
    let after = "device bytes after it, until fdatasync returned, over bytes written";
    if raw.disk.is_none() {
        let expectation = format!(
            "{}, and {}",
            Rule::Below(MAX_DURING).describe(during, "x"),
            Rule::AtLeast(MIN_AFTER).describe(after, "x")
        );
        return DEVICE_LATER
            .not_testable(&expectation, "the scratch directory is on no block device");
    }
    let conditions = [
        Condition::new(during, "x", Rule::Below(MAX_DURING), f.during),
        Condition::new(after, "x", Rule::AtLeast(MIN_AFTER), f.after),
    ];
    let context = format!(
        "{} during the calls, {} after them; Dirty {} right after the calls",
        human_bytes(f.during_bytes.max(0.0) as u64),
        human_bytes(f.after_bytes.max(0.0) as u64),
        opt_bytes(f.dirty)
    );
    let page = env.machine.memory.page_bytes.max(1);
    let background = env
        .machine
        .dirty
        .nr_dirty_background_threshold_pages
        .map(|p| human_bytes(p * page));
    DEVICE_LATER.judge(&conditions, &context, |o| {
        if o.holds() {
            "write() returned with the data only in the page cache".into()
        } else if o.failed(0) {
            format!(
                "write back started while the writes were still running: the background limit was {} when the run began (reached, the flusher starts), or a slow copy gave the periodic flusher time",
                background.as_deref().unwrap_or("unknown")
            )
        } else {
            "fewer bytes reached the device than were written (compression or deduplication below?)".into()
        }
    })
}

/// Under free page reporting the order of the buffered writes matters.
fn page_reuse_note(plan: &Plan) -> String {
    let first = plan
        .block_sizes
        .first()
        .map_or("first".into(), |b| bs_label(*b));
    format!(
        "buffered writes run smallest block first, each deleting its file, and a write can reuse the pages the one before freed while the host has not yet taken them (it waits about 2 s, mm/page_reporting.c): the experiment's first buffered write pays most for new pages{}",
        if plan.samples == 1 {
            format!(", and with one run per cell that is the whole buffered {first} figure")
        } else {
            format!(
                ", one of the {} runs whose median is the buffered {first} figure",
                plan.samples
            )
        }
    )
}

fn notes(plan: &Plan, raw: &Raw, env: &Environment) -> Vec<String> {
    let mut notes = Vec::new();
    let (cache, rotational) = disk_flags(raw, env);
    if let (Some(d), Some(wc)) = (&raw.disk, &cache) {
        notes.push(format!(
            "{} write cache mode: {wc}; {}",
            d.disk,
            match rotational {
                Some(true) => "rotational",
                Some(false) => "not rotational",
                None => "rotational flag unread",
            }
        ));
    }
    if let Some(r) = env.machine.hypervisor.balloon_free_page_reporting {
        notes.push(format!(
            "virtio balloon free page reporting is {}",
            if r {
                "on: freed guest memory returns to the host, so new page-cache pages fault on the host"
            } else {
                "off"
            }
        ));
    }
    if env.machine.hypervisor.balloon_free_page_reporting == Some(true) {
        notes.push(page_reuse_note(plan));
    }
    notes.extend(raw.refused.iter().cloned());
    if raw.disk.is_none() {
        notes.push(
            "the scratch directory is on no block device (tmpfs?): device bytes are zero".into(),
        );
    }
    let small = plan
        .block_sizes
        .iter()
        .find(|b| **b < super::SMALL_BLOCK)
        .map_or(plan.size, |b| plan.bytes_for(Mode::Dsync, *b));
    notes.push(format!(
        "{} run(s) per cell; synchronous modes with blocks under 64 KiB wrote {} each",
        plan.samples,
        human_bytes(small)
    ));
    notes
}
