//! The bounds of the scenario fields no `--set` key changes, declared as the keys
//! are ([`crate::settings`]): a typed setting with its range, and the field it
//! bounds. [`crate::scenario::validate`] checks every field against its
//! declaration, those of the keys included, so a scenario file, a `--set` value and
//! a built-in scenario meet the same ranges.
//!
//! Beyond these ranges the engine would adjust a value without a word (a CPU count
//! of 0 taken as 1, a request of 0 bytes as a page, a sample interval below a
//! millisecond as one) or its nanosecond clock and byte counters would overflow.

use oslab_settings::{AnySetting, Bytes, Count, Kind, Millis, Number, Rate, Setting};

use crate::config::{Class, Config, Kind as WriteKind, WriterCfg};
use crate::settings::{DAY_MS, MAX_BYTES, MIN_RATE};

/// The largest write (the kernel's MAX_RW_COUNT is just below 2 GiB).
pub const MAX_WRITE: u64 = 1 << 31;
/// The most writers a scenario may have.
pub const MAX_WRITERS: usize = 4096;
/// The most page allocation samples a scenario may have.
pub const MAX_ALLOC_SAMPLES: usize = 1 << 20;

/// Declares a setting that only a scenario file gives (no `--set` key, no default
/// of its own: the file's defaults are in [`crate::config`]).
macro_rules! bound {
    ($name:ident, $key:literal, $kind:ty, $lo:expr, $hi:expr) => {
        pub static $name: Setting<$kind> = Setting {
            name: $key,
            help: "",
            quick: $lo,
            full: $lo,
            bounds: Some(($lo, $hi)),
            names: &[],
        };
    };
}

bound!(CPUS, "cpus", Count, 1, 4096);
bound!(COPY, "copy_bytes_s", Rate, MIN_RATE, MAX_BYTES);
bound!(SAMPLE_MS, "sample_ms", Millis, 1.0, DAY_MS as f64);
bound!(MAX_REQUEST, "max_request_bytes", Bytes, 4096, MAX_BYTES);
bound!(QUEUE, "queue_bytes", Bytes, 4096, MAX_BYTES);
bound!(ACTIVE_MS, "active_ms", Millis, 0.0, DAY_MS as f64);
bound!(INITIAL_RATE, "initial rate", Rate, 0, MAX_BYTES);
bound!(DIRTY_LIMIT, "dirty_limit_bytes", Bytes, 0, MAX_BYTES);
bound!(WB_SHARE, "wb_share", Number, 0.0, 1.0);
bound!(
    PAGE_ALLOC_NS,
    "page_alloc_ns",
    Number,
    0.0,
    (DAY_MS * 1_000_000) as f64
);
bound!(WRITE_BYTES, "bytes", Bytes, 1, MAX_WRITE);
bound!(PERIOD_MS, "period_ms", Millis, 0.001, DAY_MS as f64);
bound!(BYTES_PER_S, "bytes_per_s", Rate, 1, MAX_BYTES);
bound!(NICE, "nice", Number, -20.0, 19.0);
bound!(RT_PRIORITY, "priority", Count, 1, 99);
bound!(FSYNC_EVERY, "fsync_every", Count, 1, u64::MAX);
bound!(WRITER_MS, "start_ms", Millis, 0.0, DAY_MS as f64);

/// `v` against `s`'s range: "0 is out of range: give 100 to 1000".
pub fn within<K: Kind>(s: &Setting<K>, v: &K::Value) -> Result<(), String> {
    s.check(v)
        .map_err(|range| format!("{} is out of range: {range}", K::show(v)))
}

/// A floating-point field of a setting counted in whole bytes (a rate): refused
/// when not a number of 0 or more, else checked whole (a fraction below the
/// least is below it).
pub fn within_whole<K: Kind<Value = u64>>(s: &Setting<K>, v: f64) -> Result<(), String> {
    if !(v.is_finite() && v >= 0.0) {
        return Err(format!("{v} is not a number of 0 or more"));
    }
    s.check(&(v as u64))
        .map_err(|range| format!("{v} is out of range: {range}"))
}

/// A bounded field: its path in a scenario file (below the writer, for a
/// writer's), the declaration of its range and the check of its value.
pub struct Field<T: 'static> {
    pub path: &'static str,
    pub setting: &'static dyn AnySetting,
    pub check: fn(&T) -> Result<(), String>,
}

/// The bounded top-level fields no key changes.
pub static FIELDS: &[Field<Config>] = &[
    Field {
        path: "cpus",
        setting: &CPUS,
        check: |c| within(&CPUS, &u64::from(c.cpus)),
    },
    Field {
        path: "copy_bytes_s",
        setting: &COPY,
        check: |c| within_whole(&COPY, c.copy_bytes_s),
    },
    Field {
        path: "sample_ms",
        setting: &SAMPLE_MS,
        check: |c| within(&SAMPLE_MS, &c.sample_ms),
    },
    Field {
        path: "device.max_request_bytes",
        setting: &MAX_REQUEST,
        check: |c| within(&MAX_REQUEST, &c.device.max_request_bytes),
    },
    Field {
        path: "device.queue_bytes",
        setting: &QUEUE,
        check: |c| within(&QUEUE, &c.device.queue_bytes),
    },
    Field {
        path: "governor.active_ms",
        setting: &ACTIVE_MS,
        check: |c| within(&ACTIVE_MS, &c.governor.active_ms),
    },
    Field {
        path: "initial.write_bw_bytes_s",
        setting: &INITIAL_RATE,
        check: |c| {
            optional(c.initial.write_bw_bytes_s, |v| {
                within_whole(&INITIAL_RATE, v)
            })
        },
    },
    Field {
        path: "initial.avg_write_bw_bytes_s",
        setting: &INITIAL_RATE,
        check: |c| {
            optional(c.initial.avg_write_bw_bytes_s, |v| {
                within_whole(&INITIAL_RATE, v)
            })
        },
    },
    Field {
        path: "initial.dirty_ratelimit_bytes_s",
        setting: &INITIAL_RATE,
        check: |c| {
            optional(c.initial.dirty_ratelimit_bytes_s, |v| {
                within_whole(&INITIAL_RATE, v)
            })
        },
    },
    Field {
        path: "initial.dirty_limit_bytes",
        setting: &DIRTY_LIMIT,
        check: |c| optional(c.initial.dirty_limit_bytes, |v| within(&DIRTY_LIMIT, &v)),
    },
    Field {
        path: "initial.wb_share",
        setting: &WB_SHARE,
        check: |c| optional(c.initial.wb_share, |v| within(&WB_SHARE, &v)),
    },
    Field {
        path: "page_alloc_ns",
        setting: &PAGE_ALLOC_NS,
        check: |c| {
            if c.page_alloc_ns.len() > MAX_ALLOC_SAMPLES {
                return Err(format!("more than {MAX_ALLOC_SAMPLES} samples"));
            }
            c.page_alloc_ns.iter().enumerate().try_for_each(|(i, v)| {
                within(&PAGE_ALLOC_NS, v).map_err(|e| format!("sample {}: {e}", i + 1))
            })
        },
    },
];

fn optional<V>(v: Option<V>, check: impl Fn(V) -> Result<(), String>) -> Result<(), String> {
    v.map_or(Ok(()), check)
}

/// The bounded fields of a writer, those of its type and class only.
pub static WRITER_FIELDS: &[Field<WriterCfg>] = &[
    Field {
        path: "bytes",
        setting: &WRITE_BYTES,
        check: |w| match w.kind {
            WriteKind::Periodic { bytes, .. } => within(&WRITE_BYTES, &bytes),
            _ => Ok(()),
        },
    },
    Field {
        path: "period_ms",
        setting: &PERIOD_MS,
        check: |w| match w.kind {
            WriteKind::Periodic { period_ms, .. } => within(&PERIOD_MS, &period_ms),
            _ => Ok(()),
        },
    },
    Field {
        path: "bytes_per_s",
        setting: &BYTES_PER_S,
        check: |w| match w.kind {
            WriteKind::Rate { bytes_per_s, .. } => within_whole(&BYTES_PER_S, bytes_per_s),
            _ => Ok(()),
        },
    },
    Field {
        path: "chunk",
        setting: &WRITE_BYTES,
        check: |w| match w.kind {
            WriteKind::Rate { chunk, .. } | WriteKind::Bulk { chunk } => {
                within(&WRITE_BYTES, &chunk)
            }
            WriteKind::Periodic { .. } => Ok(()),
        },
    },
    Field {
        path: "class.normal.nice",
        setting: &NICE,
        check: |w| match w.class {
            Class::Normal { nice } => within(&NICE, &f64::from(nice)),
            Class::Rt { .. } => Ok(()),
        },
    },
    Field {
        path: "class.rt.priority",
        setting: &RT_PRIORITY,
        check: |w| match w.class {
            Class::Rt { priority } => within(&RT_PRIORITY, &u64::from(priority)),
            Class::Normal { .. } => Ok(()),
        },
    },
    Field {
        path: "fsync_every",
        setting: &FSYNC_EVERY,
        check: |w| optional(w.fsync_every, |v| within(&FSYNC_EVERY, &v)),
    },
    Field {
        path: "start_ms",
        setting: &WRITER_MS,
        check: |w| within(&WRITER_MS, &w.start_ms),
    },
    Field {
        path: "stop_ms",
        setting: &WRITER_MS,
        check: |w| optional(w.stop_ms, |v| within(&WRITER_MS, &v)),
    },
];

/// `i` with every estimate outside its bound dropped (None: not known, as if
/// the kernel had not shown it). The engine takes its start through this, so an
/// estimate read from a machine or a raw file (untrusted, judged again by
/// `oslab judge`) can never reach the estimator's arithmetic out of range,
/// whichever path built the configuration (the engine's `initial_wb` takes
/// every start through it); `validate` tells a user instead.
pub fn initial_within_bounds(i: crate::config::Initial) -> crate::config::Initial {
    let rate = |v: Option<f64>| v.filter(|&b| within_whole(&INITIAL_RATE, b).is_ok());
    crate::config::Initial {
        write_bw_bytes_s: rate(i.write_bw_bytes_s),
        avg_write_bw_bytes_s: rate(i.avg_write_bw_bytes_s),
        dirty_ratelimit_bytes_s: rate(i.dirty_ratelimit_bytes_s),
        dirty_limit_bytes: i
            .dirty_limit_bytes
            .filter(|v| within(&DIRTY_LIMIT, v).is_ok()),
        wb_share: i.wb_share.filter(|v| within(&WB_SHARE, v).is_ok()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_rate_kept_as_a_float_is_checked_whole() {
        assert_eq!(within_whole(&COPY, 65536.0), Ok(()));
        assert_eq!(
            within_whole(&COPY, 65535.9).unwrap_err(),
            "65535.9 is out of range: give 64 KiB/s to 64 TiB/s"
        );
        assert!(
            within_whole(&COPY, f64::NAN)
                .unwrap_err()
                .contains("not a number")
        );
        assert!(
            within_whole(&COPY, -1.0)
                .unwrap_err()
                .contains("not a number")
        );
    }

    #[test]
    fn an_estimate_out_of_its_bound_is_dropped_and_one_within_kept() {
        let i = crate::config::Initial {
            write_bw_bytes_s: Some(1e30),
            avg_write_bw_bytes_s: Some(f64::NAN),
            dirty_ratelimit_bytes_s: Some(80.0 * 1048576.0),
            dirty_limit_bytes: Some(u64::MAX),
            wb_share: Some(2.0),
        };
        let b = initial_within_bounds(i);
        assert_eq!(b.write_bw_bytes_s, None);
        assert_eq!(b.avg_write_bw_bytes_s, None);
        assert_eq!(b.dirty_ratelimit_bytes_s, Some(80.0 * 1048576.0));
        assert_eq!(b.dirty_limit_bytes, None);
        assert_eq!(b.wb_share, None);
        // and a simulation handed them (a raw file's, say) runs: in a test
        // build an estimate of 1e30 B/s would overflow the estimator
        let mut cfg = crate::Config::new(crate::RuleSet::Linux6, 1 << 30, Vec::new(), 2.0, 1);
        cfg.initial = i;
        cfg.start = crate::config::Start::Given;
        let out = crate::simulate(&cfg);
        assert!(out.start.write_bw > 0.0 && out.start.write_bw < 1e20);
    }

    #[test]
    fn nan_is_outside_every_range() {
        assert!(within(&SAMPLE_MS, &f64::NAN).is_err());
        assert!(within(&NICE, &f64::NAN).is_err());
        assert_eq!(
            within(&NICE, &100.0).unwrap_err(),
            "100 is out of range: give -20 to 19"
        );
    }
}
