//! The simulator's `--set KEY=VALUE` keys (`oslab sim run|sweep`), declared once
//! as typed settings ([`oslab_settings`], as the experiments declare theirs): kind,
//! help, default and range, and the limits the ranges share. The field each key
//! changes is in [`crate::keys`]; a value is parsed once against its declaration
//! and then applied typed ([`crate::sets`]); `oslab sim list --settings` prints the
//! table from [`crate::keys::KEYS`].
//!
//! A key's default is what a scenario file gets when it leaves the field out (the
//! TOML defaults in [`crate::config`] read these declarations); a `--set` value
//! replaces the scenario's own. `rules`, `dirtyable` and `duration` have no default
//! in a file: it must give them.

use oslab_settings::{Bytes, Count, Millis, OneOf, Rate, Seconds, Setting};

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
/// A scenario file must give it ([`crate::keys::Key::required`]): the default here is a
/// placeholder that nothing reads or shows.
pub static DURATION: Setting<Seconds> = key!(
    "duration",
    Seconds,
    30.0,
    Some((0.001, 86_400.0)),
    "simulated time"
);
/// A scenario file must give it ([`crate::keys::Key::required`]): the default here is a
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
/// A scenario file must give it ([`crate::keys::Key::required`]): the default here is a
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
