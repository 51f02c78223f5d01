//! What a scenario may hold: the engine's nanosecond clock and byte counters, and
//! the kernel's own ranges, bound every field; beyond them a scenario is refused
//! with the field named.

use crate::config::{Class, Config, Kind, MS};
use crate::settings::{self, DAY_MS, MAX_BYTES};

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
        if let Some(stop) = w.stop_ms
            && !(stop >= 0.0 && stop <= DAY_MS as f64)
        {
            return Err(format!(
                "writer {}: stop_ms {} is not between 0 and a day",
                w.name,
                shown(stop)
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
