//! Turning SIGINT, SIGTERM and SIGHUP into an orderly clean-up.
//!
//! The signals are blocked in the calling thread (call this first in `main`, before
//! any thread starts, so every thread inherits the mask) and a dedicated thread waits
//! for them with sigwait(2) and runs the handler there, in ordinary thread context
//! where taking locks and doing I/O is safe. Programs oslab starts get the default
//! mask back through [`unblock_in_child`].

const SIGNALS: [libc::c_int; 3] = [libc::SIGINT, libc::SIGTERM, libc::SIGHUP];

fn signal_set() -> libc::sigset_t {
    // SAFETY: sigemptyset initialises the set; sigaddset with valid signals.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        for s in SIGNALS {
            libc::sigaddset(&mut set, s);
        }
        set
    }
}

/// Blocks the signals and runs `handler(signal)` on a watcher thread when one arrives.
pub fn install(handler: fn(i32)) {
    let set = signal_set();
    // SAFETY: set is initialised; the old mask is not needed.
    unsafe { libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut()) };
    std::thread::Builder::new()
        .name("oslab-signals".into())
        .spawn(move || {
            loop {
                let mut sig: libc::c_int = 0;
                // SAFETY: set and sig are valid for the call.
                if unsafe { libc::sigwait(&set, &mut sig) } == 0 {
                    handler(sig);
                }
            }
        })
        .expect("spawn the signal thread");
}

/// Restores the default signal mask; for a child process between fork and exec, or
/// a forked worker that should die on Ctrl-C like any program.
pub fn unblock_in_child() {
    let set = signal_set();
    // SAFETY: async-signal-safe; set is initialised.
    unsafe { libc::pthread_sigmask(libc::SIG_UNBLOCK, &set, std::ptr::null_mut()) };
}

/// Prepares `cmd` as a child of oslab: it starts with the default signal mask (so
/// it dies on Ctrl-C like it would from a shell; oslab itself keeps the signals
/// blocked), and it is signalled when oslab dies, even by SIGKILL, so no program
/// oslab started outlives it unnoticed.
pub fn child_of_oslab(
    cmd: &mut std::process::Command,
    on_parent_death: OnParentDeath,
) -> &mut std::process::Command {
    use std::os::unix::process::CommandExt;
    let parent = std::process::id() as i32;
    let on_parent_death = on_parent_death.signal();
    // SAFETY: the closure makes only async-signal-safe calls (pthread_sigmask,
    // prctl, getppid, _exit).
    unsafe {
        cmd.pre_exec(move || {
            unblock_in_child();
            crate::process::die_with_parent(parent, on_parent_death);
            Ok(())
        })
    }
}

/// What a child of oslab gets when oslab dies.
/// SIGTERM, for crates that do not speak libc.
pub const TERM: i32 = libc::SIGTERM;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OnParentDeath {
    /// oslab's own probes and writers: nothing of theirs is worth keeping.
    Kill,
    /// A user's command (`oslab wcall run`, `oslab tweak`): it may want to clean up,
    /// as on a hang-up.
    Terminate,
}

impl OnParentDeath {
    fn signal(self) -> libc::c_int {
        match self {
            OnParentDeath::Kill => libc::SIGKILL,
            OnParentDeath::Terminate => libc::SIGTERM,
        }
    }
}

/// A forked worker's first steps: the default signal mask, and death with oslab.
pub fn forked_worker(parent: i32) {
    unblock_in_child();
    crate::process::die_with_parent(parent, libc::SIGKILL);
}
