//! `oslab wcall status`: the governors running on this machine.

use clap::Args;
use oslab_report::wcall::Running;
use oslab_term_text::one_line;
use oslab_wcall::rendezvous::{self, GovernorName};
use oslab_wcall::view::snapshot_of;

use crate::failure::{CmdResult, Failure};
use crate::output::print;

#[derive(Debug, Args)]
pub struct WcallStatusArgs {
    /// Only the governor of this name (exit status 1 when it is not running, as
    /// a script waiting for it needs)
    #[arg(long, value_name = "NAME", value_parser = |s: &str| s.parse::<GovernorName>())]
    pub name: Option<GovernorName>,
    #[command(flatten)]
    pub json: crate::args::JsonArg,
}

pub fn run(a: WcallStatusArgs) -> CmdResult {
    a.json.check()?;
    let found: Vec<_> = rendezvous::discover()
        .into_iter()
        .filter(|f| a.name.as_ref().is_none_or(|n| f.name == n.as_str()))
        .collect();
    let mut snaps = Vec::new();
    for f in &found {
        match f.board() {
            // the coordinator's pid as the kernel named the socket's peer
            Ok(b) => snaps.push((
                f,
                snapshot_of(b.board(), oslab_sys::clock::monotonic_ns(), f.pid),
            )),
            Err(e) => eprintln!(
                "oslab wcall: cannot read governor '{}' (pid {}): {}",
                one_line(&f.name),
                f.pid,
                one_line(&e.to_string())
            ),
        }
    }
    let v: Vec<_> = snaps
        .iter()
        .map(|(f, s)| serde_json::json!({"name": f.name, "pid": f.pid, "status": s}))
        .collect();
    if a.json.write(&v)? {
        return named_or_any(&a, snaps.len());
    }
    let governors: Vec<Running> = snaps
        .iter()
        .map(|(f, s)| Running {
            name: &f.name,
            pid: f.pid,
            snapshot: s,
        })
        .collect();
    if a.name.is_none() || !snaps.is_empty() {
        print(&oslab_report::wcall::status(&governors));
    }
    named_or_any(&a, snaps.len())
}

/// 0, unless the governor asked for by name is not running (or not readable).
fn named_or_any(a: &WcallStatusArgs, read: usize) -> CmdResult {
    match &a.name {
        Some(name) if read == 0 => Err(Failure::nothing_found(format!(
            "no governor named '{name}' is running (see `oslab wcall status` for those that are)"
        ))),
        _ => Ok(0),
    }
}
