//! A comparison of two result sets, as a terminal table and as an HTML page.

use std::fmt::Write;

use oslab_model::compare::{Comparison, FigureComparison, Noise, Side};

use crate::html;
use crate::markup::{anchor, esc};
use crate::num::{fmt, pct};
use crate::table::simple;

fn ci(c: Option<[f64; 2]>) -> String {
    c.map_or_else(String::new, |[l, h]| format!("{} - {}", fmt(l), fmt(h)))
}

fn ratio(f: &FigureComparison) -> String {
    f.ratio.map_or_else(|| "-".into(), |r| format!("{r:.3}"))
}

fn side_line(tag: &str, s: &Side) -> String {
    format!(
        "{tag}: {} · {} · {} · kernel {} · started {} · steal up to {}",
        s.label,
        s.hostname,
        s.cpu_model,
        s.kernel,
        s.started_at,
        pct(s.max_steal_fraction)
    )
}

/// The comparison as text for a terminal.
pub fn text(c: &Comparison) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "{}", side_line("A", &c.a));
    let _ = writeln!(out, "{}\n", side_line("B", &c.b));
    if c.figures.is_empty() {
        out.push_str("No figure was measured on both sides.\n");
    } else {
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
                    f.noise.label().to_string(),
                    f.p_value.map_or_else(String::new, |p| format!("{p:.4}")),
                ]
            })
            .collect();
        out.push_str(&simple(
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
        ));
        let _ = writeln!(
            out,
            "\n{} of {} figures differ beyond noise (permutation test on the raw samples at p < {}, else non-overlapping 95% CIs).",
            c.beyond_noise(),
            c.figures.len(),
            oslab_model::compare::ALPHA
        );
    }
    let changed: Vec<_> = c.claims.iter().filter(|x| x.a != x.b).collect();
    if !changed.is_empty() {
        out.push_str("\nClaims whose verdict differs:\n");
        for x in changed {
            let _ = writeln!(
                out,
                "  {} {}: A {}, B {} ({})",
                x.experiment,
                x.id,
                x.a.label(),
                x.b.label(),
                x.text
            );
        }
    }
    for (tag, list) in [("A", &c.only_a), ("B", &c.only_b)] {
        if !list.is_empty() {
            let _ = writeln!(out, "\nOnly in {tag}: {}", list.join(", "));
        }
    }
    for w in &c.caveats {
        let _ = writeln!(out, "caveat: {w}");
    }
    out
}

fn noise_badge(n: Noise) -> String {
    let class = match n {
        Noise::Beyond => "beyond",
        Noise::Within => "within",
        Noise::Unknown => "unknown",
    };
    format!("<span class=\"badge {class}\">{}</span>", n.label())
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
    let _ = writeln!(
        body,
        "<p>{} of {} figures differ beyond noise: a permutation test on the raw samples (difference of medians, p &lt; {}), or non-overlapping 95 % intervals where there are too few samples. Ratios are B / A.</p>",
        c.beyond_noise(),
        c.figures.len(),
        oslab_model::compare::ALPHA
    );
    for w in &c.caveats {
        let _ = writeln!(body, "<p class=\"warning\">{}</p>", esc(w));
    }
    body.push_str("</section>\n");
    let mut experiments: Vec<&str> = c.figures.iter().map(|f| f.experiment.as_str()).collect();
    experiments.dedup();
    for e in experiments {
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
                        noise_badge(f.noise),
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
        body.push_str(&html::table(
            "comparison",
            &[
                "figure",
                "unit",
                "A (95% CI)",
                "B (95% CI)",
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
                    html::verdict_badge(x.a),
                    html::verdict_badge(x.b),
                ]
            })
            .collect();
        if !claims.is_empty() {
            body.push_str(&html::table("claims", &["claim", "A", "B"], &claims, &[]));
        }
        body.push_str("</section>\n");
    }
    for (tag, list) in [("A", &c.only_a), ("B", &c.only_b)] {
        if !list.is_empty() {
            let _ = writeln!(body, "<p>Only in {tag}: {}</p>", esc(&list.join(", ")));
        }
    }
    html::page(
        &format!("oslab compare: {} vs {}", c.a.label, c.b.label),
        &format!(
            "A = {} ({}), B = {} ({})",
            c.a.label, c.a.hostname, c.b.label, c.b.hostname
        ),
        &body,
    )
}
