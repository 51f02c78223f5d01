//! A progress bar on stderr, only when stderr is a terminal.

use std::io::IsTerminal;

use indicatif::{ProgressBar, ProgressStyle};
use oslab_lab::Progress;

pub struct Bar {
    bar: Option<ProgressBar>,
}

impl Bar {
    /// The bar of experiment `i` of `n`.
    pub fn new(prefix: &str, i: usize, n: usize) -> Bar {
        if !std::io::stderr().is_terminal() {
            return Bar { bar: None };
        }
        let bar = ProgressBar::new(1000);
        bar.set_style(
            ProgressStyle::with_template(
                "{prefix:>20} [{bar:30}] {percent:>3}% {elapsed:>4} {msg}",
            )
            .expect("valid template")
            .progress_chars("=> "),
        );
        bar.set_prefix(if n > 1 {
            format!("{i}/{n} {prefix}")
        } else {
            prefix.to_string()
        });
        Bar { bar: Some(bar) }
    }

    pub fn finish(&self) {
        if let Some(b) = &self.bar {
            b.finish_and_clear();
        }
    }
}

impl Progress for Bar {
    fn stage(&self, message: &str) {
        if let Some(b) = &self.bar {
            b.set_message(message.to_string());
        }
    }

    fn fraction(&self, done: f64) {
        if let Some(b) = &self.bar {
            b.set_position((done.clamp(0.0, 1.0) * 1000.0) as u64);
        }
    }
}
