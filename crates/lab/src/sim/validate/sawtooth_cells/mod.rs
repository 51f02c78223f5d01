//! sim.validate's sawtooth cells: one steady writer under a background limit, on
//! the root disk and on the testbed, with periodic write back off or on; the
//! kernel's Dirty sawtooth (median peak, trough and period) over several runs
//! beside the simulator's blind prediction from the cell's settings, the writer's
//! rate and the device's probed bandwidth.

pub mod judge;
mod measure;
#[cfg(test)]
mod tests;

use serde::{Deserialize, Serialize};

use std::time::Duration;

use oslab_services::sawtooth::{Length, SawRaw};

pub use measure::measure;

const MIB: u64 = 1 << 20;

/// The writers the issue names: (rate, background limit), bytes.
pub const WRITERS: [(u64, u64); 3] = [
    (2 * MIB, 16 * MIB),
    (5 * MIB, 32 * MIB),
    (10 * MIB, 64 * MIB),
];

/// The names of [`WRITERS`] for the `sawtooth_writers` setting.
pub const WRITER_NAMES: &[&str] = &["2MiB/s", "5MiB/s", "10MiB/s"];

/// The fast-disk cells: on the root disk, periodic write back off, a writer
/// whose background passes are far enough apart that the kernel's estimate (and
/// so the chunk, under [`HARD_LIMIT`]) moves during the run: (rate, background
/// limit), bytes.
pub const FAST_WRITERS: [(u64, u64); 3] = [
    (4 * MIB, 24 * MIB),
    (6 * MIB, 48 * MIB),
    (8 * MIB, 96 * MIB),
];

/// The names of [`FAST_WRITERS`] for the `sawtooth_fast` setting.
pub const FAST_NAMES: &[&str] = &["4MiB/s", "6MiB/s", "8MiB/s"];

/// The devices a sawtooth cell runs on.
pub const DEVICE_NAMES: &[&str] = &["root", "testbed"];

/// Periodic write back of a cell that has it on: wake every 5 s, write what is
/// older than 10 s.
pub const PERIODIC_ON: (u64, u64) = (500, 1000);

/// Where a sawtooth cell writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum SawDevice {
    /// The scratch folder's file system (the machine's own disk).
    Root,
    /// The throttled testbed at the plan's cap.
    Testbed,
}

impl SawDevice {
    pub fn name(self) -> &'static str {
        match self {
            SawDevice::Root => "root",
            SawDevice::Testbed => "testbed",
        }
    }

    pub fn parse(s: &str) -> Option<SawDevice> {
        [SawDevice::Root, SawDevice::Testbed]
            .into_iter()
            .find(|d| d.name() == s)
    }
}

/// The hard limit of every cell: far above the background limits, so nobody is
/// throttled, and set in bytes so that how often a writer looks at the limits
/// (every sqrt(limit - Dirty) pages: 2 MiB here) does not depend on the machine's
/// memory.
pub const HARD_LIMIT: u64 = 4 << 30;

/// One sawtooth cell: a writer at `rate` bytes/s under a background limit of
/// `background` bytes, the hard limit [`HARD_LIMIT`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct SawCell {
    pub device: SawDevice,
    pub rate: u64,
    pub background: u64,
    pub periodic: bool,
}

impl SawCell {
    /// Every cell of `devices` x `writers` x {periodic off, on}.
    pub fn matrix(devices: &[SawDevice], writers: &[(u64, u64)]) -> Vec<SawCell> {
        let mut v = Vec::new();
        for &device in devices {
            for periodic in [false, true] {
                for &(rate, background) in writers {
                    v.push(SawCell {
                        device,
                        rate,
                        background,
                        periodic,
                    });
                }
            }
        }
        v
    }

    /// The finding name's part: "root.5mib_s.bg32mib.periodic_off".
    pub fn key(&self) -> String {
        format!(
            "{}.{}mib_s.bg{}mib.periodic_{}",
            self.device.name(),
            self.rate / MIB,
            self.background / MIB,
            if self.periodic { "on" } else { "off" }
        )
    }

    /// As a person reads it: "root disk, 5 MiB/s, background 32 MiB, periodic off".
    pub fn label(&self) -> String {
        format!(
            "{}, {} MiB/s, background {} MiB, periodic {}",
            match self.device {
                SawDevice::Root => "root disk",
                SawDevice::Testbed => "testbed",
            },
            self.rate / MIB,
            self.background / MIB,
            if self.periodic {
                "on (expire 10 s)"
            } else {
                "off"
            }
        )
    }

    /// (dirty_writeback_centisecs, dirty_expire_centisecs) in force.
    pub fn periodic_centisecs(&self) -> (u64, u64) {
        if self.periodic {
            PERIODIC_ON
        } else {
            (0, 3000)
        }
    }

    /// The cell's dirty settings, as the simulator takes them.
    pub fn sysctls(&self) -> oslab_wbsim::Sysctls {
        let (writeback, expire) = self.periodic_centisecs();
        oslab_wbsim::Sysctls {
            dirty_bytes: HARD_LIMIT,
            dirty_background_bytes: self.background,
            dirty_ratio: 0,
            dirty_background_ratio: 0,
            dirty_writeback_centisecs: writeback,
            dirty_expire_centisecs: expire,
        }
    }

    /// The sysctls the cell sets (through the journal).
    pub fn knobs(&self) -> Vec<(&'static str, String)> {
        let s = self.sysctls();
        vec![
            ("vm.dirty_bytes", s.dirty_bytes.to_string()),
            (
                "vm.dirty_background_bytes",
                s.dirty_background_bytes.to_string(),
            ),
            (
                "vm.dirty_writeback_centisecs",
                s.dirty_writeback_centisecs.to_string(),
            ),
            (
                "vm.dirty_expire_centisecs",
                s.dirty_expire_centisecs.to_string(),
            ),
        ]
    }

    /// The fast-disk cells on the root disk ([`FAST_WRITERS`]).
    pub fn fast(writers: &[(u64, u64)]) -> Vec<SawCell> {
        writers
            .iter()
            .map(|&(rate, background)| SawCell {
                device: SawDevice::Root,
                rate,
                background,
                periodic: false,
            })
            .collect()
    }

    /// One of the cells sim.validate runs ([`WRITERS`] anywhere, [`FAST_WRITERS`]
    /// on the root disk with periodic write back off): what a recorded cell must
    /// be to be judged (a raw file is untrusted).
    pub fn is_known(&self) -> bool {
        let pair = (self.rate, self.background);
        WRITERS.contains(&pair)
            || (FAST_WRITERS.contains(&pair) && self.device == SawDevice::Root && !self.periodic)
    }

    /// Seconds of writing: the first fill plus five of the longest periods the
    /// chunk rule allows (the limit plus 4 MiB, written at the rate: more than the
    /// 2 MiB a writer can overshoot under [`HARD_LIMIT`], so five periods fit).
    pub fn duration_s(&self) -> f64 {
        let fill = self.background as f64 / self.rate.max(1) as f64;
        let period = self.background.saturating_add(4 * MIB) as f64 / self.rate.max(1) as f64;
        (fill + 5.2 * period).ceil()
    }
}

/// Whole cycles of Dirty a run waits for before it stops: six drops, so five
/// periods between their peaks, each with its trough.
pub const CYCLES: usize = 6;

impl SawCell {
    /// The smallest drop of Dirty that counts as a cycle, MiB: half a second of
    /// writing, as the judge's sawtooth finder takes it.
    pub fn min_drop_mib(&self) -> f64 {
        (self.rate as f64 / MIB as f64 * 0.5).max(1.0)
    }

    /// How long a run lasts when it stops after `cycles` whole cycles (0: the
    /// whole [`SawCell::duration_s`], as runs before 2026-11-27 did).
    pub fn length(&self, cycles: usize) -> Length {
        Length {
            most: Duration::from_secs_f64(self.duration_s()),
            cycles: (cycles > 0).then(|| (cycles, self.min_drop_mib())),
        }
    }
}

/// One run of a cell.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SawRunRaw {
    pub cell: SawCell,
    pub run: usize,
    pub saw: SawRaw,
    /// The device's live state read just before the run (`oslab sim run --live`'s
    /// read: the files and a one-page probe's flusher pass); None in runs
    /// recorded before it was read, or where it could not be (`live_not_read`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub live: Option<crate::sim::live::LiveState>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub live_not_read: Option<String>,
}

/// The runs on one device, and what its probe measured before them.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SawDeviceRaw {
    pub device: SawDevice,
    /// Bytes per second: the testbed's own probe, or the root disk's direct-I/O
    /// probe (the machine profile's device figure), taken before the cells.
    pub measured_bytes_s: f64,
    /// The testbed's cap, bytes per second (None on the root disk).
    pub cap_bytes_s: Option<u64>,
    pub runs: Vec<SawRunRaw>,
    pub teardown_errors: Vec<String>,
    /// Why the device's cells did not run (or stopped), if they did not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}
