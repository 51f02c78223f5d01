//! How wide terminal text may be: a terminal's own width, else `$COLUMNS`; one line
//! per row with `--wide` or when standard output is a pipe or a file without
//! `$COLUMNS` (as `ls` and `ps` do, so that grep and awk see whole rows).

use std::sync::atomic::{AtomicBool, Ordering};

use oslab_report::table::Width;

static WIDE: AtomicBool = AtomicBool::new(false);

/// `--wide`: every table row on one line, whatever the terminal.
pub fn set_wide(wide: bool) {
    WIDE.store(wide, Ordering::Relaxed);
}

/// The width for text printed on standard output now.
pub fn width() -> Width {
    if WIDE.load(Ordering::Relaxed) {
        return None;
    }
    let columns = std::env::var("COLUMNS")
        .ok()
        .and_then(|c| c.trim().parse::<usize>().ok());
    let tty = console::Term::stdout()
        .size_checked()
        .map(|(_, cols)| usize::from(cols));
    tty.or(columns).filter(|w| *w >= 40)
}
