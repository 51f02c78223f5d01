//! Built-in scenarios (the material's experiments and the WCALL paper's workloads)
//! and the TOML format for users' own.

use serde::{Deserialize, Serialize};

use crate::config::{Class, Config, DeviceCfg, Kind, MIB, MS, RuleSet, Sysctls, WriterCfg};
use crate::policy::Policy;
use crate::settings::{self, Assignment, DAY_MS, MAX_BYTES};

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Scenario {
    pub name: String,
    pub title: String,
    pub description: String,
    pub config: Config,
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
    }
}

/// The author's 8 GiB laptop with an NVMe drive (material 4), most of it dirtyable.
fn material_box(sysctls: Sysctls, writers: Vec<WriterCfg>, duration_s: f64) -> Config {
    Config {
        rules: RuleSet::Linux6,
        dirtyable_bytes: 7 << 30,
        sysctls,
        device: DeviceCfg {
            bandwidth_bytes_s: 1000.0 * MIB as f64,
            request_latency_ns: 20_000,
            max_request_bytes: 512 << 10,
            queue_bytes: 64 * MIB,
        },
        copy_bytes_s: 2.0e9,
        writers,
        duration_s,
        policy: Policy::Vanilla,
        sample_ms: 100.0,
        wcall_block_ms: 100.0,
        cpus: 4,
    }
}

/// The paper's machine: Pentium IV, 1 GiB, 2.6.26 (dirty_ratio 10, background 5),
/// a 2009 SATA disk: about 35 MiB/s with three streams interleaved, a 2 ms request
/// cost, a 128-request queue of up to 512 KiB.
fn paper_box(writers: Vec<WriterCfg>) -> Config {
    Config {
        rules: RuleSet::Linux2626,
        dirtyable_bytes: 850 * MIB,
        sysctls: Sysctls {
            dirty_ratio: 10,
            dirty_background_ratio: 5,
            ..Sysctls::default()
        },
        device: DeviceCfg {
            bandwidth_bytes_s: 35.0 * MIB as f64,
            request_latency_ns: 2_000_000,
            max_request_bytes: 512 << 10,
            queue_bytes: 32 * MIB,
        },
        copy_bytes_s: 1.0e9,
        writers,
        duration_s: 60.0,
        policy: Policy::Vanilla,
        sample_ms: 100.0,
        wcall_block_ms: 100.0,
        cpus: 1,
    }
}

/// This machine's testbed (writeback-kernel.md): 40 MiB/s, dirty_bytes 64 MiB,
/// dirty_background_bytes 32 MiB, linux-6 rules.
fn testbed_box(writers: Vec<WriterCfg>) -> Config {
    Config {
        rules: RuleSet::Linux6,
        dirtyable_bytes: 23 << 30,
        sysctls: Sysctls {
            dirty_bytes: 64 * MIB,
            dirty_background_bytes: 32 * MIB,
            dirty_ratio: 0,
            dirty_background_ratio: 0,
            ..Sysctls::default()
        },
        device: DeviceCfg {
            bandwidth_bytes_s: 40.0 * MIB as f64,
            request_latency_ns: 0,
            max_request_bytes: 512 << 10,
            queue_bytes: 1 << 40,
        },
        copy_bytes_s: 2.0e9,
        writers,
        duration_s: 30.0,
        policy: Policy::Vanilla,
        sample_ms: 100.0,
        wcall_block_ms: 100.0,
        cpus: 2,
    }
}

fn rt(p: u32) -> Class {
    Class::Rt { priority: p }
}

/// Every built-in scenario.
pub fn builtin() -> Vec<Scenario> {
    let s = |name: &str, title: &str, description: &str, config: Config| Scenario {
        name: name.into(),
        title: title.into(),
        description: description.into(),
        config,
    };
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
        s(
            "material-a",
            "Background sync (material 4, experiment A)",
            "periodic write back off, background 1 %, 1 MiB/s writer, 8 GiB box",
            material_box(a, vec![rate("writer", MIB as f64)], 240.0),
        ),
        s(
            "material-b",
            "Periodic sync (material 4, experiment B)",
            "background 20 %, hard 40 %, writeback 5 s, expire 10 s, 1 MiB/s writer",
            material_box(b, vec![rate("writer", MIB as f64)], 60.0),
        ),
        s(
            "material-c1",
            "Case 1 (material 4, experiment C)",
            "background 10 %, hard 20 %, expire 30 s, a 100 MiB/s writer for 30 s",
            material_box(c1, vec![rate("writer", 100.0 * MIB as f64)], 60.0),
        ),
        s(
            "material-c2",
            "Case 2 (material 4, experiment C)",
            "background 1 %, hard 20 %, expire 10 s, a 100 MiB/s writer for 30 s",
            material_box(c2, vec![rate("writer", 100.0 * MIB as f64)], 60.0),
        ),
        s(
            "paper-fig1",
            "One RT writer alone (WCALL Fig. 1)",
            "RT-55 writes 512 KiB every 20 ms, 700 writes; 2.6.26 on a 2009 disk",
            paper_box(vec![periodic("rt55", rt(55), 700)]),
        ),
        s(
            "paper-fig2",
            "RT-55 vs two RT-45 (WCALL Fig. 2/4/5)",
            "three RT writers of 512 KiB every 20 ms, 700 writes each; 2.6.26 on a 2009 disk",
            paper_box(vec![
                periodic("rt55", rt(55), 700),
                periodic("rt45a", rt(45), 700),
                periodic("rt45b", rt(45), 700),
            ]),
        ),
        s(
            "paper-fig7",
            "One NON-RT writer (WCALL Fig. 7)",
            "a nice-4 writer of 512 KiB every 20 ms, 1000 writes; 2.6.26",
            paper_box(vec![periodic("nice4", Class::Normal { nice: 4 }, 1000)]),
        ),
        s(
            "testbed-alone",
            "RT-55 alone on this machine's testbed",
            "linux-6, 40 MiB/s, dirty_bytes 64 MiB, background 32 MiB",
            testbed_box(vec![periodic("rt55", rt(55), 700)]),
        ),
        s(
            "testbed-fig2",
            "RT-55 vs two RT-45 on this machine's testbed",
            "linux-6 rules; writeback-kernel.md saw p99 216 ms for the RT-55 writer",
            testbed_box(vec![
                periodic("rt55", rt(55), 700),
                periodic("rt45a", rt(45), 700),
                periodic("rt45b", rt(45), 700),
            ]),
        ),
        s(
            "testbed-bulk",
            "RT-55 vs two non-RT bulk writers on the testbed",
            "linux-6 rules; writeback-kernel.md saw p99 219 ms",
            testbed_box(vec![
                periodic("rt55", rt(55), 700),
                bulk("bulk1"),
                bulk("bulk2"),
            ]),
        ),
    ]
}

pub fn find(name: &str) -> Option<Scenario> {
    builtin().into_iter().find(|s| s.name == name)
}

/// A user's scenario from TOML text; errors name the problem in one sentence.
pub fn from_toml(name: &str, text: &str) -> Result<Scenario, String> {
    #[derive(Deserialize)]
    struct File {
        title: Option<String>,
        description: Option<String>,
        #[serde(flatten)]
        config: Config,
    }
    let f: File = toml::from_str(text).map_err(|e| format!("{name}: {}", e.message()))?;
    validate(&f.config).map_err(|e| format!("{name}: {e}"))?;
    Ok(Scenario {
        name: name.into(),
        title: f.title.unwrap_or_else(|| name.into()),
        description: f.description.unwrap_or_default(),
        config: f.config,
    })
}

/// The largest write (the kernel's MAX_RW_COUNT is just below 2 GiB).
const MAX_WRITE: u64 = 1 << 31;
/// The slowest device or copy a scenario may have, bytes per second (64 KiB/s).
const MIN_RATE: f64 = settings::MIN_RATE as f64;

/// A number for an error message: plain, or in exponent form when far from 1.
fn shown(v: f64) -> String {
    if v == 0.0 || (1e-6..1e15).contains(&v.abs()) {
        format!("{v}")
    } else {
        format!("{v:e}")
    }
}

/// Checks a configuration for values that cannot be simulated.
pub fn validate(c: &Config) -> Result<(), String> {
    if c.writers.is_empty() {
        return Err("no writers".into());
    }
    if !(c.duration_s > 0.0 && c.duration_s <= 86_400.0) {
        return Err(format!(
            "duration_s {} is not between 0 and a day",
            c.duration_s
        ));
    }
    if c.device.bandwidth_bytes_s <= 0.0 {
        return Err("device.bandwidth_bytes_s must be positive".into());
    }
    if c.dirtyable_bytes < (16 << 20) {
        return Err("dirtyable_bytes must be at least 16 MiB".into());
    }
    // Beyond these the engine's nanosecond clock and byte counts would overflow;
    // the ratios and intervals are the kernel's own ranges.
    let s = &c.sysctls;
    let d = &c.device;
    for (name, v, max) in [
        ("dirtyable_bytes", c.dirtyable_bytes, MAX_BYTES),
        ("sysctls.dirty_bytes", s.dirty_bytes, MAX_BYTES),
        (
            "sysctls.dirty_background_bytes",
            s.dirty_background_bytes,
            MAX_BYTES,
        ),
        ("sysctls.dirty_ratio", s.dirty_ratio, 100),
        (
            "sysctls.dirty_background_ratio",
            s.dirty_background_ratio,
            100,
        ),
        (
            "sysctls.dirty_writeback_centisecs",
            s.dirty_writeback_centisecs,
            i32::MAX as u64,
        ),
        (
            "sysctls.dirty_expire_centisecs",
            s.dirty_expire_centisecs,
            i32::MAX as u64,
        ),
        (
            "device.request_latency_ns",
            d.request_latency_ns,
            DAY_MS * MS,
        ),
        ("device.max_request_bytes", d.max_request_bytes, MAX_BYTES),
        ("device.queue_bytes", d.queue_bytes, MAX_BYTES),
    ] {
        if v > max {
            return Err(format!("{name} {v} is above {max}"));
        }
    }
    let day = DAY_MS as f64;
    for (name, v, ok, rule) in [
        (
            "device.bandwidth_bytes_s",
            d.bandwidth_bytes_s,
            (MIN_RATE..=f64::MAX).contains(&d.bandwidth_bytes_s),
            "at least 65536 (64 KiB/s)",
        ),
        (
            "copy_bytes_s",
            c.copy_bytes_s,
            (MIN_RATE..=f64::MAX).contains(&c.copy_bytes_s),
            "at least 65536 (64 KiB/s)",
        ),
        (
            "sample_ms",
            c.sample_ms,
            c.sample_ms > 0.0 && c.sample_ms <= day,
            "above 0 and at most a day",
        ),
        (
            "wcall_block_ms",
            c.wcall_block_ms,
            (0.0..=day).contains(&c.wcall_block_ms),
            "0 to a day",
        ),
    ] {
        if !ok {
            return Err(format!("{name} {} must be {rule}", shown(v)));
        }
    }
    for w in &c.writers {
        match w.kind {
            Kind::Periodic {
                bytes, period_ms, ..
            } if bytes == 0 || period_ms.is_nan() || period_ms <= 0.0 => {
                return Err(format!(
                    "writer {}: bytes and period_ms must be positive",
                    w.name
                ));
            }
            Kind::Rate { bytes_per_s, chunk }
                if bytes_per_s.is_nan() || bytes_per_s <= 0.0 || chunk == 0 =>
            {
                return Err(format!(
                    "writer {}: bytes_per_s and chunk must be positive",
                    w.name
                ));
            }
            Kind::Bulk { chunk: 0 } => {
                return Err(format!("writer {}: chunk must be positive", w.name));
            }
            _ => {}
        }
        let (bytes, too_slow_or_long) = match w.kind {
            Kind::Periodic {
                bytes, period_ms, ..
            } => (bytes, period_ms > DAY_MS as f64),
            Kind::Rate { bytes_per_s, chunk } => (chunk, bytes_per_s < 1.0),
            Kind::Bulk { chunk } => (chunk, false),
        };
        if bytes > MAX_WRITE {
            return Err(format!(
                "writer {}: a write of {bytes} bytes is above 2 GiB",
                w.name
            ));
        }
        if too_slow_or_long {
            return Err(format!(
                "writer {}: period_ms is above a day or bytes_per_s below 1",
                w.name
            ));
        }
        if !(w.start_ms >= 0.0 && w.start_ms <= DAY_MS as f64) {
            return Err(format!(
                "writer {}: start_ms {} is not between 0 and a day",
                w.name,
                shown(w.start_ms)
            ));
        }
        if let Class::Rt { priority } = w.class
            && !(1..=99).contains(&priority)
        {
            return Err(format!(
                "writer {}: RT priority {priority} is not 1-99",
                w.name
            ));
        }
    }
    Ok(())
}

/// Applies `--set key=value` to a configuration: the value is parsed once against
/// the key's declaration ([`crate::settings::KEYS`]), set, and the whole
/// configuration checked.
pub fn apply_set(c: &mut Config, key: &str, value: &str) -> Result<(), String> {
    Assignment::parse(key, value)?.apply(c);
    validate(c)
}

/// "64MiB", "1G", "4096", "40MiB/s" -> bytes.
pub fn parse_bytes(s: &str) -> Option<u64> {
    oslab_sys::parse::size::parse_human_size(s.trim().trim_end_matches("/s")).ok()
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
        assert!(bad.starts_with("bad.toml:"), "{bad}");
        let neg = text.replace("duration_s = 5.0", "duration_s = -1.0");
        assert!(
            from_toml("neg.toml", &neg)
                .unwrap_err()
                .contains("duration_s")
        );
    }

    #[test]
    fn settings_apply() {
        let mut c = find("testbed-fig2").unwrap().config;
        apply_set(&mut c, "bandwidth", "10MiB/s").unwrap();
        assert_eq!(c.device.bandwidth_bytes_s, 10.0 * MIB as f64);
        assert!(
            apply_set(&mut c, "nope", "1")
                .unwrap_err()
                .contains("unknown setting")
        );
        assert!(apply_set(&mut c, "duration", "-3").is_err());
    }
}

/// Property tests of a user's scenario TOML and `--set key=value`: any text, and
/// any mutation of a valid scenario, gives a scenario or a one-sentence error, never
/// a panic; the built-in scenarios round-trip through TOML. A fuzz-like run with
/// many cases (PROPTEST_CASES wins over the default here; failures are printed, not
/// saved to proptest-regressions/):
/// `PROPTEST_CASES=20000 cargo test -p oslab-wbsim --lib -- scenario::props`
#[cfg(test)]
mod props {
    use super::*;
    use oslab_sys::testing::proptest_config as config;
    use proptest::prelude::*;

    /// A valid scenario using every field a user may write.
    const VALID: &str = r#"
title = "mine"
description = "every field"
rules = "linux-6"
dirtyable_bytes = 1073741824
duration_s = 5.0
cpus = 2
copy_bytes_s = 2000000000.0
policy = "wcall-fair"
sample_ms = 100.0
wcall_block_ms = 100.0
[sysctls]
dirty_ratio = 20
dirty_bytes = 67108864
dirty_background_ratio = 10
dirty_background_bytes = 33554432
dirty_writeback_centisecs = 500
dirty_expire_centisecs = 3000
[device]
bandwidth_bytes_s = 10485760.0
request_latency_ns = 100000
max_request_bytes = 524288
queue_bytes = 67108864
[[writers]]
name = "rt"
type = "periodic"
bytes = 524288
period_ms = 20.0
count = 100
class = { rt = { priority = 55 } }
group = "rt-high"
fsync_every = 4
start_ms = 10.0
[[writers]]
name = "stream"
type = "rate"
bytes_per_s = 1048576.0
chunk = 65536
class = { normal = { nice = 5 } }
[[writers]]
name = "bulk"
type = "bulk"
chunk = 1048576
class = { normal = { nice = 0 } }
"#;

    /// Values that poke at the edges of every number the scenario holds.
    fn value() -> impl Strategy<Value = String> {
        prop_oneof![
            proptest::sample::select(vec![
                "0",
                "-1",
                "1",
                "0.0",
                "-0.0",
                "nan",
                "inf",
                "-inf",
                "1e308",
                "-1e308",
                "18446744073709551615",
                "18446744073709551616",
                "9223372036854775807",
                "-9223372036854775808",
                "4294967295",
                "4294967296",
                "1e-300",
                "\"x\"",
                "\"\"",
                "true",
                "[]",
                "{}",
                "\"linux-2.6.26\"",
                "\"wcall\"",
                "0x10",
                "1_000",
            ])
            .prop_map(String::from),
            any::<i64>().prop_map(|n| n.to_string()),
            any::<f64>().prop_map(|f| format!("{f:?}")),
        ]
    }

    /// One edit of a text: a byte range cut or duplicated, characters put in, a
    /// value after an `=` replaced, or two lines swapped.
    #[derive(Debug, Clone)]
    enum Edit {
        Cut(proptest::sample::Index, usize),
        Insert(proptest::sample::Index, String),
        Value(proptest::sample::Index, String),
        Swap(proptest::sample::Index, proptest::sample::Index),
        Duplicate(proptest::sample::Index, usize),
        /// A number replaced by another of the same TOML type, of any magnitude.
        Number(proptest::sample::Index, u64, f64),
    }

    /// A float as TOML writes it.
    fn toml_float(f: f64) -> String {
        if f.is_nan() {
            "nan".into()
        } else if f.is_infinite() {
            if f > 0.0 { "inf".into() } else { "-inf".into() }
        } else {
            format!("{f:?}")
        }
    }

    fn edit() -> impl Strategy<Value = Edit> {
        use proptest::sample::Index;
        prop_oneof![
            1 => (any::<Index>(), 1usize..40).prop_map(|(i, n)| Edit::Cut(i, n)),
            1 => (any::<Index>(), "(?s).{1,8}").prop_map(|(i, s)| Edit::Insert(i, s)),
            4 => (any::<Index>(), value()).prop_map(|(i, v)| Edit::Value(i, v)),
            1 => (any::<Index>(), any::<Index>()).prop_map(|(a, b)| Edit::Swap(a, b)),
            1 => (any::<Index>(), 1usize..60).prop_map(|(i, n)| Edit::Duplicate(i, n)),
            6 => (
                any::<Index>(),
                (any::<u64>(), 0u32..64).prop_map(|(n, s)| (n >> s).min(i64::MAX as u64)),
                prop_oneof![any::<f64>(), (-1e3f64..1e3, -30i32..30).prop_map(|(m, e)| m * 10f64.powi(e))],
            )
                .prop_map(|(i, n, f)| Edit::Number(i, n, f)),
        ]
    }

    /// The byte offset `i` picks, moved back to a character boundary.
    fn at(text: &str, i: &proptest::sample::Index) -> usize {
        let mut k = i.index(text.len() + 1);
        while !text.is_char_boundary(k) {
            k -= 1;
        }
        k
    }

    fn apply(text: &str, e: &Edit) -> String {
        let mut t = text.to_string();
        match e {
            Edit::Cut(i, n) => {
                let a = at(&t, i);
                let mut b = (a + n).min(t.len());
                while !t.is_char_boundary(b) {
                    b -= 1;
                }
                t.replace_range(a..b, "");
            }
            Edit::Insert(i, s) => t.insert_str(at(&t, i), s),
            Edit::Value(i, v) => {
                let mut lines: Vec<String> = t.lines().map(String::from).collect();
                let with_value: Vec<usize> = (0..lines.len())
                    .filter(|&k| lines[k].contains('='))
                    .collect();
                if !with_value.is_empty() {
                    let k = with_value[i.index(with_value.len())];
                    let key = lines[k].split('=').next().unwrap().to_string();
                    lines[k] = format!("{key}= {v}");
                }
                t = lines.join("\n");
            }
            Edit::Number(i, n, f) => {
                let mut lines: Vec<String> = t.lines().map(String::from).collect();
                let numeric: Vec<usize> = (0..lines.len())
                    .filter(|&k| {
                        lines[k]
                            .split_once('=')
                            .is_some_and(|(_, v)| v.trim().parse::<f64>().is_ok())
                    })
                    .collect();
                if !numeric.is_empty() {
                    let k = numeric[i.index(numeric.len())];
                    let (key, v) = lines[k].split_once('=').unwrap();
                    let v = if v.trim().parse::<i64>().is_ok() {
                        n.to_string()
                    } else {
                        toml_float(*f)
                    };
                    lines[k] = format!("{key}= {v}");
                }
                t = lines.join("\n");
            }
            Edit::Swap(a, b) => {
                let mut lines: Vec<&str> = t.lines().collect();
                if !lines.is_empty() {
                    let (x, y) = (a.index(lines.len()), b.index(lines.len()));
                    lines.swap(x, y);
                }
                t = lines.join("\n");
            }
            Edit::Duplicate(i, n) => {
                let a = at(&t, i);
                let mut b = (a + n).min(t.len());
                while !t.is_char_boundary(b) {
                    b -= 1;
                }
                let copy = t[a..b].to_string();
                t.insert_str(b, &copy);
            }
        }
        t
    }

    fn judge(text: &str) -> Result<(), TestCaseError> {
        match from_toml("s.toml", text) {
            Ok(s) => {
                validate(&s.config)
                    .map_err(|e| TestCaseError::fail(format!("accepted but invalid: {e}")))?;
            }
            Err(e) => {
                prop_assert!(e.starts_with("s.toml: "), "{}", e);
                prop_assert!(!e.trim().is_empty());
            }
        }
        Ok(())
    }

    proptest! {
        #![proptest_config(config(256))]

        #[test]
        fn any_text_never_panics(text in "(?s).{0,200}") {
            judge(&text)?;
        }

        #[test]
        fn mutations_of_a_valid_scenario_never_panic(edits in proptest::collection::vec(edit(), 1..4)) {
            let text = edits.iter().fold(VALID.to_string(), |t, e| apply(&t, e));
            judge(&text)?;
        }

        #[test]
        fn mutations_of_the_builtins_never_panic(
            which in any::<proptest::sample::Index>(),
            edits in proptest::collection::vec(edit(), 1..4),
        ) {
            let all = builtin();
            let text = toml::to_string(&all[which.index(all.len())].config).unwrap();
            let text = edits.iter().fold(text, |t, e| apply(&t, e));
            judge(&text)?;
        }

        #[test]
        fn settings_of_any_text_never_panic(
            key in prop_oneof![
                proptest::sample::select(
                    crate::settings::KEYS.iter().map(|k| k.setting.name()).collect::<Vec<_>>()
                ).prop_map(String::from),
                ".{0,12}",
            ],
            v in prop_oneof![value(), ".{0,12}", "[0-9.]{1,24}[KMGT]?(iB)?(/s)?"],
        ) {
            let mut c = find("testbed-fig2").unwrap().config;
            let _ = parse_bytes(&v);
            if apply_set(&mut c, &key, &v).is_ok() {
                validate(&c).map_err(TestCaseError::fail)?;
            }
        }
    }

    proptest! {
        #![proptest_config(config(64))]

        /// A scenario `from_toml` accepts can be simulated: no panic (run for at
        /// most a simulated second, so the property stays fast).
        #[test]
        fn accepted_scenarios_simulate_without_panic(edits in proptest::collection::vec(edit(), 1..3)) {
            let text = edits.iter().fold(VALID.to_string(), |t, e| apply(&t, e));
            if let Ok(mut s) = from_toml("s.toml", &text) {
                s.config.duration_s = s.config.duration_s.min(1.0);
                let r = std::panic::catch_unwind(|| crate::engine::simulate(&s.config));
                prop_assert!(r.is_ok(), "{}", text);
            }
        }
    }

    /// Regression (found by `accepted_scenarios_simulate_without_panic`): each of
    /// these passed `from_toml` and then made the engine panic (an overflow of its
    /// nanosecond clock or of the kernel's limit arithmetic); now each is refused
    /// with a sentence naming the field.
    #[test]
    fn values_the_engine_cannot_run_are_refused() {
        for (key, value) in [
            ("period_ms", "1.8795746559375476e158"),
            ("dirty_ratio", "4611686018427387904"),
            ("dirty_background_ratio", "4611686018427387904"),
            ("copy_bytes_s", "1e-300"),
            ("bandwidth_bytes_s", "1e-300"),
            ("chunk", "9223372036854775807"),
            ("dirty_writeback_centisecs", "9223372036854775807"),
        ] {
            let text: String = VALID
                .lines()
                .map(|l| match l.split_once('=') {
                    Some((k, _)) if k.trim() == key => format!("{key} = {value}\n"),
                    _ => format!("{l}\n"),
                })
                .collect();
            let e = from_toml("s.toml", &text).expect_err(key);
            assert!(e.contains(key) || e.contains("write of"), "{key}: {e}");
        }
    }

    #[test]
    fn the_valid_scenario_is_valid() {
        let s = from_toml("s.toml", VALID).unwrap();
        assert_eq!(s.config.writers.len(), 3);
    }

    /// Every built-in scenario written as TOML reads back as the same scenario.
    #[test]
    fn builtins_round_trip_through_toml() {
        for s in builtin() {
            let text = toml::to_string(&s.config).unwrap();
            let back = from_toml(&s.name, &text).unwrap_or_else(|e| panic!("{e}\n{text}"));
            assert_eq!(back.config, s.config, "{}", s.name);
        }
    }
}
