//! A machine profile (`oslab sim calibrate`): what the model needs from the
//! machine it predicts, measured with micro-benchmarks of the device and the CPU
//! only, never a run of the workload predicted. A scenario takes from it only
//! what it leaves open (a built-in scenario of another machine takes nothing; a
//! value a scenario file gives wins).

use serde::{Deserialize, Serialize};

use crate::config::Config;

/// The layout version of a stored profile.
pub const PROFILE_VERSION: u32 = 1;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MachineProfile {
    pub version: u32,
    /// RFC 3339 UTC.
    pub measured_at: String,
    /// The kernel release and the host's name it was measured on.
    pub kernel: String,
    pub host: String,
    /// The folder whose device was measured.
    pub dir: String,
    /// The device's sustained write bandwidth (direct I/O, synced), bytes per second.
    pub device_write_bytes_s: f64,
    /// write() into cached page-cache pages, bytes per second.
    pub copy_bytes_s: f64,
    /// What each new page-cache page cost beyond the copy, ns, one sample per
    /// 512 KiB write (on a VM that reports free memory, the host's fault).
    pub page_alloc_ns: Vec<f64>,
    pub hz: u64,
    pub cpus: u32,
}

/// What a scenario leaves to the machine profile.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct OpenFields {
    pub copy: bool,
    pub page_alloc: bool,
    pub hz: bool,
    pub device_bandwidth: bool,
    /// Which releases' rules (`kernel`): the profiled machine's.
    pub kernel: bool,
}

impl OpenFields {
    pub fn any(self) -> bool {
        self.copy || self.page_alloc || self.hz || self.device_bandwidth || self.kernel
    }
}

impl MachineProfile {
    /// `cfg` with what `open` leaves to the profile taken from it.
    pub fn apply(&self, cfg: &Config, open: OpenFields) -> Config {
        let mut c = cfg.clone();
        if open.copy {
            c.copy_bytes_s = self.copy_bytes_s;
        }
        if open.page_alloc {
            c.page_alloc_ns = self.page_alloc_ns.clone();
        }
        if open.hz {
            c.hz = self.hz;
        }
        if open.device_bandwidth {
            c.device.bandwidth_bytes_s = self.device_write_bytes_s;
        }
        if open.kernel {
            c.kernel = crate::config::Kernel::of_uname(&self.kernel);
        }
        c
    }

    /// How a result names it.
    pub fn describe(&self, path: &str) -> String {
        format!(
            "the machine profile {path} (measured {} on {}, kernel {})",
            self.measured_at, self.host, self.kernel
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn profile() -> MachineProfile {
        MachineProfile {
            version: PROFILE_VERSION,
            measured_at: "2026-11-26T21:30:00Z".into(),
            kernel: "6.18.0".into(),
            host: "lab".into(),
            dir: "/var/tmp".into(),
            device_write_bytes_s: 300e6,
            copy_bytes_s: 3e9,
            page_alloc_ns: vec![12_000.0, 200.0],
            hz: 1000,
            cpus: 2,
        }
    }

    #[test]
    fn only_open_fields_are_taken() {
        let base = crate::scenario::find("testbed-fig2").unwrap().config;
        let none = profile().apply(&base, OpenFields::default());
        assert_eq!(none, base);
        let open = OpenFields {
            copy: true,
            page_alloc: true,
            hz: false,
            device_bandwidth: false,
            kernel: false,
        };
        let c = profile().apply(&base, open);
        assert_eq!(c.copy_bytes_s, 3e9);
        assert_eq!(c.page_alloc_ns, vec![12_000.0, 200.0]);
        assert_eq!(
            (c.hz, c.device.bandwidth_bytes_s, c.kernel),
            (base.hz, base.device.bandwidth_bytes_s, base.kernel)
        );
    }

    #[test]
    fn a_profile_of_an_older_kernel_brings_its_rules() {
        let base = crate::scenario::find("testbed-fig2").unwrap().config;
        let older = MachineProfile {
            kernel: "6.1.0-56-amd64".into(),
            ..profile()
        };
        let open = OpenFields {
            kernel: true,
            ..OpenFields::default()
        };
        assert_eq!(base.kernel, crate::config::Kernel::Since614);
        let c = older.apply(&base, open);
        assert_eq!(c.kernel, crate::config::Kernel::Before614);
    }
}
