//! The paper's figures redrawn from the first run's cells: Fig. 4/5 (the RT-55
//! writer among two RT-45 writers, measured and simulated), Fig. 6 (mean latency
//! per cell), Fig. 7 (the nice-4 writer alone), and Dirty, Writeback and the
//! governor's groups over time.

use oslab_model::{Axis, Plot, Scale, Series, SeriesStyle};
use oslab_wbsim::policy::Policy;

use super::matrix::Matrix;
use super::predict::Predicted;
use oslab_services::cells::record::{Cell, GroupPoll, POLICIES, Scenario};
use oslab_services::timed_writer::{WriterTrace, mib};

fn series_of(t: &WriterTrace, name: &str) -> Series {
    Series {
        name: name.into(),
        style: SeriesStyle::Points,
        points: t
            .start_s
            .iter()
            .zip(&t.latency_ms)
            .map(|(a, b)| [*a, b.max(0.01)])
            .collect(),
    }
}

fn sim_series(w: &oslab_wbsim::WriterResult, name: &str) -> Series {
    Series {
        name: name.into(),
        style: SeriesStyle::Line,
        points: w
            .issue_s
            .iter()
            .zip(&w.latency_ms)
            .map(|(t, l)| [*t, l.max(0.01)])
            .collect(),
    }
}

fn lat_axis() -> Axis {
    Axis::new("write() latency", "ms", Scale::Log10)
}

fn time_axis() -> Axis {
    Axis::new("time", "s", Scale::Linear)
}

fn plot(id: &str, title: &str, x: Axis, y: Axis, series: Vec<Series>) -> Plot {
    Plot {
        id: id.into(),
        title: title.into(),
        x,
        y,
        series,
        markers: vec![],
        x_labels: vec![],
    }
}

/// Fig. 4 and 5: the RT-55 writer among two RT-45 writers, per policy.
fn fig45(m: &Matrix, predicted: &Predicted) -> Vec<Plot> {
    let mut plots = Vec::new();
    for (id, title, p) in [
        (
            "fig4-vanilla",
            "Fig. 4 redrawn: RT-55 writer among two RT-45 writers, vanilla",
            Policy::Vanilla,
        ),
        (
            "fig5-wcall",
            "Fig. 5 redrawn: the same under the governor, wcall",
            Policy::Wcall,
        ),
        (
            "fig5-wcall-fair",
            "Fig. 5 redrawn: the same under the governor, wcall-fair",
            Policy::WcallFair,
        ),
    ] {
        let Some(c) = m.cell(p, Scenario::RtLow, 0) else {
            continue;
        };
        let mut series = vec![series_of(c.first(), "measured RT-55")];
        if let Some(w) = predicted.of(c).and_then(|o| o.writers.first()) {
            series.push(sim_series(w, "simulator"));
        }
        plots.push(plot(id, title, time_axis(), lat_axis(), series));
    }
    plots
}

/// Fig. 6: mean latency of the RT-55 writer per cell, measured and simulated.
fn fig6(rows_mean: &[(String, f64)]) -> Plot {
    let (bars, labels): (Vec<[f64; 2]>, Vec<String>) = rows_mean
        .iter()
        .filter(|(k, _)| !k.contains("fig7"))
        .enumerate()
        .map(|(i, (k, m))| ([i as f64, *m], k.clone()))
        .unzip();
    let mut p = plot(
        "fig6-mean",
        "Fig. 6 redrawn: mean write() latency of the RT-55 writer (measured and simulated)",
        Axis::new("", "", Scale::Linear),
        Axis::new("mean latency", "ms", Scale::Linear),
        vec![Series {
            name: "mean".into(),
            style: SeriesStyle::Bars,
            points: bars,
        }],
    );
    p.x_labels = labels;
    p
}

/// A group's dirty + writeback and its limit over time, from the governor's table.
fn group_series(groups: &[GroupPoll]) -> Vec<Series> {
    let mut series = Vec::new();
    if groups.is_empty() {
        return series;
    }
    for (g, name) in oslab_wcall::shm::GROUP_NAMES.iter().enumerate().take(2) {
        series.push(Series {
            name: format!("{name} dirty+writeback"),
            style: SeriesStyle::Line,
            points: groups
                .iter()
                .filter_map(|q| q.groups.get(g).map(|v| [q.t_s, mib(v.0)]))
                .collect(),
        });
        series.push(Series {
            name: format!("{name} limit"),
            style: SeriesStyle::Line,
            points: groups
                .iter()
                .filter_map(|q| q.groups.get(g).and_then(|v| v.1).map(|l| [q.t_s, mib(l)]))
                .collect(),
        });
    }
    series
}

/// Dirty, Writeback and the governor's groups in the RT-45 cell of one policy.
fn dirty_plot(p: Policy, c: &Cell) -> Plot {
    let mut series = vec![
        Series {
            name: "Dirty".into(),
            style: SeriesStyle::Line,
            points: c
                .polls
                .iter()
                .map(|q| [q.t_s, mib(q.dirty_bytes)])
                .collect(),
        },
        Series {
            name: "Writeback".into(),
            style: SeriesStyle::Line,
            points: c
                .polls
                .iter()
                .map(|q| [q.t_s, mib(q.writeback_bytes)])
                .collect(),
        },
    ];
    series.extend(group_series(&c.groups));
    plot(
        &format!("dirty-{}", p.name()),
        &format!(
            "Dirty, Writeback and the governor's groups, RT-55 + two RT-45, {}",
            p.name()
        ),
        time_axis(),
        Axis::new("memory", "MiB", Scale::Linear),
        series,
    )
}

pub fn plots(m: &Matrix, rows_mean: &[(String, f64)], predicted: &Predicted) -> Vec<Plot> {
    let mut plots = fig45(m, predicted);
    plots.push(fig6(rows_mean));
    let fig7: Vec<Series> = POLICIES
        .iter()
        .filter_map(|p| {
            m.cell(*p, Scenario::Fig7, 0)
                .map(|c| series_of(c.first(), p.name()))
        })
        .collect();
    if !fig7.is_empty() {
        plots.push(plot(
            "fig7-nice4",
            "Fig. 7 redrawn: a nice-4 writer alone, vanilla vs governed",
            time_axis(),
            lat_axis(),
            fig7,
        ));
    }
    for p in POLICIES {
        if let Some(c) = m.cell(p, Scenario::RtLow, 0) {
            plots.push(dirty_plot(p, c));
        }
    }
    plots
}
