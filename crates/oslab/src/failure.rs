//! A command's failure: one sentence for the user and the exit code.

/// Exit codes (design.md): 0 ok, 1 runtime failure, 2 usage, 3 missing privileges.
pub const EXIT_RUNTIME: i32 = 1;
pub const EXIT_USAGE: i32 = 2;
pub const EXIT_PRIVILEGE: i32 = 3;

#[derive(Debug)]
pub struct Failure {
    pub code: i32,
    pub message: String,
}

impl Failure {
    pub fn usage(message: impl Into<String>) -> Failure {
        Failure {
            code: EXIT_USAGE,
            message: message.into(),
        }
    }

    pub fn runtime(message: impl Into<String>) -> Failure {
        Failure {
            code: EXIT_RUNTIME,
            message: message.into(),
        }
    }

    /// Nothing matched what was asked (no such run, machine or experiment, no
    /// results): one sentence and exit 1 everywhere, as grep's and ripgrep's "no
    /// match"; the question itself was well formed.
    pub fn nothing_found(message: impl Into<String>) -> Failure {
        Failure::runtime(message)
    }
}

/// A file the user named that was not read: a usage error, unless the system
/// failed while reading it.
impl From<oslab_sys::infile::InputError> for Failure {
    fn from(e: oslab_sys::infile::InputError) -> Self {
        if e.at_run_time {
            Failure::runtime(e.to_string())
        } else {
            Failure::usage(e.to_string())
        }
    }
}

/// What a command's `run` returns: its exit code, or the failure to report.
pub type CmdResult = Result<i32, Failure>;
