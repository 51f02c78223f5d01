//! `oslab watch` output: the live sar-like table ([`live`]), JSON lines, and
//! OpenMetrics text ([`metrics`]).

pub mod live;
pub mod metrics;

pub use live::{bands, header, line, per_cpu_lines};
pub use metrics::{OPENMETRICS_CONTENT_TYPE, TEXT_CONTENT_TYPE, openmetrics, text_format};

use std::collections::BTreeMap;

use oslab_model::system::{CpuPct, SarRecord};

/// Devices worth a line: every one that moved any data in the interval, loop and
/// RAM disks included (as `sar -d`: the testbed is a loop device), or the ones
/// asked for.
pub fn shown_devices<'a>(r: &'a SarRecord, only: &[String]) -> Vec<&'a str> {
    r.devices
        .iter()
        .filter(|(name, d)| {
            if only.is_empty() {
                d.tps > 0.0
            } else {
                only.iter().any(|o| o == *name)
            }
        })
        .map(|(n, _)| n.as_str())
        .collect()
}

/// One record as one line of JSON, with each CPU's shares under "per_cpu" (by CPU
/// number) when there are any.
pub fn json_line(unix_time_s: f64, r: &SarRecord, per_cpu: &BTreeMap<u32, CpuPct>) -> String {
    let mut v = serde_json::to_value(r).expect("record serialises");
    v["unix_time_s"] = serde_json::json!(unix_time_s);
    if !per_cpu.is_empty() {
        v["per_cpu"] = serde_json::to_value(per_cpu).expect("shares serialise");
    }
    let mut s = serde_json::to_string(&v).expect("value serialises");
    s.push('\n');
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use oslab_model::system::DeviceRates;

    /// Regression: names starting with `loop` or `ram` were dropped, so the
    /// testbed's loop device writing 41 MB/s never showed.
    #[test]
    fn every_device_that_moved_data_is_shown_loop_devices_included() {
        let mut r = SarRecord::default();
        r.devices.insert(
            "vda".into(),
            DeviceRates {
                tps: 3.0,
                ..Default::default()
            },
        );
        r.devices.insert("sdb".into(), DeviceRates::default());
        r.devices.insert(
            "loop0".into(),
            DeviceRates {
                tps: 1.0,
                ..Default::default()
            },
        );
        r.devices.insert("loop1".into(), DeviceRates::default());
        r.devices.insert(
            "ram0".into(),
            DeviceRates {
                tps: 2.0,
                ..Default::default()
            },
        );
        assert_eq!(shown_devices(&r, &[]), vec!["loop0", "ram0", "vda"]);
        assert_eq!(shown_devices(&r, &["sdb".into()]), vec!["sdb"]);
    }
}
