//! `oslab restore`

use oslab_sys::journal::{journal_dir, restore_orphans};

use crate::CmdResult;
use crate::cli::RestoreArgs;
use crate::output::print;

/// One line on stderr while an interrupted run's changes wait to be undone.
pub fn warn_if_pending() {
    let (files, entries) = oslab_sys::journal::pending_orphans(&journal_dir());
    if files > 0 {
        eprintln!(
            "oslab: an interrupted oslab run left changes ({entries} {}): run `oslab restore`",
            if entries == 1 { "entry" } else { "entries" }
        );
    }
}

pub fn run(a: RestoreArgs) -> CmdResult {
    let dir = journal_dir();
    let report = restore_orphans(&dir, a.all);
    let mut failed = 0;
    let mut text = String::new();
    for j in &report.restored {
        text.push_str(&format!(
            "journal of pid {} ({}), {}:\n",
            j.pid,
            j.command,
            j.path.display()
        ));
        for o in &j.outcomes {
            match &o.result {
                Ok(()) => text.push_str(&format!("  undone: {}\n", o.description)),
                Err(e) => {
                    failed += 1;
                    text.push_str(&format!("  FAILED: {}: {e}\n", o.description));
                }
            }
        }
    }
    for (p, pid) in &report.live {
        text.push_str(&format!(
            "left alone: {} belongs to oslab pid {pid}, still running (use --all to undo it anyway)\n",
            p.display()
        ));
    }
    for (p, e) in &report.unreadable {
        text.push_str(&format!("cannot read {}: {e}\n", p.display()));
    }
    if report.restored.is_empty() && report.live.is_empty() && report.unreadable.is_empty() {
        text.push_str("nothing to restore\n");
    }
    print(&text);
    Ok(if failed > 0 || !report.unreadable.is_empty() {
        1
    } else {
        0
    })
}
