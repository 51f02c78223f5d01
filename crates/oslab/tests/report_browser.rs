//! The HTML report in a real browser: headless Chromium loads the page of a real run
//! at desktop and phone widths, a probe script added to a copy of the page records
//! console errors, failed loads and the laid-out size of every plot and table, and
//! screenshots (and a PDF print) are kept under target/report-screenshots/ for a
//! person to look at. CI installs Debian's chromium; without it the test says so
//! and passes.

// A test here tells one scenario from start to end: longer than 80 lines.
#![allow(clippy::too_many_lines)]

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Runs an oslab command and fails the test with its stderr if it fails.
fn succeeds(cmd: &mut Command) {
    let out = cmd.output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

fn chromium() -> Option<PathBuf> {
    ["chromium", "chromium-browser", "google-chrome"]
        .iter()
        .find_map(|name| {
            std::env::var_os("PATH")?
                .to_str()?
                .split(':')
                .map(|d| Path::new(d).join(name))
                .find(|p| p.is_file())
        })
}

fn screenshots() -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .parent()
        .unwrap()
        .join("report-screenshots");
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Runs Chromium headless with `args` on `page`; returns (stdout, stderr).
fn browse(
    browser: &Path,
    profile: &Path,
    (width, height): (u32, u32),
    args: &[String],
    page: &Path,
) -> (String, String) {
    // Output goes to files: a page's DOM overflows a pipe that nobody reads yet.
    std::fs::create_dir_all(profile).unwrap();
    let (out_path, err_path) = (profile.join("stdout.txt"), profile.join("stderr.txt"));
    let mut child = Command::new(browser)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--hide-scrollbars",
            "--no-first-run",
            "--disable-extensions",
            "--enable-logging=stderr",
            "--v=0",
            "--virtual-time-budget=3000",
        ])
        .arg(format!(
            "--user-data-dir={}",
            profile.join("chromium").display()
        ))
        .arg(format!("--window-size={width},{height}"))
        .args(args)
        .arg(format!("file://{}", page.display()))
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(&out_path).unwrap())
        .stderr(std::fs::File::create(&err_path).unwrap())
        .spawn()
        .expect("chromium starts");
    let deadline = Instant::now() + Duration::from_secs(120);
    while child.try_wait().unwrap().is_none() {
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("chromium did not finish within 120 s");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    (
        std::fs::read_to_string(&out_path).unwrap_or_default(),
        std::fs::read_to_string(&err_path).unwrap_or_default(),
    )
}

/// Injected before anything else on the page: collects errors, then after load
/// writes what it saw into a <pre id="probe"> that --dump-dom shows.
const PROBE: &str = r#"<script>
window.__errors = [];
window.addEventListener('error', function (e) {
  var t = e.target && e.target !== window ? ('failed to load ' + (e.target.src || e.target.href || e.target.tagName)) : String(e.message);
  window.__errors.push(t);
}, true);
(function () {
  var orig = console.error;
  console.error = function () { window.__errors.push('console.error: ' + Array.prototype.join.call(arguments, ' ')); orig.apply(console, arguments); };
})();
window.addEventListener('load', function () {
  // each plot is drawn twice (wide and narrow) and the styles show one: the one shown
  var shown = Array.prototype.filter.call(document.querySelectorAll('figure.plot svg'), function (s) {
    return s.getBoundingClientRect().width > 0;
  });
  var plots = shown.map(function (s) {
    var r = s.getBoundingClientRect(); return [Math.round(r.width), Math.round(r.height)];
  });
  // what a reader can unfold counts too
  Array.prototype.forEach.call(document.querySelectorAll('details'), function (d) { d.open = true; });
  // anything that would need sideways scrolling: a box whose content is wider than
  // the box (scrolled or cut off), or an element reaching past the window's edge;
  // a table's header row hidden for screen readers on a phone is not shown
  var overflowing = [];
  Array.prototype.forEach.call(document.body.querySelectorAll('*'), function (el) {
    var head = el.closest('thead');
    if (head && head.getBoundingClientRect().width <= 1) { return; }
    var r = el.getBoundingClientRect();
    if (r.width === 0 && r.height === 0) { return; }
    var what = el.tagName.toLowerCase() + (el.className && el.className.baseVal === undefined ? '.' + el.className : '') + ': ' + (el.textContent || '').trim().slice(0, 40);
    if (el.clientWidth > 0 && el.scrollWidth > el.clientWidth + 1 && getComputedStyle(el).overflowX !== 'visible') {
      overflowing.push('scrolls ' + el.scrollWidth + '>' + el.clientWidth + ' ' + what);
    } else if (r.right > window.innerWidth + 1 || r.left < -1) {
      overflowing.push('past the edge ' + Math.round(r.left) + '..' + Math.round(r.right) + ' ' + what);
    }
  });
  // every plot's text as laid out with the real font: the smallest size a reader
  // sees, labels that cover each other, labels outside the picture
  var text = { min_font: 1000, overlaps: [], outside: [] };
  shown.forEach(function (s) {
    var r = s.getBoundingClientRect();
    var scale = r.width / s.viewBox.baseVal.width;
    var boxes = Array.prototype.map.call(s.querySelectorAll('text'), function (t) {
      text.min_font = Math.min(text.min_font, parseFloat(t.getAttribute('font-size')) * scale);
      var b = t.getBoundingClientRect();
      if (b.left < r.left - 1 || b.right > r.right + 1 || b.top < r.top - 1 || b.bottom > r.bottom + 1) {
        text.outside.push(t.textContent);
      }
      return [b, t.textContent];
    });
    for (var i = 0; i < boxes.length; i++) {
      for (var j = i + 1; j < boxes.length; j++) {
        var a = boxes[i][0], b = boxes[j][0];
        var w = Math.min(a.right, b.right) - Math.max(a.left, b.left);
        var h = Math.min(a.bottom, b.bottom) - Math.max(a.top, b.top);
        // glyph boxes include the line's leading: a pixel of contact is no overlap
        if (w > 1 && h > 2) { text.overlaps.push(boxes[i][1] + ' / ' + boxes[j][1]); }
      }
    }
  });
  var tables = Array.prototype.map.call(document.querySelectorAll('table'), function (t) {
    return [t.className, t.tBodies[0] ? t.tBodies[0].rows.length : 0, Math.round(t.getBoundingClientRect().height)];
  });
  var out = { errors: window.__errors, plots: plots, tables: tables, plot_text: text,
    overflowing: overflowing,
    scroll_width: document.documentElement.scrollWidth, viewport_width: window.innerWidth,
    title: document.title };
  var pre = document.createElement('pre'); pre.id = 'probe';
  pre.textContent = 'PROBE' + JSON.stringify(out) + 'EBORP';
  (window.parent !== window ? window.parent.document.body : document.body).appendChild(pre);
});
</script>"#;

/// Lays the page out `width` CSS pixels wide and returns what the probe saw. The page
/// sits in an iframe of that width, because a headless window is never narrower than
/// 500 px; the probe inside writes into the outer page, which --dump-dom prints.
fn probed(browser: &Path, profile: &Path, html: &str, width: u32, dir: &Path) -> serde_json::Value {
    let copy = dir.join(format!("probe-{width}.html"));
    std::fs::write(
        &copy,
        html.replacen("<head>", &format!("<head>\n{PROBE}"), 1),
    )
    .unwrap();
    let frame = dir.join(format!("frame-{width}.html"));
    std::fs::write(
        &frame,
        format!(
            "<!DOCTYPE html><html><head></head><body style=\"margin:0\"><iframe src=\"probe-{width}.html\" style=\"width:{width}px;height:2000px;border:0\"></iframe></body></html>"
        ),
    )
    .unwrap();
    let (dom, stderr) = browse(
        browser,
        profile,
        (width.max(500) + 40, 2000),
        &[
            "--dump-dom".to_string(),
            "--allow-file-access-from-files".to_string(),
        ],
        &frame,
    );
    let start = dom
        .find("PROBE{")
        .unwrap_or_else(|| panic!("no probe output; stderr:\n{stderr}"));
    let end = dom.find("}EBORP").expect("probe end");
    // --dump-dom escapes & < > in text; JSON from our probe has none of them unescaped
    // except through those entities.
    let json = dom[start + 5..end + 1]
        .replace("&quot;", "\"")
        .replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&amp;", "&");
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    let uncaught: Vec<&str> = stderr.lines().filter(|l| l.contains("Uncaught")).collect();
    assert!(uncaught.is_empty(), "{uncaught:?}");
    v
}

fn check_layout(v: &serde_json::Value, plots: usize, tables: usize, width: u32) {
    assert_eq!(
        v["errors"].as_array().unwrap().len(),
        0,
        "console errors at {width}px: {v}"
    );
    let p = v["plots"].as_array().unwrap();
    assert_eq!(p.len(), plots, "plots at {width}px");
    for wh in p {
        let (w, h) = (wh[0].as_f64().unwrap(), wh[1].as_f64().unwrap());
        assert!(
            w >= 250.0 && h >= 140.0,
            "a plot laid out at {w}x{h} px at {width}px"
        );
        // A plot fits the window: on a phone it is the picture laid out narrow.
        assert!(w <= width as f64, "a plot wider than the window: {w}");
    }
    assert_eq!(v["viewport_width"].as_f64().unwrap(), width as f64, "{v}");
    // plot text with the real font: nothing covers anything, nothing is cut off,
    // and it stays readable on a phone
    let text = &v["plot_text"];
    if plots > 0 {
        assert_eq!(text["overlaps"], serde_json::json!([]), "at {width}px");
        assert_eq!(text["outside"], serde_json::json!([]), "at {width}px");
        let min_font = text["min_font"].as_f64().unwrap();
        assert!(
            min_font >= 9.0,
            "plot text of {min_font:.1} px at {width}px"
        );
    }
    let t = v["tables"].as_array().unwrap();
    assert_eq!(t.len(), tables, "tables at {width}px: {t:?}");
    for row in t {
        assert!(
            row[1].as_u64().unwrap() >= 1 && row[2].as_f64().unwrap() > 10.0,
            "{row}"
        );
    }
    // Nothing needs sideways scrolling: not the page, not a table or plot in its box,
    // and no text is cut off at an edge.
    assert_eq!(
        v["scroll_width"].as_f64().unwrap(),
        v["viewport_width"].as_f64().unwrap(),
        "the page is wider than a {width}px window: {v}"
    );
    assert_eq!(
        v["overflowing"],
        serde_json::json!([]),
        "needs sideways scrolling at {width}px"
    );
}

fn expected_tables(results: &serde_json::Value) -> usize {
    let rs = results["results"].as_array().unwrap();
    let claims_overview = usize::from(
        rs.iter()
            .any(|r| !r["claims"].as_array().unwrap().is_empty()),
    );
    claims_overview
        + rs.iter()
            .filter(|r| r["status"]["state"] == "completed")
            .map(|r| {
                ["claims", "measurements", "findings"]
                    .iter()
                    .filter(|k| !r[**k].as_array().unwrap().is_empty())
                    .count()
            })
            .sum::<usize>()
}

#[test]
fn the_report_renders_in_chromium_on_a_desktop_and_a_phone() {
    let Some(browser) = chromium() else {
        eprintln!("skipped: no chromium on PATH (CI installs Debian's chromium package)");
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let shots = screenshots();
    // A real run: measurements, claims, findings and plots, plus a simulator run
    // whose plots redraw the paper's figures.
    let results = tmp.path().join("run.json");
    succeeds(
        common::oslab()
            .args(["run", "cpu.syscall", "null", "--quick", "--no-db", "--json"])
            .arg(&results),
    );
    let sim = tmp.path().join("sim.json");
    succeeds(
        common::oslab()
            .args(["sim", "run", "paper-fig2", "--json"])
            .arg(&sim),
    );
    // The plots the issue found crowded: cache markers side by side, bars with long
    // category names, whole-number axes (quick runs on this VM, judged again).
    let judged = tmp.path().join("judged.json");
    let raw = Path::new(env!("CARGO_MANIFEST_DIR")).join("../lab/tests/fixtures/raw");
    succeeds(
        common::oslab()
            .arg("judge")
            .args(
                ["mem.latency", "cpu.ctxsw", "sched.scaling", "wb.background"]
                    .iter()
                    .map(|e| raw.join(format!("{e}.raw.json"))),
            )
            .arg("--json")
            .arg(&judged),
    );
    let page = tmp.path().join("report.html");
    succeeds(
        common::oslab()
            .arg("report")
            .arg(&results)
            .arg(&sim)
            .arg(&judged)
            .arg("--html")
            .arg(&page),
    );
    plot_screenshots(&browser, tmp.path(), &judged, &shots);

    let mut plots = 0;
    let mut tables = 0;
    for f in [&results, &sim, &judged] {
        let v: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(f).unwrap()).unwrap();
        plots += v["results"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["plots"].as_array().unwrap().len())
            .sum::<usize>();
        tables += expected_tables(&v);
    }
    // One overview of claims for the whole page, not one per file.
    tables -= 2;
    assert!(plots >= 2, "the run has plots to show");

    let html = std::fs::read_to_string(&page).unwrap();
    let profile = tmp.path().join("profile");
    for width in [1280, 390] {
        let v = probed(&browser, &profile, &html, width, tmp.path());
        check_layout(&v, plots, tables, width);
        let name = if width > 800 {
            "report-desktop.png"
        } else {
            "report-phone.png"
        };
        let shot = shots.join(name);
        let _ = std::fs::remove_file(&shot);
        browse(
            &browser,
            &profile,
            (width, 2000),
            &[format!("--screenshot={}", shot.display())],
            &page,
        );
        let png =
            std::fs::read(&shot).unwrap_or_else(|_| panic!("no screenshot {}", shot.display()));
        assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n");
        // A blank page compresses to a few KiB; text, tables and plots do not.
        assert!(png.len() > 40_000, "{name} is {} bytes", png.len());
    }
    let pdf = shots.join("report.pdf");
    let _ = std::fs::remove_file(&pdf);
    browse(
        &browser,
        &profile,
        (1280, 2000),
        &[
            "--no-pdf-header-footer".into(),
            format!("--print-to-pdf={}", pdf.display()),
        ],
        &page,
    );
    let bytes = std::fs::read(&pdf).unwrap();
    assert!(
        bytes.starts_with(b"%PDF") && bytes.len() > 20_000,
        "{} bytes",
        bytes.len()
    );
    eprintln!("screenshots and PDF in {}", shots.display());
}

/// Screenshots of a page of plots only, tall enough to hold them all:
/// plots-desktop.png (1280 px) and plots-phone.png (390 px).
fn plot_screenshots(browser: &Path, dir: &Path, results: &Path, shots: &Path) {
    let page = dir.join("plots.html");
    succeeds(
        common::oslab()
            .arg("report")
            .arg(results)
            .arg("--html")
            .arg(&page),
    );
    let html = std::fs::read_to_string(&page).unwrap();
    // only the figures, one after another
    let figures: String = html
        .split("<figure")
        .skip(1)
        .map(|f| format!("<figure{}</figure>\n", f.split("</figure>").next().unwrap()))
        .collect();
    let body_start = html.find("<main>").unwrap() + "<main>".len();
    let body_end = html.find("</main>").unwrap();
    let only = format!("{}{figures}{}", &html[..body_start], &html[body_end..]);
    std::fs::write(&page, only).unwrap();
    let profile = dir.join("profile-plots");
    for (name, size) in [
        ("plots-desktop.png", (1280, 4200)),
        ("plots-phone.png", (390, 3600)),
    ] {
        let shot = shots.join(name);
        let _ = std::fs::remove_file(&shot);
        browse(
            browser,
            &profile,
            size,
            &[format!("--screenshot={}", shot.display())],
            &page,
        );
        assert!(std::fs::read(&shot).unwrap().len() > 40_000, "{name}");
    }
}

#[test]
fn the_comparison_page_renders_in_chromium() {
    let Some(browser) = chromium() else {
        eprintln!("skipped: no chromium on PATH (CI installs Debian's chromium package)");
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("h.db");
    for _ in 0..2 {
        succeeds(common::oslab().env("OSLAB_DB", &db).args([
            "run",
            "cpu.syscall",
            "null",
            "--quick",
        ]));
    }
    let page = tmp.path().join("compare.html");
    succeeds(
        common::oslab()
            .env("OSLAB_DB", &db)
            .args(["compare", "1", "2", "--html"])
            .arg(&page),
    );
    let html = std::fs::read_to_string(&page).unwrap();
    let profile = tmp.path().join("profile");
    for width in [1280, 390] {
        let v = probed(&browser, &profile, &html, width, tmp.path());
        // Two experiments: a comparison table each, and the claims of each.
        check_layout(&v, 0, 4, width);
    }
    let shot = screenshots().join("compare-desktop.png");
    let _ = std::fs::remove_file(&shot);
    browse(
        &browser,
        &profile,
        (1280, 2000),
        &[format!("--screenshot={}", shot.display())],
        &page,
    );
    assert!(std::fs::read(&shot).unwrap().len() > 20_000);
}
