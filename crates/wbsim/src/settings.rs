//! The simulator's `--set KEY=VALUE` keys (`oslab sim run|sweep`), declared once
//! as typed settings ([`oslab_settings`], as the experiments declare theirs): kind,
//! help, default and range. A value is parsed once against its declaration and then
//! applied typed; `oslab sim list --settings` prints the table from [`KEYS`].
//!
//! A key's default is what a scenario file gets when it leaves the field out (the
//! TOML defaults in [`crate::config`] read these declarations); a `--set` value
//! replaces the scenario's own. `rules`, `dirtyable` and `duration` have no default
//! in a file: it must give them.

use oslab_settings::{
    AnySetting, Bytes, Count, Kind, Millis, OneOf, Rate, Seconds, SetValue, Setting,
    split_assignment,
};

use crate::bounds::{within, within_whole};
use crate::config::{Config, DeviceKind, Kernel, MS, RuleSet};

/// The most bytes of memory, limits and queues a scenario may have (64 TiB).
pub const MAX_BYTES: u64 = 1 << 46;
/// The slowest device a scenario may have, bytes per second (64 KiB/s).
pub const MIN_RATE: u64 = 65536;
/// A day in milliseconds: the longest wait or interval a scenario may have.
pub const DAY_MS: u64 = 86_400_000;
/// The kernel's largest centisecs value (an int).
const MAX_CENTISECS: u64 = i32::MAX as u64;

/// Declares a key whose quick and full defaults are the same (the simulator has no
/// quick mode).
macro_rules! key {
    ($name:literal, $kind:ty, $default:expr, $bounds:expr, $help:literal) => {
        Setting::<$kind> {
            name: $name,
            help: $help,
            quick: $default,
            full: $default,
            bounds: $bounds,
            names: &[],
        }
    };
}

pub static DIRTY_BYTES: Setting<Bytes> = key!(
    "dirty_bytes",
    Bytes,
    0,
    Some((0, MAX_BYTES)),
    "the hard limit; 0: dirty_ratio applies"
);
pub static DIRTY_BACKGROUND_BYTES: Setting<Bytes> = key!(
    "dirty_background_bytes",
    Bytes,
    0,
    Some((0, MAX_BYTES)),
    "the background limit; 0: the ratio applies"
);
pub static DIRTY_RATIO: Setting<Count> = key!(
    "dirty_ratio",
    Count,
    20,
    Some((0, 100)),
    "the hard limit, % of dirtyable memory"
);
pub static DIRTY_BACKGROUND_RATIO: Setting<Count> = key!(
    "dirty_background_ratio",
    Count,
    10,
    Some((0, 100)),
    "the background limit, % of dirtyable"
);
pub static DIRTY_WRITEBACK_CENTISECS: Setting<Count> = key!(
    "dirty_writeback_centisecs",
    Count,
    500,
    Some((0, MAX_CENTISECS)),
    "the flusher's interval; 0: off"
);
pub static DIRTY_EXPIRE_CENTISECS: Setting<Count> = key!(
    "dirty_expire_centisecs",
    Count,
    3000,
    Some((0, MAX_CENTISECS)),
    "the age at which dirt is written"
);
pub static BANDWIDTH: Setting<Rate> = key!(
    "bandwidth",
    Rate,
    40 << 20,
    Some((MIN_RATE, MAX_BYTES)),
    "the device's write bandwidth"
);
pub static REQUEST_LATENCY_MS: Setting<Millis> = key!(
    "request_latency_ms",
    Millis,
    0.0,
    Some((0.0, DAY_MS as f64)),
    "the device's cost per request"
);
/// A scenario file must give it ([`Key::required`]): the default here is a
/// placeholder that nothing reads or shows.
pub static DURATION: Setting<Seconds> = key!(
    "duration",
    Seconds,
    30.0,
    Some((0.001, 86_400.0)),
    "simulated time"
);
/// A scenario file must give it ([`Key::required`]): the default here is a
/// placeholder that nothing reads or shows.
pub static DIRTYABLE: Setting<Bytes> = key!(
    "dirtyable",
    Bytes,
    1 << 30,
    Some((16 << 20, MAX_BYTES)),
    "free + file pages"
);
pub static WCALL_BLOCK_MS: Setting<Millis> = key!(
    "wcall_block_ms",
    Millis,
    100.0,
    Some((0.0, DAY_MS as f64)),
    "a held WCALL writer's wait (HZ/10)"
);
pub static HZ: Setting<Count> = key!(
    "hz",
    Count,
    250,
    Some((100, 1000)),
    "the kernel's tick rate (CONFIG_HZ)"
);
pub static FOLIO: Setting<Bytes> = key!(
    "folio",
    Bytes,
    4096,
    Some((4096, 2 << 20)),
    "largest folio a write dirties at once"
);
pub static PASS_MS: Setting<Millis> = key!(
    "governor_pass_ms",
    Millis,
    10.0,
    Some((0.0, 10_000.0)),
    "the governor's pass interval; 0: per write"
);
pub static OTHER_WRITEBACK: Setting<Rate> = key!(
    "other_writeback",
    Rate,
    0,
    Some((0, MAX_BYTES)),
    "other devices' write-back, per second"
);
pub static KERNEL: Setting<OneOf> = Setting {
    name: "kernel",
    help: "whose rules: 6.14+, or 6.1 to 6.13 (idle device floor)",
    quick: "6.14",
    full: "6.14",
    bounds: None,
    names: KERNEL_NAMES,
};
pub static DEVICE_KIND: Setting<OneOf> = Setting {
    name: "device",
    help: "a disk's queue or blk-throttle's",
    quick: "disk",
    full: "disk",
    bounds: None,
    names: DEVICE_KINDS,
};
/// A scenario file must give it ([`Key::required`]): the default here is a
/// placeholder that nothing reads or shows.
pub static RULES: Setting<OneOf> = Setting {
    name: "rules",
    help: "today's kernel or the paper's",
    quick: "linux-6",
    full: "linux-6",
    bounds: None,
    names: RULE_NAMES,
};

/// The kernels whose rules the simulator follows, as a scenario names them.
pub const RULE_NAMES: &[&str] = &["linux-6", "linux-2.6.26"];
/// The releases whose linux-6 rules differ (config::Kernel), as a scenario
/// names them.
pub const KERNEL_NAMES: &[&str] = &["6.14", "6.1"];
/// What the device's queue is, as a scenario names it.
pub const DEVICE_KINDS: &[&str] = &["disk", "throttled"];
/// Where a run's estimates start (config::Start).
pub const START_NAMES: &[&str] = &["steady", "given"];

/// One `--set` key: its declaration and the scenario field it changes.
pub struct Key {
    pub setting: &'static dyn AnySetting,
    /// The field of a scenario file it sets.
    pub field: &'static str,
    /// Whether a scenario file must give the field (no default).
    pub required: bool,
    apply: fn(&mut Config, &SetValue),
    /// The field's value, however it came, against the declaration's range.
    pub check: fn(&Config) -> Result<(), String>,
}

/// The value as `K` declares it: the key parsed it with its own declaration.
fn typed<K: Kind>(v: &SetValue) -> &K::Value {
    v.get::<K>()
        .expect("a key's value is parsed by its own declaration")
}

/// Every key, in the order `oslab sim list --settings` prints them.
pub static KEYS: &[Key] = &[
    Key {
        setting: &DIRTY_BYTES,
        field: "sysctls.dirty_bytes",
        required: false,
        apply: |c, v| c.sysctls.dirty_bytes = *typed::<Bytes>(v),
        check: |c| within(&DIRTY_BYTES, &c.sysctls.dirty_bytes),
    },
    Key {
        setting: &DIRTY_BACKGROUND_BYTES,
        field: "sysctls.dirty_background_bytes",
        required: false,
        apply: |c, v| c.sysctls.dirty_background_bytes = *typed::<Bytes>(v),
        check: |c| within(&DIRTY_BACKGROUND_BYTES, &c.sysctls.dirty_background_bytes),
    },
    Key {
        setting: &DIRTY_RATIO,
        field: "sysctls.dirty_ratio",
        required: false,
        apply: |c, v| c.sysctls.dirty_ratio = *typed::<Count>(v),
        check: |c| within(&DIRTY_RATIO, &c.sysctls.dirty_ratio),
    },
    Key {
        setting: &DIRTY_BACKGROUND_RATIO,
        field: "sysctls.dirty_background_ratio",
        required: false,
        apply: |c, v| c.sysctls.dirty_background_ratio = *typed::<Count>(v),
        check: |c| within(&DIRTY_BACKGROUND_RATIO, &c.sysctls.dirty_background_ratio),
    },
    Key {
        setting: &DIRTY_WRITEBACK_CENTISECS,
        field: "sysctls.dirty_writeback_centisecs",
        required: false,
        apply: |c, v| c.sysctls.dirty_writeback_centisecs = *typed::<Count>(v),
        check: |c| {
            within(
                &DIRTY_WRITEBACK_CENTISECS,
                &c.sysctls.dirty_writeback_centisecs,
            )
        },
    },
    Key {
        setting: &DIRTY_EXPIRE_CENTISECS,
        field: "sysctls.dirty_expire_centisecs",
        required: false,
        apply: |c, v| c.sysctls.dirty_expire_centisecs = *typed::<Count>(v),
        check: |c| within(&DIRTY_EXPIRE_CENTISECS, &c.sysctls.dirty_expire_centisecs),
    },
    Key {
        setting: &BANDWIDTH,
        field: "device.bandwidth_bytes_s",
        required: false,
        apply: |c, v| c.device.bandwidth_bytes_s = *typed::<Rate>(v) as f64,
        check: |c| within_whole(&BANDWIDTH, c.device.bandwidth_bytes_s),
    },
    Key {
        setting: &REQUEST_LATENCY_MS,
        field: "device.request_latency_ns",
        required: false,
        apply: |c, v| c.device.request_latency_ns = (*typed::<Millis>(v) * MS as f64) as u64,
        check: |c| {
            within(
                &REQUEST_LATENCY_MS,
                &(c.device.request_latency_ns as f64 / MS as f64),
            )
        },
    },
    Key {
        setting: &DURATION,
        field: "duration_s",
        required: true,
        apply: |c, v| c.duration_s = *typed::<Seconds>(v),
        check: |c| within(&DURATION, &c.duration_s),
    },
    Key {
        setting: &DIRTYABLE,
        field: "dirtyable_bytes",
        required: true,
        apply: |c, v| c.dirtyable_bytes = *typed::<Bytes>(v),
        check: |c| within(&DIRTYABLE, &c.dirtyable_bytes),
    },
    Key {
        setting: &WCALL_BLOCK_MS,
        field: "wcall_block_ms",
        required: false,
        apply: |c, v| c.wcall_block_ms = *typed::<Millis>(v),
        check: |c| within(&WCALL_BLOCK_MS, &c.wcall_block_ms),
    },
    Key {
        setting: &HZ,
        field: "hz",
        required: false,
        apply: |c, v| c.hz = *typed::<Count>(v),
        check: |c| within(&HZ, &c.hz),
    },
    Key {
        setting: &FOLIO,
        field: "folio_bytes",
        required: false,
        apply: |c, v| c.folio_bytes = *typed::<Bytes>(v),
        check: |c| within(&FOLIO, &c.folio_bytes),
    },
    Key {
        setting: &PASS_MS,
        field: "governor.pass_ms",
        required: false,
        apply: |c, v| c.governor.pass_ms = *typed::<Millis>(v),
        check: |c| within(&PASS_MS, &c.governor.pass_ms),
    },
    Key {
        setting: &OTHER_WRITEBACK,
        field: "other_writeback_bytes_s",
        required: false,
        apply: |c, v| c.other_writeback_bytes_s = *typed::<Rate>(v) as f64,
        check: |c| within_whole(&OTHER_WRITEBACK, c.other_writeback_bytes_s),
    },
    Key {
        setting: &KERNEL,
        field: "kernel",
        required: false,
        apply: |c, v| {
            c.kernel = match *typed::<OneOf>(v) {
                "6.1" => Kernel::Before614,
                _ => Kernel::Since614,
            }
        },
        check: |_| Ok(()),
    },
    Key {
        setting: &DEVICE_KIND,
        field: "device.kind",
        required: false,
        apply: |c, v| {
            c.device.kind = match *typed::<OneOf>(v) {
                "throttled" => DeviceKind::Throttled,
                _ => DeviceKind::Disk,
            }
        },
        check: |_| Ok(()),
    },
    Key {
        setting: &RULES,
        field: "rules",
        required: true,
        apply: |c, v| {
            c.rules = match *typed::<OneOf>(v) {
                "linux-2.6.26" => RuleSet::Linux2626,
                _ => RuleSet::Linux6,
            }
        },
        check: |_| Ok(()),
    },
];

/// A `--set` value parsed against its key's declaration, ready to apply.
#[derive(Clone)]
pub struct Assignment {
    pub key: &'static Key,
    pub value: SetValue,
}

impl std::fmt::Debug for Assignment {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}={:?}", self.key.setting.name(), self.value)
    }
}

impl Assignment {
    /// Parses `value` for `key` once; an unknown key or a value of the wrong kind or
    /// out of range is one sentence naming the key.
    pub fn parse(key: &str, value: &str) -> Result<Assignment, String> {
        let k = KEYS
            .iter()
            .find(|k| k.setting.name() == key)
            .ok_or_else(|| {
                let known: Vec<&str> = KEYS.iter().map(|k| k.setting.name()).collect();
                format!(
                    "{key}: the simulator has no such setting (known: {})",
                    known.join(", ")
                )
            })?;
        Ok(Assignment {
            key: k,
            value: k.setting.parse_value(value)?,
        })
    }

    /// Sets the field (the whole configuration is checked by
    /// [`crate::scenario::validate`] afterwards).
    pub fn apply(&self, c: &mut Config) {
        (self.key.apply)(c, &self.value)
    }
}

/// `--set NAME=VALUE` arguments, each split as the experiments' are
/// ([`split_assignment`]) and parsed once against its key's declaration.
pub fn parse_sets(args: &[String]) -> Result<Vec<Assignment>, String> {
    args.iter()
        .map(|a| {
            let (name, value) = split_assignment(a)?;
            Assignment::parse(name, value)
        })
        .collect()
}

/// `base` with `sets` applied in order, then checked whole
/// ([`crate::scenario::validate`]), so a `--set` value meets the ranges a scenario
/// file does.
pub fn configure(base: &Config, sets: &[Assignment]) -> Result<Config, String> {
    let mut c = base.clone();
    for a in sets {
        a.apply(&mut c);
    }
    crate::validate::validate(&c).map_err(|e| e.to_string())?;
    Ok(c)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A key's default is what a scenario file gets when it leaves the field out,
    /// and `apply` writes the field the key names (with the kind it declares).
    #[test]
    fn a_default_is_what_a_file_without_the_field_gets() {
        let base = crate::scenario::find("paper-fig2").unwrap().config;
        for k in KEYS {
            let name = k.setting.name();
            let mut doc = toml::Value::try_from(&base).unwrap();
            let table = doc.as_table_mut().unwrap();
            let (path, last) = match k.field.rsplit_once('.') {
                Some((p, l)) => (Some(p), l),
                None => (None, k.field),
            };
            let holder = match path {
                Some(p) => table[p].as_table_mut().unwrap(),
                None => table,
            };
            assert!(
                holder.remove(last).is_some(),
                "{name}: no field {}",
                k.field
            );
            let text = toml::to_string(&doc).unwrap();
            let read: Result<Config, _> = toml::from_str(&text);
            if k.required {
                assert!(read.is_err(), "{name}: a file must give {}", k.field);
                continue;
            }
            let mut expected = base.clone();
            let default = k.setting.defaults().1.replace(' ', "");
            Assignment::parse(name, &default)
                .unwrap_or_else(|e| panic!("{name}: {e}"))
                .apply(&mut expected);
            assert_eq!(read.unwrap(), expected, "{name}");
        }
    }

    #[test]
    fn names_are_unique() {
        let mut names: Vec<&str> = KEYS.iter().map(|k| k.setting.name()).collect();
        names.sort();
        names.dedup();
        assert_eq!(names.len(), KEYS.len());
    }

    #[test]
    fn values_are_parsed_typed_and_checked() {
        let mut c = crate::scenario::find("testbed-fig2").unwrap().config;
        Assignment::parse("bandwidth", "10MiB/s")
            .unwrap()
            .apply(&mut c);
        assert_eq!(c.device.bandwidth_bytes_s, 10.0 * (1 << 20) as f64);
        Assignment::parse("request_latency_ms", "2.5ms")
            .unwrap()
            .apply(&mut c);
        assert_eq!(c.device.request_latency_ns, 2_500_000);
        Assignment::parse("rules", "linux-2.6.26")
            .unwrap()
            .apply(&mut c);
        assert_eq!(c.rules, RuleSet::Linux2626);
        assert_eq!(
            Assignment::parse("dirty_ratio", "150").unwrap_err(),
            "dirty_ratio=150 is out of range: give 0 to 100"
        );
        assert_eq!(
            Assignment::parse("bandwidth", "fast").unwrap_err(),
            "bandwidth=fast: not a rate (try 40MiB/s)"
        );
        assert_eq!(
            Assignment::parse("rules", "linux-9").unwrap_err(),
            "rules=linux-9: 'linux-9' is not one of linux-6, linux-2.6.26"
        );
        assert!(
            Assignment::parse("nope", "1")
                .unwrap_err()
                .starts_with("nope: the simulator has no such setting (known: dirty_bytes, ")
        );
    }

    fn args(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn set_arguments_have_the_experiments_grammar() {
        let sets = parse_sets(&args(&[" bandwidth = 10MiB/s", "rules=linux-2.6.26"])).unwrap();
        let base = crate::scenario::find("testbed-fig2").unwrap().config;
        let c = configure(&base, &sets).unwrap();
        assert_eq!(c.device.bandwidth_bytes_s, 10.0 * (1 << 20) as f64);
        assert_eq!(c.rules, RuleSet::Linux2626);
        assert_eq!(
            parse_sets(&args(&["bandwidth"])).unwrap_err(),
            "bandwidth: expected NAME=VALUE"
        );
        assert_eq!(
            parse_sets(&args(&["dirty_ratio=150"])).unwrap_err(),
            "dirty_ratio=150 is out of range: give 0 to 100"
        );
    }
}
