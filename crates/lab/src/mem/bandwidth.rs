//! `mem.bandwidth`: sequential read and write bandwidth vs working-set size, the
//! book's stride-1 sweep. The prefetcher streams lines ahead of the loop, so this
//! curve shows the levels far less than `mem.latency` does; that is its lesson.

use oslab_model::{Axis, Marker, Plot, Scale, Series, SeriesStyle};
use oslab_sys::memprobe::{Buffer, read_sweep, write_sweep};
use oslab_sys::parse::size::human_bytes;

use super::sweep::{log_sizes, shuffled, sysfs_levels};
use crate::experiment::{Context, Experiment, LabError, Meta, Needs, Outcome, Output, finding};

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

/// GB/s of `op` over a buffer of `len` bytes: repeated to at least 2 ms a sample.
fn rate(len: usize, samples: usize, mut op: impl FnMut()) -> Vec<f64> {
    op();
    let t0 = oslab_sys::clock::monotonic_ns();
    op();
    let once = (oslab_sys::clock::monotonic_ns() - t0).max(1);
    let reps = (2_000_000 / once).clamp(1, 100_000);
    (0..samples)
        .map(|_| {
            let t0 = oslab_sys::clock::monotonic_ns();
            for _ in 0..reps {
                op();
            }
            let ns = (oslab_sys::clock::monotonic_ns() - t0).max(1);
            (len as f64 * reps as f64) / ns as f64
        })
        .collect()
}

impl Experiment for MemBandwidth {
    fn meta(&self) -> &Meta {
        &META
    }

    fn run(&self, ctx: &mut Context) -> Result<Outcome, LabError> {
        let quick = ctx.config.quick();
        let samples = ctx.samples(3, 5);
        let sizes = log_sizes(
            4096,
            if quick { 256 << 20 } else { 1 << 30 },
            if quick { 2 } else { 4 },
        );
        let mut read = vec![0.0; sizes.len()];
        let mut write = vec![0.0; sizes.len()];
        for (n, i) in shuffled(sizes.len(), ctx.config.seed)
            .into_iter()
            .enumerate()
        {
            let mut b = Buffer::new(sizes[i] as usize, false)
                .map_err(|e| LabError::Failed(e.to_string()))?;
            let len = b.len();
            read[i] = oslab_stats::median(&rate(len, samples, || {
                std::hint::black_box(read_sweep(b.as_slice()));
            }))
            .unwrap_or(0.0);
            write[i] =
                oslab_stats::median(&rate(len, samples, || write_sweep(b.as_mut_slice(), 1)))
                    .unwrap_or(0.0);
            ctx.progress.fraction((n + 1) as f64 / sizes.len() as f64);
        }
        let at = |v: &[f64], s: u64| {
            sizes
                .iter()
                .position(|x| *x >= s)
                .map(|i| v[i])
                .unwrap_or(0.0)
        };
        let small = 16 << 10;
        let big = *sizes.last().unwrap_or(&0);
        let findings = vec![
            finding(
                "read_gb_s.small",
                at(&read, small),
                "GB/s",
                format!("reading {}", human_bytes(small)),
            ),
            finding(
                "read_gb_s.large",
                at(&read, big),
                "GB/s",
                format!("reading {}", human_bytes(big)),
            ),
            finding(
                "write_gb_s.small",
                at(&write, small),
                "GB/s",
                format!("writing {}", human_bytes(small)),
            ),
            finding(
                "write_gb_s.large",
                at(&write, big),
                "GB/s",
                format!("writing {}", human_bytes(big)),
            ),
        ];
        let x: Vec<f64> = sizes.iter().map(|s| *s as f64).collect();
        let series = |name: &str, y: &[f64]| Series {
            name: name.into(),
            style: SeriesStyle::LinePoints,
            points: x.iter().zip(y).map(|(a, b)| [*a, *b]).collect(),
        };
        let markers = sysfs_levels(ctx.machine)
            .into_iter()
            .filter(|(_, s)| *s <= big * 2)
            .map(|(n, s)| Marker {
                x: s as f64,
                label: format!("sysfs {n} {}", human_bytes(s)),
            })
            .collect();
        Ok(Outcome::Completed(Output {
            findings,
            plots: vec![Plot {
                id: "bandwidth".into(),
                title: "sequential bandwidth vs working set".into(),
                x: Axis::new("working set", "bytes", Scale::Log2),
                y: Axis::new("bandwidth", "GB/s", Scale::Linear),
                series: vec![series("read", &read), series("write", &write)],
                markers,
                x_labels: vec![],
            }],
            notes: vec![format!(
                "{} sizes, {samples} samples of at least 2 ms each; one thread",
                sizes.len()
            )],
            ..Default::default()
        }))
    }
}
