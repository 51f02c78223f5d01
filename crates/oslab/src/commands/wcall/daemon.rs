//! `oslab wcall daemon`: a governor programs join by name.

use std::time::Duration;

use oslab_wcall::cli::WcallDaemonArgs;
use oslab_wcall::rendezvous;
use oslab_wcall::service::Access;

use super::governor::{described, options, start};
use crate::failure::{CmdResult, Failure};

pub fn run(a: WcallDaemonArgs) -> CmdResult {
    // any user's programs may join root's daemon (docs/wcall.md, "The trust
    // boundary")
    let opts = options(&a.policy, Access::Shared)?;
    rendezvous::check_name(&a.name).map_err(|e| Failure::usage(format!("--name: {e}")))?;
    if rendezvous::discover()
        .iter()
        .any(|f| f.name == a.name && f.uid == oslab_sys::process::uid())
    {
        return Err(Failure::runtime(format!(
            "a governor named '{}' is already running (see `oslab wcall status`)",
            a.name
        )));
    }
    let g = start(&a.name, opts)?;
    eprintln!(
        "oslab wcall: governor '{}' ({}) running as pid {}; govern programs with `oslab wcall run -- CMD` (or --name {} when several run); Ctrl-C stops it",
        a.name,
        opts.policy.name(),
        std::process::id(),
        a.name
    );
    eprintln!("oslab wcall: {}", described(&g, &opts));
    let end = a
        .duration
        .map(|d| oslab_sys::clock::monotonic_ns() + (d.max(0.0) * 1e9) as u64);
    let every = Duration::from_secs_f64(if a.every > 0.0 {
        a.every.min(3600.0)
    } else {
        1.0
    });
    loop {
        std::thread::sleep(every);
        if a.every > 0.0 {
            eprintln!(
                "{}",
                oslab_report::wcall::status_line(&oslab_sys::clock::local_hms(), &g.snapshot())
            );
        }
        if end.is_some_and(|e| oslab_sys::clock::monotonic_ns() >= e) {
            break;
        }
    }
    let s = g.finish();
    eprint!("{}", oslab_report::wcall::summary(&s));
    Ok(0)
}
