//! A comparison of two result sets, as a terminal table and as an HTML page.

use std::fmt::Write;

use oslab_model::compare::{Comparison, FigureComparison, Noise, Side};

use crate::markup::{anchor, esc};
use crate::num::{fmt, pct};
use crate::page;
use crate::table::{Width, fit, wrap};

fn ci(c: Option<[f64; 2]>) -> String {
    c.map_or_else(String::new, |[l, h]| format!("{} - {}", fmt(l), fmt(h)))
}

fn ratio(f: &FigureComparison) -> String {
    f.ratio.map_or_else(|| "-".into(), |r| format!("{r:.3}"))
}

fn side_line(s: &Side) -> String {
    format!(
        "{} · {} · {} · kernel {} · started {} · steal up to {}",
        s.label,
        s.hostname,
        s.cpu_model,
        s.kernel,
        s.started_at,
        pct(s.max_steal_fraction)
    )
}

/// The figures the test separates that the floor calls noise, in words that
/// repeat the rule rather than add to it.
fn floor_note(c: &Comparison) -> Option<String> {
    let n = c.below_floor();
    (n > 0).then(|| {
        format!(
            "{n} figure{} with p < {} differ{} by less than {:.0} %: within noise by that rule.",
            if n == 1 { "" } else { "s" },
            oslab_model::compare::ALPHA,
            if n == 1 { "s" } else { "" },
            oslab_model::compare::MIN_EFFECT * 100.0
        )
    })
}

/// How many figures differ beyond noise, and the rule that says so.
fn summary(c: &Comparison) -> String {
    format!(
        "{} of {} figures differ beyond noise; {}.",
        c.beyond_noise(),
        c.figures.len(),
        oslab_model::compare::noise_rule()
    )
}

/// Why some figures are neither a change nor no change, in words.
fn undecided_note(c: &Comparison) -> Option<String> {
    let n = c.undecided();
    (n > 0).then(|| {
        format!(
            "{n} figure{} {} \"can't tell\": the samples did not separate A from B, but the medians differ by {:.0} % or more or one lies outside the other side's 95 % interval, so the data are too few or too scattered to say there is no change (each row gives n).",
            if n == 1 { "" } else { "s" },
            if n == 1 { "is" } else { "are" },
            oslab_model::compare::UNDECIDED_EFFECT * 100.0,
        )
    })
}

/// The warning for a comparison of one set of results with itself.
pub const SAME_RESULTS: &str =
    "A and B are the same results (one run or file named twice): every difference is zero";

/// The comparison as text for a terminal `width` columns wide.
pub fn text(c: &Comparison, width: Width) -> String {
    let mut out = String::new();
    let para = |out: &mut String, first: &str, rest: &str, t: &str| {
        out.push_str(&wrap(t, first, rest, width));
        out.push('\n');
    };
    para(&mut out, "A: ", "   ", &side_line(&c.a));
    para(&mut out, "B: ", "   ", &side_line(&c.b));
    if c.same_results {
        para(&mut out, "warning: ", "         ", SAME_RESULTS);
    }
    out.push('\n');
    if c.figures.is_empty() {
        out.push_str("No figure was measured on both sides.\n");
    } else {
        out.push_str(&figures_table(c, width));
        out.push_str("\n\n");
        para(&mut out, "", "", &summary(c));
        for n in [floor_note(c), undecided_note(c)].into_iter().flatten() {
            para(&mut out, "", "", &n);
        }
    }
    let changed: Vec<_> = c.claims.iter().filter(|x| x.a != x.b).collect();
    if !changed.is_empty() {
        out.push_str("\nClaims whose verdict differs:\n");
        for x in changed {
            let t = format!(
                "{} {}: A {}, B {} ({})",
                x.experiment,
                x.id,
                x.a.label(),
                x.b.label(),
                x.text
            );
            para(&mut out, "  ", "    ", &t);
        }
    }
    for (tag, list) in [("A", &c.only_a), ("B", &c.only_b)] {
        if !list.is_empty() {
            out.push('\n');
            para(
                &mut out,
                &format!("Only in {tag}: "),
                "  ",
                &list.join(", "),
            );
        }
    }
    for w in &c.caveats {
        para(&mut out, "caveat: ", "        ", w);
    }
    out
}

/// The figures both sides measured, one row each.
fn figures_table(c: &Comparison, width: Width) -> String {
    let rows: Vec<Vec<String>> = c
        .figures
        .iter()
        .map(|f| {
            vec![
                f.experiment.clone(),
                f.name.clone(),
                f.unit.clone(),
                fmt(f.a),
                fmt(f.b),
                ratio(f),
                f.label(),
                f.p_value.map_or_else(String::new, |p| format!("{p:.4}")),
            ]
        })
        .collect();
    fit(
        &[
            "experiment",
            "figure",
            "unit",
            "A",
            "B",
            "B/A",
            "difference",
            "p",
        ],
        &rows,
        &[3, 4, 5, 7],
        width,
    )
}

fn noise_badge(f: &FigureComparison) -> String {
    let class = match f.noise {
        Noise::Beyond => "beyond",
        Noise::Within => "within",
        Noise::Unknown => "unknown",
        Noise::Undecided => "undecided",
    };
    format!("<span class=\"badge {class}\">{}</span>", esc(&f.label()))
}

/// One experiment's figures and claims, side by side.
fn experiment_section(c: &Comparison, e: &str) -> String {
    let mut body = String::new();
    let rows: Vec<Vec<String>> = c
        .figures
        .iter()
        .filter(|f| f.experiment == e)
        .map(|f| {
            vec![
                format!(
                    "{}<div class=\"source\">{}</div>",
                    esc(&f.name),
                    esc(&f.method)
                ),
                esc(&f.unit),
                format!("{}<div class=\"source\">{}</div>", fmt(f.a), ci(f.a_ci95)),
                format!("{}<div class=\"source\">{}</div>", fmt(f.b), ci(f.b_ci95)),
                ratio(f),
                format!(
                    "{}{}",
                    noise_badge(f),
                    f.p_value.map_or_else(String::new, |p| format!(
                        "<div class=\"source\">p = {p:.4}</div>"
                    ))
                ),
            ]
        })
        .collect();
    let _ = writeln!(
        body,
        "<section class=\"experiment\" id=\"{}\">\n<h2>{}</h2>",
        anchor(e),
        esc(e)
    );
    body.push_str(&page::table(
        "comparison",
        &[
            "figure",
            "unit",
            "A (95% CI or range)",
            "B (95% CI or range)",
            "B / A",
            "difference",
        ],
        &rows,
        &[2, 3, 4],
    ));
    let claims: Vec<Vec<String>> = c
        .claims
        .iter()
        .filter(|x| x.experiment == e)
        .map(|x| {
            vec![
                esc(&x.text),
                page::verdict_badge(x.a),
                page::verdict_badge(x.b),
            ]
        })
        .collect();
    if !claims.is_empty() {
        body.push_str(&page::table("claims", &["claim", "A", "B"], &claims, &[]));
    }
    body.push_str("</section>\n");
    body
}

/// The comparison as a self-contained HTML page.
pub fn html(c: &Comparison) -> String {
    let mut body = String::from("<section class=\"sides\">\n<h2>What is compared</h2>\n<dl>\n");
    for (tag, s) in [("A", &c.a), ("B", &c.b)] {
        let _ = writeln!(
            body,
            "<dt>{tag}</dt><dd>{} · {} · {} · kernel {} · started {} · steal up to {}</dd>",
            esc(&s.label),
            esc(&s.hostname),
            esc(&s.cpu_model),
            esc(&s.kernel),
            esc(&s.started_at),
            pct(s.max_steal_fraction)
        );
    }
    body.push_str("</dl>\n");
    let _ = writeln!(body, "<p>{} Ratios are B / A.</p>", esc(&summary(c)));
    if c.same_results {
        let _ = writeln!(body, "<p class=\"warning\">{}</p>", esc(SAME_RESULTS));
    }
    for n in [floor_note(c), undecided_note(c)].into_iter().flatten() {
        let _ = writeln!(body, "<p>{}</p>", esc(&n));
    }
    for w in &c.caveats {
        let _ = writeln!(body, "<p class=\"warning\">{}</p>", esc(w));
    }
    body.push_str("</section>\n");
    let mut experiments: Vec<&str> = c.figures.iter().map(|f| f.experiment.as_str()).collect();
    experiments.dedup();
    for e in experiments {
        body.push_str(&experiment_section(c, e));
    }
    for (tag, list) in [("A", &c.only_a), ("B", &c.only_b)] {
        if !list.is_empty() {
            let _ = writeln!(body, "<p>Only in {tag}: {}</p>", esc(&list.join(", ")));
        }
    }
    page::page(
        &format!("oslab compare: {} vs {}", c.a.label, c.b.label),
        &format!(
            "A = {} ({}), B = {} ({})",
            c.a.label, c.a.hostname, c.b.label, c.b.hostname
        ),
        &body,
    )
}
