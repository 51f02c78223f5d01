//! `mem.bandwidth`: sequential read and write bandwidth vs working-set size, the
//! book's stride-1 sweep.
//!
//! What: GB/s reading every 8-byte word of a buffer in order (summed with 32-byte
//! loads where the CPU has AVX2, so that the loop's instructions do not hold the
//! reads under what the caches give), and writing every byte of it (memset), for
//! buffers from 4 KiB to 256 MiB (quick) or 1 GiB, one thread.
//!
//! Method: sizes visited in a shuffled order; each size on its own 4 KiB-page
//! buffer (MADV_NOHUGEPAGE), prefaulted; one pass untimed, one timed to choose how
//! many passes make a sample of at least 2 ms, then the samples. Every sample is
//! kept as the time of its passes.
//!
//! Pitfalls: the prefetcher streams lines ahead of the loop, so this curve shows
//! the levels far less than `mem.latency` does (that is its lesson): it measures
//! throughput, not latency. A write of a line not in the cache may first read it
//! (read for ownership) unless the CPU uses streaming stores, so write bandwidth
//! beyond the caches is not the memory's raw write rate; glibc's memset writes
//! large buffers with rep stosb, which on CPUs with fast strings (ERMS) can store
//! whole lines without that read, so there writing can outrun reading. One thread
//! cannot saturate the memory of a large machine. In a guest the host's other
//! guests share the memory bus.
//!
//! References: material section 1 (CPU caches: the cache sweep), madvise(2).

use oslab_model::{Axis, Environment, Marker, Plot, Scale, Series, SeriesStyle};
use oslab_sys::memprobe::{Buffer, ReadSweep, write_sweep};
use oslab_sys::parse::size::human_bytes;
use serde::{Deserialize, Serialize};

use crate::harness::{Context, LabError, Meta, Needs, Output, finding};
use crate::harness::{Experiment, Measured, Planner};
use crate::mem::common::sweep::{log_sizes, points, shuffled, sysfs_of};

pub struct MemBandwidth;

static META: Meta = Meta {
    id: "mem.bandwidth",
    title: "Sequential read and write bandwidth vs working set",
    section: "1",
    summary: "GB/s reading and writing W bytes in order, W from 4 KiB up",
    needs: Needs {
        root: false,
        min_cpus: 1,
        free_disk_bytes: 0,
    },
    quick_s: 5.0,
    full_s: 30.0,
    internal: false,
};

/// A sample lasts at least this long.
const SAMPLE_NS: u64 = 2_000_000;
/// The smallest buffer, and the size the "small" findings read.
const MIN_SIZE: u64 = 4096;
const SMALL: u64 = 16 << 10;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Plan {
    pub samples: usize,
    /// The largest buffer.
    pub max_size: u64,
    /// Sizes per octave.
    pub per_octave: u32,
}

/// Samples of one operation over one buffer: each the time of `passes` passes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Timed {
    pub passes: u64,
    pub ns: Vec<u64>,
}

impl Timed {
    /// GB/s of each sample over `bytes`.
    pub fn gb_s(&self, bytes: u64) -> Vec<f64> {
        self.ns
            .iter()
            .map(|ns| (bytes as f64 * self.passes as f64) / (*ns).max(1) as f64)
            .collect()
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SizeRaw {
    /// The buffer's length (the size asked for, rounded up to whole pages).
    pub bytes: u64,
    pub read: Timed,
    pub write: Timed,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Raw {
    /// Every size, ascending.
    pub sizes: Vec<SizeRaw>,
    /// The width of the read loop's loads, bytes. Recordings made before this field
    /// existed used the baseline build's loads: 16 bytes on x86-64 and aarch64.
    #[serde(default = "sixteen")]
    pub read_load_bytes: u32,
}

fn sixteen() -> u32 {
    16
}

/// `samples` timings of `op`, each of enough passes to last [`SAMPLE_NS`].
fn timed(samples: usize, mut op: impl FnMut()) -> Timed {
    let now = oslab_sys::clock::monotonic_ns;
    op();
    let t0 = now();
    op();
    let once = (now() - t0).max(1);
    let passes = (SAMPLE_NS / once).clamp(1, 100_000);
    let ns = (0..samples)
        .map(|_| {
            let t0 = now();
            for _ in 0..passes {
                op();
            }
            now() - t0
        })
        .collect();
    Timed { passes, ns }
}

impl Experiment for MemBandwidth {
    type Plan = Plan;
    type Raw = Raw;

    fn meta(&self) -> &Meta {
        &META
    }

    fn plan(&self, p: &mut Planner) -> Plan {
        let quick = p.quick();
        Plan {
            samples: p.samples(3, 5),
            max_size: if quick { 256 << 20 } else { 1 << 30 },
            per_octave: if quick { 2 } else { 4 },
        }
    }

    fn measure(&self, plan: &Plan, ctx: &mut Context) -> Result<Measured<Raw>, LabError> {
        let sizes = log_sizes(MIN_SIZE, plan.max_size, plan.per_octave);
        let reader = ReadSweep::for_this_cpu();
        let mut out: Vec<Option<SizeRaw>> = vec![None; sizes.len()];
        for (n, i) in shuffled(sizes.len(), ctx.config.seed)
            .into_iter()
            .enumerate()
        {
            let mut b = Buffer::new(sizes[i] as usize, false)
                .map_err(|e| LabError::Failed(e.to_string()))?;
            let read = timed(plan.samples, || {
                std::hint::black_box((reader.sweep)(b.as_slice()));
            });
            let write = timed(plan.samples, || write_sweep(b.as_mut_slice(), 1));
            out[i] = Some(SizeRaw {
                bytes: b.len() as u64,
                read,
                write,
            });
            ctx.progress.fraction((n + 1) as f64 / sizes.len() as f64);
        }
        Ok(Measured::Raw(Raw {
            sizes: out.into_iter().flatten().collect(),
            read_load_bytes: reader.load_bytes,
        }))
    }

    fn judge(&self, plan: &Plan, raw: &Raw, env: &Environment) -> Output {
        judge(plan, raw, env)
    }
}

fn judge(plan: &Plan, raw: &Raw, env: &Environment) -> Output {
    let median = |v: &[f64]| oslab_stats::median(v).unwrap_or(f64::NAN);
    let x: Vec<f64> = raw.sizes.iter().map(|s| s.bytes as f64).collect();
    let read: Vec<f64> = raw
        .sizes
        .iter()
        .map(|s| median(&s.read.gb_s(s.bytes)))
        .collect();
    let write: Vec<f64> = raw
        .sizes
        .iter()
        .map(|s| median(&s.write.gb_s(s.bytes)))
        .collect();
    // the first size at or above `at`, as the old sweep read it
    let at = |v: &[f64], at: u64| {
        raw.sizes
            .iter()
            .position(|s| s.bytes >= at)
            .map_or(f64::NAN, |i| v[i])
    };
    let big = raw.sizes.last().map_or(0, |s| s.bytes);
    let mut out = Output::default();
    for (op, v) in [("read", &read), ("write", &write)] {
        let verb = if op == "read" { "reading" } else { "writing" };
        out.findings.push(finding(
            &format!("{op}_gb_s.small"),
            at(v, SMALL),
            "GB/s",
            format!("{verb} {}", human_bytes(SMALL)),
        ));
        out.findings.push(finding(
            &format!("{op}_gb_s.large"),
            at(v, big),
            "GB/s",
            format!("{verb} {}", human_bytes(big)),
        ));
    }
    let series = |name: &str, y: &[f64]| Series {
        name: name.into(),
        style: SeriesStyle::LinePoints,
        points: points(&x, y),
    };
    let markers = sysfs_of!(env.machine)
        .into_iter()
        .filter(|l| l.bytes <= big * 2)
        .map(|l| Marker {
            x: l.bytes as f64,
            label: format!("sysfs {} {}", l.name, human_bytes(l.bytes)),
        })
        .collect();
    out.plots.push(Plot {
        id: "bandwidth".into(),
        title: "sequential bandwidth vs working set".into(),
        x: Axis::new("working set", "bytes", Scale::Log2),
        y: Axis::new("bandwidth", "GB/s", Scale::Linear),
        series: vec![series("read", &read), series("write", &write)],
        markers,
        x_labels: vec![],
    });
    out.notes.push(format!(
        "{} sizes, {} samples of at least {} ms each; one thread; reads with {}-byte loads, writes with the C library's memset",
        raw.sizes.len(),
        plan.samples,
        SAMPLE_NS / 1_000_000,
        raw.read_load_bytes
    ));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn size(bytes: u64, read_ns: u64, write_ns: u64) -> SizeRaw {
        let t = |ns: u64| Timed {
            passes: 10,
            ns: vec![ns, ns * 2, ns],
        };
        SizeRaw {
            bytes,
            read: t(read_ns),
            write: t(write_ns),
        }
    }

    #[test]
    fn findings_read_the_small_and_the_largest_size() {
        let raw = Raw {
            sizes: vec![
                size(4096, 400, 800),
                size(16 << 10, 1638, 3277),
                size(1 << 20, 1 << 20, 1 << 21),
            ],
            read_load_bytes: 32,
        };
        let plan = Plan {
            samples: 3,
            max_size: 1 << 20,
            per_octave: 2,
        };
        let out = judge(
            &plan,
            &raw,
            &crate::mem::common::test_env::test_env(None, &[]),
        );
        let names: Vec<&str> = out.findings.iter().map(|f| f.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "read_gb_s.small",
                "read_gb_s.large",
                "write_gb_s.small",
                "write_gb_s.large"
            ]
        );
        let f = |n: &str| out.findings.iter().find(|f| f.name == n).unwrap().value;
        // 16 KiB x 10 passes in 1638 ns: 100 GB/s (the median of 1x, 2x, 1x the time)
        assert!((f("read_gb_s.small") - 100.0).abs() < 0.1);
        assert!((f("write_gb_s.small") - 50.0).abs() < 0.1);
        assert!((f("read_gb_s.large") - 10.0).abs() < 1e-9);
        assert_eq!(out.plots[0].series[0].points.len(), 3);
        assert!(out.claims.is_empty());
        assert!(
            out.notes[0].contains("reads with 32-byte loads"),
            "{:?}",
            out.notes
        );
    }

    #[test]
    fn recordings_without_the_load_width_read_with_the_baseline_width() {
        let raw: Raw = serde_json::from_str(r#"{"sizes": []}"#).unwrap();
        assert_eq!(raw.read_load_bytes, 16);
    }
}
