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
}

impl From<anyhow::Error> for Failure {
    fn from(e: anyhow::Error) -> Self {
        Failure::runtime(format!("{e:#}"))
    }
}
