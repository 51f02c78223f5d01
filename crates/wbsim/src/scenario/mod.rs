//! Built-in scenarios (the material's experiments and the WCALL paper's workloads)
//! and the TOML format for users' own.

use serde::{Deserialize, Serialize};

mod file;
mod shape;

use crate::config::{
    Class, Config, DeviceCfg, DeviceKind, GovernorCfg, Initial, Kind, MIB, RuleSet, Sysctls,
    WriterCfg,
};

pub use crate::validate::{Invalid, validate};
pub use file::from_toml;

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Scenario {
    pub name: String,
    pub title: String,
    pub description: String,
    pub config: Config,
    /// What the scenario leaves to a machine profile (`oslab sim calibrate`).
    #[serde(skip)]
    pub open: crate::profile::OpenFields,
}

fn periodic(name: &str, class: Class, count: u64) -> WriterCfg {
    WriterCfg {
        name: name.into(),
        kind: Kind::Periodic {
            bytes: 512 << 10,
            period_ms: 20.0,
            count,
        },
        class,
        group: None,
        fsync_every: None,
        start_ms: 0.0,
        stop_ms: None,
    }
}

fn rate(name: &str, bytes_per_s: f64) -> WriterCfg {
    WriterCfg {
        name: name.into(),
        kind: Kind::Rate {
            bytes_per_s,
            chunk: (bytes_per_s / 10.0) as u64,
        },
        class: Class::Normal { nice: 0 },
        group: None,
        fsync_every: None,
        start_ms: 0.0,
        stop_ms: None,
    }
}

fn bulk(name: &str) -> WriterCfg {
    WriterCfg {
        name: name.into(),
        kind: Kind::Bulk { chunk: 512 << 10 },
        class: Class::Normal { nice: 0 },
        group: None,
        fsync_every: None,
        start_ms: 0.0,
        stop_ms: None,
    }
}

/// The author's 8 GiB laptop with an NVMe drive (material 4), most of it dirtyable.
fn material_box(sysctls: Sysctls, writers: Vec<WriterCfg>, duration_s: f64) -> Config {
    Config {
        sysctls,
        device: DeviceCfg {
            kind: DeviceKind::Disk,
            bandwidth_bytes_s: 1000.0 * MIB as f64,
            request_latency_ns: 20_000,
            max_request_bytes: 512 << 10,
            queue_bytes: 64 * MIB,
        },
        ..Config::new(RuleSet::Linux6, 7 << 30, writers, duration_s, 4)
    }
}

/// The paper's machine: Pentium IV, 1 GiB, 2.6.26 (dirty_ratio 10, background 5),
/// a 2009 SATA disk: about 35 MiB/s with three streams interleaved, a 2 ms request
/// cost, a 128-request queue of up to 512 KiB.
fn paper_box(writers: Vec<WriterCfg>) -> Config {
    Config {
        sysctls: Sysctls {
            dirty_ratio: 10,
            dirty_background_ratio: 5,
            ..Sysctls::default()
        },
        device: DeviceCfg {
            kind: DeviceKind::Disk,
            bandwidth_bytes_s: 35.0 * MIB as f64,
            request_latency_ns: 2_000_000,
            max_request_bytes: 512 << 10,
            queue_bytes: 32 * MIB,
        },
        copy_bytes_s: 1.0e9,
        hz: 1000,
        // the paper's WCALL was in the kernel: it decided at every write
        governor: GovernorCfg {
            pass_ms: 0.0,
            ..GovernorCfg::default()
        },
        ..Config::new(RuleSet::Linux2626, 850 * MIB, writers, 60.0, 1)
    }
}

/// This machine's testbed (writeback-kernel.md): a loop device capped at 40 MiB/s by
/// blk-throttle, dirty_bytes 64 MiB, dirty_background_bytes 32 MiB, linux-6 rules
/// at HZ 250; ext4 on 6.18 dirties a 512 KiB write as one folio (the kernel's
/// balance_dirty_pages records show 128 pages per call). As just built: the
/// testbed's bandwidth probe (free run) taught the kernel the write bandwidth, but
/// its dirty_ratelimit is still the INIT_BW it starts a device with.
fn testbed_box(writers: Vec<WriterCfg>) -> Config {
    Config {
        sysctls: Sysctls {
            dirty_bytes: 64 * MIB,
            dirty_background_bytes: 32 * MIB,
            dirty_ratio: 0,
            dirty_background_ratio: 0,
            ..Sysctls::default()
        },
        device: DeviceCfg {
            kind: DeviceKind::Throttled,
            bandwidth_bytes_s: 40.0 * MIB as f64,
            request_latency_ns: 0,
            max_request_bytes: crate::config::TESTBED_REQUEST_BYTES,
            queue_bytes: 1 << 40,
        },
        folio_bytes: 2 * MIB,
        initial: Initial {
            write_bw_bytes_s: Some(40.0 * MIB as f64),
            avg_write_bw_bytes_s: Some(40.0 * MIB as f64),
            ..Initial::default()
        },
        ..Config::new(RuleSet::Linux6, 23 << 30, writers, 30.0, 2)
    }
}

fn rt(p: u32) -> Class {
    Class::Rt { priority: p }
}

/// Every built-in scenario.
pub fn builtin() -> Vec<Scenario> {
    let mut all = material_scenarios();
    all.extend(paper_scenarios());
    all.extend(testbed_scenarios());
    all
}

/// A scenario of a machine of its own: it takes nothing from a profile.
fn scenario(name: &str, title: &str, description: &str, config: Config) -> Scenario {
    Scenario {
        name: name.into(),
        title: title.into(),
        description: description.into(),
        config,
        open: crate::profile::OpenFields::default(),
    }
}

/// A scenario of this machine's testbed: the throttle's cap is the scenario's,
/// the page-cache costs, the tick rate and the kernel's rules are this machine's.
fn on_this_machine(s: Scenario) -> Scenario {
    Scenario {
        open: crate::profile::OpenFields {
            copy: true,
            page_alloc: true,
            hz: true,
            device_bandwidth: false,
            kernel: true,
        },
        ..s
    }
}

/// The material's experiments A, B and C.
fn material_scenarios() -> Vec<Scenario> {
    let a = Sysctls {
        dirty_background_ratio: 1,
        dirty_writeback_centisecs: 0,
        ..Sysctls::default()
    };
    let b = Sysctls {
        dirty_background_ratio: 20,
        dirty_ratio: 40,
        dirty_writeback_centisecs: 500,
        dirty_expire_centisecs: 1000,
        ..Sysctls::default()
    };
    let c1 = Sysctls {
        dirty_background_ratio: 10,
        dirty_ratio: 20,
        dirty_writeback_centisecs: 500,
        dirty_expire_centisecs: 3000,
        ..Sysctls::default()
    };
    let c2 = Sysctls {
        dirty_background_ratio: 1,
        dirty_ratio: 20,
        dirty_writeback_centisecs: 500,
        dirty_expire_centisecs: 1000,
        ..Sysctls::default()
    };
    vec![
        scenario(
            "material-a",
            "Background sync (Kang Jin-woo, ch. 10, background sync test)",
            "periodic write back off, background 1 %, 1 MiB/s writer, 8 GiB box",
            material_box(a, vec![rate("writer", MIB as f64)], 240.0),
        ),
        scenario(
            "material-b",
            "Periodic sync (Kang Jin-woo, ch. 10, periodic sync test)",
            "background 20 %, hard 40 %, writeback 5 s, expire 10 s, 1 MiB/s writer",
            material_box(b, vec![rate("writer", MIB as f64)], 60.0),
        ),
        scenario(
            "material-c1",
            "Case 1 (Kang Jin-woo, ch. 10, case 1 vs case 2)",
            "background 10 %, hard 20 %, expire 30 s, a 100 MiB/s writer for 30 s",
            material_box(c1, vec![rate("writer", 100.0 * MIB as f64)], 60.0),
        ),
        scenario(
            "material-c2",
            "Case 2 (Kang Jin-woo, ch. 10, case 1 vs case 2)",
            "background 1 %, hard 20 %, expire 10 s, a 100 MiB/s writer for 30 s",
            material_box(c2, vec![rate("writer", 100.0 * MIB as f64)], 60.0),
        ),
    ]
}

/// The WCALL paper's figures, on its 2009 machine.
fn paper_scenarios() -> Vec<Scenario> {
    vec![
        scenario(
            "paper-fig1",
            "One RT writer alone (WCALL Fig. 1)",
            "RT-55 writes 512 KiB every 20 ms, 700 writes; 2.6.26 on a 2009 disk",
            paper_box(vec![periodic("rt55", rt(55), 700)]),
        ),
        scenario(
            "paper-fig2",
            "RT-55 vs two RT-45 (WCALL Fig. 2/4/5)",
            "three RT writers of 512 KiB every 20 ms, 700 writes each; 2.6.26 on a 2009 disk",
            paper_box(vec![
                periodic("rt55", rt(55), 700),
                periodic("rt45a", rt(45), 700),
                periodic("rt45b", rt(45), 700),
            ]),
        ),
        scenario(
            "paper-fig7",
            "One NON-RT writer (WCALL Fig. 7)",
            "a nice-4 writer of 512 KiB every 20 ms, 1000 writes; 2.6.26",
            paper_box(vec![periodic("nice4", Class::Normal { nice: 4 }, 1000)]),
        ),
    ]
}

/// The paper's workloads on this machine's testbed.
fn testbed_scenarios() -> Vec<Scenario> {
    let all = vec![
        scenario(
            "testbed-alone",
            "RT-55 alone on this machine's testbed",
            "linux-6, 40 MiB/s, dirty_bytes 64 MiB, background 32 MiB",
            testbed_box(vec![periodic("rt55", rt(55), 700)]),
        ),
        scenario(
            "testbed-fig2",
            "RT-55 vs two RT-45 on this machine's testbed",
            "linux-6 rules; the 6.18 kernel on oslab's testbed here: RT-55 p99 52-220 ms over 500 writes (sim validate, 2026-11-27)",
            testbed_box(vec![
                periodic("rt55", rt(55), 700),
                periodic("rt45a", rt(45), 700),
                periodic("rt45b", rt(45), 700),
            ]),
        ),
        scenario(
            "testbed-bulk",
            "RT-55 vs two non-RT bulk writers on the testbed",
            "linux-6 rules; the 6.18 kernel on oslab's testbed here: RT-55 p99 40-72 ms over 500 writes (sim validate, 2026-11-27)",
            testbed_box(vec![
                periodic("rt55", rt(55), 700),
                bulk("bulk1"),
                bulk("bulk2"),
            ]),
        ),
    ];
    all.into_iter().map(on_this_machine).collect()
}

pub fn find(name: &str) -> Option<Scenario> {
    builtin().into_iter().find(|s| s.name == name)
}

/// "64MiB", "1G", "4096" -> bytes; "40MiB/s" -> bytes per second.
pub fn parse_bytes(s: &str) -> Option<u64> {
    use oslab_units::{parse_human_rate, parse_human_size};
    let t = s.trim();
    if t.ends_with("/s") {
        parse_human_rate(t).ok()
    } else {
        parse_human_size(t).ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builtins_are_valid_and_named_uniquely() {
        let all = builtin();
        for s in &all {
            validate(&s.config).unwrap_or_else(|e| panic!("{}: {e}", s.name));
        }
        let mut names: Vec<&str> = all.iter().map(|s| s.name.as_str()).collect();
        names.sort();
        names.dedup();
        assert_eq!(names.len(), all.len());
    }

    #[test]
    fn toml_scenarios_parse_and_errors_are_clear() {
        let text = r#"
title = "mine"
rules = "linux-6"
dirtyable_bytes = 1073741824
duration_s = 5.0
cpus = 2
[sysctls]
dirty_bytes = 67108864
dirty_background_bytes = 33554432
[device]
bandwidth_bytes_s = 10485760.0
[[writers]]
name = "w"
type = "periodic"
bytes = 524288
period_ms = 20.0
count = 100
class = { rt = { priority = 55 } }
"#;
        let s = from_toml("mine.toml", text).unwrap();
        assert_eq!(s.config.writers[0].group_name(), "rt-high");
        let bad = from_toml("bad.toml", "rules = \"linux-9\"\n").unwrap_err();
        assert!(bad.starts_with("bad.toml line 1, rules: "), "{bad}");
        let neg = text.replace("duration_s = 5.0", "duration_s = -1.0");
        assert!(
            from_toml("neg.toml", &neg)
                .unwrap_err()
                .contains("duration_s")
        );
    }

    #[test]
    fn settings_apply() {
        let c = find("testbed-fig2").unwrap().config;
        let set = |a: &str| {
            crate::sets::parse_sets(&[a.to_string()])
                .and_then(|sets| crate::sets::configure(&c, &sets))
        };
        assert_eq!(
            set("bandwidth=10MiB/s").unwrap().device.bandwidth_bytes_s,
            10.0 * MIB as f64
        );
        assert!(set("nope=1").unwrap_err().contains("no such setting"));
        assert!(set("duration=-3").is_err());
    }
}

/// Property tests of a user's scenario TOML and `--set key=value`: any text, and
/// any mutation of a valid scenario, gives a scenario or a one-sentence error, never
/// a panic; the built-in scenarios round-trip through TOML. A fuzz-like run with
/// many cases (PROPTEST_CASES wins over the default here; failures are printed, not
/// saved to proptest-regressions/):
/// `PROPTEST_CASES=20000 cargo test -p oslab-wbsim --lib -- scenario::props`
#[cfg(test)]
mod props;
