//! `oslab watch --from FILE`: a recording made with `--record`, replayed through the
//! same derivation and outputs as a live run (sar -f).

use std::net::TcpListener;
use std::path::Path;
use std::time::Duration;

use oslab_sys::infile;
use oslab_sys::sar::Snapshot;
use oslab_sys::sar_record::Recording;

use super::{Shown, one_file, serve};
use crate::failure::{CmdResult, Failure};

/// The recording's text. `json` (the --json file) must not be the recording
/// itself: opening it for writing would empty what is to be replayed.
pub(super) fn read(path: &Path, json: Option<&Path>) -> Result<String, Failure> {
    if let Some(out) = json
        && same_file(path, out)
    {
        return Err(Failure::usage(format!(
            "--json {}: that is the recording --from replays; give another file",
            out.display()
        )));
    }
    Ok(infile::read_text(path, infile::DEFAULT_MAX_INPUT)?)
}

/// Whether the recording `from` (`-`: standard input) and the output `out` are
/// one file.
fn same_file(from: &Path, out: &Path) -> bool {
    let from = if infile::is_stdin(from) {
        Path::new("/dev/stdin")
    } else {
        from
    };
    one_file(from, out)
}

/// The recording in `text`, checked whole, or why it is not one (exit 2). At least
/// two samples: an interval needs both its ends.
pub(super) fn check<'t>(text: &'t str, path: &Path) -> Result<Recording<'t>, Failure> {
    let name = infile::display_name(path);
    let r = Recording::check(text, &name).map_err(Failure::usage)?;
    if r.len() < 2 {
        return Err(Failure::usage(format!(
            "{name} holds {} sample(s): an interval needs two",
            r.len()
        )));
    }
    Ok(r)
}

/// Shows every interval of `r` (at most `count`); with `listener`, then serves the
/// last sample's metrics until interrupted.
pub(super) fn replay(
    r: &Recording,
    mut shown: Shown,
    count: Option<u64>,
    listener: Option<TcpListener>,
) -> CmdResult {
    let h = &r.header;
    // the header's names come from the file: shown escaped, at most 64 characters
    let shown_name = |s: &str| -> String {
        let e = oslab_term_text::one_line(&s.chars().take(64).collect::<String>());
        if e.is_empty() { "?".into() } else { e }
    };
    eprintln!(
        "oslab: replaying {} samples of {} (Linux {}), taken every {} s",
        r.len(),
        shown_name(&h.host),
        shown_name(&h.kernel),
        h.interval_s
    );
    let mut samples = r.samples();
    let Some(first) = samples.next() else {
        return shown.close();
    };
    let origin = first.snapshot.t_ns;
    let mut prev: Snapshot = first.restored();
    for (i, s) in samples.enumerate() {
        if count.is_some_and(|c| i as u64 >= c) {
            break;
        }
        let cur = s.restored();
        shown.interval(&prev, &cur, origin, s.unix_time_s);
        prev = cur;
    }
    let (Some(l), Some(latest)) = (listener, shown.latest.clone()) else {
        return shown.close();
    };
    shown.serve_counters(&prev);
    shown.close()?;
    serve(l, latest)?;
    eprintln!("oslab: the replay is done; serving its last interval's metrics until interrupted");
    loop {
        std::thread::sleep(Duration::from_secs(3600));
    }
}
