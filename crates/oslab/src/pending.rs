//! The notice that an interrupted oslab run left changes to undo.

use oslab_sys::journal::{pending_orphans, places};

/// One line on stderr while an interrupted run's changes wait to be undone (and,
/// once, a sentence for each journal folder refused).
pub fn warn_if_pending() {
    let (files, entries) = places()
        .all
        .iter()
        .map(|d| pending_orphans(d))
        .fold((0, 0), |(f, e), (df, de)| (f + df, e + de));
    if files > 0 {
        eprintln!(
            "oslab: an interrupted oslab run left changes ({entries} {}): run `oslab restore`",
            if entries == 1 { "entry" } else { "entries" }
        );
    }
}
