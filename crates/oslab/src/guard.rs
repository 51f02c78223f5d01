//! Undo of system changes on every way out: normal exit, signals, panics.

use std::process::{Child, Command};
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU32, Ordering};

use oslab_sys::journal;

fn report(outcomes: &[journal::UndoOutcome]) {
    for o in outcomes {
        match &o.result {
            Ok(()) => eprintln!("oslab: undone: {}", o.description),
            Err(e) => eprintln!(
                "oslab: could not undo '{}': {e}; run 'oslab restore' as root",
                o.description
            ),
        }
    }
}

type Hook = Box<dyn Fn() + Send>;

static ON_INTERRUPT: std::sync::Mutex<Vec<Hook>> = std::sync::Mutex::new(Vec::new());

/// Runs `f` when oslab is interrupted, before it exits (e.g. to tell governed
/// programs that their governor is stopping).
pub fn on_interrupt(f: impl Fn() + Send + 'static) {
    if let Ok(mut v) = ON_INTERRUPT.lock() {
        v.push(Box::new(f));
    }
}

/// Whether the running command finishes its work on the first signal (writes
/// what it has, then exits) instead of exiting at once; and whether it was asked.
static FINISH_ON_SIGNAL: AtomicBool = AtomicBool::new(false);
static FINISH_ASKED: AtomicBool = AtomicBool::new(false);
/// The signal that asked it.
static FINISH_SIGNAL: AtomicI32 = AtomicI32::new(0);

/// From now on the first SIGINT or SIGTERM asks the command to finish (see
/// [`finish_asked`]); a second one ends oslab at once, undoing its changes.
pub fn finish_on_signal() {
    FINISH_ON_SIGNAL.store(true, Ordering::SeqCst);
}

/// The exit code of a command a signal asked to finish (128 + the signal, as a
/// shell reports it and as oslab exits on a signal elsewhere), or None.
pub fn finish_asked() -> Option<i32> {
    FINISH_ASKED
        .load(Ordering::SeqCst)
        .then(|| 128 + FINISH_SIGNAL.load(Ordering::SeqCst))
}

/// The process group of a command oslab runs for the user, while it runs: signals
/// are passed on to it instead of ending oslab (0: none; [`STARTING`]: being
/// started).
static FORWARD_TO: AtomicU32 = AtomicU32::new(0);

/// A command is being started: its process group is not known yet.
const STARTING: u32 = u32::MAX;

/// Starts `cmd` in its own process group and from then on passes SIGINT, SIGTERM
/// and SIGHUP to that group; oslab goes on waiting for it. A signal that arrives
/// while it starts waits for it to run and is passed on too: the command may
/// already run (and be seen running) before spawn returns.
pub fn spawn_forwarding(cmd: &mut Command) -> std::io::Result<Child> {
    /// Never leaves the signal thread waiting for a start that ended in a panic.
    struct Started(u32);
    impl Drop for Started {
        fn drop(&mut self) {
            FORWARD_TO.store(self.0, Ordering::SeqCst);
        }
    }
    let mut started = Started(0);
    FORWARD_TO.store(STARTING, Ordering::SeqCst);
    let child = std::os::unix::process::CommandExt::process_group(cmd, 0).spawn();
    started.0 = child.as_ref().map_or(0, |c| c.id());
    child
}

pub fn stop_forwarding() {
    FORWARD_TO.store(0, Ordering::SeqCst);
}

/// The group to pass a signal to, once a command being started runs.
fn forward_target() -> u32 {
    loop {
        match FORWARD_TO.load(Ordering::SeqCst) {
            STARTING => std::thread::sleep(std::time::Duration::from_millis(1)),
            pgid => return pgid,
        }
    }
}

fn on_signal(sig: i32) {
    let pgid = forward_target();
    if pgid != 0 && oslab_sys::process::signal_group(pgid, sig).is_ok() {
        eprintln!(
            "\noslab: passed signal {sig} on to the command (process group {pgid}); waiting for it"
        );
        return;
    }
    if FINISH_ON_SIGNAL.load(Ordering::SeqCst) && !FINISH_ASKED.load(Ordering::SeqCst) {
        FINISH_SIGNAL.store(sig, Ordering::SeqCst);
        FINISH_ASKED.store(true, Ordering::SeqCst);
        eprintln!("\noslab: finishing (signal {sig}); a second one stops at once");
        return;
    }
    if let Ok(v) = ON_INTERRUPT.lock() {
        for f in v.iter() {
            f();
        }
    }
    let outcomes = journal::finish_global();
    if outcomes.is_empty() {
        eprintln!("\noslab: interrupted (signal {sig})");
    } else {
        eprintln!("\noslab: interrupted (signal {sig}); undoing system changes");
    }
    report(&outcomes);
    std::process::exit(128 + sig);
}

/// Installs the signal watcher and the panic hook. Call first in `main`.
pub fn install() {
    oslab_sys::signals::install(on_signal);
    std::panic::set_hook(Box::new(|info| {
        let msg = info
            .payload()
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| info.payload().downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "unknown panic".into());
        let at = info
            .location()
            .map(|l| format!(" at {}:{}", l.file(), l.line()))
            .unwrap_or_default();
        eprintln!("oslab: internal error: {msg}{at}; please report it");
        report(&journal::finish_global());
    }));
}

/// Undoes outstanding changes and exits with `code`.
pub fn exit(code: i32) -> ! {
    report(&journal::finish_global());
    std::process::exit(code);
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The tests share the one forwarding target.
    static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

    #[test]
    fn a_signal_while_a_command_starts_waits_for_its_group() {
        let _one = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
        FORWARD_TO.store(STARTING, Ordering::SeqCst);
        let waiter = std::thread::spawn(forward_target);
        std::thread::sleep(std::time::Duration::from_millis(20));
        assert!(
            !waiter.is_finished(),
            "it must not fall back to ending oslab"
        );
        FORWARD_TO.store(4242, Ordering::SeqCst);
        assert_eq!(waiter.join().unwrap(), 4242);
        stop_forwarding();
        assert_eq!(forward_target(), 0);
    }

    #[test]
    fn a_command_that_cannot_start_leaves_signals_to_oslab() {
        let _one = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
        let r = spawn_forwarding(&mut Command::new("/nonexistent/oslab-test-program"));
        assert!(r.is_err());
        assert_eq!(forward_target(), 0);
    }
}
