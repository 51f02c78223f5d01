//! `sched.scaling` (with the book's multiload): N processes each with the same fixed
//! amount of CPU work (its own run time, not a loop count: the host's speed varies),
//! all on CPU 0 and then free on all CPUs. Per N: each process's real (turnaround),
//! user and sys time, and the throughput (processes finished per second). On one CPU
//! real grows as N x alone; on all CPUs it stays flat up to the CPU count, after
//! which only turnaround grows and throughput stays.

use oslab_model::{Axis, Claim, Plot, Scale, Series, SeriesStyle, Verdict};
use oslab_sys::spinners::{self, Spec};

use super::slices::GAP_NS;
use crate::experiment::{Context, Experiment, LabError, Meta, Needs, Outcome, Output, finding};

/// `sched.scaling` (N = 1..2x CPUs and 8, with throughput) or `sched.multiload`
/// (the book's multiload: N = 1..2x CPUs, real/user/sys of every process).
pub struct SchedScaling {
    pub multiload: bool,
}

static META_MULTILOAD: Meta = Meta {
    id: "sched.multiload",
    title: "Multiload: N CPU-bound processes on CPU 0, then free on all CPUs",
    section: "6",
    summary: "real, user and sys time of each of N processes with equal CPU work, one CPU vs all CPUs",
    needs: Needs {
        root: false,
        min_cpus: 1,
        free_disk_bytes: 0,
    },
    quick_s: 4.0,
    full_s: 20.0,
    internal: false,
};

static META: Meta = Meta {
    id: "sched.scaling",
    title: "Turnaround and throughput vs number of processes, one CPU and all CPUs",
    section: "6",
    summary: "N processes with equal CPU work: real/user/sys per process, turnaround and throughput vs N",
    needs: Needs {
        root: false,
        min_cpus: 1,
        free_disk_bytes: 0,
    },
    quick_s: 8.0,
    full_s: 40.0,
    internal: false,
};

/// One N's outcome: mean and max turnaround (s), mean user and sys (s), throughput.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Point {
    pub n: usize,
    pub real_mean: f64,
    pub real_max: f64,
    pub user_mean: f64,
    pub sys_mean: f64,
    pub throughput: f64,
}

pub fn point(n: usize, go_to_end: &[f64], user: &[f64], sys: &[f64]) -> Point {
    let mean = |v: &[f64]| oslab_stats::mean(v).unwrap_or(f64::NAN);
    let max = go_to_end.iter().copied().fold(0.0, f64::max);
    Point {
        n,
        real_mean: mean(go_to_end),
        real_max: max,
        user_mean: mean(user),
        sys_mean: mean(sys),
        throughput: if max > 0.0 { n as f64 / max } else { f64::NAN },
    }
}

impl Experiment for SchedScaling {
    fn meta(&self) -> &Meta {
        if self.multiload {
            &META_MULTILOAD
        } else {
            &META
        }
    }

    fn run(&self, ctx: &mut Context) -> Result<Outcome, LabError> {
        let quick = ctx.config.quick();
        let cpus = ctx.machine.cpu.cpus.len().max(1);
        let work = if quick { 0.1 } else { 0.5 };
        let mut ns: Vec<usize> = (1..=2 * cpus).collect();
        if !self.multiload && !ns.contains(&8) {
            ns.push(8);
        }
        let cpu0 = oslab_sys::process::affinity()
            .ok()
            .and_then(|v| v.first().copied())
            .unwrap_or(0);
        let mut findings = Vec::new();
        let mut curves: Vec<(&str, Vec<Point>)> = Vec::new();
        let total = ns.len() * 2;
        let mut done = 0;
        for (label, pinned) in [("one CPU", true), ("all CPUs", false)] {
            let mut pts = Vec::new();
            for &n in &ns {
                ctx.progress.stage(&format!("{label}, {n}"));
                let specs = vec![
                    Spec {
                        cpu: pinned.then_some(cpu0),
                        nice: 0,
                        work_ns: (work * 1e9) as u64
                    };
                    n
                ];
                let t = spinners::run(
                    &specs,
                    (work * 1e9) as u64 * (n as u64 + 2) * 4,
                    GAP_NS,
                    100_000,
                    |_| {},
                )
                .map_err(|e| LabError::Failed(e.to_string()))?;
                let go = t.iter().map(|x| x.start_ns).min().unwrap_or(0);
                let real: Vec<f64> = t.iter().map(|x| (x.end_ns - go) as f64 / 1e9).collect();
                let user: Vec<f64> = t.iter().map(|x| x.user_ns as f64 / 1e9).collect();
                let sys: Vec<f64> = t.iter().map(|x| x.sys_ns as f64 / 1e9).collect();
                let p = point(n, &real, &user, &sys);
                if self.multiload {
                    for (i, ((r, u), y)) in real.iter().zip(&user).zip(&sys).enumerate() {
                        findings.push(finding(
                            &format!(
                                "{}.n{n}.p{}",
                                if pinned { "one_cpu" } else { "all_cpus" },
                                i + 1
                            ),
                            *r,
                            "s",
                            format!(
                                "process {} of {n}: real {r:.3} s, user {u:.3} s, sys {y:.3} s",
                                i + 1
                            ),
                        ));
                    }
                }
                findings.push(finding(
                    &format!("{}.n{n}", if pinned { "one_cpu" } else { "all_cpus" }),
                    p.real_mean,
                    "s",
                    format!(
                        "real mean {:.3} s, max {:.3} s; user {:.3} s, sys {:.3} s per process; throughput {:.2} processes/s",
                        p.real_mean, p.real_max, p.user_mean, p.sys_mean, p.throughput
                    ),
                ));
                pts.push(p);
                done += 1;
                ctx.progress.fraction(done as f64 / total as f64);
            }
            curves.push((label, pts));
        }
        let one = &curves[0].1;
        let all = &curves[1].1;
        let alone = one[0].real_mean;
        let grows = one
            .iter()
            .all(|p| (p.real_mean / (alone * p.n as f64) - 1.0).abs() < 0.35 || p.n == 1);
        let flat = all
            .iter()
            .filter(|p| p.n <= cpus)
            .all(|p| p.real_mean < 1.35 * all[0].real_mean);
        let tput_at = |n: usize| all.iter().find(|p| p.n == n).map(|p| p.throughput);
        let tput_flat = match (tput_at(cpus), all.last()) {
            (Some(a), Some(b)) => b.throughput > 0.7 * a,
            _ => false,
        };
        let holds = grows && flat && tput_flat;
        let series = |name: String, pts: &[Point], f: fn(&Point) -> f64| Series {
            name,
            style: SeriesStyle::LinePoints,
            points: pts.iter().map(|p| [p.n as f64, f(p)]).collect(),
        };
        Ok(Outcome::Completed(Output {
            findings,
            claims: vec![Claim {
                id: "past-the-cpus-only-turnaround-grows".into(),
                text: "On one CPU real time grows as N x alone; on all CPUs it stays flat up to the CPU count, and past it only turnaround grows while throughput stays".into(),
                source: "material 6 (seed 003: multiload and the scaling curves)".into(),
                expectation: format!("one CPU: real within 35 % of N x {alone:.3} s; all CPUs: flat (within 35 %) up to {cpus}, throughput at the largest N at least 70 % of that at {cpus}"),
                observed: format!(
                    "one CPU real: {}; all CPUs real: {}; throughput: {}",
                    one.iter().map(|p| format!("{}:{:.2}", p.n, p.real_mean)).collect::<Vec<_>>().join(" "),
                    all.iter().map(|p| format!("{}:{:.2}", p.n, p.real_mean)).collect::<Vec<_>>().join(" "),
                    all.iter().map(|p| format!("{}:{:.1}", p.n, p.throughput)).collect::<Vec<_>>().join(" ")
                ),
                verdict: if holds { Verdict::Holds } else { Verdict::Differs },
                why: if holds {
                    "the scheduler time-slices runnable processes fairly; with free CPUs each gets one".into()
                } else {
                    "see the figures (steal time from the host counts as real time)".into()
                },
            }],
            plots: vec![
                Plot {
                    id: "turnaround".into(),
                    title: "mean turnaround vs processes".into(),
                    x: Axis::new("processes", "", Scale::Linear),
                    y: Axis::new("turnaround", "s", Scale::Linear),
                    series: curves.iter().map(|(l, p)| series(l.to_string(), p, |x| x.real_mean)).collect(),
                    markers: vec![],
                    x_labels: vec![],
                },
                Plot {
                    id: "throughput".into(),
                    title: "throughput vs processes".into(),
                    x: Axis::new("processes", "", Scale::Linear),
                    y: Axis::new("throughput", "processes/s", Scale::Linear),
                    series: curves.iter().map(|(l, p)| series(l.to_string(), p, |x| x.throughput)).collect(),
                    markers: vec![],
                    x_labels: vec![],
                },
            ],
            notes: vec![format!("each process does {work} s of its own run time (gaps over {} us are not counted as work); real is from the common start to its end", GAP_NS / 1000)],
            ..Default::default()
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_point_by_hand() {
        let p = point(2, &[1.0, 2.0], &[0.5, 0.5], &[0.0, 0.1]);
        assert_eq!((p.real_mean, p.real_max, p.throughput), (1.5, 2.0, 1.0));
        assert!((p.sys_mean - 0.05).abs() < 1e-12);
    }
}
