//! Judging `io.read` from its raw data: summaries, findings, plots, notes (the
//! claims are in claims.rs).

use oslab_model::{Axis, Environment, Plot, Scale, Series, SeriesStyle};
use oslab_units::human_bytes;

use super::claims::{EVICTED_ENOUGH, cache_grows, pct, warm_faster};
use super::figures::{Figures, col, figures, med};
use super::{Plan, Raw, Round};
use oslab_harness::sampler;
use oslab_harness::{Output, finding, measurement};
use oslab_services::disk_probe::{OpStats, mb_s};

/// The measurements: (name, description, unit, figure of one round).
type Column = (
    &'static str,
    &'static str,
    &'static str,
    fn(&Round, u64) -> f64,
);

const COLUMNS: [Column; 16] = [
    ("cold_read", "read(2) after eviction", "s", |r, _| {
        r.cold.secs
    }),
    ("warm_read", "read(2) again, file cached", "s", |r, _| {
        r.warm.secs
    }),
    (
        "mmap_cold",
        "mmap, one byte per page, after eviction",
        "s",
        |r, _| r.mmap_cold.secs,
    ),
    ("mmap_warm", "mmap again, file cached", "s", |r, _| {
        r.mmap_warm.secs
    }),
    (
        "cold_read_rate",
        "cold read(2) throughput",
        "MB/s",
        |r, size| mb_s(size, r.cold.secs),
    ),
    (
        "warm_read_rate",
        "warm read(2) throughput",
        "MB/s",
        |r, size| mb_s(size, r.warm.secs),
    ),
    ("cold_user", "user CPU of the cold read", "s", |r, _| {
        r.cold.user_s
    }),
    ("cold_sys", "system CPU of the cold read", "s", |r, _| {
        r.cold.sys_s
    }),
    ("warm_user", "user CPU of the warm read", "s", |r, _| {
        r.warm.user_s
    }),
    ("warm_sys", "system CPU of the warm read", "s", |r, _| {
        r.warm.sys_s
    }),
    (
        "cold_device_read",
        "bytes the device read during the cold read",
        "bytes",
        |r, _| r.cold.dev_read_bytes as f64,
    ),
    (
        "warm_device_read",
        "bytes the device read during the warm read",
        "bytes",
        |r, _| r.warm.dev_read_bytes as f64,
    ),
    (
        "mmap_cold_major_faults",
        "major faults of the cold mmap read",
        "faults",
        |r, _| r.mmap_cold.major_faults as f64,
    ),
    (
        "mmap_warm_major_faults",
        "major faults of the warm mmap read",
        "faults",
        |r, _| r.mmap_warm.major_faults as f64,
    ),
    (
        "cold_cache_growth",
        "Buffers + Cached growth during the cold read",
        "bytes",
        |r, _| r.cold.cache_delta_bytes as f64,
    ),
    (
        "warm_cache_growth",
        "Buffers + Cached growth during the warm read",
        "bytes",
        |r, _| r.warm.cache_delta_bytes as f64,
    ),
];

pub fn judge(plan: &Plan, raw: &Raw, env: &Environment) -> Output {
    let f = figures(plan, raw, env);
    let system = sampler::records(&raw.snapshots);
    let times = [
        f.cold_s,
        f.warm_s,
        med(&col(raw, |r| r.mmap_cold.secs)),
        med(&col(raw, |r| r.mmap_warm.secs)),
    ];
    let mut plots = vec![Plot {
        id: "times".into(),
        title: "Reading the file cold and warm".into(),
        x: Axis::new("", "", Scale::Linear),
        y: Axis::new("time", "s", Scale::Linear),
        series: vec![Series {
            name: "median time".into(),
            style: SeriesStyle::Bars,
            points: times
                .iter()
                .enumerate()
                .map(|(i, y)| [i as f64, *y])
                .collect(),
        }],
        markers: vec![],
        x_labels: ["read cold", "read warm", "mmap cold", "mmap warm"]
            .map(String::from)
            .to_vec(),
    }];
    plots.extend(sampler::plots(&system, raw.device()));
    let mut out = Output {
        measurements: COLUMNS
            .iter()
            .map(|(name, description, unit, get)| {
                let samples = raw.rounds.iter().map(|r| get(r, f.size)).collect();
                measurement(name, description, unit, samples, env.seed, None)
            })
            .collect(),
        findings: findings(raw, &f, &raw.create),
        claims: vec![warm_faster(raw, &f), cache_grows(&f)],
        plots,
        notes: notes(plan, raw, &f),
        system,
        ..Default::default()
    };
    out.params
        .insert("device".into(), serde_json::json!(raw.device()));
    out
}

fn findings(raw: &Raw, f: &Figures, create: &OpStats) -> Vec<oslab_model::Finding> {
    let method = raw
        .residency_method
        .as_deref()
        .unwrap_or("neither cachestat nor mincore worked");
    let over_size = "above 1 when the device also read metadata or another program read from it";
    vec![
        finding("file_bytes", f.size as f64, "bytes", human_bytes(f.size)),
        finding("create_s", create.secs, "s", "writing and syncing the file"),
        finding(
            "speedup_warm_vs_cold",
            f.speedup,
            "x",
            "median cold read time over median warm read time",
        ),
        finding(
            "cold_device_share",
            f.cold_dev / f.size as f64,
            "x",
            format!(
                "bytes the device read during the cold read ({}) over the file size; {over_size}",
                human_bytes(f.cold_dev.max(0.0) as u64)
            ),
        ),
        finding(
            "warm_device_share",
            f.warm_dev / f.size as f64,
            "x",
            format!(
                "bytes the device read during the warm read ({}) over the file size",
                human_bytes(f.warm_dev.max(0.0) as u64)
            ),
        ),
        finding(
            "cold_device_rate",
            f.cold_dev_rate,
            "MB/s",
            "device bytes during the cold read over its time",
        ),
        finding(
            "cached_before_cold",
            f.before_cold,
            "fraction",
            format!("of the file's pages cached after eviction ({method})"),
        ),
        finding(
            "cached_after_cold",
            f.after_cold,
            "fraction",
            format!("of the file's pages cached after the cold read ({method})"),
        ),
        finding(
            "cached_after_warm",
            f.after_warm,
            "fraction",
            format!("after the warm read ({method})"),
        ),
    ]
}

fn notes(plan: &Plan, raw: &Raw, f: &Figures) -> Vec<String> {
    let mut notes = Vec::new();
    if plan.size_bytes < plan.size {
        notes.push(format!(
            "file shrunk from {} to {} to fit in half the available memory",
            human_bytes(plan.size),
            human_bytes(plan.size_bytes)
        ));
    }
    match &raw.disk {
        Some(d) => notes.push(format!("the file lives on {}", d.device)),
        None => notes.push("the scratch directory is on no block device (tmpfs?): device bytes are zero and eviction may do nothing".into()),
    }
    if f.host_cached() {
        notes.push(format!(
            "the cold read ran at {:.0} MB/s from the device counters: on this virtual disk ({}) that is the host's page cache answering, not a disk",
            f.cold_dev_rate,
            f.hypervisor.as_deref().unwrap_or("hypervisor")
        ));
    }
    if f.before_cold > EVICTED_ENOUGH {
        notes.push(format!(
            "eviction left {} of the file cached: the cold read was partly warm",
            pct(f.before_cold)
        ));
    }
    notes.push(format!(
        "eviction by {}; residency by {}; {} rounds",
        if plan.drop_caches {
            "vm.drop_caches=3"
        } else {
            "fsync + posix_fadvise(DONTNEED)"
        },
        raw.residency_method
            .as_deref()
            .unwrap_or("nothing (unreadable)"),
        raw.rounds.len()
    ));
    notes
}
