//! Where everything of a plot goes, worked out before anything is drawn: the bands
//! above the plot area (title, marker labels), the margins its tick labels need, the
//! bands below it (ticks or categories, the axis title, the legend).

use oslab_model::{Plot, Scale, SeriesStyle};

use super::axis::{self, Display, Mapper, usable};
use super::text::{self, Span};
use super::{Anchor, FONT, SMALL, TITLE};

/// Margin at the edges of the picture.
pub const PAD: f64 = 8.0;
/// Height of the plot area in a picture `width` units wide: shorter on a phone's
/// narrow picture, so a plot still fits the screen with its labels.
fn plot_height(width: f64) -> f64 {
    (width * 0.47).clamp(220.0, 300.0)
}
/// Space kept between two labels side by side.
const GAP: f64 = 6.0;

/// Where a marker's label goes.
pub struct MarkerPlace {
    pub x: f64,
    pub baseline: f64,
    pub anchor: Anchor,
}

pub struct Frame {
    /// Width of the picture in SVG units.
    pub width: f64,
    pub title: Vec<String>,
    pub left: f64,
    pub right: f64,
    pub top: f64,
    pub bottom: f64,
    pub height: f64,
    pub xm: Mapper,
    pub ym: Mapper,
    pub xdisplay: Display,
    pub ydisplay: Display,
    pub xticks: Vec<f64>,
    pub xlabels: Vec<String>,
    pub yticks: Vec<f64>,
    pub ylabels: Vec<String>,
    /// Unlabelled ticks between the labelled ones (a log10 axis's 2..9 x 10^k).
    pub yminor: Vec<f64>,
    pub categories: Vec<String>,
    pub upright_categories: bool,
    pub x_title_baseline: f64,
    /// One per marker of the plot; `None` for a marker off a log axis.
    pub markers: Vec<Option<MarkerPlace>>,
    /// The legend entries' (swatch left, text baseline), one per series.
    pub legend: Vec<(f64, f64)>,
}

fn all_whole(values: &[f64]) -> bool {
    !values.is_empty()
        && values
            .iter()
            .all(|v| !v.is_finite() || (v.fract() == 0.0 && v.abs() < 1e12))
}

impl Frame {
    pub fn title_baseline(&self, line: usize) -> f64 {
        PAD + TITLE + line as f64 * TITLE * 1.25
    }

    pub fn of(plot: &Plot, width: f64) -> Frame {
        let bars = plot.series.iter().any(|s| s.style == SeriesStyle::Bars);
        let (xs, ys) = coordinates(plot);
        let (xscale, xlo, xhi) = x_range(plot, &xs, bars);
        let mut y = y_axis(plot, &ys);
        let left = PAD + FONT * 1.3 + 8.0 + widest(&y.ylabels) + 6.0;
        let xdisplay = Display::of(
            &plot.x.unit,
            xlo.abs().max(xhi.abs()),
            xscale == Scale::Linear && all_whole(&xs),
        );

        let mut xm = Mapper {
            scale: xscale,
            lo: xlo,
            hi: xhi,
            px_lo: left,
            px_hi: 0.0,
        };
        let (mut xticks, mut xlabels) = if bars {
            (Vec::new(), Vec::new())
        } else {
            let t = axis::ticks(&xm, &xdisplay);
            let l = axis::labels(&t, &plot.x.unit, &xdisplay);
            (t, l)
        };
        let right = xlabels
            .last()
            .map_or(0.0, |l| text::width(l, FONT) / 2.0 + 4.0)
            .max(16.0);
        xm.px_hi = width - right;
        thin_ticks(&xm, &mut xticks, &mut xlabels);

        // bold letters are about a tenth wider
        let title = text::wrap(&plot.title, TITLE * 1.1, width - 2.0 * PAD);
        let title_band = PAD + title.len() as f64 * TITLE * 1.25 + 4.0;
        let (marker_spans, marker_rows) = marker_layout(plot, &xm, width);
        let nrows = marker_rows.iter().copied().max().map_or(0, |r| r + 1);
        let row_h = SMALL + 4.0;
        let top = title_band + nrows as f64 * row_h + if nrows > 0 { 8.0 } else { 6.0 };
        let bottom = top + plot_height(width);
        y.ym.px_lo = bottom;
        y.ym.px_hi = top;

        let markers = marker_spans
            .into_iter()
            .zip(marker_rows)
            .map(|(span, row)| {
                let baseline = title_band + (row + 1) as f64 * row_h - 4.0;
                span.map(|(x, anchor)| MarkerPlace {
                    x,
                    baseline,
                    anchor,
                })
            })
            .collect();
        let (categories, upright_categories, tick_band) = category_band(plot, &xm, bars);
        let x_title_baseline = bottom + tick_band + FONT + 6.0;
        let (legend, legend_bottom) = legend_layout(plot, left, x_title_baseline + 8.0, width);
        Frame {
            width,
            title,
            left,
            right,
            top,
            bottom,
            height: legend_bottom.max(x_title_baseline + 4.0) + PAD,
            xm,
            ym: y.ym,
            xdisplay,
            ydisplay: y.ydisplay,
            xticks,
            xlabels,
            yticks: y.yticks,
            ylabels: y.ylabels,
            yminor: y.yminor,
            categories,
            upright_categories,
            x_title_baseline,
            markers,
            legend,
        }
    }
}

/// Every x (the markers' included) and every y of the plot's series.
fn coordinates(plot: &Plot) -> (Vec<f64>, Vec<f64>) {
    let points = || plot.series.iter().flat_map(|s| s.points.iter());
    let xs = points()
        .map(|p| p[0])
        .chain(plot.markers.iter().map(|m| m.x))
        .collect();
    (xs, points().map(|p| p[1]).collect())
}

/// The x scale and range: bars put their categories at 0..n-1 with half a slot of
/// room on each side.
fn x_range(plot: &Plot, xs: &[f64], bars: bool) -> (Scale, f64, f64) {
    let xscale = if bars { Scale::Linear } else { plot.x.scale };
    let (mut xlo, mut xhi) = axis::range(xs, xscale, false);
    if bars {
        let n = plot.x_labels.len().max(1) as f64;
        xlo = -0.5;
        xhi = xhi.max(n - 0.5).max(xlo + 1.0);
    }
    (xscale, xlo, xhi)
}

fn widest(labels: &[String]) -> f64 {
    labels
        .iter()
        .map(|l| text::width(l, FONT))
        .fold(0.0, f64::max)
}

/// The y axis before it is placed: its mapper (pixels set later), how its values
/// are shown, its ticks, their labels and its minor ticks.
struct YAxis {
    ym: Mapper,
    ydisplay: Display,
    yticks: Vec<f64>,
    ylabels: Vec<String>,
    yminor: Vec<f64>,
}

fn y_axis(plot: &Plot, ys: &[f64]) -> YAxis {
    let (ylo, yhi) = axis::range(ys, plot.y.scale, true);
    let ydisplay = Display::of(
        &plot.y.unit,
        ylo.abs().max(yhi.abs()),
        plot.y.scale == Scale::Linear && all_whole(ys),
    );
    let ym = Mapper {
        scale: plot.y.scale,
        lo: ylo,
        hi: yhi,
        px_lo: 0.0,
        px_hi: 0.0,
    };
    let yticks = axis::ticks(&ym, &ydisplay);
    let ylabels = axis::labels(&yticks, &plot.y.unit, &ydisplay);
    let yminor = match plot.y.scale {
        Scale::Log10 => axis::log10_minor_ticks(ym.lo, ym.hi, &yticks),
        _ => Vec::new(),
    };
    YAxis {
        ym,
        ydisplay,
        yticks,
        ylabels,
        yminor,
    }
}

/// A bar plot's category names; one whose bars were never measured (NaN, null
/// in JSON) reads "NAME: -", since no bar stands there and none may read as 0.
fn categories(plot: &Plot) -> Vec<String> {
    let measured = |i: usize| {
        plot.series
            .iter()
            .filter(|s| s.style == SeriesStyle::Bars)
            .flat_map(|s| &s.points)
            .any(|p| p[0] == i as f64 && p[1].is_finite())
    };
    plot.x_labels
        .iter()
        .enumerate()
        .map(|(i, l)| {
            if measured(i) {
                l.clone()
            } else {
                format!("{l}: -")
            }
        })
        .collect()
}

/// A bar plot's categories, whether they must stand upright to fit their slots,
/// and the height of the band under the plot area they (or the ticks) take.
fn category_band(plot: &Plot, xm: &Mapper, bars: bool) -> (Vec<String>, bool, f64) {
    let categories = if bars { categories(plot) } else { Vec::new() };
    let slot = (xm.px(1.0) - xm.px(0.0)).abs();
    let widest_category = categories
        .iter()
        .map(|c| text::width(c, SMALL))
        .fold(0.0, f64::max);
    let upright = bars && widest_category > slot - GAP;
    let band = if upright {
        widest_category + 10.0
    } else {
        FONT + 6.0
    };
    (categories, upright, band)
}

/// Drops every other tick until no two neighbouring labels touch.
fn thin_ticks(xm: &Mapper, ticks: &mut Vec<f64>, labels: &mut Vec<String>) {
    let crowded = |t: &[f64], l: &[String]| {
        t.windows(2).zip(l.windows(2)).any(|(t, l)| {
            let room = (xm.px(t[1]) - xm.px(t[0])).abs();
            room < (text::width(&l[0], FONT) + text::width(&l[1], FONT)) / 2.0 + GAP
        })
    };
    while ticks.len() > 2 && crowded(ticks, labels) {
        *ticks = ticks.iter().copied().step_by(2).collect();
        *labels = labels.iter().cloned().step_by(2).collect();
    }
}

type MarkerSpans = Vec<Option<(f64, Anchor)>>;

/// Each marker's label start and anchor (to the right of its line, or to the left
/// where it would leave the picture) and its row in the band above the plot.
fn marker_layout(plot: &Plot, xm: &Mapper, width: f64) -> (MarkerSpans, Vec<usize>) {
    let mut places = Vec::new();
    let mut spans = Vec::new();
    let mut lines = Vec::new();
    for m in &plot.markers {
        if !usable(xm.scale, m.x) {
            places.push(None);
            continue;
        }
        let x = xm.px(m.x);
        let w = text::width(&m.label, SMALL);
        let (at, anchor, span) = if x + 3.0 + w <= width - PAD / 2.0 {
            (x + 3.0, Anchor::Start, (x + 3.0, x + 3.0 + w))
        } else if x - 3.0 - w >= PAD / 2.0 {
            (x - 3.0, Anchor::End, (x - 3.0 - w, x - 3.0))
        } else {
            // too long for either side of its line in a narrow picture: as near the
            // line as the picture allows, across it
            let start = (width - PAD / 2.0 - w).max(PAD / 2.0);
            (start, Anchor::Start, (start, start + w))
        };
        places.push(Some((at, anchor)));
        spans.push(Span {
            left: span.0,
            right: span.1,
        });
        lines.push(x);
    }
    let rows = text::rows_clear_of_lines(&spans, &lines, GAP);
    let mut it = rows.into_iter();
    let all_rows = places
        .iter()
        .map(|p| {
            if p.is_some() {
                it.next().unwrap_or(0)
            } else {
                0
            }
        })
        .collect();
    (places, all_rows)
}

/// The legend's entries in rows under the x axis title, left to right, wrapped at
/// the right edge; returns their places and the bottom of the last row.
fn legend_layout(plot: &Plot, left: f64, top: f64, width: f64) -> (Vec<(f64, f64)>, f64) {
    let row_h = FONT + 8.0;
    let (mut x, mut row) = (left, 0usize);
    let mut out = Vec::new();
    for s in &plot.series {
        let w = 17.0 + text::width(&s.name, FONT);
        if x > left && x + w > width - PAD {
            x = left;
            row += 1;
        }
        out.push((x, top + row as f64 * row_h + FONT));
        x += w + 18.0;
    }
    let bottom = if out.is_empty() {
        top
    } else {
        top + (row + 1) as f64 * row_h
    };
    (out, bottom)
}
