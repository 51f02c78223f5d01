//! SVG plots drawn by hand: no font files, no system libraries, deterministic output.
//!
//! Supports lines, points and bars; linear, log2 (byte sizes) and log10 axes; and
//! vertical reference markers (cache sizes, detected knees). Text is left to the
//! viewer's sans-serif font, so nothing needs measuring glyphs.

use std::fmt::Write;

use oslab_model::{Plot, Scale, SeriesStyle};

use crate::exporter::{ExportError, Exporter, Piece, Results, Shape, Stage};
use crate::markup::esc;
use crate::num;

const W: f64 = 760.0;
const H: f64 = 440.0;
const LEFT: f64 = 78.0;
const RIGHT: f64 = 24.0;
const TOP: f64 = 46.0;
const BOTTOM: f64 = 64.0;
const PALETTE: [&str; 8] = [
    "#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf",
];

/// Maps data values to pixel positions along one axis.
#[derive(Debug, Clone, Copy)]
struct Mapper {
    scale: Scale,
    lo: f64,
    hi: f64,
    px_lo: f64,
    px_hi: f64,
}

impl Mapper {
    fn t(&self, v: f64) -> f64 {
        match self.scale {
            Scale::Linear => v,
            Scale::Log2 => v.log2(),
            Scale::Log10 => v.log10(),
        }
    }

    fn px(&self, v: f64) -> f64 {
        let (a, b) = (self.t(self.lo), self.t(self.hi));
        let f = if b > a {
            (self.t(v) - a) / (b - a)
        } else {
            0.5
        };
        self.px_lo + f * (self.px_hi - self.px_lo)
    }
}

fn usable(scale: Scale, v: f64) -> bool {
    v.is_finite() && (scale == Scale::Linear || v > 0.0)
}

/// The data range along one axis, padded, with 0 included for linear axes that
/// start near it (so bars and costs are read against zero).
fn range(values: &[f64], scale: Scale, include_zero: bool) -> (f64, f64) {
    let vals: Vec<f64> = values
        .iter()
        .copied()
        .filter(|v| usable(scale, *v))
        .collect();
    if vals.is_empty() {
        return if scale == Scale::Linear {
            (0.0, 1.0)
        } else {
            (1.0, 10.0)
        };
    }
    let mut lo = vals.iter().copied().fold(f64::INFINITY, f64::min);
    let mut hi = vals.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    match scale {
        Scale::Linear => {
            if include_zero && lo > 0.0 {
                lo = 0.0;
            }
            if hi == lo {
                hi = lo + 1.0;
            }
            let pad = (hi - lo) * 0.05;
            (if lo == 0.0 { 0.0 } else { lo - pad }, hi + pad)
        }
        Scale::Log2 | Scale::Log10 => {
            if hi == lo {
                lo /= 2.0;
                hi *= 2.0;
            }
            (lo / 1.15, hi * 1.15)
        }
    }
}

/// "Nice" linear ticks (1, 2, 5 x 10^k) covering [lo, hi].
fn linear_ticks(lo: f64, hi: f64) -> Vec<f64> {
    let span = hi - lo;
    if span <= 0.0 {
        return vec![lo];
    }
    let raw = span / 6.0;
    let mag = 10f64.powf(raw.log10().floor());
    let step = [1.0, 2.0, 5.0, 10.0]
        .iter()
        .map(|m| m * mag)
        .find(|s| span / s <= 8.0)
        .unwrap_or(10.0 * mag);
    let mut t = (lo / step).ceil() * step;
    let mut out = Vec::new();
    while t <= hi + step * 1e-9 {
        out.push(if t.abs() < step * 1e-9 { 0.0 } else { t });
        t += step;
    }
    out
}

fn log_ticks(lo: f64, hi: f64, base: f64) -> Vec<f64> {
    let (a, b) = (lo.log(base).ceil() as i32, hi.log(base).floor() as i32);
    let all: Vec<f64> = (a..=b).map(|e| base.powi(e)).collect();
    let every = all.len().div_ceil(12).max(1);
    all.into_iter().step_by(every).collect()
}

/// A tick label: byte sizes as 4K / 2M / 1G, other values in short form.
fn tick_label(v: f64, unit: &str) -> String {
    if unit == "bytes" && v >= 1.0 {
        let units = [("G", 1u64 << 30), ("M", 1 << 20), ("K", 1 << 10)];
        for (s, m) in units {
            let m = m as f64;
            if v >= m {
                let x = v / m;
                return if x.fract() == 0.0 {
                    format!("{x:.0}{s}")
                } else {
                    format!("{x:.1}{s}")
                };
            }
        }
        return format!("{v:.0}");
    }
    let a = v.abs();
    if a >= 1e6 || (a > 0.0 && a < 1e-3) {
        format!("{v:.0e}")
    } else {
        num::fmt(v)
    }
}

fn ticks(m: &Mapper) -> Vec<f64> {
    match m.scale {
        Scale::Linear => linear_ticks(m.lo, m.hi),
        Scale::Log2 => log_ticks(m.lo, m.hi, 2.0),
        Scale::Log10 => log_ticks(m.lo, m.hi, 10.0),
    }
}

fn axis_title(label: &str, unit: &str) -> String {
    if unit.is_empty() {
        label.to_string()
    } else {
        format!("{label} ({unit})")
    }
}

/// Renders a plot as a standalone SVG document.
pub fn render(plot: &Plot) -> String {
    let bars = plot.series.iter().any(|s| s.style == SeriesStyle::Bars);
    let xs: Vec<f64> = plot
        .series
        .iter()
        .flat_map(|s| s.points.iter().map(|p| p[0]))
        .chain(plot.markers.iter().map(|m| m.x))
        .collect();
    let ys: Vec<f64> = plot
        .series
        .iter()
        .flat_map(|s| s.points.iter().map(|p| p[1]))
        .collect();
    let (mut xlo, mut xhi) = range(&xs, plot.x.scale, false);
    if bars {
        // categories sit at 0..n-1 with half a slot of room on each side
        let n = plot.x_labels.len().max(1) as f64;
        xlo = -0.5;
        xhi = xhi.max(n - 0.5).max(xlo + 1.0);
    }
    let (ylo, yhi) = range(&ys, plot.y.scale, true);
    let xm = Mapper {
        scale: if bars { Scale::Linear } else { plot.x.scale },
        lo: xlo,
        hi: xhi,
        px_lo: LEFT,
        px_hi: W - RIGHT,
    };
    let ym = Mapper {
        scale: plot.y.scale,
        lo: ylo,
        hi: yhi,
        px_lo: H - BOTTOM,
        px_hi: TOP,
    };

    let mut s = String::new();
    let _ = writeln!(
        s,
        r#"<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {W} {H}" width="{W}" height="{H}" font-family="sans-serif" font-size="12" role="img" aria-label="{}">"#,
        esc(&plot.title)
    );
    let _ = writeln!(s, r#"<rect width="{W}" height="{H}" fill="white"/>"#);
    let _ = writeln!(
        s,
        r#"<text x="{}" y="22" text-anchor="middle" font-size="15" font-weight="bold">{}</text>"#,
        W / 2.0,
        esc(&plot.title)
    );
    // grid and tick labels
    for t in ticks(&ym) {
        let y = ym.px(t);
        let _ = writeln!(
            s,
            r##"<line x1="{LEFT}" x2="{}" y1="{y:.1}" y2="{y:.1}" stroke="#ddd"/><text x="{}" y="{:.1}" text-anchor="end">{}</text>"##,
            W - RIGHT,
            LEFT - 6.0,
            y + 4.0,
            esc(&tick_label(t, &plot.y.unit))
        );
    }
    if bars {
        for (i, label) in plot.x_labels.iter().enumerate() {
            let x = xm.px(i as f64);
            let _ = writeln!(
                s,
                r#"<text x="{x:.1}" y="{:.1}" text-anchor="middle" font-size="11">{}</text>"#,
                H - BOTTOM + 16.0,
                esc(label)
            );
        }
    } else {
        for t in ticks(&xm) {
            let x = xm.px(t);
            let _ = writeln!(
                s,
                r##"<line x1="{x:.1}" x2="{x:.1}" y1="{TOP}" y2="{}" stroke="#eee"/><text x="{x:.1}" y="{:.1}" text-anchor="middle">{}</text>"##,
                H - BOTTOM,
                H - BOTTOM + 16.0,
                esc(&tick_label(t, &plot.x.unit))
            );
        }
    }
    // axes
    let _ = writeln!(
        s,
        r##"<line x1="{LEFT}" x2="{LEFT}" y1="{TOP}" y2="{}" stroke="#333"/><line x1="{LEFT}" x2="{}" y1="{}" y2="{}" stroke="#333"/>"##,
        H - BOTTOM,
        W - RIGHT,
        H - BOTTOM,
        H - BOTTOM
    );
    let _ = writeln!(
        s,
        r#"<text x="{}" y="{}" text-anchor="middle">{}</text>"#,
        (LEFT + W - RIGHT) / 2.0,
        H - 18.0,
        esc(&axis_title(&plot.x.label, &plot.x.unit))
    );
    let _ = writeln!(
        s,
        r#"<text transform="translate(16 {}) rotate(-90)" text-anchor="middle">{}</text>"#,
        (TOP + H - BOTTOM) / 2.0,
        esc(&axis_title(&plot.y.label, &plot.y.unit))
    );
    // markers
    for (i, m) in plot.markers.iter().enumerate() {
        if !usable(xm.scale, m.x) {
            continue;
        }
        let x = xm.px(m.x);
        let _ = writeln!(
            s,
            r##"<line x1="{x:.1}" x2="{x:.1}" y1="{TOP}" y2="{}" stroke="#555" stroke-dasharray="4 3"/><text x="{:.1}" y="{:.1}" font-size="11" fill="#555">{}</text>"##,
            H - BOTTOM,
            x + 3.0,
            TOP + 12.0 + (i % 3) as f64 * 13.0,
            esc(&m.label)
        );
    }
    // series
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
    // legend
    for (i, ser) in plot.series.iter().enumerate() {
        let color = PALETTE[i % PALETTE.len()];
        let y = TOP + 8.0 + i as f64 * 16.0;
        let x = W - RIGHT - 190.0;
        let _ = writeln!(
            s,
            r#"<rect x="{x}" y="{:.1}" width="12" height="10" fill="{color}"/><text x="{}" y="{:.1}">{}</text>"#,
            y - 9.0,
            x + 17.0,
            y,
            esc(&ser.name)
        );
    }
    s.push_str("</svg>\n");
    s
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

    #[test]
    fn linear_ticks_are_round() {
        assert_eq!(linear_ticks(0.0, 10.0), vec![0.0, 2.0, 4.0, 6.0, 8.0, 10.0]);
        let t = linear_ticks(0.0, 0.7);
        assert!(t.len() >= 4 && t.len() <= 9, "{t:?}");
    }

    #[test]
    fn log2_ticks_are_powers_of_two() {
        let t = log_ticks(1000.0, 70_000.0, 2.0);
        assert_eq!(
            t,
            vec![1024.0, 2048.0, 4096.0, 8192.0, 16384.0, 32768.0, 65536.0]
        );
        assert_eq!(tick_label(32768.0, "bytes"), "32K");
        assert_eq!(tick_label(3.0 * 1024.0 * 1024.0 * 1024.0, "bytes"), "3G");
    }

    #[test]
    fn text_is_escaped() {
        assert_eq!(esc("a<b & \"c\""), "a&lt;b &amp; &quot;c&quot;");
    }
}
