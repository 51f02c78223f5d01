//! What a whole quick run prints and draws, read as a person would: every SVG plot
//! laid out without labels covering each other, leaving the picture or sitting on
//! the data, and a terminal output free of debug formatting (`Some(`), undetermined
//! numbers printed as numbers (`NaN`, `inf`) and maxima below their p99.
//!
//! The run is the raw data of a quick run on this VM (crates/lab/tests/fixtures/raw,
//! every experiment), judged by this oslab: exactly what the run printed and drew
//! (docs/architecture.md: judging a raw file prints what the run printed), plus a
//! simulator run and the null experiment, which need no fixture. With
//! OSLAB_LIVE_QUICK_RUN=1 the same checks read a real `oslab run all --quick`.

mod common;

use std::path::{Path, PathBuf};

use common::svg_layout;

fn raw_fixtures() -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../lab/tests/fixtures/raw");
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| {
            let n = p.file_name().unwrap().to_string_lossy().to_string();
            // the .busy files are the same experiments judged under load
            n.contains(".raw.json") && !n.contains(".busy.")
        })
        .collect();
    files.sort();
    files
}

/// Runs oslab and returns its standard output; fails the test with stderr.
fn stdout_of(cmd: &mut std::process::Command) -> String {
    let out = cmd.output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// The terminal output and plots folder of a whole quick run, made once for all
/// the tests here (a live run takes minutes).
fn quick_run() -> &'static (String, PathBuf) {
    static RUN: std::sync::OnceLock<(String, PathBuf)> = std::sync::OnceLock::new();
    RUN.get_or_init(|| {
        let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("quick_run_outputs");
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        make_quick_run(&dir)
    })
}

fn make_quick_run(tmp: &Path) -> (String, PathBuf) {
    let plots = tmp.join("plots");
    std::fs::create_dir_all(&plots).unwrap();
    let mut text = String::new();
    if std::env::var_os("OSLAB_LIVE_QUICK_RUN").is_some() {
        text += &stdout_of(
            common::oslab()
                .args(["run", "all", "--quick", "--no-db", "--wide", "--plots"])
                .arg(&plots),
        );
    } else {
        text += &stdout_of(
            common::oslab()
                .arg("judge")
                .args(raw_fixtures())
                .args(["--wide", "--plots"])
                .arg(&plots),
        );
        text += &stdout_of(
            common::oslab()
                .args(["run", "null", "--quick", "--no-db", "--wide", "--plots"])
                .arg(&plots),
        );
    }
    text += &stdout_of(
        common::oslab()
            .args(["sim", "run", "paper-fig2", "--plots"])
            .arg(&plots),
    );
    (text, plots)
}

#[test]
fn no_plot_label_covers_another_leaves_the_picture_or_sits_on_the_data() {
    let (_, plots) = quick_run();
    let mut checked = 0;
    let mut all = Vec::new();
    for e in std::fs::read_dir(plots).unwrap() {
        let path = e.unwrap().path();
        let svg = std::fs::read_to_string(&path).unwrap();
        checked += 1;
        for f in svg_layout::faults(&svg) {
            all.push(format!(
                "{}: {f}",
                path.file_name().unwrap().to_string_lossy()
            ));
        }
    }
    assert!(checked >= 30, "only {checked} plots were written");
    assert!(all.is_empty(), "{}", all.join("\n"));
}

#[test]
fn the_layout_check_finds_what_it_should() {
    // the issue's case: two marker labels drawn on top of each other, a legend on
    // the data and a label past the right edge
    let svg = r#"<svg viewBox="0 0 640 400">
<rect class="plot-area" x="60" y="40" width="560" height="300" fill="none"/>
<text class="marker" x="200" y="52" font-size="12" text-anchor="start">sysfs L1d 48 KiB</text>
<text class="marker" x="204" y="52" font-size="12" text-anchor="start">edge 1 49.4 KiB</text>
<text class="legend" x="400" y="100" font-size="13" text-anchor="start">huge pages</text>
<text class="marker" x="630" y="20" font-size="12" text-anchor="start">sysfs</text>
</svg>"#;
    let f = svg_layout::faults(svg);
    assert!(f.iter().any(|x| x.contains("overlap")), "{f:?}");
    assert!(
        f.iter().any(|x| x.contains("sits on the plot area")),
        "{f:?}"
    );
    assert!(f.iter().any(|x| x.contains("leaves the picture")), "{f:?}");
}

/// Pairs of "p99 X ... max Y" in one clause (up to ';' or the line's end) where the
/// maximum is below the p99.
fn max_below_p99(line: &str) -> Vec<String> {
    let mut out = Vec::new();
    for clause in line.split(';') {
        let Some(at) = clause.find("p99 ") else {
            continue;
        };
        let after = &clause[at + 4..];
        let p99: String = after
            .chars()
            .take_while(|c| c.is_ascii_digit() || *c == '.')
            .collect();
        let Some(m) = after.find("max ") else {
            continue;
        };
        let max: String = after[m + 4..]
            .chars()
            .take_while(|c| c.is_ascii_digit() || *c == '.')
            .collect();
        if let (Ok(p), Ok(x)) = (p99.parse::<f64>(), max.parse::<f64>())
            && x < p
        {
            out.push(clause.trim().to_string());
        }
    }
    out
}

/// Words that are debug formatting or a number that is none.
fn leftovers(line: &str) -> Vec<&'static str> {
    let words: Vec<&str> = line
        .split(|c: char| !(c.is_ascii_alphanumeric() || c == '(' || c == '_'))
        .collect();
    let mut out = Vec::new();
    if line.contains("Some(") || line.contains("None)") {
        out.push("Some(");
    }
    if words.contains(&"NaN") {
        out.push("NaN");
    }
    if words.iter().any(|w| *w == "inf" || *w == "Infinity") {
        out.push("inf");
    }
    out
}

#[test]
fn the_scan_finds_what_it_should() {
    assert_eq!(
        max_below_p99("wb.wcall: mean 0.1, p50 0.1, p99 0.3, max 0 ms"),
        ["wb.wcall: mean 0.1, p50 0.1, p99 0.3, max 0 ms"]
    );
    assert!(max_below_p99("p99 0.250, max 0.298 ms; p99 200, max 200").is_empty());
    assert_eq!(leftovers("cpu0 core Some(0) siblings [0]"), ["Some("]);
    assert_eq!(leftovers("rise_at  NaN bytes"), ["NaN"]);
    assert_eq!(leftovers("ratio inf"), ["inf"]);
    assert!(leftovers("information, infinite, Nancy").is_empty());
}

#[test]
fn a_quick_runs_terminal_output_has_no_leftovers() {
    let (text, _) = quick_run();
    assert!(text.contains("== mem.latency") || text.contains("== null"));
    let mut faults = Vec::new();
    for line in text.lines() {
        for what in leftovers(line) {
            faults.push(format!("{what}: {line}"));
        }
        for clause in max_below_p99(line) {
            faults.push(format!("max below p99: {clause}"));
        }
    }
    assert!(faults.is_empty(), "{}", faults.join("\n"));
}

#[test]
fn tables_and_texts_fit_the_terminal_and_wide_keeps_rows_whole() {
    let judged = |columns: &str, wide: bool| {
        let mut cmd = common::oslab();
        cmd.env("COLUMNS", columns)
            .arg("judge")
            .args(raw_fixtures());
        if wide {
            cmd.arg("--wide");
        }
        stdout_of(&mut cmd)
    };
    let fitted = judged("100", false);
    let long: Vec<&str> = fitted.lines().filter(|l| l.chars().count() > 100).collect();
    assert!(long.is_empty(), "{}", long.join("\n"));
    let wide = judged("100", true);
    assert!(wide.lines().any(|l| l.chars().count() > 160));
    let words = |t: &str| t.split_whitespace().collect::<Vec<_>>().join(" ");
    assert_eq!(
        words(&fitted).matches("HOLDS").count(),
        words(&wide).matches("HOLDS").count()
    );
}
