//! `wb.cases`: the material's case comparison (section 4, experiment C), scaled.
//!
//! Case 1: background 10 %, hard 20 %, writeback every 5 s, expire 30 s. Case 2:
//! background 1 %, hard 20 %, writeback 5 s, expire 10 s. The author's 8 GiB box is
//! scaled to 512 MiB of "memory" (so 10 % is 51.2 MiB), the limits are set in bytes,
//! and a steady writer runs on the testbed, whose device is capped. For each case:
//! peak Dirty, the device's write rate over time (sampler, 10 Hz; a throttled loop
//! device shows no %util, because blk-throttle holds requests before they reach it,
//! so the load is read as MiB/s written), the number of write-back episodes (the
//! device going from idle to writing; the writeback tracepoints are not used), and
//! the longest stretch of continuous writing.

use std::time::Duration;

use oslab_model::{Axis, Claim, Plot, Scale, Series, SeriesStyle, Verdict};
use oslab_sys::parse::size::human_bytes;

use super::knobs::Knobs;
use super::testbed::{down_for_run, unavailable, up_for_run};
use super::trace::{self, WriterSpec, mib};
use crate::experiment::{Context, Experiment, LabError, Meta, Needs, Outcome, Output, finding};
use crate::sampler::Sampler;
use crate::settings::{AnySetting, Bytes, Declared, Seconds, Setting};

pub struct Cases;

static META: Meta = Meta {
    id: "wb.cases",
    title: "Flush early and often vs late and big (case 1 vs case 2)",
    section: "4",
    summary: "material's case comparison scaled to a testbed: peak Dirty, device load, flush count",
    needs: Needs {
        root: true,
        min_cpus: 1,
        free_disk_bytes: 0,
    },
    quick_s: 55.0,
    full_s: 130.0,
    internal: false,
};

static RATE: Setting<Bytes> = Setting {
    name: "rate",
    help: "writer rate per second",
    quick: 8 << 20,
    full: 8 << 20,
    bounds: Some((1 << 20, 1 << 30)),
    names: &[],
};
static BANDWIDTH: Setting<Bytes> = Setting {
    name: "bandwidth",
    help: "testbed write cap per second",
    quick: 20 << 20,
    full: 20 << 20,
    bounds: Some((1 << 20, 10 << 30)),
    names: &[],
};
static DURATION: Setting<Seconds> = Setting {
    name: "duration",
    help: "seconds per case",
    quick: 25.0,
    full: 60.0,
    bounds: Some((1.0, 3600.0)),
    names: &[],
};
static SETTINGS: [&dyn AnySetting; 3] = [&RATE, &BANDWIDTH, &DURATION];

const SCALED_MEMORY: u64 = 512 << 20;

struct Case {
    name: &'static str,
    bg_pct: u64,
    hard_pct: u64,
    writeback_cs: u64,
    expire_cs: u64,
}

const CASES: [Case; 2] = [
    Case {
        name: "case 1",
        bg_pct: 10,
        hard_pct: 20,
        writeback_cs: 500,
        expire_cs: 3000,
    },
    Case {
        name: "case 2",
        bg_pct: 1,
        hard_pct: 20,
        writeback_cs: 500,
        expire_cs: 1000,
    },
];

struct CaseResult {
    peak_dirty_mib: f64,
    flushes: usize,
    peak_write_mib_s: f64,
    busy_share: f64,
    longest_busy_s: f64,
    dirty: Vec<[f64; 2]>,
    util: Vec<[f64; 2]>,
}

/// Flush episodes (idle -> writing transitions) and the longest writing stretch in
/// s, from device write rates sampled every `dt` s; writing = above `active`.
pub fn episodes(rates: &[f64], dt: f64, active: f64) -> (usize, f64) {
    let (mut n, mut best, mut cur) = (0, 0.0f64, 0.0);
    let mut was = false;
    for r in rates {
        let on = *r > active;
        if on {
            if !was {
                n += 1;
            }
            cur += dt;
            best = best.max(cur);
        } else {
            cur = 0.0;
        }
        was = on;
    }
    (n, best)
}

impl Experiment for Cases {
    fn meta(&self) -> &Meta {
        &META
    }

    fn settings(&self) -> Declared {
        &SETTINGS
    }

    fn run(&self, ctx: &mut Context) -> Result<Outcome, LabError> {
        if let Some(why) = unavailable() {
            return Ok(Outcome::Skipped { reason: why });
        }
        let rate = ctx.get(&RATE);
        let bw = ctx.get(&BANDWIDTH);
        let secs = ctx.get(&DURATION);
        ctx.progress.stage("building the testbed");
        let tb = up_for_run(
            &ctx.config.scratch_dir,
            (rate as f64 * secs * 2.5) as u64 + (512 << 20),
            bw,
        )?;
        let disk = tb.disk_name();
        let result = (|| -> Result<Vec<CaseResult>, LabError> {
            let mut out = Vec::new();
            for (i, c) in CASES.iter().enumerate() {
                ctx.progress.stage(c.name);
                trace::settle();
                let k = Knobs::set(&[
                    (
                        "vm.dirty_background_bytes",
                        (SCALED_MEMORY * c.bg_pct / 100).to_string(),
                    ),
                    (
                        "vm.dirty_bytes",
                        (SCALED_MEMORY * c.hard_pct / 100).to_string(),
                    ),
                    ("vm.dirty_writeback_centisecs", c.writeback_cs.to_string()),
                    ("vm.dirty_expire_centisecs", c.expire_cs.to_string()),
                ])?;
                let sampler = Sampler::start(Duration::from_millis(100));
                let w = WriterSpec {
                    path: tb.mount.join(format!("case{}.dat", i + 1)),
                    chunk: (rate / 10) as usize,
                    period: Duration::from_millis(100),
                    count: None,
                    fifo_priority: None,
                    nice: None,
                };
                let progress = ctx.progress;
                let (traces, polls) = trace::run(
                    vec![w],
                    Duration::from_secs_f64(secs),
                    Duration::from_millis(100),
                    &|f| progress.fraction((i as f64 + f) / CASES.len() as f64),
                );
                let records = sampler.stop();
                drop(k);
                if let Some(e) = traces.iter().find_map(|t| t.error.clone()) {
                    return Err(LabError::Failed(format!("writer: {e}")));
                }
                let y: Vec<f64> = polls.iter().map(|p| mib(p.dirty_bytes)).collect();
                let util: Vec<[f64; 2]> = records
                    .iter()
                    .filter_map(|r| r.devices.get(&disk).map(|d| [r.t_s, d.wkb_s / 1024.0]))
                    .collect();
                let writes: Vec<f64> = util.iter().map(|u| u[1]).collect();
                let (flushes, longest) = episodes(&writes, 0.1, mib(bw) * 0.05);
                // peak write rate over 1 s windows (10 records)
                let peak_write = writes
                    .windows(10)
                    .map(|w| w.iter().sum::<f64>() / 10.0)
                    .fold(0.0, f64::max);
                out.push(CaseResult {
                    peak_dirty_mib: y.iter().copied().fold(0.0, f64::max),
                    flushes,
                    peak_write_mib_s: peak_write,
                    busy_share: writes.iter().filter(|w| **w > mib(bw) * 0.05).count() as f64
                        / writes.len().max(1) as f64,
                    longest_busy_s: longest,
                    dirty: polls.iter().map(|p| [p.t_s, mib(p.dirty_bytes)]).collect(),
                    util,
                });
            }
            Ok(out)
        })();
        let errors = down_for_run(&tb);
        let cases = result?;
        if !errors.is_empty() {
            return Err(LabError::Failed(format!(
                "testbed teardown: {}",
                errors.join("; ")
            )));
        }
        let mut findings = Vec::new();
        for (c, r) in CASES.iter().zip(&cases) {
            let k = c.name.replace(' ', "");
            findings.push(finding(
                &format!("{k}.peak_dirty_mib"),
                r.peak_dirty_mib,
                "MiB",
                format!(
                    "background {} %, hard {} %, expire {} s of {} scaled memory",
                    c.bg_pct,
                    c.hard_pct,
                    c.expire_cs / 100,
                    human_bytes(SCALED_MEMORY)
                ),
            ));
            findings.push(finding(
                &format!("{k}.flushes"),
                r.flushes as f64,
                "count",
                "write-back episodes: the device going from idle to writing",
            ));
            findings.push(finding(
                &format!("{k}.peak_write_mib_s"),
                r.peak_write_mib_s,
                "MiB/s",
                "device writes, best 1 s window",
            ));
            findings.push(finding(
                &format!("{k}.busy_share"),
                r.busy_share,
                "fraction",
                "of the run the device was writing",
            ));
            findings.push(finding(
                &format!("{k}.longest_busy_s"),
                r.longest_busy_s,
                "s",
                "longest stretch of continuous writing",
            ));
        }
        let (a, b) = (&cases[0], &cases[1]);
        let holds = b.peak_dirty_mib < a.peak_dirty_mib
            && b.peak_write_mib_s <= a.peak_write_mib_s
            && b.flushes >= a.flushes;
        let claim = Claim {
            id: "flush-often-lowers-peak".into(),
            text: "Flushing more often lowers the peak device load but wakes the flusher more".into(),
            source: "material 4 (seed 001, case comparison: 800 MB vs 80 MB peaks, util 100 % vs 98 %)".into(),
            expectation: "case 2 has the lower peak Dirty, no higher peak device write rate, and at least as many write-back episodes".into(),
            observed: format!(
                "peak Dirty {:.1} vs {:.1} MiB; peak device writes {:.1} vs {:.1} MiB/s; episodes {} vs {}; longest writing stretch {:.1} vs {:.1} s",
                a.peak_dirty_mib, b.peak_dirty_mib, a.peak_write_mib_s, b.peak_write_mib_s, a.flushes, b.flushes, a.longest_busy_s, b.longest_busy_s
            ),
            verdict: if holds { Verdict::Holds } else { Verdict::Differs },
            why: if holds {
                "small, frequent flushes keep the device's bursts short".into()
            } else {
                "the scaled run did not separate the cases (try a longer duration or a slower device)".into()
            },
        };
        let series = |f: fn(&CaseResult) -> &Vec<[f64; 2]>| -> Vec<Series> {
            CASES
                .iter()
                .zip(&cases)
                .map(|(c, r)| Series {
                    name: c.name.into(),
                    style: SeriesStyle::Line,
                    points: f(r).clone(),
                })
                .collect()
        };
        Ok(Outcome::Completed(Output {
            findings,
            claims: vec![claim],
            plots: vec![
                Plot {
                    id: "dirty".into(),
                    title: "Dirty: case 1 vs case 2".into(),
                    x: Axis::new("time", "s", Scale::Linear),
                    y: Axis::new("Dirty", "MiB", Scale::Linear),
                    series: series(|r| &r.dirty),
                    markers: vec![],
                    x_labels: vec![],
                },
                Plot {
                    id: "device".into(),
                    title: "Device writes: case 1 vs case 2".into(),
                    x: Axis::new("time", "s", Scale::Linear),
                    y: Axis::new("writes", "MiB/s", Scale::Linear),
                    series: series(|r| &r.util),
                    markers: vec![],
                    x_labels: vec![],
                },
            ],
            notes: vec![format!(
                "writer {}/s for {secs} s per case on a testbed capped at {}/s; limits scaled from the author's 8 GiB to {}",
                human_bytes(rate),
                human_bytes(bw),
                human_bytes(SCALED_MEMORY)
            )],
            ..Default::default()
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn episodes_and_stretches() {
        let r = [0.0, 5.0, 6.0, 0.0, 0.0, 7.0, 0.0, 9.0, 9.0, 9.0];
        let (n, longest) = episodes(&r, 0.1, 1.0);
        assert_eq!(n, 3);
        assert!((longest - 0.3).abs() < 1e-9);
    }
}
