//! `oslab restore`

use clap::Args;

use oslab_sys::journal::{RestoreReport, RestoredJournal, places, restore_orphans};
use oslab_term_text::one_line;

use crate::failure::CmdResult;
use crate::output::print;

#[derive(Debug, Args)]
pub struct RestoreArgs {
    /// Also undo journals of oslab processes that are still running
    #[arg(long)]
    pub all: bool,
}

/// How much of a command, a description or an error from a journal is printed.
const SHOWN: usize = 200;

/// Text from a journal, at most [`SHOWN`] characters: the journal's bound (which
/// escapes control characters), then the invisible ones escaped as well.
fn shown(text: &str) -> String {
    one_line(&oslab_sys::journal::shown(text, SHOWN))
}

fn describe(j: &RestoredJournal, text: &mut String) {
    text.push_str(&format!(
        "journal of pid {} ({}), {}:\n",
        j.pid,
        shown(&j.command),
        j.path.display()
    ));
    for o in &j.outcomes {
        let what = shown(&o.description);
        match &o.result {
            Ok(()) => text.push_str(&format!("  undone: {what}\n")),
            Err(e) => text.push_str(&format!("  FAILED: {what}: {}\n", shown(e))),
        }
    }
    for b in &j.bad_lines {
        text.push_str(&format!(
            "  line {} cannot be read: {}\n",
            b.number,
            one_line(&b.why)
        ));
    }
    if j.kept {
        text.push_str(&format!(
            "  kept {} with what could not be read or undone: look at it, then remove it or run `oslab restore` again\n",
            j.path.display()
        ));
    }
}

pub fn run(a: RestoreArgs) -> CmdResult {
    let places = places();
    let mut report = RestoreReport::default();
    for dir in &places.all {
        report.merge(restore_orphans(dir, a.all));
    }
    let mut text = String::new();
    for j in &report.restored {
        describe(j, &mut text);
    }
    for (p, pid) in &report.live {
        text.push_str(&format!(
            "left alone: {} belongs to oslab pid {pid}, still running (use --all to undo it anyway)\n",
            p.display()
        ));
    }
    for (p, why) in &report.unreadable {
        text.push_str(&format!("not read: {} {why}\n", p.display()));
    }
    if report.restored.is_empty() && report.live.is_empty() && report.unreadable.is_empty() {
        text.push_str("nothing to restore\n");
    }
    print(&text);
    // a refused folder was named on stderr when the places were found
    Ok(if report.needs_attention() || !places.refused.is_empty() {
        1
    } else {
        0
    })
}
