//! Two sets of results side by side: every figure both measured, the ratio, and
//! whether the difference is beyond noise.
//!
//! The noise call, in order of preference:
//! 1. raw samples on both sides, enough of them that the test could reach the level:
//!    a permutation test on the difference of medians, beyond noise when p < 0.01
//!    (strict, because a comparison tests dozens of figures at once);
//! 2. otherwise both 95 % confidence intervals of the median: beyond noise when they
//!    do not overlap;
//! 3. a derived value whose experiment gives the interval it lies in (a cache edge
//!    between two sampled sizes): beyond noise when the intervals do not overlap;
//! 4. otherwise (a single derived value) no call.
//!
//! A difference smaller than [`MIN_EFFECT`] of A is called within noise whatever the
//! test says: with hundreds of samples a test finds 0.1 % shifts "significant", but
//! separate runs of one experiment on one shared machine already differ by up to
//! 5 % (run-to-run CV of 3-5 % measured for cpu.ctxsw), which samples taken inside
//! one run cannot show. The rule is stated once, [`noise_rule`], and the table,
//! the page's badges and their notes all say it in its words
//! ([`FigureComparison::label`]).

use oslab_stats::permutation::median_difference;
use serde::{Deserialize, Serialize};

use crate::{ExperimentResult, Status, Verdict};

/// Significance level of the permutation test.
pub const ALPHA: f64 = 0.01;
/// Smallest relative difference of medians ever called beyond noise: the top of
/// the 3-5 % that separate runs of one experiment on one machine differ by.
pub const MIN_EFFECT: f64 = 0.05;

/// The one noise rule, in words, as every output states it.
pub fn noise_rule() -> String {
    format!(
        "beyond noise means p < {ALPHA} in a permutation test on the raw samples (with too few samples, 95 % intervals that do not overlap; for a figure known only to within a range, such as a cache edge, ranges that do not overlap) and medians at least {:.0} % apart, since separate runs of one experiment on one machine already differ by 3-5 % (run-to-run CV measured for cpu.ctxsw)",
        MIN_EFFECT * 100.0
    )
}
/// Smallest relative difference of medians never called within noise: when the
/// samples do not separate a difference this large, they are too few or too
/// scattered to say there is no change ("can't tell").
pub const UNDECIDED_EFFECT: f64 = 0.25;
const SHUFFLES: usize = 5000;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Noise {
    /// The two values differ by more than the spread explains.
    Beyond,
    /// The difference is within the spread.
    Within,
    /// No spread known on at least one side.
    Unknown,
    /// Spread known but too wide to tell: the test did not separate the two,
    /// yet one median lies outside the other's 95 % interval (few or scattered
    /// samples), so "no change" would be a guess.
    Undecided,
}

impl Noise {
    pub fn label(self) -> &'static str {
        match self {
            Noise::Beyond => "beyond noise",
            Noise::Within => "within noise",
            Noise::Unknown => "no spread known",
            Noise::Undecided => "can't tell",
        }
    }
}

/// Where one side of a comparison comes from.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Side {
    /// What the user named: a run id, a file, a machine.
    pub label: String,
    pub hostname: String,
    pub cpu_model: String,
    pub kernel: String,
    /// Earliest start among its results (RFC 3339).
    pub started_at: String,
    /// Largest steal share seen in any of its results.
    pub max_steal_fraction: f64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FigureComparison {
    pub experiment: String,
    /// `measurement` or `finding`.
    pub kind: String,
    pub name: String,
    pub unit: String,
    pub a: f64,
    pub b: f64,
    /// b / a; `None` when a is zero.
    pub ratio: Option<f64>,
    /// The 95 % interval of each median; for a finding, the interval its
    /// experiment knows it to lie in (`method` says which).
    pub a_ci95: Option<[f64; 2]>,
    pub b_ci95: Option<[f64; 2]>,
    pub p_value: Option<f64>,
    /// How the noise call was made, in words.
    pub method: String,
    pub noise: Noise,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ClaimComparison {
    pub experiment: String,
    pub id: String,
    pub text: String,
    pub a: Verdict,
    pub b: Verdict,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Comparison {
    pub a: Side,
    pub b: Side,
    pub figures: Vec<FigureComparison>,
    pub claims: Vec<ClaimComparison>,
    /// Experiments completed on one side only.
    pub only_a: Vec<String>,
    pub only_b: Vec<String>,
    /// Where the two sides were not measured alike (mode, units, parameters).
    pub caveats: Vec<String>,
    /// Both sides are the same results (one run or file named twice).
    #[serde(default)]
    pub same_results: bool,
}

impl Comparison {
    pub fn beyond_noise(&self) -> usize {
        self.figures
            .iter()
            .filter(|f| f.noise == Noise::Beyond)
            .count()
    }

    /// Figures whose samples could not tell a difference from noise.
    pub fn undecided(&self) -> usize {
        self.figures
            .iter()
            .filter(|f| f.noise == Noise::Undecided)
            .count()
    }

    /// Figures the test calls significant that the [`MIN_EFFECT`] floor counts as
    /// noise.
    pub fn below_floor(&self) -> usize {
        self.figures.iter().filter(|f| f.below_floor()).count()
    }
}

impl FigureComparison {
    /// Significant by the test, but the medians differ by less than [`MIN_EFFECT`].
    pub fn below_floor(&self) -> bool {
        self.noise == Noise::Within && self.p_value.is_some_and(|p| p < ALPHA)
    }

    /// The noise call in words, as the table and the page's badge show it: a
    /// difference the test separates but the floor does not says so.
    pub fn label(&self) -> String {
        if self.below_floor() {
            format!("{} (< {:.0} %)", self.noise.label(), MIN_EFFECT * 100.0)
        } else {
            self.noise.label().to_string()
        }
    }
}

/// Describes one side from its results.
pub fn side(label: &str, results: &[ExperimentResult]) -> Side {
    let first = results.first();
    let m = first.map(|r| &r.environment.machine);
    Side {
        label: label.to_string(),
        hostname: m.map_or_else(String::new, |m| m.hostname.clone()),
        cpu_model: m.map_or_else(String::new, |m| m.cpu.model.clone()),
        kernel: m.map_or_else(String::new, |m| m.kernel.release.clone()),
        started_at: results
            .iter()
            .map(|r| r.started_at.clone())
            .min()
            .unwrap_or_default(),
        max_steal_fraction: results
            .iter()
            .map(|r| r.environment.load.steal_fraction)
            .fold(0.0, f64::max),
    }
}

fn completed(results: &[ExperimentResult]) -> Vec<&ExperimentResult> {
    // The latest result of each experiment wins when one side ran it twice.
    let mut out: Vec<&ExperimentResult> = Vec::new();
    for r in results
        .iter()
        .filter(|r| matches!(r.status, Status::Completed))
    {
        match out.iter_mut().find(|o| o.experiment == r.experiment) {
            Some(slot) => *slot = r,
            None => out.push(r),
        }
    }
    out
}

fn ratio(a: f64, b: f64) -> Option<f64> {
    (a != 0.0 && a.is_finite() && b.is_finite()).then(|| b / a)
}

fn ci(m: &crate::Measurement) -> Option<[f64; 2]> {
    m.summary
        .as_ref()
        .and_then(|s| s.ci95.as_ref())
        .map(|c| [c.low, c.high])
}

fn compare_measurement(
    experiment: &str,
    ma: &crate::Measurement,
    mb: &crate::Measurement,
    seed: u64,
) -> Option<FigureComparison> {
    let (sa, sb) = (ma.summary.as_ref()?, mb.summary.as_ref()?);
    let (a_ci, b_ci) = (ci(ma), ci(mb));
    let test = median_difference(&ma.samples, &mb.samples, SHUFFLES, seed)
        .filter(|t| t.min_p_value < ALPHA);
    let (noise, p_value, method) = match (test, a_ci, b_ci) {
        (Some(t), _, _) => (
            if t.p_value < ALPHA {
                Noise::Beyond
            } else {
                Noise::Within
            },
            Some(t.p_value),
            if t.exact {
                format!("permutation test, all {} splits", t.permutations)
            } else {
                format!("permutation test, {} shuffles", t.permutations)
            },
        ),
        (None, Some(x), Some(y)) => (
            if x[1] < y[0] || y[1] < x[0] {
                Noise::Beyond
            } else {
                Noise::Within
            },
            None,
            "95% CIs of the medians (too few samples to test)".to_string(),
        ),
        _ => (
            Noise::Unknown,
            None,
            format!(
                "too few samples to test or to give intervals (fewer than {} a side)",
                oslab_stats::summary::MIN_CI_SAMPLES
            ),
        ),
    };
    let (noise, method) = refine(
        noise,
        method,
        (sa.median, sb.median),
        (a_ci, b_ci),
        (ma.samples.len(), mb.samples.len()),
    );
    Some(FigureComparison {
        experiment: experiment.to_string(),
        kind: "measurement".into(),
        name: ma.name.clone(),
        unit: ma.unit.clone(),
        a: sa.median,
        b: sb.median,
        ratio: ratio(sa.median, sb.median),
        a_ci95: a_ci,
        b_ci95: b_ci,
        p_value,
        method,
        noise,
    })
}

/// The test's call, refined: a large difference the samples do not separate is
/// "can't tell", not within noise; a separated one below [`MIN_EFFECT`] is within
/// noise. The method gains n on each side.
fn refine(
    noise: Noise,
    method: String,
    (a, b): (f64, f64),
    (a_ci, b_ci): (Option<[f64; 2]>, Option<[f64; 2]>),
    (na, nb): (usize, usize),
) -> (Noise, String) {
    let effect = if a == b {
        0.0
    } else if a != 0.0 {
        ((b - a) / a).abs()
    } else {
        f64::INFINITY
    };
    // a gap under the floor that separate runs show is noise either way
    let too_far = effect >= MIN_EFFECT && !inside_each_other(a, b, a_ci, b_ci);
    let n = format!("n = {na} and {nb}");
    if noise == Noise::Within && (too_far || effect >= UNDECIDED_EFFECT) {
        let why = if too_far {
            "a median lies outside the other side's 95 % interval".to_string()
        } else if effect.is_finite() {
            format!("the medians differ by {:.0} %", effect * 100.0)
        } else {
            "A's median is zero and B's is not".to_string()
        };
        return (
            Noise::Undecided,
            format!("{method}, {n}: not separated, yet {why}; more samples could tell"),
        );
    }
    if noise == Noise::Beyond && effect < MIN_EFFECT {
        return (
            Noise::Within,
            format!(
                "{method}, {n}; the {:.1} % difference is below the {:.0} % that separate runs differ by",
                effect * 100.0,
                MIN_EFFECT * 100.0
            ),
        );
    }
    (noise, format!("{method}, {n}"))
}

/// Whether each median lies inside the other side's 95 % interval (true when an
/// interval is missing: nothing says otherwise).
fn inside_each_other(a: f64, b: f64, a_ci: Option<[f64; 2]>, b_ci: Option<[f64; 2]>) -> bool {
    let inside = |x: f64, c: Option<[f64; 2]>| c.is_none_or(|[lo, hi]| lo <= x && x <= hi);
    inside(b, a_ci) && inside(a, b_ci)
}

/// Compares every figure that both sides measured. `seed` fixes the shuffles.
pub fn compare(
    a: Side,
    ra: &[ExperimentResult],
    b: Side,
    rb: &[ExperimentResult],
    seed: u64,
) -> Comparison {
    let (ca, cb) = (completed(ra), completed(rb));
    let mut figures = Vec::new();
    let mut claims = Vec::new();
    let mut caveats = Vec::new();
    for xa in &ca {
        let Some(xb) = cb.iter().find(|x| x.experiment == xa.experiment) else {
            continue;
        };
        caveats.extend(run_caveats(xa, xb));
        figures.extend(measurement_figures(xa, xb, seed, &mut caveats));
        figures.extend(finding_figures(xa, xb, &mut caveats));
        caveats.extend(one_sided_figures(xa, xb));
        claims.extend(claim_pairs(xa, xb));
    }
    if !a.hostname.is_empty()
        && (a.hostname.as_str(), a.cpu_model.as_str(), a.kernel.as_str())
            == (b.hostname.as_str(), b.cpu_model.as_str(), b.kernel.as_str())
    {
        caveats.push(
            "both sides ran on the same machine and kernel: a difference beyond noise here is drift between the runs (host clock, neighbours, steal), which the samples inside one run cannot show; repeat each side before blaming a change"
                .to_string(),
        );
    }
    let same_results = !ca.is_empty() && ca == cb;
    let names = |x: &[&ExperimentResult], y: &[&ExperimentResult]| -> Vec<String> {
        x.iter()
            .filter(|r| !y.iter().any(|o| o.experiment == r.experiment))
            .map(|r| r.experiment.clone())
            .collect()
    };
    Comparison {
        only_a: names(&ca, &cb),
        only_b: names(&cb, &ca),
        a,
        b,
        figures,
        claims,
        caveats,
        same_results,
    }
}

/// What makes two runs of one experiment less comparable: a different mode, or
/// parameters that differ.
fn run_caveats(xa: &ExperimentResult, xb: &ExperimentResult) -> Vec<String> {
    let e = xa.experiment.as_str();
    let mut caveats = Vec::new();
    if xa.mode != xb.mode {
        caveats.push(format!(
            "{e}: one side ran --quick and the other the full mode; sample counts and sweeps differ"
        ));
    }
    let differing: Vec<&String> = xa
        .params
        .iter()
        .filter(|(k, v)| xb.params.get(*k).is_some_and(|w| w != *v))
        .map(|(k, _)| k)
        .collect();
    if !differing.is_empty() && xa.mode == xb.mode {
        caveats.push(format!(
            "{e}: parameters differ ({})",
            differing
                .iter()
                .map(|s| s.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    caveats
}

/// The measurements both runs made, compared; those in different units are left
/// out with a caveat.
fn measurement_figures(
    xa: &ExperimentResult,
    xb: &ExperimentResult,
    seed: u64,
    caveats: &mut Vec<String>,
) -> Vec<FigureComparison> {
    let e = xa.experiment.as_str();
    let mut figures = Vec::new();
    for (i, ma) in xa.measurements.iter().enumerate() {
        let Some(mb) = xb.measurement(&ma.name) else {
            continue;
        };
        if ma.unit != mb.unit {
            caveats.push(format!(
                "{e} {}: units differ ({} vs {}), not compared",
                ma.name, ma.unit, mb.unit
            ));
            continue;
        }
        if let Some(f) = compare_measurement(e, ma, mb, seed.wrapping_add(i as u64)) {
            figures.push(f);
        }
    }
    figures
}

/// How many names of figures one side lacks a caveat lists (a quick run against a
/// full one can lack dozens).
const ONE_SIDED_SHOWN: usize = 8;

/// The figures of an experiment that only one side has (a size a run chose from
/// its machine's cache, a level one run found): said, since they are not compared.
fn one_sided_figures(xa: &ExperimentResult, xb: &ExperimentResult) -> Option<String> {
    // (is a finding, name): a measurement and a finding may share a name
    let names = |x: &ExperimentResult| -> Vec<(bool, String)> {
        x.measurements
            .iter()
            .map(|m| (false, m.name.clone()))
            .chain(x.findings.iter().map(|f| (true, f.name.clone())))
            .collect()
    };
    let (na, nb) = (names(xa), names(xb));
    let only = |x: &[(bool, String)], y: &[(bool, String)]| -> Vec<String> {
        x.iter()
            .filter(|n| !y.contains(n))
            .map(|(_, n)| n.clone())
            .collect()
    };
    let (oa, ob) = (only(&na, &nb), only(&nb, &na));
    let side = |label: &str, names: &[String]| {
        (!names.is_empty()).then(|| {
            let shown = names.len().min(ONE_SIDED_SHOWN);
            let more = match names.len() - shown {
                0 => String::new(),
                n => format!(" and {n} more"),
            };
            format!("{}{more} only in {label}", names[..shown].join(", "))
        })
    };
    let said: Vec<String> = [side("A", &oa), side("B", &ob)]
        .into_iter()
        .flatten()
        .collect();
    (!said.is_empty()).then(|| {
        format!(
            "{}: not compared, each measured or found by one side only: {}",
            xa.experiment,
            said.join("; ")
        )
    })
}

/// The findings both runs derived, in the same unit.
fn finding_figures(
    xa: &ExperimentResult,
    xb: &ExperimentResult,
    caveats: &mut Vec<String>,
) -> Vec<FigureComparison> {
    let e = xa.experiment.as_str();
    let mut figures = Vec::new();
    for fa in &xa.findings {
        let Some(fb) = xb.finding(&fa.name) else {
            continue;
        };
        if fa.unit != fb.unit {
            caveats.push(format!(
                "{e} {}: units differ ({} vs {}), not compared",
                fa.name, fa.unit, fb.unit
            ));
            continue;
        }
        let (noise, method) = match (fa.range, fb.range) {
            (Some([la, ha]), Some([lb, hb])) => (
                if ha < lb || hb < la {
                    Noise::Beyond
                } else {
                    Noise::Within
                },
                "the interval each run knows the value in (for an edge: the sampled sizes around it); beyond noise when they do not overlap".to_string(),
            ),
            _ => (Noise::Unknown, "single derived value".to_string()),
        };
        figures.push(FigureComparison {
            experiment: e.to_string(),
            kind: "finding".into(),
            name: fa.name.clone(),
            unit: fa.unit.clone(),
            a: fa.value,
            b: fb.value,
            ratio: ratio(fa.value, fb.value),
            a_ci95: fa.range,
            b_ci95: fb.range,
            p_value: None,
            method,
            noise,
        });
    }
    figures
}

/// The claims both runs judged, verdict beside verdict.
fn claim_pairs(xa: &ExperimentResult, xb: &ExperimentResult) -> Vec<ClaimComparison> {
    let e = xa.experiment.as_str();
    let mut claims = Vec::new();
    for c in &xa.claims {
        if let Some(d) = xb.claim(&c.id) {
            claims.push(ClaimComparison {
                experiment: e.to_string(),
                id: c.id.clone(),
                text: c.text.clone(),
                a: c.verdict,
                b: d.verdict,
            });
        }
    }
    claims
}
