//! What every HTML page of oslab is built from: the page around a body, with its
//! styles, header and footer; a table; a verdict's badge. A report's page
//! ([`crate::html`]) and a comparison's ([`crate::compare`]) are made of these.

use std::fmt::Write;

use oslab_model::Verdict;

use crate::markup::esc;

const STYLE: &str = include_str!("html.css");

/// The page around `body`: head, styles, header and footer.
pub fn page(title: &str, subtitle: &str, body: &str) -> String {
    format!(
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
<meta name=\"generator\" content=\"oslab\">\n<title>{t}</title>\n<style>\n{STYLE}</style>\n</head>\n\
<body>\n<header>\n<h1>{t}</h1>\n<p class=\"sub\">{s}</p>\n</header>\n<main>\n{body}</main>\n\
<footer><p>Made by oslab. Every figure is a median of repeated measurements on the machine above; \
95 % intervals are bootstrap intervals of the median. Verdicts compare this machine with the \
works each claim cites; \u{201c}not testable here\u{201d} says why.</p></footer>\n</body>\n</html>\n",
        t = esc(title),
        s = esc(subtitle),
    )
}

/// A table with a header row; cells are already HTML. `numeric` right-aligns columns.
/// Each cell carries its column's header (`data-label`), which a phone's narrow
/// page shows beside the cell when the rows are stacked as cards.
pub fn table(class: &str, headers: &[&str], rows: &[Vec<String>], numeric: &[usize]) -> String {
    let mut out = format!("<div class=\"scroll\"><table class=\"{class}\">\n<thead><tr>");
    for (i, h) in headers.iter().enumerate() {
        let c = if numeric.contains(&i) {
            " class=\"num\""
        } else {
            ""
        };
        let _ = write!(out, "<th{c}>{}</th>", esc(h));
    }
    out.push_str("</tr></thead>\n<tbody>\n");
    for r in rows {
        out.push_str("<tr>");
        for (i, cell) in r.iter().enumerate() {
            let c = if numeric.contains(&i) {
                " class=\"num\""
            } else {
                ""
            };
            let label = headers.get(i).map_or_else(String::new, |h| esc(h));
            // one element beside the label, however many the cell holds
            let _ = write!(
                out,
                "<td{c} data-label=\"{label}\"><div class=\"cell\">{cell}</div></td>"
            );
        }
        out.push_str("</tr>\n");
    }
    out.push_str("</tbody></table></div>\n");
    out
}

/// A coloured verdict label.
pub fn verdict_badge(v: Verdict) -> String {
    let class = match v {
        Verdict::Holds => "holds",
        Verdict::Differs => "differs",
        Verdict::NotTestable | Verdict::NotJudged => "untestable",
    };
    format!("<span class=\"badge {class}\">{}</span>", v.label())
}
