//! A background thread that samples /proc at a fixed interval while an experiment
//! runs, and the plots of what it saw.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::Duration;

use oslab_model::system::SarRecord;
use oslab_model::{Axis, Plot, Scale, Series, SeriesStyle};
use oslab_sys::fsread::Root;
use oslab_sys::sar::{Snapshot, derive, snapshot};

/// The shortest interval the sampler accepts.
pub const MIN_INTERVAL: Duration = Duration::from_millis(10);

pub struct Sampler {
    stop: Arc<AtomicBool>,
    handle: Option<JoinHandle<Vec<Snapshot>>>,
}

impl Sampler {
    /// Starts sampling every `interval` (at least 10 ms) on a background thread.
    pub fn start(interval: Duration) -> Sampler {
        let interval = interval.max(MIN_INTERVAL);
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let handle = std::thread::Builder::new()
            .name("oslab-sampler".into())
            .spawn(move || {
                let root = Root::live();
                let mut snaps = vec![snapshot(&root)];
                let start = snaps[0].t_ns;
                let step = interval.as_nanos() as u64;
                let mut k = 1u64;
                while !flag.load(Ordering::Relaxed) {
                    // sleep to the next tick of a fixed grid, so delays do not accumulate
                    let target = start + k * step;
                    let now = oslab_sys::clock::monotonic_ns();
                    if target > now {
                        std::thread::sleep(Duration::from_nanos((target - now).min(50_000_000)));
                        if oslab_sys::clock::monotonic_ns() < target {
                            continue;
                        }
                    }
                    snaps.push(snapshot(&root));
                    k = (oslab_sys::clock::monotonic_ns() - start) / step + 1;
                }
                snaps.push(snapshot(&root));
                snaps
            })
            .expect("spawn the sampler thread");
        Sampler {
            stop,
            handle: Some(handle),
        }
    }

    /// Stops sampling and returns the snapshots themselves, the raw counters an
    /// experiment in the one shape keeps in its raw data; [`records`] derives the
    /// sar records from them when judging.
    pub fn stop_snapshots(mut self) -> Vec<Snapshot> {
        self.stop.store(true, Ordering::Relaxed);
        self.handle
            .take()
            .and_then(|h| h.join().ok())
            .unwrap_or_default()
    }

    /// Stops sampling and returns one record per interval.
    pub fn stop(mut self) -> Vec<SarRecord> {
        self.stop.store(true, Ordering::Relaxed);
        let snaps = self
            .handle
            .take()
            .and_then(|h| h.join().ok())
            .unwrap_or_default();
        records(&snaps)
    }
}

impl Drop for Sampler {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

/// Records for consecutive snapshots, timed from the first.
pub fn records(snaps: &[Snapshot]) -> Vec<SarRecord> {
    let Some(origin) = snaps.first().map(|s| s.t_ns) else {
        return Vec::new();
    };
    snaps
        .windows(2)
        .filter_map(|w| derive(&w[0], &w[1], origin))
        .collect()
}

/// Dirty and Writeback over time, and the device's read and write rates.
pub fn plots(records: &[SarRecord], device: Option<&str>) -> Vec<Plot> {
    let mib = |kb: u64| kb as f64 / 1024.0;
    let mut out = vec![Plot {
        id: "dirty".into(),
        title: "Dirty and Writeback memory during the run".into(),
        x: Axis::new("time", "s", Scale::Linear),
        y: Axis::new("memory", "MiB", Scale::Linear),
        series: vec![
            Series {
                name: "Dirty".into(),
                style: SeriesStyle::Line,
                points: records
                    .iter()
                    .map(|r| [r.t_s, mib(r.memory.kbdirty)])
                    .collect(),
            },
            Series {
                name: "Writeback".into(),
                style: SeriesStyle::Line,
                points: records
                    .iter()
                    .map(|r| [r.t_s, mib(r.memory.kbwriteback)])
                    .collect(),
            },
        ],
        markers: vec![],
        x_labels: vec![],
    }];
    if let Some(dev) = device {
        let pick = |f: fn(&oslab_model::system::DeviceRates) -> f64| -> Vec<[f64; 2]> {
            records
                .iter()
                .filter_map(|r| r.devices.get(dev).map(|d| [r.t_s, f(d)]))
                .collect()
        };
        out.push(Plot {
            id: "device".into(),
            title: format!("Device {dev} during the run"),
            x: Axis::new("time", "s", Scale::Linear),
            y: Axis::new("throughput", "MiB/s", Scale::Linear),
            series: vec![
                Series {
                    name: "read".into(),
                    style: SeriesStyle::Line,
                    points: pick(|d| d.rkb_s / 1024.0),
                },
                Series {
                    name: "write".into(),
                    style: SeriesStyle::Line,
                    points: pick(|d| d.wkb_s / 1024.0),
                },
            ],
            markers: vec![],
            x_labels: vec![],
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn samples_at_the_interval_and_stops() {
        let s = Sampler::start(Duration::from_millis(20));
        std::thread::sleep(Duration::from_millis(130));
        let r = s.stop();
        assert!(r.len() >= 3, "{}", r.len());
        assert!(
            r.windows(2).all(|w| w[1].t_s > w[0].t_s),
            "time only moves forward"
        );
        assert!(r.iter().all(|x| x.interval_s > 0.0));
        assert!(r.iter().all(|x| x.memory.kbmemfree > 0));
    }
}
