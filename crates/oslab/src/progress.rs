//! A progress bar on stderr, only when stderr is a terminal: "experiment i of n",
//! the experiment, how far it is, and when the whole run should end, from each
//! experiment's expected duration (`oslab list`) and how fast this one goes.

use std::io::IsTerminal;
use std::time::Instant;

use indicatif::{ProgressBar, ProgressStyle};
use oslab_harness::Progress;

/// Where a bar stands in its run: experiment `index` (from 1) of `count`, expected
/// to take `expected_s`, with `after_s` expected for the experiments after it.
#[derive(Debug, Clone, Copy)]
pub struct Place {
    pub index: usize,
    pub count: usize,
    pub expected_s: f64,
    pub after_s: f64,
}

/// The places of experiments expected to take `durations` seconds, in order.
pub fn places(durations: &[f64]) -> Vec<Place> {
    let count = durations.len();
    (0..count)
        .map(|i| Place {
            index: i + 1,
            count,
            expected_s: durations[i],
            after_s: durations[i + 1..].iter().sum(),
        })
        .collect()
}

/// Seconds until the run ends: what is left of this experiment (from its pace once
/// a tenth is done, else from its expected duration) plus the ones after it.
pub fn remaining_s(p: &Place, elapsed_s: f64, done: f64) -> f64 {
    let this = if done >= 0.1 {
        elapsed_s * (1.0 - done) / done
    } else {
        (p.expected_s - elapsed_s).max(p.expected_s * (1.0 - done))
    };
    this.max(0.0) + p.after_s
}

/// "about 3 min", "about 40 s", "under 5 s".
pub fn eta_text(s: f64) -> String {
    if s < 5.0 {
        "under 5 s".into()
    } else if s >= 90.0 {
        format!("about {:.0} min", s / 60.0)
    } else {
        format!("about {:.0} s", (s / 5.0).ceil() * 5.0)
    }
}

pub struct Bar {
    bar: Option<ProgressBar>,
    place: Place,
    start: Instant,
}

impl Bar {
    pub fn new(name: &str, place: Place) -> Bar {
        let start = Instant::now();
        if !std::io::stderr().is_terminal() {
            return Bar {
                bar: None,
                place,
                start,
            };
        }
        let bar = ProgressBar::new(1000);
        bar.set_style(
            ProgressStyle::with_template("{prefix} [{bar:24}] {percent:>3}% {elapsed:>4} {msg}")
                .expect("valid template")
                .progress_chars("=> "),
        );
        bar.set_prefix(if place.count > 1 {
            format!("experiment {} of {}: {name}", place.index, place.count)
        } else {
            name.to_string()
        });
        let b = Bar {
            bar: Some(bar),
            place,
            start,
        };
        b.fraction(0.0);
        b
    }

    pub fn finish(&self) {
        if let Some(b) = &self.bar {
            b.finish_and_clear();
        }
    }

    fn eta(&self, done: f64) -> String {
        let left = remaining_s(&self.place, self.start.elapsed().as_secs_f64(), done);
        format!("· all done in {}", eta_text(left))
    }
}

impl Progress for Bar {
    fn stage(&self, message: &str) {
        if let Some(b) = &self.bar {
            let done = b.position() as f64 / 1000.0;
            b.set_message(format!("{message} {}", self.eta(done)));
        }
    }

    fn fraction(&self, done: f64) {
        if let Some(b) = &self.bar {
            let done = done.clamp(0.0, 1.0);
            b.set_position((done * 1000.0) as u64);
            b.set_message(self.eta(done));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_experiment_knows_its_place_and_what_follows() {
        let p = places(&[10.0, 20.0, 30.0]);
        assert_eq!((p[0].index, p[0].count), (1, 3));
        assert_eq!(p[0].after_s, 50.0);
        assert_eq!(p[2].after_s, 0.0);
    }

    #[test]
    fn the_end_comes_from_the_expected_durations_then_from_the_pace() {
        let p = places(&[10.0, 20.0, 30.0])[1];
        // at the start: this one's 20 s and the 30 s after it
        assert_eq!(remaining_s(&p, 0.0, 0.0), 50.0);
        // half done in 5 s: 5 s more at this pace
        assert_eq!(remaining_s(&p, 5.0, 0.5), 35.0);
        // slower than expected with little done: never below what is left of it
        assert_eq!(remaining_s(&p, 25.0, 0.05), 19.0 + 30.0);
        assert_eq!(eta_text(200.0), "about 3 min");
        assert_eq!(eta_text(41.0), "about 45 s");
        assert_eq!(eta_text(0.0), "under 5 s");
    }
}
