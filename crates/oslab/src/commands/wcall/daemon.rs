//! `oslab wcall daemon`: a governor programs join by name.

use std::time::Duration;

use oslab_wcall::cli::WcallDaemonArgs;
use oslab_wcall::rendezvous;
use oslab_wcall::service::Access;

use super::governor::{described, options, start};
use crate::failure::{CmdResult, Failure};

/// A line for the log when the sync guard went on or off since it was `was`.
fn guard_change(was: Option<u64>, now: &oslab_model::governor::GuardView) -> Option<String> {
    match (was, now.acting_bytes) {
        (None, Some(_)) => Some(oslab_report::wcall::guard_line(now)),
        (Some(_), None) => Some(match now.last_durable_s {
            Some(s) if now.setting == "auto" => {
                format!("sync guard: off (no durable write of rt-high for {s:.0} s)")
            }
            _ => "sync guard: off (no rt-high process governed)".into(),
        }),
        _ => None,
    }
}

pub fn run(a: WcallDaemonArgs) -> CmdResult {
    // any user's programs may join root's daemon (docs/wcall.md, "The trust
    // boundary")
    let mut opts = options(&a.policy, Access::Shared);
    opts.services = a.service.clone();
    if rendezvous::discover()
        .iter()
        .any(|f| f.name == a.name.as_str() && f.uid == oslab_sys::process::uid())
    {
        return Err(Failure::runtime(format!(
            "a governor named '{}' is already running (see `oslab wcall status`)",
            a.name
        )));
    }
    let g = start(a.name.as_str(), opts.clone())?;
    eprintln!(
        "oslab wcall: governor '{}' ({}) running as pid {}; govern programs with `oslab wcall run -- CMD` (or --name {} when several run); Ctrl-C stops it",
        a.name,
        opts.policy.name(),
        std::process::id(),
        a.name
    );
    eprintln!("oslab wcall: {}", described(&g, &opts));
    // a systemd Type=notify unit starts the services it governs after this
    if let Err(e) = oslab_sys::service_manager::notify_ready() {
        eprintln!("oslab wcall: cannot tell the service manager it is ready: {e}");
    }
    let end = a
        .duration
        .map(|d| oslab_sys::clock::monotonic_ns() + (d.max(0.0) * 1e9) as u64);
    let every = (a.every > 0.0).then(|| Duration::from_secs_f64(a.every.min(3600.0)));
    // looked at every second at least, so the guard's changes are logged as
    // they happen
    let poll = every.map_or(Duration::from_secs(1), |e| e.min(Duration::from_secs(1)));
    let mut next_line = oslab_sys::clock::monotonic_ns();
    let mut guard_was: Option<u64> = None;
    loop {
        std::thread::sleep(poll);
        let now = oslab_sys::clock::monotonic_ns();
        let snapshot = g.snapshot();
        if let Some(line) = guard_change(guard_was, &snapshot.guard) {
            eprintln!("{} oslab wcall: {line}", oslab_sys::clock::local_hms());
        }
        guard_was = snapshot.guard.acting_bytes;
        if let Some(e) = every
            && now >= next_line
        {
            next_line = now + e.as_nanos() as u64;
            eprintln!(
                "{}",
                oslab_report::wcall::status_line(&oslab_sys::clock::local_hms(), &snapshot)
            );
        }
        if end.is_some_and(|e| now >= e) {
            break;
        }
    }
    super::governor::say_returned(&g.returner()());
    let s = g.finish();
    eprint!("{}", oslab_report::wcall::summary(&s));
    Ok(0)
}
