//! A user's command run by oslab (`wcall run`, `tweak -- CMD`), the way `timeout`
//! runs one: in its own process group, SIGINT, SIGTERM and SIGHUP passed on to that
//! group, oslab waiting for it and leaving with its status. If oslab itself is
//! killed, the command gets SIGTERM (PR_SET_PDEATHSIG), as on a hang-up.

use std::os::unix::process::ExitStatusExt;
use std::process::Command;

use oslab_sys::signals::{OnParentDeath, child_of_oslab};

use crate::failure::Failure;

/// Runs `cmd` to its end; its exit code, or 128 + the signal that ended it.
pub fn run_forwarding(cmd: &mut Command, program: &str) -> Result<i32, Failure> {
    run_forwarding_with(cmd, program, |_| {}, |_| {})
}

/// [`run_forwarding`], calling `started` with the command's pid once it runs, and
/// `exited` once it has exited but before it is reaped.
pub fn run_forwarding_with(
    cmd: &mut Command,
    program: &str,
    started: impl FnOnce(u32),
    exited: impl FnOnce(u32),
) -> Result<i32, Failure> {
    let mut child = crate::guard::spawn_forwarding(child_of_oslab(cmd, OnParentDeath::Terminate))
        .map_err(|e| Failure::runtime(format!("cannot run '{program}': {e}")))?;
    started(child.id());
    wait_unreaped(child.id());
    exited(child.id());
    let status = child.wait();
    crate::guard::stop_forwarding();
    let status = status.map_err(|e| Failure::runtime(format!("waiting for '{program}': {e}")))?;
    Ok(exit_code(status))
}

/// Waits until child `pid` has exited, without reaping it (waitid with WNOWAIT):
/// until it is reaped the kernel keeps its counts (/proc/PID/io) to read.
fn wait_unreaped(pid: u32) {
    // a failure other than an interruption (no such child) just moves on to the
    // ordinary wait, which reports it
    while !oslab_sys::process::wait_exited_unreaped(pid) {}
}

/// A shell's convention for a child's status.
pub fn exit_code(status: std::process::ExitStatus) -> i32 {
    match (status.code(), status.signal()) {
        (Some(c), _) => c,
        (None, Some(s)) => 128 + s,
        (None, None) => 1,
    }
}
