//! SVG plots drawn by hand: no font files, no system libraries, deterministic output.
//!
//! Supports lines, points and bars; linear, log2 (byte sizes) and log10 axes; and
//! vertical reference markers (cache sizes, detected knees). Text is left to the
//! viewer's sans-serif font; its room is estimated from the characters
//! ([`text::width`]). The layout keeps every label clear of the others and of the
//! data: the title and a band of marker labels (in as many rows as they need) above
//! the plot area, tick labels and the axis titles beside it, the legend below it;
//! the picture grows downwards to fit, so nothing is clipped. Every `<text>` has a
//! class naming its role (title, marker, tick, category, axis, legend) and the plot
//! area is `<rect class="plot-area">`, which is what the layout tests read.

mod axis;
mod frame;
pub mod text;

use std::fmt::Write;

use oslab_model::{Plot, Scale, SeriesStyle};

use crate::exporter::{ExportError, Exporter, Piece, Results, Shape, Stage};
use crate::markup::esc;
use axis::usable;
use frame::Frame;

/// Width of a plot in SVG units; the height follows from what it holds.
pub const W: f64 = 640.0;
/// Width of the same plot laid out again for a phone's screen (about 370 CSS
/// pixels of a 390-pixel screen), so its text keeps its size there.
pub const NARROW: f64 = 360.0;
/// Font sizes: the title, axis titles, ticks and legend, marker and category labels.
const TITLE: f64 = 16.0;
const FONT: f64 = 13.0;
const SMALL: f64 = 12.0;
const PALETTE: [&str; 8] = [
    "#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf",
];

#[derive(Clone, Copy, PartialEq)]
enum Anchor {
    Start,
    Middle,
    End,
}

/// One `<text>`; `upright` turns it a quarter to the left about its anchor point.
struct Label<'a> {
    class: &'a str,
    x: f64,
    y: f64,
    size: f64,
    anchor: Anchor,
    upright: bool,
    fill: Option<&'a str>,
}

impl Label<'_> {
    fn write(&self, out: &mut String, content: &str) {
        let anchor = match self.anchor {
            Anchor::Start => "start",
            Anchor::Middle => "middle",
            Anchor::End => "end",
        };
        let (x, y) = (self.x, self.y);
        let _ = write!(
            out,
            r#"<text class="{}" x="{x:.1}" y="{y:.1}" font-size="{}" text-anchor="{anchor}""#,
            self.class, self.size
        );
        if self.upright {
            let _ = write!(out, r#" transform="rotate(-90 {x:.1} {y:.1})""#);
        }
        if self.class == "title" {
            out.push_str(r#" font-weight="bold""#);
        }
        if self.class == "marker" {
            // the halo: a white outline painted under the glyphs
            out.push_str(
                r#" stroke="white" stroke-width="4" stroke-linejoin="round" paint-order="stroke""#,
            );
        }
        if let Some(f) = self.fill {
            let _ = write!(out, r#" fill="{f}""#);
        }
        let _ = writeln!(out, ">{}</text>", esc(content));
    }
}

/// Renders a plot as a standalone SVG document, [`W`] units wide.
pub fn render(plot: &Plot) -> String {
    render_at(plot, W)
}

/// Renders a plot laid out for a picture `width` units wide.
pub fn render_at(plot: &Plot, width: f64) -> String {
    let f = Frame::of(plot, width);
    let mut s = String::new();
    let _ = writeln!(
        s,
        r#"<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {width} {h:.0}" width="{width}" height="{h:.0}" font-family="sans-serif" font-size="{FONT}" role="img" aria-label="{}">"#,
        esc(&plot.title),
        h = f.height
    );
    let _ = writeln!(
        s,
        r#"<rect width="{width}" height="{:.0}" fill="white"/>"#,
        f.height
    );
    for (i, line) in f.title.iter().enumerate() {
        Label {
            class: "title",
            x: width / 2.0,
            y: f.title_baseline(i),
            size: TITLE,
            anchor: Anchor::Middle,
            upright: false,
            fill: None,
        }
        .write(&mut s, line);
    }
    grid_and_ticks(&mut s, &f);
    axes(&mut s, plot, &f);
    markers(&mut s, plot, &f);
    series(&mut s, plot, &f);
    legend(&mut s, plot, &f);
    s.push_str("</svg>\n");
    s
}

fn grid_and_ticks(s: &mut String, f: &Frame) {
    let (left, right) = (f.left, f.width - f.right);
    for t in &f.yminor {
        let y = f.ym.px(*t);
        let _ = writeln!(
            s,
            r##"<line class="minor" x1="{:.1}" x2="{right:.1}" y1="{y:.1}" y2="{y:.1}" stroke="#f2f2f2"/><line class="minor" x1="{:.1}" x2="{left:.1}" y1="{y:.1}" y2="{y:.1}" stroke="#333"/>"##,
            left,
            left - 3.0
        );
    }
    for (t, label) in f.yticks.iter().zip(&f.ylabels) {
        let y = f.ym.px(*t);
        let _ = writeln!(
            s,
            r##"<line x1="{left:.1}" x2="{right:.1}" y1="{y:.1}" y2="{y:.1}" stroke="#ddd"/>"##
        );
        Label {
            class: "tick",
            x: left - 6.0,
            y: y + FONT * 0.35,
            size: FONT,
            anchor: Anchor::End,
            upright: false,
            fill: None,
        }
        .write(s, label);
    }
    for (t, label) in f.xticks.iter().zip(&f.xlabels) {
        let x = f.xm.px(*t);
        let _ = writeln!(
            s,
            r##"<line x1="{x:.1}" x2="{x:.1}" y1="{:.1}" y2="{:.1}" stroke="#eee"/>"##,
            f.top, f.bottom
        );
        Label {
            class: "tick",
            x,
            y: f.bottom + FONT + 4.0,
            size: FONT,
            anchor: Anchor::Middle,
            upright: false,
            fill: None,
        }
        .write(s, label);
    }
    for (i, label) in f.categories.iter().enumerate() {
        let x = f.xm.px(i as f64);
        let (y, anchor, x) = if f.upright_categories {
            (f.bottom + 6.0, Anchor::End, x + SMALL * 0.3)
        } else {
            (f.bottom + SMALL + 4.0, Anchor::Middle, x)
        };
        Label {
            class: "category",
            x,
            y,
            size: SMALL,
            anchor,
            upright: f.upright_categories,
            fill: None,
        }
        .write(s, label);
    }
}

fn axes(s: &mut String, plot: &Plot, f: &Frame) {
    let (l, r, t, b) = (f.left, f.width - f.right, f.top, f.bottom);
    let _ = writeln!(
        s,
        r##"<rect class="plot-area" x="{l:.1}" y="{t:.1}" width="{:.1}" height="{:.1}" fill="none"/>"##,
        r - l,
        b - t
    );
    let _ = writeln!(
        s,
        r##"<line x1="{l:.1}" x2="{l:.1}" y1="{t:.1}" y2="{b:.1}" stroke="#333"/><line x1="{l:.1}" x2="{r:.1}" y1="{b:.1}" y2="{b:.1}" stroke="#333"/>"##
    );
    Label {
        class: "axis",
        x: (l + r) / 2.0,
        y: f.x_title_baseline,
        size: FONT,
        anchor: Anchor::Middle,
        upright: false,
        fill: None,
    }
    .write(s, &axis_title(&plot.x.label, &f.xdisplay.unit));
    Label {
        class: "axis",
        x: frame::PAD + FONT,
        y: (t + b) / 2.0,
        size: FONT,
        anchor: Anchor::Middle,
        upright: true,
        fill: None,
    }
    .write(s, &axis_title(&plot.y.label, &f.ydisplay.unit));
}

fn axis_title(label: &str, unit: &str) -> String {
    if unit.is_empty() {
        label.to_string()
    } else {
        format!("{label} ({unit})")
    }
}

/// Every marker's dashed line, then every label over the lines on a white halo: a
/// line from a label in an upper row runs down through the rows below it, and the
/// halo keeps it from striking through a label it passes.
fn markers(s: &mut String, plot: &Plot, f: &Frame) {
    let placed = || {
        plot.markers
            .iter()
            .zip(&f.markers)
            .filter_map(|(m, p)| Some((m, p.as_ref()?)))
    };
    for (m, p) in placed() {
        let x = f.xm.px(m.x);
        let _ = writeln!(
            s,
            r##"<line x1="{x:.1}" x2="{x:.1}" y1="{:.1}" y2="{:.1}" stroke="#555" stroke-dasharray="4 3"/>"##,
            p.baseline + 3.0,
            f.bottom
        );
    }
    for (m, p) in placed() {
        Label {
            class: "marker",
            x: p.x,
            y: p.baseline,
            size: SMALL,
            anchor: p.anchor,
            upright: false,
            fill: Some("#444"),
        }
        .write(s, &m.label);
    }
}

fn series(s: &mut String, plot: &Plot, f: &Frame) {
    let (xm, ym) = (&f.xm, &f.ym);
    let nbars = plot
        .series
        .iter()
        .filter(|s| s.style == SeriesStyle::Bars)
        .count()
        .max(1);
    let slot = (xm.px(1.0) - xm.px(0.0)).abs() * 0.8;
    let mut bar_i = 0;
    for (i, ser) in plot.series.iter().enumerate() {
        let color = PALETTE[i % PALETTE.len()];
        let pts: Vec<(f64, f64)> = ser
            .points
            .iter()
            .filter(|p| usable(xm.scale, p[0]) && usable(ym.scale, p[1]))
            .map(|p| (xm.px(p[0]), ym.px(p[1])))
            .collect();
        let _ = writeln!(s, r#"<g class="series" data-name="{}">"#, esc(&ser.name));
        if matches!(ser.style, SeriesStyle::Line | SeriesStyle::LinePoints) && pts.len() > 1 {
            let path: Vec<String> = pts.iter().map(|(x, y)| format!("{x:.1},{y:.1}")).collect();
            let _ = writeln!(
                s,
                r#"<polyline fill="none" stroke="{color}" stroke-width="1.8" points="{}"/>"#,
                path.join(" ")
            );
        }
        match ser.style {
            SeriesStyle::Points | SeriesStyle::LinePoints => {
                for (x, y) in &pts {
                    let _ = writeln!(
                        s,
                        r#"<circle cx="{x:.1}" cy="{y:.1}" r="2.6" fill="{color}"/>"#
                    );
                }
            }
            SeriesStyle::Bars => {
                let w = slot / nbars as f64;
                let base = ym.px(if ym.scale == Scale::Linear {
                    0f64.max(ym.lo)
                } else {
                    ym.lo
                });
                for (x, y) in &pts {
                    let left = x - slot / 2.0 + w * bar_i as f64;
                    let _ = writeln!(
                        s,
                        r#"<rect x="{left:.1}" y="{:.1}" width="{:.1}" height="{:.1}" fill="{color}"/>"#,
                        y.min(base),
                        (w - 1.0).max(1.0),
                        (base - y).abs()
                    );
                }
                bar_i += 1;
            }
            _ => {}
        }
        let _ = writeln!(s, "</g>");
    }
}

fn legend(s: &mut String, plot: &Plot, f: &Frame) {
    for (i, (ser, p)) in plot.series.iter().zip(&f.legend).enumerate() {
        let color = PALETTE[i % PALETTE.len()];
        let _ = writeln!(
            s,
            r#"<rect x="{:.1}" y="{:.1}" width="12" height="10" fill="{color}"/>"#,
            p.0,
            p.1 - 10.0
        );
        Label {
            class: "legend",
            x: p.0 + 17.0,
            y: p.1,
            size: FONT,
            anchor: Anchor::Start,
            upright: false,
            fill: None,
        }
        .write(s, &ser.name);
    }
}

/// SVG plots into a folder (`--plots DIR`): each result's plots as it comes, named
/// `EXPERIMENT-PLOT.svg`.
pub struct Svg;

impl Exporter<Results> for Svg {
    fn shape(&self) -> Shape {
        Shape::Pieces
    }
    fn serialize(&mut self, doc: &Results, stage: Stage) -> Result<Vec<Piece>, ExportError> {
        Ok(match (stage, doc.newest()) {
            (Stage::Added, Some(r)) => r
                .plots
                .iter()
                .map(|p| Piece::file(format!("{}-{}.svg", r.experiment, p.id), render(p)))
                .collect(),
            _ => Vec::new(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use oslab_model::{Axis, Marker, Series};

    #[test]
    fn text_is_escaped() {
        assert_eq!(esc("a<b & \"c\""), "a&lt;b &amp; &quot;c&quot;");
    }

    fn latency_plot() -> Plot {
        let kib = 1024.0;
        Plot {
            id: "latency".into(),
            title: "Load-to-use latency".into(),
            x: Axis::new("working set", "bytes", Scale::Log2),
            y: Axis::new("latency", "ns", Scale::Linear),
            series: vec![Series {
                name: "4 KiB pages".into(),
                style: SeriesStyle::LinePoints,
                points: (10..26).map(|e| [2f64.powi(e), e as f64]).collect(),
            }],
            markers: vec![
                Marker {
                    x: 48.0 * kib,
                    label: "sysfs L1d 48 KiB".into(),
                },
                Marker {
                    x: 49.4 * kib,
                    label: "edge 1 49.4 KiB".into(),
                },
                Marker {
                    x: 32.0 * 1024.0 * kib,
                    label: "sysfs L3 32 MiB".into(),
                },
            ],
            x_labels: vec![],
        }
    }

    /// The attribute `key` of the first line of `svg` that contains `mark`.
    fn attr(svg: &str, mark: &str, key: &str) -> String {
        let line = svg.lines().find(|l| l.contains(mark)).unwrap();
        let after = line.split(&format!(" {key}=\"")).nth(1).unwrap();
        after.split('"').next().unwrap().to_string()
    }

    #[test]
    fn close_markers_get_their_own_rows_and_the_last_stays_inside() {
        let svg = render(&latency_plot());
        let markers: Vec<&str> = svg
            .lines()
            .filter(|l| l.contains(r#"class="marker""#))
            .collect();
        assert_eq!(markers.len(), 3);
        let y = |i: usize| attr(markers[i], "", "y");
        assert_ne!(y(0), y(1), "{svg}");
        // the marker at the right edge reads leftwards
        assert_eq!(attr(markers[2], "", "text-anchor"), "end");
    }

    /// Every `<text>` element's (x, estimated left, estimated right) in `svg`.
    fn text_extents(svg: &str) -> Vec<(String, f64, f64)> {
        svg.lines()
            .filter(|l| l.starts_with("<text") && !l.contains("rotate("))
            .map(|l| {
                let x: f64 = attr(l, "", "x").parse().unwrap();
                let size: f64 = attr(l, "", "font-size").parse().unwrap();
                let content = l.split('>').nth(1).unwrap().split('<').next().unwrap();
                let w = text::width(content, size);
                let (a, b) = match attr(l, "", "text-anchor").as_str() {
                    "start" => (x, x + w),
                    "end" => (x - w, x),
                    _ => (x - w / 2.0, x + w / 2.0),
                };
                (content.to_string(), a, b)
            })
            .collect()
    }

    #[test]
    fn a_narrow_plot_keeps_its_text_inside_at_full_size() {
        let svg = render_at(&latency_plot(), NARROW);
        assert!(svg.contains(&format!("viewBox=\"0 0 {NARROW} ")));
        for (content, a, b) in text_extents(&svg) {
            assert!(a >= 0.0 && b <= NARROW, "{content}: {a:.0}..{b:.0}");
        }
        assert!(!svg.contains(r#"font-size="1""#) && svg.contains(r#"font-size="12""#));
    }

    #[test]
    fn marker_labels_are_drawn_over_every_marker_line() {
        let svg = render(&latency_plot());
        let last_line = svg.rfind("stroke-dasharray").unwrap();
        let first_label = svg.find(r#"class="marker""#).unwrap();
        assert!(first_label > last_line);
        assert!(attr(&svg, r#"class="marker""#, "paint-order") == "stroke");
    }

    #[test]
    fn the_legend_sits_below_the_plot_area() {
        let svg = render(&latency_plot());
        let num = |mark: &str, key: &str| attr(&svg, mark, key).parse::<f64>().unwrap();
        let area_bottom = num("plot-area", "y") + num("plot-area", "height");
        let legend_y = num(r#"class="legend""#, "y");
        assert!(legend_y > area_bottom + FONT, "{legend_y} vs {area_bottom}");
    }

    /// Regression: Fig. 6 drew the bars of cells never measured at 0 ms.
    #[test]
    fn a_bar_never_measured_is_no_bar_and_its_category_says_so() {
        let plot = Plot {
            id: "fig6".into(),
            title: "mean latency".into(),
            x: Axis::new("", "", Scale::Linear),
            y: Axis::new("mean latency", "ms", Scale::Linear),
            series: vec![Series {
                name: "mean".into(),
                style: SeriesStyle::Bars,
                points: vec![[0.0, 2.0], [1.0, f64::NAN], [2.0, 3.0]],
            }],
            markers: vec![],
            x_labels: vec!["vanilla.alone".into(), "wcall.alone".into(), "sim".into()],
        };
        let svg = render(&plot);
        let bars = svg
            .lines()
            .skip_while(|l| !l.contains(r#"class="series""#))
            .take_while(|l| *l != "</g>")
            .filter(|l| l.starts_with("<rect"))
            .count();
        assert_eq!(bars, 2, "{svg}");
        assert!(svg.contains(">wcall.alone: -<"), "{svg}");
        assert!(svg.contains(">vanilla.alone<"), "{svg}");
    }
}
