//! `oslab wcall run`: a program under the governor.

use oslab_wcall::cli::WcallRunArgs;
use oslab_wcall::launch;
use oslab_wcall::rendezvous::{self, Found, NotJoinable};
use oslab_wcall::service::Access;
use oslab_wcall::shm::wire::{self, Ask, Request};

use super::governor::{described, options, start};
use crate::failure::{CmdResult, Failure};

/// How long `wcall run` waits for a governor whose socket is there to answer,
/// to find it and to each request: a daemon that real-time writers keep off the
/// CPU answers late.
const PATIENCE: std::time::Duration = std::time::Duration::from_secs(10);

/// The governor `wcall run` uses: the one named, the one daemon running, or one
/// of its own (with a word on what that means).
fn choose_governor(a: &WcallRunArgs) -> Result<Option<Found>, Failure> {
    if a.private {
        return Ok(None);
    }
    let chosen = match &a.name {
        Some(name) => rendezvous::find(name.as_str(), PATIENCE).map_err(|e| match e {
            NotJoinable::NotRunning => Failure::runtime(format!(
                "no governor named '{name}' is running (start one with `oslab wcall daemon --name {name}`)"
            )),
            NotJoinable::BadName(why) => Failure::usage(format!("--name: {why}")),
            NotJoinable::Refused(why) => {
                Failure::runtime(format!("cannot join governor '{name}': {why}"))
            }
            NotJoinable::NoAnswer(why) => Failure::runtime(format!(
                "governor '{name}' did not answer within {} s ({why}); is its daemon starved of CPU?",
                PATIENCE.as_secs()
            )),
        })?,
        None => {
            let daemons: Vec<Found> = rendezvous::discover()
                .into_iter()
                .filter(|f| !f.name.starts_with("run-"))
                .collect();
            match daemons.len() {
            0 => {
                eprintln!(
                    "oslab wcall: no governor daemon runs, so this command gets a governor of its own, which sees only its own writers; to govern several programs together start `oslab wcall daemon` first and run each with `oslab wcall run`"
                );
                return Ok(None);
            }
            1 => daemons.into_iter().next().expect("one"),
            _ => {
                let names: Vec<&str> = daemons.iter().map(|f| f.name.as_str()).collect();
                return Err(Failure::usage(format!(
                    "several governors run ({}): name one with --name, or use --private",
                    names.join(", ")
                )));
            }
            }
        }
    };
    let mut given = a.policy.given();
    if a.shared_socket {
        given.push("--shared-socket");
    }
    if !given.is_empty() {
        return Err(Failure::usage(format!(
            "{} cannot apply: governor '{}' is already running with its own settings; drop {} or use --private",
            given.join(", "),
            chosen.name,
            if given.len() == 1 { "it" } else { "them" }
        )));
    }
    eprintln!(
        "oslab wcall: joining governor '{}' (pid {}{})",
        chosen.name,
        chosen.pid,
        if chosen.uid == 0 && oslab_sys::process::uid() != 0 {
            ", root's"
        } else {
            ""
        }
    );
    Ok(Some(chosen))
}

/// Asks the governor at `socket` for something this launcher needs.
fn ask(socket: &std::path::Path, ask: Ask, group: u32, pid: u32) -> Result<(), String> {
    let req = Request { ask, group, pid };
    let a = wire::ask(socket, &req, PATIENCE).map_err(|e| {
        format!(
            "the governor at {} did not answer within {} s: {e}",
            socket.display(),
            PATIENCE.as_secs()
        )
    })?;
    if a.reply.ok {
        Ok(())
    } else {
        Err(a.reply.reason)
    }
}

pub fn run(a: WcallRunArgs) -> CmdResult {
    let group = a.group.number();
    let lib = launch::preload_path().map_err(Failure::runtime)?;
    let program = &a.command[0];
    let Some(path) = launch::resolve(program) else {
        return Err(Failure::usage(format!("no program '{program}' found")));
    };
    let is_static = launch::is_static(&path) == Some(true);
    if is_static {
        eprintln!(
            "oslab wcall: {} is statically linked: the interposer cannot reach it, so its writes cannot be held; it is registered with the governor, which pushes the files it dirties where the kernel's records show them",
            path.display()
        );
    }
    let (own, socket) = match choose_governor(&a)? {
        Some(found) => {
            // the programs we start join in the group asked for, as far as the
            // governor grants it (docs/wcall.md, "The trust boundary")
            ask(&found.socket, Ask::Launcher, group, 0).map_err(|why| {
                Failure::runtime(format!(
                    "governor '{}' refused this launcher: {why}",
                    found.name
                ))
            })?;
            (None, found.socket)
        }
        None => {
            // the command's own governor is its user's alone unless asked
            let access = if a.shared_socket {
                Access::Shared
            } else {
                Access::Owner
            };
            let opts = options(&a.policy, access);
            let g = start(&format!("run-{}", std::process::id()), opts.clone())?;
            g.launch_as(group)
                .map_err(|e| Failure::runtime(format!("cannot launch under the governor: {e}")))?;
            eprintln!("oslab wcall: {}", described(&g, &opts));
            let p = g.socket().to_path_buf();
            (Some(g), p)
        }
    };
    let mut cmd = std::process::Command::new(&path);
    cmd.args(&a.command[1..]);
    for (k, v) in launch::env(&lib, &socket) {
        cmd.env(k, v);
    }
    // a static program cannot join itself: we ask for it, and the coordinator
    // checks that it is our child, of our user
    let code = crate::child::run_forwarding_with(
        &mut cmd,
        program,
        |pid| {
            if is_static && let Err(why) = ask(&socket, Ask::Launched, group, pid) {
                eprintln!("oslab wcall: {program} (pid {pid}) is not governed: {why}");
            }
        },
        // counted while the kernel still has its counts: its figures are whole
        |pid| {
            let _ = ask(&socket, Ask::Count, group, pid);
        },
    )?;
    if let Some(g) = own {
        let cgroups = g.cgroups().describe();
        let s = g.finish();
        eprint!("{}", oslab_report::wcall::summary(&s));
        eprintln!("  {cgroups}");
    }
    Ok(code)
}
