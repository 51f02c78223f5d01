use std::path::PathBuf;

/// Errors from reading or changing the system.
#[derive(Debug, thiserror::Error)]
pub enum SysError {
    #[error("cannot read {path}: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("cannot write {path}: {source}")]
    Write {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("cannot parse {what}: {detail}")]
    Parse { what: String, detail: String },
    #[error("{call} failed: {source}")]
    Syscall {
        call: &'static str,
        source: std::io::Error,
    },
    #[error("journal {path}: {detail}")]
    Journal { path: PathBuf, detail: String },
    #[error("{0}")]
    Other(String),
}

pub type SysResult<T> = Result<T, SysError>;

impl SysError {
    pub fn parse(what: impl Into<String>, detail: impl Into<String>) -> Self {
        SysError::Parse {
            what: what.into(),
            detail: detail.into(),
        }
    }

    /// The last OS error, attributed to `call`.
    pub fn last_os(call: &'static str) -> Self {
        SysError::Syscall {
            call,
            source: std::io::Error::last_os_error(),
        }
    }
}
