//! Which programs the write-back tracer puts where a file call begins and ends,
//! and how it splits a blocked stretch from the wait for a CPU after it: the
//! choices a caller asks for and what the kernel let it attach.

/// Where a watched call is seen to begin and end.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CallHooks {
    /// The file systems' functions where the kernel allows programs on them
    /// (fentry/fexit), else the system call tracepoints.
    Auto,
    /// The file systems' read, write and sync functions only (fails where the
    /// kernel refuses fentry programs).
    Functions,
    /// The system call tracepoints (sys_enter, sys_exit): every system call of
    /// the machine runs a program.
    Syscalls,
}

/// Where the run-queue part of a blocked stretch (woken, waiting for a CPU)
/// comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RunQueue {
    /// The task's own count where the kernel keeps one, else the wake-ups.
    Auto,
    /// The task's run_delay (CONFIG_SCHED_INFO), read when it next leaves the
    /// CPU or ends its call: no program on wake-ups.
    Counters,
    /// A program on sched_wakeup notes when the task was woken.
    Wakeups,
}

/// The set of call programs attached.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CallSet {
    /// fentry/fexit on these kernel functions.
    Functions(Vec<String>),
    /// sys_enter and sys_exit; why the functions were not used, where they
    /// were tried.
    Syscalls(Option<String>),
}

/// What the write-back tracer attached.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Attached {
    pub calls: CallSet,
    /// The run-queue part of blocked stretches from the tasks' own counters
    /// (no program on wake-ups).
    pub run_queue_from_counters: bool,
}

impl Attached {
    /// One sentence for the user: which set, and why not the other.
    pub fn describe(&self) -> String {
        let calls = match &self.calls {
            CallSet::Functions(names) => format!(
                "file calls traced at the file system functions {} (fentry/fexit: a system call on no such file runs no program)",
                names.join(", ")
            ),
            CallSet::Syscalls(None) => {
                "file calls traced at the system call tracepoints (sys_enter/sys_exit: every system call runs a program)".to_string()
            }
            CallSet::Syscalls(Some(why)) => format!(
                "file calls traced at the system call tracepoints (sys_enter/sys_exit: every system call runs a program), as programs on the file system functions did not load: {why}"
            ),
        };
        let queue = if self.run_queue_from_counters {
            "the wait for a CPU after a sleep from each task's run_delay (no program on wake-ups)"
        } else {
            "the wait for a CPU after a sleep from a program on every wake-up"
        };
        format!("{calls}; {queue}")
    }
}

/// What a loaded tracer reports back: what it could not trace and what it
/// attached.
#[derive(Debug, Clone, Default)]
pub struct Loaded {
    pub limits: Vec<String>,
    pub attached: Option<Attached>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_description_names_the_set_and_why_the_functions_were_not_used() {
        let a = Attached {
            calls: CallSet::Syscalls(Some("Operation not permitted".into())),
            run_queue_from_counters: true,
        };
        let d = a.describe();
        assert!(d.contains("system call tracepoints"), "{d}");
        assert!(d.contains("did not load: Operation not permitted"), "{d}");
        assert!(d.contains("run_delay"), "{d}");
        let a = Attached {
            calls: CallSet::Functions(vec!["ext4_file_read_iter".into()]),
            run_queue_from_counters: false,
        };
        let d = a.describe();
        assert!(d.contains("ext4_file_read_iter (fentry/fexit"), "{d}");
        assert!(d.contains("every wake-up"), "{d}");
    }
}
