//! One self-contained HTML page per report: styles and SVG plots inline, no script, no
//! fonts or images to fetch, so it opens offline, on a phone and on paper alike.
//!
//! The page: the machine(s) the results come from, every claim of the material with
//! its verdict, then one section per experiment with its measurements, findings,
//! claims (the material's figure beside ours), plots and method notes.

use std::fmt::Write;

use oslab_model::compare::Comparison;
use oslab_model::machine::MachineInfo;
use oslab_model::{ExperimentResult, Mode, Status, Verdict};
use oslab_units::human_bytes;

use crate::exporter::{ExportError, Exporter, Piece, Results, Shape, Stage};
use crate::markup::{anchor, esc};
use crate::page::{page, table, verdict_badge};

fn machine_facts(m: &MachineInfo) -> Vec<(&'static str, String)> {
    let c = &m.cpu;
    let mut caches: Vec<String> = m
        .caches
        .levels
        .iter()
        .map(|l| {
            format!(
                "{} {}",
                l.name,
                l.size_bytes.map_or_else(|| "?".into(), human_bytes)
            )
        })
        .collect();
    if caches.is_empty() {
        caches.push("not reported".into());
    }
    let d = &m.dirty;
    let dirty = |bytes: Option<u64>, ratio: Option<u64>| match (bytes, ratio) {
        (Some(b), _) if b > 0 => human_bytes(b),
        (_, Some(r)) => format!("{r} %"),
        _ => "?".into(),
    };
    vec![
        ("host", m.hostname.clone()),
        (
            "CPU",
            format!(
                "{} ({} logical CPUs, {} cores, {} thread(s) per core)",
                c.model, c.logical_cpus, c.cores, c.threads_per_core
            ),
        ),
        ("caches (sysfs)", caches.join(" · ")),
        (
            "memory",
            format!(
                "{} total, {} pages",
                human_bytes(m.memory.total_bytes),
                human_bytes(m.memory.page_bytes)
            ),
        ),
        (
            "kernel",
            format!(
                "{} · scheduler {}{}",
                m.kernel.release,
                m.kernel.scheduler.label(),
                m.kernel
                    .hz
                    .value()
                    .map_or(String::new(), |h| format!(" · HZ {}", h.hz))
            ),
        ),
        (
            "hypervisor",
            m.hypervisor
                .name
                .clone()
                .unwrap_or_else(|| "none detected".into()),
        ),
        (
            "write back",
            format!(
                "background {} · limit {} · expire {} cs · flusher every {} cs",
                dirty(d.dirty_background_bytes, d.dirty_background_ratio),
                dirty(d.dirty_bytes, d.dirty_ratio),
                d.dirty_expire_centisecs
                    .map_or("?".into(), |v| v.to_string()),
                d.dirty_writeback_centisecs
                    .map_or("?".into(), |v| v.to_string())
            ),
        ),
        ("run as root", if m.root { "yes" } else { "no" }.into()),
    ]
}

/// The machine summary: key facts, with the whole `oslab info` behind a disclosure.
pub fn machine_section(m: &MachineInfo, heading: &str) -> String {
    let mut out = format!(
        "<section class=\"machine\">\n<h2>{}</h2>\n<dl>\n",
        esc(heading)
    );
    for (k, v) in machine_facts(m) {
        let _ = writeln!(out, "<dt>{}</dt><dd>{}</dd>", esc(k), esc(&v));
    }
    out.push_str("</dl>\n<details><summary>Everything oslab info reports</summary>\n<pre>");
    out.push_str(&esc(&crate::info::render(m)));
    out.push_str("</pre></details>\n</section>\n");
    out
}

fn status_text(s: &Status) -> &'static str {
    match s {
        Status::Completed => "completed",
        Status::Skipped { .. } => "skipped",
        Status::Failed { .. } => "failed",
    }
}

fn claims_overview(results: &[ExperimentResult]) -> String {
    let all: Vec<(&ExperimentResult, &oslab_model::Claim)> = results
        .iter()
        .flat_map(|r| r.claims.iter().map(move |c| (r, c)))
        .collect();
    if all.is_empty() {
        return String::new();
    }
    let count = |v: Verdict| all.iter().filter(|(_, c)| c.verdict == v).count();
    let mut out = format!(
        "<section class=\"claims\">\n<h2>The claims of the works cited, on this machine</h2>\n\
<p class=\"counts\">{} {} · {} {} · {} {} · {} {}</p>\n",
        count(Verdict::Holds),
        verdict_badge(Verdict::Holds),
        count(Verdict::Differs),
        verdict_badge(Verdict::Differs),
        count(Verdict::NotTestable),
        verdict_badge(Verdict::NotTestable),
        count(Verdict::NotJudged),
        verdict_badge(Verdict::NotJudged),
    );
    let rows: Vec<Vec<String>> = all
        .iter()
        .map(|(r, c)| {
            vec![
                format!(
                    "<a href=\"#{}\">{}</a>",
                    anchor(&r.experiment),
                    esc(&r.experiment)
                ),
                verdict_badge(c.verdict),
                esc(&c.text),
            ]
        })
        .collect();
    out.push_str(&table(
        "overview",
        &["experiment", "verdict", "claim"],
        &rows,
        &[],
    ));
    out.push_str("</section>\n");
    out
}

fn contents(results: &[ExperimentResult]) -> String {
    let mut out = String::from("<nav class=\"toc\">\n<h2>Experiments</h2>\n<ol>\n");
    for r in results {
        let _ = writeln!(
            out,
            "<li><a href=\"#{}\">{}</a> {} <span class=\"status {}\">{}</span></li>",
            anchor(&r.experiment),
            esc(&r.experiment),
            esc(&r.title),
            status_text(&r.status),
            status_text(&r.status)
        );
    }
    out.push_str("</ol>\n</nav>\n");
    out
}

/// One experiment's section.
pub fn result_section(r: &ExperimentResult) -> String {
    let mut out = section_head(r);
    match &r.status {
        Status::Completed => {}
        Status::Skipped { reason } => {
            let _ = writeln!(
                out,
                "<p class=\"skipped\">Skipped: {}</p>\n</section>",
                esc(reason)
            );
            return out;
        }
        Status::Failed { error } => {
            let _ = writeln!(
                out,
                "<p class=\"failed\">Failed: {}</p>\n</section>",
                esc(error)
            );
            return out;
        }
    }
    claims_table(&mut out, r);
    measurements_table(&mut out, r);
    findings_table(&mut out, r);
    // The plot draws its own title, so no caption repeats it. Each is laid out twice,
    // for a wide page and for a phone's, and the styles show the one that fits.
    for p in &r.plots {
        let _ = writeln!(
            out,
            "<figure class=\"plot\" id=\"{}-{}\">\n<div class=\"wide\">{}</div>\n<div class=\"narrow\">{}</div>\n</figure>",
            anchor(&r.experiment),
            anchor(&p.id),
            crate::svg::render(p),
            crate::svg::render_at(p, crate::svg::NARROW),
        );
    }
    if !r.notes.is_empty() {
        out.push_str("<h3>Method notes</h3>\n<ul class=\"notes\">\n");
        for n in &r.notes {
            let _ = writeln!(out, "<li>{}</li>", esc(n));
        }
        out.push_str("</ul>\n");
    }
    if !r.params.is_empty() {
        out.push_str("<details><summary>Parameters as run</summary>\n<pre>");
        for (k, v) in &r.params {
            let _ = writeln!(out, "{} = {}", esc(k), esc(&v.to_string()));
        }
        out.push_str("</pre></details>\n");
    }
    out.push_str("</section>\n");
    out
}

/// The section's heading, its run's circumstances and any load warning.
fn section_head(r: &ExperimentResult) -> String {
    let mut out = format!(
        "<section class=\"experiment\" id=\"{}\">\n<h2>{} <small>{}</small></h2>\n",
        anchor(&r.experiment),
        esc(&r.title),
        esc(&r.experiment)
    );
    let load = &r.environment.load;
    let section = crate::source::of_section(&r.section)
        .map_or_else(String::new, |w| format!(" · after {}", esc(&w)));
    let host = match &r.simulated {
        Some(machine) => format!("simulated on {}", esc(machine)),
        None => format!(
            "{} · timer {}",
            crate::num::load_text(load, "→"),
            esc(&r.environment.timer),
        ),
    };
    let _ = writeln!(
        out,
        "<p class=\"meta\">{} · {} · {:.1} s{section} · {host}</p>",
        esc(&r.started_at),
        match r.mode {
            Mode::Quick => "quick",
            Mode::Full => "full",
        },
        r.duration_s,
    );
    if let Some(w) = load.warning.as_ref().filter(|_| r.simulated.is_none()) {
        let _ = writeln!(
            out,
            "<p class=\"warning\">Warning: {}; treat the figures with care.</p>",
            esc(w)
        );
    }
    out
}

fn claims_table(out: &mut String, r: &ExperimentResult) {
    if r.claims.is_empty() {
        return;
    }
    let rows: Vec<Vec<String>> = r
        .claims
        .iter()
        .map(|c| {
            vec![
                format!(
                    "{}<div class=\"source\">{}</div>",
                    esc(&c.text),
                    esc(&c.source)
                ),
                esc(&c.expectation),
                esc(&c.observed),
                format!(
                    "{}<div class=\"why\">{}</div>",
                    verdict_badge(c.verdict),
                    esc(&c.why)
                ),
            ]
        })
        .collect();
    out.push_str("<h3>Claims</h3>\n");
    out.push_str(&table(
        "claims",
        &["claim", "the work cited", "measured here", "verdict"],
        &rows,
        &[],
    ));
}

fn measurements_table(out: &mut String, r: &ExperimentResult) {
    if r.measurements.is_empty() {
        return;
    }
    let rows: Vec<Vec<String>> = r
        .measurements
        .iter()
        .map(|m| {
            let name = format!(
                "<span title=\"{}\">{}</span>",
                esc(&m.description),
                esc(&m.name)
            );
            let width = if r.simulated.is_some() { 6 } else { 9 };
            let mut row = match (&m.summary, &r.simulated) {
                (Some(s), None) => [name, esc(&m.unit)]
                    .into_iter()
                    .chain(crate::table::summary_cells(s))
                    .collect(),
                // a simulation's samples are the model's: no interval, no noise
                (Some(s), Some(_)) => vec![
                    name,
                    esc(&m.unit),
                    crate::num::fmt(s.median),
                    crate::num::fmt(s.min),
                    crate::num::fmt(s.max),
                    s.n.to_string(),
                ],
                (None, _) => vec![name, esc(&m.unit), "-".into()],
            };
            row.resize(width, String::new());
            row
        })
        .collect();
    out.push_str("<h3>Measurements</h3>\n");
    if r.simulated.is_some() {
        let headers = ["measurement", "unit", "median", "min", "max", "n"];
        out.push_str(&table("measurements", &headers, &rows, &[2, 3, 4, 5]));
        return;
    }
    let headers: Vec<&str> = ["measurement", "unit"]
        .into_iter()
        .chain(crate::table::SUMMARY_HEADERS)
        .collect();
    out.push_str(&table("measurements", &headers, &rows, &[2, 3, 5, 6, 7, 8]));
}

fn findings_table(out: &mut String, r: &ExperimentResult) {
    if r.findings.is_empty() {
        return;
    }
    let rows: Vec<Vec<String>> = r
        .findings
        .iter()
        .map(|f| {
            let [value, unit] = crate::table::finding_cells(f);
            vec![esc(&f.name), value, esc(&unit), esc(&f.detail)]
        })
        .collect();
    out.push_str("<h3>Findings</h3>\n");
    out.push_str(&table(
        "findings",
        &["finding", "value", "unit", "detail"],
        &rows,
        &[1],
    ));
}

/// The full report of a set of results.
pub fn report(results: &[ExperimentResult], sources: &str) -> String {
    let mut body = String::new();
    let mut machines: Vec<&MachineInfo> = Vec::new();
    for r in results {
        let m = &r.environment.machine;
        if !machines.iter().any(|x| {
            x.hostname == m.hostname
                && x.cpu.model == m.cpu.model
                && x.kernel.release == m.kernel.release
        }) {
            machines.push(m);
        }
    }
    for (i, m) in machines.iter().enumerate() {
        let heading = if machines.len() == 1 {
            "Machine".to_string()
        } else {
            format!("Machine {} of {}", i + 1, machines.len())
        };
        body.push_str(&machine_section(m, &heading));
    }
    body.push_str(&claims_overview(results));
    body.push_str(&contents(results));
    for r in results {
        body.push_str(&result_section(r));
    }
    let when = results
        .iter()
        .map(|r| r.started_at.as_str())
        .min()
        .unwrap_or("");
    let version = results
        .first()
        .map_or("", |r| r.environment.oslab_version.as_str());
    let host = machines.first().map_or("", |m| m.hostname.as_str());
    page(
        &format!("oslab report: {host}"),
        &format!(
            "{} experiment(s), started {when}, oslab {version}; from {sources}",
            results.len()
        ),
        &body,
    )
}

/// The HTML page (`--html F`): one self-contained report of results, or of a
/// comparison.
pub struct Html;

impl Exporter<Results> for Html {
    fn shape(&self) -> Shape {
        Shape::Document
    }
    fn serialize(&mut self, doc: &Results, _: Stage) -> Result<Vec<Piece>, ExportError> {
        Ok(vec![Piece::whole(report(&doc.all, &doc.source))])
    }
}

impl Exporter<Comparison> for Html {
    fn shape(&self) -> Shape {
        Shape::Document
    }
    fn serialize(&mut self, c: &Comparison, _: Stage) -> Result<Vec<Piece>, ExportError> {
        Ok(vec![Piece::whole(crate::compare::html(c))])
    }
}
