//! The whole pipeline on the null experiment's known samples: statistics, claims and
//! every output format, compared with reviewed snapshots.

use std::path::Path;

use oslab_harness::rawfile::RawFile;
use oslab_harness::runner;
use oslab_harness::{AnyExperiment, Context, NoProgress, RunConfig};
use oslab_model::{Environment, ExperimentResult, LoadRecord, Mode, ResultSet, SCHEMA_VERSION};
use oslab_sys::fsread::Root;
use oslab_sys::machine::{self, LiveProbes};

fn null_result() -> ExperimentResult {
    let root =
        Root::at(Path::new(env!("CARGO_MANIFEST_DIR")).join("../sys/tests/fixtures/smt8-3level"));
    let probes = LiveProbes {
        cpuid_hypervisor: None,
        is_root: false,
        scratch_dir: "/tmp".into(),
        scratch_dev: None,
        scratch_free_bytes: Some(1 << 30),
        page_bytes: 4096,
    };
    let machine = machine::collect(&root, &probes);
    let cfg = RunConfig {
        mode: Mode::Quick,
        repeat: None,
        seed: 7,
        scratch_dir: "/tmp".into(),
        sets: Default::default(),
        oslab_exe: env!("CARGO_BIN_EXE_oslab").into(),
    };
    let exp = oslab_lab::null::Null;
    let mut ctx = Context {
        experiment: "null",
        config: &cfg,
        machine: &machine,
        progress: &NoProgress,
    };
    let (recorded, skipped) = exp.plan_and_measure(&mut ctx).unwrap();
    let environment = Environment {
        oslab_version: "test".into(),
        machine: machine.clone(),
        timer: "test clock".into(),
        load: LoadRecord {
            loadavg_before: [0.1, 0.2, 0.3],
            loadavg_after: [0.2, 0.2, 0.3],
            cpu_busy_fraction: 0.125,
            steal_fraction: 0.0,
            warning: None,
            ..Default::default()
        },
        seed: 7,
    };
    // judged from its raw file, as every run and `oslab judge` are
    let file = RawFile {
        oslab_raw: oslab_harness::rawfile::RAW_VERSION,
        oslab_version: "test".into(),
        experiment: "null".into(),
        mode: cfg.mode,
        started_unix_s: 1_795_342_800.0,
        duration_s: 0.5,
        environment,
        skipped,
        recorded,
    };
    runner::judge_file(&exp, &file)
}

#[test]
fn statistics_of_the_known_samples() {
    let r = null_result();
    let m = r.measurement("latency").unwrap();
    let s = m.summary.as_ref().unwrap();
    assert_eq!(m.samples, oslab_lab::null::SAMPLES.to_vec());
    assert_eq!(s.n, 10);
    assert_eq!(s.median, 100.0);
    assert_eq!((s.min, s.max), (97.0, 150.0));
    assert_eq!(s.outliers, vec![8], "150 ns is the one outlier");
    let ci = s.ci95.as_ref().unwrap();
    assert!(ci.low <= 100.0 && ci.high >= 100.0);
    assert_eq!(r.started_at, "2026-11-22T10:20:00Z");
    assert_eq!(r.claims.len(), 4);
}

#[test]
fn terminal_table() {
    insta::assert_snapshot!(oslab_report::table::render_result(&null_result(), None));
}

#[test]
fn json_round_trips_and_matches() {
    let set = ResultSet {
        schema_version: SCHEMA_VERSION,
        oslab_version: "test".into(),
        command: "oslab run null".into(),
        results: vec![null_result()],
    };
    let text = oslab_report::json::to_json(&set);
    let back = oslab_report::json::from_json(&text).unwrap();
    assert_eq!(back, set);
    // The machine section is checked by the fixture tests; keep the snapshot readable.
    let mut v: serde_json::Value = serde_json::from_str(&text).unwrap();
    v["results"][0]["environment"]["machine"] = serde_json::json!("<machine: smt8-3level fixture>");
    insta::assert_snapshot!(serde_json::to_string_pretty(&v).unwrap());
}

#[test]
fn csv_files() {
    let mut r = null_result();
    r.findings
        .push(oslab_harness::finding("edge.L2", 1.5e6, "bytes", "test").within(1.0e6, 2.0e6));
    let files = oslab_report::csv_out::files(&r);
    let names: Vec<&str> = files.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(
        names,
        vec![
            "null.samples.csv",
            "null.summary.csv",
            "null.findings.csv",
            "null.claims.csv",
            "null.series.csv"
        ]
    );
    let all: String = files
        .iter()
        .map(|(n, b)| format!("--- {n}\n{}", String::from_utf8_lossy(b)))
        .collect();
    insta::assert_snapshot!(all);
}

#[test]
fn svg_plot() {
    let r = null_result();
    let svg = oslab_report::svg::render(&r.plots[0]);
    assert!(svg.starts_with("<svg") && svg.trim_end().ends_with("</svg>"));
    assert_eq!(svg.matches("<circle").count(), 10, "one point per sample");
    assert!(svg.contains("L1d 32 KiB"), "the marker is labelled");
    insta::assert_snapshot!(svg);
}

/// The null result with every sample of `latency` passed through `f`, and its
/// summary recomputed as the runner would.
fn reshaped(f: impl Fn(&[f64]) -> Vec<f64>) -> ExperimentResult {
    let mut r = null_result();
    let m = r
        .measurements
        .iter_mut()
        .find(|m| m.name == "latency")
        .unwrap();
    m.samples = f(&m.samples);
    m.summary = oslab_stats::summarize(&m.samples, 7);
    r
}

fn latency_figure(c: &oslab_model::compare::Comparison) -> &oslab_model::compare::FigureComparison {
    c.figures
        .iter()
        .find(|f| f.kind == "measurement" && f.name == "latency")
        .unwrap()
}

#[test]
fn comparing_a_result_with_itself_finds_no_difference() {
    use oslab_model::compare::{Noise, compare, side};
    let r = vec![null_result()];
    let c = compare(side("a", &r), &r, side("b", &r), &r, 1);
    let f = latency_figure(&c);
    assert_eq!(f.noise, Noise::Within);
    assert_eq!(f.p_value, Some(1.0));
    assert_eq!(f.ratio, Some(1.0));
    assert_eq!(c.beyond_noise(), 0);
    assert!(c.only_a.is_empty() && c.only_b.is_empty());
    assert_eq!(c.caveats.len(), 1, "{:?}", c.caveats);
    assert!(
        c.caveats[0].contains("same machine"),
        "drift between runs is named"
    );
    assert_eq!(c.claims.len(), 4);
}

#[test]
fn a_shift_far_beyond_the_spread_is_beyond_noise_with_the_exact_ratio() {
    use oslab_model::compare::{Noise, compare, side};
    let a = vec![null_result()];
    // Every sample doubled: medians 100 -> 200 and the samples no longer overlap
    // (97..150 vs 194..300). Only splits that keep almost every low sample on one side
    // reach a gap of 100 (swapping 150 for 194 still does), a few in a thousand.
    let b = vec![reshaped(|s| s.iter().map(|v| v * 2.0).collect())];
    let c = compare(side("a", &a), &a, side("b", &b), &b, 1);
    let f = latency_figure(&c);
    assert_eq!(f.noise, Noise::Beyond);
    assert_eq!(f.ratio, Some(2.0));
    assert!(f.method.contains("shuffles"), "{}", f.method);
    assert!(
        f.p_value.unwrap() < oslab_model::compare::ALPHA,
        "{:?}",
        f.p_value
    );
}

#[test]
fn a_shift_inside_the_spread_is_within_noise() {
    use oslab_model::compare::{Noise, compare, side};
    let a = vec![null_result()];
    // One unit up: 100 -> 101 with samples spread over 97..103.
    let b = vec![reshaped(|s| s.iter().map(|v| v + 1.0).collect())];
    let c = compare(side("a", &a), &a, side("b", &b), &b, 1);
    let f = latency_figure(&c);
    assert_eq!(f.noise, Noise::Within, "p = {:?}", f.p_value);
    assert!(f.p_value.unwrap() > 0.05);
}

#[test]
fn a_sevenfold_difference_in_scattered_samples_is_never_called_within_noise() {
    use oslab_model::compare::{Noise, compare, side};
    // Five samples a side, scattered: the intervals of the medians overlap (no
    // test separates them), but B's median is seven times A's and lies outside
    // A's interval: the comparison says it cannot tell, with n.
    let a = vec![reshaped(|_| vec![10.0, 12.0, 15.0, 300.0, 900.0])];
    let b = vec![reshaped(|_| vec![11.0, 13.0, 105.0, 400.0, 950.0])];
    let c = compare(side("a", &a), &a, side("b", &b), &b, 1);
    let f = latency_figure(&c);
    assert_eq!(f.ratio, Some(7.0));
    assert_eq!(f.noise, Noise::Undecided, "{}", f.method);
    assert!(f.method.contains("n = 5 and 5"), "{}", f.method);
    assert_eq!(c.undecided(), 1);
    let text = oslab_report::compare::text(&c, Some(100));
    assert!(text.contains("can't tell"), "{text}");
    assert!(!text.contains("within noise"), "{text}");
}

#[test]
fn zero_medians_on_both_sides_are_no_change() {
    use oslab_model::compare::{Noise, compare, side};
    let zeros = vec![reshaped(|s| vec![0.0; s.len()])];
    let c = compare(side("a", &zeros), &zeros, side("b", &zeros), &zeros, 1);
    let f = latency_figure(&c);
    assert_eq!(f.noise, Noise::Within, "{}", f.method);
    assert!(!f.method.contains("inf"), "{}", f.method);
}

#[test]
fn too_few_samples_are_not_judged_noise_or_not() {
    use oslab_model::compare::{Noise, compare, side};
    // Two samples a side: no test can reach p < 0.01 (6 splits) and, with fewer
    // than five samples, there is no interval either: the difference is not judged.
    let a = vec![reshaped(|_| vec![100.0, 101.0])];
    let b = vec![reshaped(|_| vec![200.0, 202.0])];
    let c = compare(side("a", &a), &a, side("b", &b), &b, 1);
    let f = latency_figure(&c);
    assert!(f.method.contains("too few samples"), "{}", f.method);
    assert_eq!(f.p_value, None);
    assert_eq!(f.noise, Noise::Unknown);
}

#[test]
fn different_modes_and_one_sided_experiments_are_reported() {
    use oslab_model::compare::{compare, side};
    let a = vec![null_result()];
    let mut full = null_result();
    full.mode = Mode::Full;
    let mut extra = null_result();
    extra.experiment = "only.here".into();
    let b = vec![full, extra];
    let c = compare(side("a", &a), &a, side("b", &b), &b, 1);
    assert_eq!(c.only_b, vec!["only.here".to_string()]);
    assert!(
        c.caveats.iter().any(|w| w.contains("--quick")),
        "{:?}",
        c.caveats
    );
}

#[test]
fn the_html_report_is_self_contained_and_complete() {
    let r = null_result();
    let page = oslab_report::html::report(std::slice::from_ref(&r), "test");
    assert!(page.starts_with("<!DOCTYPE html>"));
    // Nothing to fetch: no scripts, links, images, imports or remote URLs (the only
    // URL is the SVG namespace name, which is never fetched).
    for banned in ["<script", "<link", "<img", "@import", "url(", "src="] {
        assert!(!page.contains(banned), "{banned}");
    }
    let urls = page.matches("http").count();
    assert_eq!(urls, page.matches("http://www.w3.org/2000/svg").count());
    // each plot twice: laid out for a wide page and for a phone
    assert_eq!(page.matches("<figure").count(), r.plots.len());
    assert_eq!(page.matches("<svg").count(), 2 * r.plots.len());
    assert_eq!(
        page.matches(&format!("viewBox=\"0 0 {} ", oslab_report::svg::NARROW))
            .count(),
        r.plots.len()
    );
    // on a phone tables stack as cards, each cell named by its column
    assert!(page.contains("data-label=\"median\""));
    // Overview of claims, then per experiment: claims, measurements, findings.
    assert_eq!(page.matches("<table").count(), 4);
    for c in &r.claims {
        assert!(
            page.contains(&c.expectation.replace('\'', "&#39;")),
            "{}",
            c.expectation
        );
    }
    assert!(page.contains("id=\"null\""));
    assert!(page.contains("@media print") && page.contains("@media screen and (max-width"));
    assert!(page.contains("name=\"viewport\""));
}

#[test]
fn the_html_comparison_has_a_table_per_experiment() {
    use oslab_model::compare::{compare, side};
    let a = vec![null_result()];
    let b = vec![reshaped(|s| s.iter().map(|v| v * 2.0).collect())];
    let c = compare(side("run 1", &a), &a, side("run 2", &b), &b, 1);
    let page = oslab_report::compare::html(&c);
    assert!(!page.contains("<script"));
    assert!(page.contains("beyond noise"));
    assert_eq!(page.matches("<table class=\"comparison\"").count(), 1);
    let text = oslab_report::compare::text(&c, None);
    assert!(text.contains("latency") && text.contains("2.000"), "{text}");
}

#[test]
fn a_significant_but_tiny_shift_is_still_within_noise() {
    use oslab_model::compare::{Noise, compare, side};
    // 40 samples a side, 100.0..100.39 vs 100.5..100.89: every B above every A, so
    // the test is certain, but 0.5 % is less than runs of one experiment differ by.
    let a = vec![reshaped(|_| {
        (0..40).map(|i| 100.0 + i as f64 / 100.0).collect()
    })];
    let b = vec![reshaped(|_| {
        (0..40).map(|i| 100.5 + i as f64 / 100.0).collect()
    })];
    let c = compare(side("a", &a), &a, side("b", &b), &b, 1);
    let f = latency_figure(&c);
    assert!(f.p_value.unwrap() < oslab_model::compare::ALPHA);
    assert_eq!(f.noise, Noise::Within);
    assert!(f.method.contains("below the 5 %"), "{}", f.method);
    // the terminal says why too, not only the JSON and the page
    let text = oslab_report::compare::text(&c, Some(100));
    assert!(text.contains("within noise (< 5 %)"), "{text}");
    assert!(
        text.contains("1 figure with p < 0.01 differs by less than 5 %"),
        "{text}"
    );
    assert!(!c.same_results);
}

/// Regression: `compare` called 0.980, 0.979 and 0.977 "beyond noise" and 0.981
/// "within noise (< 2 %)", then said in its footnote that runs differ by 3-5 %
/// anyway, and the page's badges and summary gave neither floor. One rule now:
/// the table, the page's badge and both summaries say it in the same words.
#[test]
fn the_table_the_badges_and_the_notes_follow_one_noise_rule() {
    use oslab_model::compare::{Noise, compare, noise_rule, side};
    // every B sample 2.1 % above every A sample: the test is certain, and the
    // difference is inside what separate runs differ by
    let a = vec![reshaped(|_| {
        (0..40).map(|i| 100.0 + i as f64 / 100.0).collect()
    })];
    let b = vec![reshaped(|_| {
        (0..40).map(|i| 102.1 + i as f64 / 100.0).collect()
    })];
    let c = compare(side("a", &a), &a, side("b", &b), &b, 1);
    let f = latency_figure(&c);
    assert!(f.p_value.unwrap() < oslab_model::compare::ALPHA);
    assert_eq!(f.noise, Noise::Within, "{}", f.method);
    let text = oslab_report::compare::text(&c, None);
    let page = oslab_report::compare::html(&c);
    assert!(text.contains("within noise (< 5 %)"), "{text}");
    assert!(
        page.contains("<span class=\"badge within\">within noise (&lt; 5 %)</span>"),
        "{page}"
    );
    let rule = noise_rule();
    assert!(text.contains(&rule), "{text}");
    assert!(page.contains(&rule.replace('<', "&lt;")), "{page}");
    assert!(
        rule.contains("at least 5 % apart") && rule.contains("3-5 %"),
        "{rule}"
    );
    // nothing the notes say calls a 2 % difference real
    assert!(
        !text.contains("beyond noise (") && !text.contains("2 %"),
        "{text}"
    );
}

#[test]
fn a_result_set_compared_with_itself_is_named_as_such() {
    use oslab_model::compare::{compare, side};
    let a = vec![null_result()];
    let c = compare(side("run 1", &a), &a, side("run 1", &a), &a, 1);
    assert!(c.same_results);
    let text = oslab_report::compare::text(&c, Some(100));
    assert!(text.starts_with("A: run 1"), "{text}");
    assert!(text.contains("\nB: run 1"), "{text}");
    assert!(
        text.contains("warning: A and B are the same results"),
        "{text}"
    );
    assert!(oslab_report::compare::html(&c).contains("A and B are the same results"));
}

#[test]
fn findings_known_to_within_a_range_are_compared_by_their_ranges() {
    use oslab_model::compare::{Noise, compare, side};
    let with = |value: f64, range: Option<[f64; 2]>| {
        let mut r = null_result();
        let f = oslab_harness::finding("edge.L3", value, "bytes", "test");
        r.findings = vec![match range {
            Some([lo, hi]) => f.within(lo, hi),
            None => f,
        }];
        vec![r]
    };
    let call = |a: &[oslab_model::ExperimentResult], b: &[oslab_model::ExperimentResult]| {
        let c = compare(side("a", a), a, side("b", b), b, 1);
        let f = c
            .figures
            .iter()
            .find(|f| f.name == "edge.L3")
            .unwrap()
            .clone();
        (f.noise, f.method, f.a_ci95)
    };
    let a = with(2.2e6, Some([2.0e6, 2.4e6]));
    // touching or overlapping ranges: alike, whatever the middles
    let (n, method, shown) = call(&a, &with(2.6e6, Some([2.4e6, 2.8e6])));
    assert_eq!(n, Noise::Within, "{method}");
    assert_eq!(shown, Some([2.0e6, 2.4e6]));
    // apart: beyond noise
    assert_eq!(
        call(&a, &with(3.1e6, Some([2.9e6, 3.4e6]))).0,
        Noise::Beyond
    );
    // a side without a range: no call
    assert_eq!(call(&a, &with(2.2e6, None)).0, Noise::Unknown);
}

/// A figure one side has and the other does not (mem.locality's largest array is
/// sized from the machine's cache) is named in a caveat, not dropped in silence.
#[test]
fn figures_of_one_side_only_are_named() {
    use oslab_model::compare::{compare, side};
    let with = |names: &[&str]| {
        let mut r = null_result();
        r.findings = names
            .iter()
            .map(|n| oslab_harness::finding(n, 2.0, "ratio", "test"))
            .collect();
        vec![r]
    };
    let (a, b) = (
        with(&["ratio.16MiB", "ratio.64MiB"]),
        with(&["ratio.16MiB", "ratio.256MiB"]),
    );
    let c = compare(side("a", &a), &a, side("b", &b), &b, 1);
    let found: Vec<&str> = c
        .figures
        .iter()
        .filter(|f| f.kind == "finding")
        .map(|f| f.name.as_str())
        .collect();
    assert_eq!(found, ["ratio.16MiB"]);
    let said: Vec<&String> = c
        .caveats
        .iter()
        .filter(|w| w.contains("one side only"))
        .collect();
    assert_eq!(said.len(), 1, "{:?}", c.caveats);
    assert!(
        said[0].contains("ratio.64MiB only in A") && said[0].contains("ratio.256MiB only in B"),
        "{}",
        said[0]
    );
    let same = compare(side("a", &a), &a, side("b", &a), &a, 1);
    assert!(!same.caveats.iter().any(|w| w.contains("one side only")));
    // many: the first eight named, the rest counted
    let names: Vec<String> = (0..12).map(|i| format!("level{i}")).collect();
    let many = with(&names.iter().map(String::as_str).collect::<Vec<_>>());
    let c = compare(side("a", &many), &many, side("b", &a), &a, 1);
    let said = c
        .caveats
        .iter()
        .find(|w| w.contains("one side only"))
        .unwrap();
    assert!(
        said.contains("level7 and 4 more only in A") && !said.contains("level8"),
        "{said}"
    );
    // a finding in another unit on each side is said too
    let mut other = with(&["ratio.16MiB"]);
    other[0].findings[0].unit = "%".into();
    let c = compare(side("a", &a), &a, side("b", &other), &other, 1);
    assert!(
        c.caveats
            .iter()
            .any(|w| w.contains("ratio.16MiB: units differ (ratio vs %)")),
        "{:?}",
        c.caveats
    );
}
