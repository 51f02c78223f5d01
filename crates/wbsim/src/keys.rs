//! Each `--set` key bound to the scenario field it changes: how a parsed value is
//! written into a configuration, and how the field, however it came, is checked
//! against the key's declaration ([`crate::settings`]).

use oslab_settings::{AnySetting, Bytes, Count, Kind, Millis, OneOf, Rate, Seconds, SetValue};

use crate::bounds::{within, within_whole};
use crate::config::{Config, DeviceKind, Kernel, MS, RuleSet};
use crate::settings::{
    BANDWIDTH, DEVICE_KIND, DIRTY_BACKGROUND_BYTES, DIRTY_BACKGROUND_RATIO, DIRTY_BYTES,
    DIRTY_EXPIRE_CENTISECS, DIRTY_RATIO, DIRTY_WRITEBACK_CENTISECS, DIRTYABLE, DURATION, FOLIO, HZ,
    KERNEL, OTHER_WRITEBACK, PASS_MS, REQUEST_LATENCY_MS, RULES, WCALL_BLOCK_MS,
};

/// One `--set` key: its declaration and the scenario field it changes.
pub struct Key {
    pub setting: &'static dyn AnySetting,
    /// The field of a scenario file it sets.
    pub field: &'static str,
    /// Whether a scenario file must give the field (no default).
    pub required: bool,
    pub(crate) apply: fn(&mut Config, &SetValue),
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
