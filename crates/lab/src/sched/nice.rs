//! `sched.nice`: two CPU-bound processes on one CPU, at nice 0 and nice k; the CPU
//! share each got (from its own run time) vs the share the kernel's weight table
//! predicts, w(0) / (w(0) + w(k)); and, since EEVDF shows nice as burst length,
//! each one's median slice.

use oslab_model::{Axis, Claim, Plot, Scale, Series, SeriesStyle, Verdict};
use oslab_sys::spinners::{self, Spec};

use super::analysis::{sched_fields, stats, weight};
use super::slices::GAP_NS;
use crate::experiment::{Context, Experiment, LabError, Meta, Needs, Outcome, Output, finding};

pub struct SchedNice;

static META: Meta = Meta {
    id: "sched.nice",
    title: "Nice: CPU shares of nice 0 vs nice k on one CPU",
    section: "6",
    summary: "measured share vs the weight table's prediction for k = 1, 5, 10, 19; slice lengths per nice",
    needs: Needs {
        root: false,
        min_cpus: 1,
        free_disk_bytes: 0,
    },
    quick_s: 4.0,
    full_s: 13.0,
    internal: false,
};

/// The share of the nice-0 task the weight table predicts against nice k.
pub fn predicted_share(k: i32) -> f64 {
    let (a, b) = (weight(0) as f64, weight(k) as f64);
    a / (a + b)
}

impl Experiment for SchedNice {
    fn meta(&self) -> &Meta {
        &META
    }

    fn run(&self, ctx: &mut Context) -> Result<Outcome, LabError> {
        let quick = ctx.config.quick();
        let secs = if quick { 1.0 } else { 3.0 };
        let ks: Vec<i32> = if quick {
            vec![5, 10]
        } else {
            vec![1, 5, 10, 19]
        };
        let cpu = oslab_sys::process::affinity()
            .ok()
            .and_then(|v| v.first().copied())
            .unwrap_or(0);
        let mut findings = Vec::new();
        let mut measured = Vec::new();
        let mut predicted = Vec::new();
        let mut worst: f64 = 0.0;
        let mut observed = Vec::new();
        for (i, &k) in ks.iter().enumerate() {
            let specs = [
                Spec {
                    cpu: Some(cpu),
                    nice: 0,
                    work_ns: 0,
                },
                Spec {
                    cpu: Some(cpu),
                    nice: k,
                    work_ns: 0,
                },
            ];
            let mut weights = (None, None);
            let t = spinners::run(&specs, (secs * 1e9) as u64, GAP_NS, 200_000, |pids| {
                std::thread::sleep(std::time::Duration::from_millis(300));
                let w = |p: u32| {
                    sched_fields(
                        &std::fs::read_to_string(format!("/proc/{p}/sched")).unwrap_or_default(),
                    )
                    .1
                };
                weights = (w(pids[0]), w(pids[1]));
            })
            .map_err(|e| LabError::Failed(e.to_string()))?;
            let (s0, sk) = (stats(&t[0]), stats(&t[1]));
            let share = s0.share / (s0.share + sk.share).max(1e-12);
            let pred = predicted_share(k);
            worst = worst.max((share - pred).abs());
            measured.push([k as f64, share]);
            predicted.push([k as f64, pred]);
            observed.push(format!("k={k}: {share:.3} vs {pred:.3}"));
            findings.push(finding(
                &format!("share.nice0_vs_{k}"),
                share,
                "fraction",
                format!(
                    "nice 0 got {share:.3} of the CPU, the weights {} / {} predict {pred:.3} (error {:+.3}); slices: nice 0 {:.2} ms, nice {k} {:.2} ms{}",
                    weight(0),
                    weight(k),
                    share - pred,
                    s0.slice_p50_ms,
                    sk.slice_p50_ms,
                    match weights {
                        (Some(a), Some(b)) => format!("; se.load.weight {a} / {b}"),
                        _ => String::new(),
                    }
                ),
            ));
            ctx.progress.fraction((i + 1) as f64 / ks.len() as f64);
        }
        let holds = worst <= 0.05;
        Ok(Outcome::Completed(Output {
            findings,
            claims: vec![Claim {
                id: "nice-shares-follow-weights".into(),
                text: "Nice values divide the CPU by the kernel's weights (about 1.25x per step)"
                    .into(),
                source: "material 6 (seed 003); kernel/sched/core.c sched_prio_to_weight".into(),
                expectation: "the nice-0 share within 0.05 of w(0) / (w(0) + w(k))".into(),
                observed: observed.join("; "),
                verdict: if holds {
                    Verdict::Holds
                } else {
                    Verdict::Differs
                },
                why: if holds {
                    "the scheduler's virtual time advances in inverse proportion to the weight"
                        .into()
                } else {
                    "see the figures".into()
                },
            }],
            plots: vec![Plot {
                id: "nice".into(),
                title: "share of the nice-0 process vs the other's nice".into(),
                x: Axis::new("nice of the other", "", Scale::Linear),
                y: Axis::new("share of nice 0", "", Scale::Linear),
                series: vec![
                    Series {
                        name: "measured".into(),
                        style: SeriesStyle::Points,
                        points: measured,
                    },
                    Series {
                        name: "weights".into(),
                        style: SeriesStyle::LinePoints,
                        points: predicted,
                    },
                ],
                markers: vec![],
                x_labels: vec![],
            }],
            notes: vec![format!(
                "two processes forked from oslab, pinned to CPU {cpu}, {secs} s each k; shares from their own run time"
            )],
            ..Default::default()
        }))
    }
}
