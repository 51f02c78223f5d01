//! When the sync guard acts, and how large it is.
//!
//! By default (`auto`) the guard acts while a governed rt-high process makes
//! durable writes (fsync, fdatasync, sync_file_range, msync, O_SYNC or O_DSYNC
//! writes: what a database does at every commit, whatever its files are called),
//! and stops [`QUIET`] after the last one. Only an rt-high process whose group
//! root (or, for a user's own governor, that user) gave counts: a user whose
//! RLIMIT_RTPRIO lets a loop of fsync into rt-high by its scheduling cannot hold
//! everyone's copies within the guard. Its size is what the device the rt-high
//! files live on writes in [`TARGET_DELAY`], from the bandwidth the governor
//! measures there itself (its own write-back chunks), not the kernel's estimate,
//! which starts at a guess; until one is measured, [`FIRST_BYTES`].

use std::collections::HashMap;
use std::time::Duration;

/// How the guard is set (`--sync-guard off|auto|SIZE`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum GuardSetting {
    Off,
    #[default]
    Auto,
    /// This many bytes, while an rt-high process is governed (the earlier form).
    Fixed(u64),
}

impl GuardSetting {
    /// `off`, `auto`, or a size of at least 1 MiB; the error says what is taken,
    /// for clap to put after the option and the value it refused.
    pub fn parse(text: &str) -> Result<GuardSetting, String> {
        match text {
            "off" => Ok(GuardSetting::Off),
            "auto" => Ok(GuardSetting::Auto),
            size => oslab_units::parse_human_size(size)
                .ok()
                .filter(|b| *b >= MIN_BYTES)
                .map(GuardSetting::Fixed)
                .ok_or_else(|| "use off, auto, or a size of at least 1MiB such as 2MiB".into()),
        }
    }
}

impl std::str::FromStr for GuardSetting {
    type Err = String;

    fn from_str(text: &str) -> Result<GuardSetting, String> {
        GuardSetting::parse(text)
    }
}

/// `off`, `auto`, or the size in bytes: what [`GuardSetting::parse`] reads back.
impl std::fmt::Display for GuardSetting {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            GuardSetting::Off => f.write_str("off"),
            GuardSetting::Auto => f.write_str("auto"),
            GuardSetting::Fixed(b) => write!(f, "{b}"),
        }
    }
}

/// The delay the guard's size aims at: what a commit may wait behind the other
/// groups' write back.
pub const TARGET_DELAY: Duration = Duration::from_millis(50);
/// How long after the last durable write the guard stays on (`--sync-guard-quiet`).
pub const QUIET: Duration = Duration::from_secs(30);
/// The size before any bandwidth was measured: 50 ms at 40 MiB/s.
pub const FIRST_BYTES: u64 = 2 << 20;
/// The guard's size stays within these bounds.
pub const MIN_BYTES: u64 = 1 << 20;
pub const MAX_BYTES: u64 = 256 << 20;

/// The guard's size for a device writing `bandwidth` bytes a second.
pub fn size_for(bandwidth: Option<f64>) -> u64 {
    match bandwidth {
        Some(bw) if bw.is_finite() && bw > 0.0 => {
            ((bw * TARGET_DELAY.as_secs_f64()) as u64).clamp(MIN_BYTES, MAX_BYTES)
        }
        _ => FIRST_BYTES,
    }
}

/// What the automatic guard has seen of the rt-high processes' durable writes.
#[derive(Debug, Default)]
pub struct Durable {
    /// Each counted process's durable calls at the last pass.
    counts: HashMap<u32, u64>,
    /// When (the coordinator's clock) a count last grew, and whose.
    pub last_ns: Option<u64>,
    pub last_pid: u32,
    /// When the guard began to act, if it does.
    pub since_ns: Option<u64>,
}

impl Durable {
    /// One pass: `counts` are the durable calls of the rt-high processes whose
    /// group root gave (pid, their own count). A count that grew is a durable
    /// write now; processes gone are forgotten. Whether the guard acts after it.
    pub fn observe(&mut self, now: u64, counts: &[(u32, u64)], quiet: Duration) -> bool {
        let mut seen = HashMap::with_capacity(counts.len());
        for &(pid, n) in counts {
            let before = self.counts.get(&pid).copied();
            // a process's first look counts when it already made durable calls
            if n > before.unwrap_or(0) {
                self.last_ns = Some(now);
                self.last_pid = pid;
            }
            seen.insert(pid, n);
        }
        self.counts = seen;
        let acting = self
            .last_ns
            .is_some_and(|t| now.saturating_sub(t) < quiet.as_nanos() as u64);
        match (acting, self.since_ns) {
            (true, None) => self.since_ns = Some(now),
            (false, Some(_)) => self.since_ns = None,
            _ => {}
        }
        acting
    }
}

/// The durable writes of the rt-high processes this pass found whose group root
/// (or the coordinator's own user) gave: (pid, their own count of durable calls
/// plus the bios with a cache flush or FUA the kernel saw them submit,
/// `kernel_flushes`, which catches a commit made without libc: a raw system
/// call, O_DIRECT with O_DSYNC, io_uring). Only those whose group the
/// governor's owner chose may switch the guard on for everyone's copies.
pub fn durable_counts(
    reg: &crate::registry::Registry,
    rows: &[crate::roster::Row],
    kernel_flushes: &HashMap<u32, u64>,
) -> Vec<(u32, u64)> {
    use std::sync::atomic::Ordering;
    rows.iter()
        .filter(|r| r.group == crate::shm::RT_HIGH as usize)
        .filter_map(|r| {
            let g = reg.get(r.slot)?;
            if !matches!(g.lineage, crate::registry::Lineage::Given(_)) {
                return None;
            }
            let own = g
                .own()
                .map_or(0, |o| o.header.durable_calls.load(Ordering::Relaxed));
            let kernel = kernel_flushes.get(&r.pid).copied().unwrap_or(0);
            Some((r.pid, own.saturating_add(kernel)))
        })
        .collect()
}

/// The write-back bandwidth the governor measured per device from its own
/// chunks: the bytes over the time they took, the older weighing less.
#[derive(Debug, Default)]
pub struct Bandwidths {
    per_device: HashMap<u64, (f64, f64)>,
}

/// How much of the earlier figures each new chunk keeps.
const KEEP: f64 = 0.95;

impl Bandwidths {
    /// A chunk of `bytes` on device `dev` that took `took` from its submission
    /// to its completion.
    pub fn record(&mut self, dev: u64, bytes: u64, took: Duration) {
        if bytes == 0 || took.is_zero() {
            return;
        }
        let e = self.per_device.entry(dev).or_insert((0.0, 0.0));
        e.0 = e.0 * KEEP + bytes as f64;
        e.1 = e.1 * KEEP + took.as_secs_f64();
    }

    /// Bytes a second on `dev`, once a chunk was measured there.
    pub fn of(&self, dev: u64) -> Option<f64> {
        self.per_device
            .get(&dev)
            .filter(|(_, s)| *s > 0.0)
            .map(|(b, s)| b / s)
    }

    /// The slowest of `devs` that has a figure: the guard must hold for the
    /// device the rt-high files wait on.
    pub fn slowest_of(&self, devs: impl IntoIterator<Item = u64>) -> Option<f64> {
        devs.into_iter()
            .filter_map(|d| self.of(d))
            .min_by(f64::total_cmp)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: u64 = 1_000_000_000;

    #[test]
    fn the_setting_reads_off_auto_or_a_size() {
        assert_eq!(GuardSetting::parse("off"), Ok(GuardSetting::Off));
        assert_eq!(GuardSetting::parse("auto"), Ok(GuardSetting::Auto));
        assert_eq!(
            GuardSetting::parse("2MiB"),
            Ok(GuardSetting::Fixed(2 << 20))
        );
        assert!(
            GuardSetting::parse("512KiB")
                .unwrap_err()
                .contains("at least 1MiB")
        );
        assert!(GuardSetting::parse("lots").is_err());
        assert_eq!(GuardSetting::default(), GuardSetting::Auto);
        for g in [
            GuardSetting::Off,
            GuardSetting::Auto,
            GuardSetting::Fixed(MIN_BYTES),
            GuardSetting::Fixed((3 << 20) + 1),
        ] {
            assert_eq!(GuardSetting::parse(&g.to_string()), Ok(g), "read back");
        }
    }

    #[test]
    fn the_size_is_fifty_milliseconds_of_the_device() {
        // 40 MiB/s writes 2 MiB in 50 ms
        assert_eq!(size_for(Some(40.0 * 1048576.0)), 2 << 20);
        assert_eq!(size_for(None), FIRST_BYTES);
        assert_eq!(size_for(Some(1.0)), MIN_BYTES);
        assert_eq!(size_for(Some(1e12)), MAX_BYTES);
        assert_eq!(size_for(Some(f64::NAN)), FIRST_BYTES);
    }

    #[test]
    fn the_guard_acts_from_a_durable_write_until_the_quiet_interval_passed() {
        let quiet = Duration::from_secs(30);
        let mut d = Durable::default();
        assert!(!d.observe(0, &[(10, 0)], quiet), "joined, no durable write");
        assert!(d.observe(S, &[(10, 3)], quiet), "its count grew");
        assert_eq!((d.last_pid, d.since_ns), (10, Some(S)));
        assert!(
            d.observe(20 * S, &[(10, 3)], quiet),
            "within the quiet interval"
        );
        assert!(!d.observe(31 * S, &[(10, 3)], quiet), "quiet for 30 s");
        assert_eq!(d.since_ns, None);
        // a newcomer that already made durable calls switches it on at once
        assert!(d.observe(32 * S, &[(10, 3), (11, 7)], quiet));
        // a process gone and back under the same pid with a smaller count
        assert!(d.observe(33 * S, &[(11, 1)], quiet));
        assert!(!d.observe(70 * S, &[(11, 1)], quiet));
    }

    #[test]
    fn bandwidth_is_bytes_over_time_the_slowest_device_first() {
        let mut b = Bandwidths::default();
        assert_eq!(b.of(1), None);
        for _ in 0..10 {
            b.record(1, 1 << 20, Duration::from_millis(25));
            b.record(2, 1 << 20, Duration::from_millis(1));
        }
        let forty = b.of(1).unwrap();
        assert!((forty - 40.0 * 1048576.0).abs() < 1.0, "{forty}");
        assert_eq!(b.slowest_of([1, 2, 3]), Some(forty));
        assert_eq!(b.slowest_of([3]), None);
        b.record(1, 0, Duration::from_millis(5));
        b.record(1, 5, Duration::ZERO);
        assert_eq!(b.of(1), Some(forty), "empty chunks measure nothing");
    }
}
