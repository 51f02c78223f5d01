//! Undo of system changes on every way out: normal exit, signals, panics.

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

/// The process group of a command oslab runs for the user, while it runs: signals
/// are passed on to it instead of ending oslab (0: none).
static FORWARD_TO: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);

/// From now on SIGINT, SIGTERM and SIGHUP go to the process group `pgid`; oslab
/// goes on waiting for it.
pub fn forward_signals_to(pgid: u32) {
    FORWARD_TO.store(pgid, std::sync::atomic::Ordering::SeqCst);
}

pub fn stop_forwarding() {
    FORWARD_TO.store(0, std::sync::atomic::Ordering::SeqCst);
}

fn on_signal(sig: i32) {
    let pgid = FORWARD_TO.load(std::sync::atomic::Ordering::SeqCst);
    if pgid != 0 && oslab_sys::process::signal_group(pgid, sig).is_ok() {
        eprintln!(
            "\noslab: passed signal {sig} on to the command (process group {pgid}); waiting for it"
        );
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
