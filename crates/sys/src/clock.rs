//! Timers for measurements.
//!
//! CLOCK_MONOTONIC_RAW is not slewed by NTP, so an interval is measured in the
//! hardware clock's own seconds; it is served by the vDSO on x86 (no system call).

/// The clock every oslab timing uses, named in results.
pub const TIMER_NAME: &str = "clock_gettime(CLOCK_MONOTONIC_RAW)";

/// Nanoseconds on CLOCK_MONOTONIC_RAW.
#[inline]
pub fn now_ns() -> u64 {
    clock_ns(libc::CLOCK_MONOTONIC_RAW)
}

/// Nanoseconds on CLOCK_MONOTONIC (the clock other processes and tools use).
#[inline]
pub fn monotonic_ns() -> u64 {
    clock_ns(libc::CLOCK_MONOTONIC)
}

#[inline]
fn clock_ns(clock: libc::clockid_t) -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: ts is a valid, writable timespec.
    unsafe { libc::clock_gettime(clock, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// CPU time the calling thread has used, in ns.
pub fn thread_cpu_ns() -> u64 {
    clock_ns(libc::CLOCK_THREAD_CPUTIME_ID)
}

/// The resolution the kernel claims for CLOCK_MONOTONIC_RAW, in ns.
pub fn resolution_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: ts is a valid, writable timespec.
    unsafe { libc::clock_getres(libc::CLOCK_MONOTONIC_RAW, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// Seconds since the Unix epoch (wall clock), for time stamps in results.
pub fn unix_time_s() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or(0.0)
}

/// RFC 3339 UTC time stamp (second precision) of a Unix time.
pub fn rfc3339_utc(unix_s: f64) -> String {
    let secs = unix_s.max(0.0) as i64;
    let (days, rem) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    let (y, m, d) = civil_from_days(days);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

/// Days since 1970-01-01 to a proleptic Gregorian date (H. Hinnant's algorithm).
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (if m <= 2 { y + 1 } else { y }, m, d)
}

/// The local wall-clock time as HH:MM:SS (the time zone from the environment).
pub fn local_hms() -> String {
    local_hms_at(unix_time_s().floor() as libc::time_t)
}

/// A Unix time as local HH:MM:SS.mmm.
pub fn local_hms_ms(unix_s: f64) -> String {
    let whole = unix_s.floor();
    let ms = (((unix_s - whole) * 1000.0).floor() as u32).min(999);
    format!("{}.{ms:03}", local_hms_at(whole as libc::time_t))
}

/// A Unix time as local HH:MM:SS (a recorded sample's time).
pub fn local_hms_of(unix_s: f64) -> String {
    local_hms_at(unix_s.floor() as libc::time_t)
}

fn local_hms_at(t: libc::time_t) -> String {
    // SAFETY: an all-zero tm is valid output storage; localtime_r is thread-safe.
    let mut tm: libc::tm = unsafe { std::mem::zeroed() };
    // SAFETY: both pointers are valid for the call.
    if unsafe { libc::localtime_r(&t, &mut tm) }.is_null() {
        return rfc3339_utc(t as f64)[11..19].to_string();
    }
    format!("{:02}:{:02}:{:02}", tm.tm_hour, tm.tm_min, tm.tm_sec)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_known_instants() {
        assert_eq!(rfc3339_utc(0.0), "1970-01-01T00:00:00Z");
        assert_eq!(rfc3339_utc(951_782_400.0), "2000-02-29T00:00:00Z");
        assert_eq!(rfc3339_utc(1_795_342_800.5), "2026-11-22T10:20:00Z");
    }

    #[test]
    fn milliseconds_follow_the_seconds() {
        let t = 1_795_342_800.25;
        let s = local_hms_ms(t);
        assert_eq!(s.len(), 12, "{s}");
        assert!(s.ends_with(".250"), "{s}");
        assert_eq!(&s[..8], local_hms_at(t as libc::time_t));
    }

    #[test]
    fn raw_clock_moves_forward() {
        let a = now_ns();
        let b = now_ns();
        assert!(b >= a);
    }
}
