//! Judging `io.write` from its raw data: rates and where the bytes were (the
//! claims are in claims.rs).

use oslab_model::{Axis, Environment, Finding, Measurement, Plot, Scale, Series, SeriesStyle};
use oslab_units::human_bytes;

use super::claims::{buffered_faster, device_later};
use super::figures::{BIG, CellFigures, Probes, cell_figures, disk_flags, opt_bytes, probes};
use super::{Cell, Mode, Plan, Raw, bs_label};
use oslab_harness::sampler;
use oslab_harness::{Output, finding, measurement};
use oslab_services::disk_probe::mb_s;

fn mode_of(name: &str) -> Mode {
    match name {
        "direct" => Mode::Direct,
        "dsync" => Mode::Dsync,
        _ => Mode::Buffered,
    }
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
