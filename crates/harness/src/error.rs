//! Why a measurement failed, and why recorded data cannot be judged.

/// A measurement that could not be made: the run's result is `failed` with this
/// text.
#[derive(Debug, thiserror::Error)]
pub enum LabError {
    #[error(transparent)]
    Sys(#[from] oslab_sys::SysError),
    /// The plan or raw data cannot be written as JSON.
    #[error("cannot record the raw data: {0}")]
    Record(serde_json::Error),
    #[error(transparent)]
    Scratch(#[from] super::scratch::ScratchError),
    /// Recorded data its own experiment cannot read.
    #[error(transparent)]
    Unreadable(#[from] Unreadable),
    /// What went wrong, for the result's `failed` status; nothing decides on it.
    #[error("{0}")]
    Failed(String),
}

/// Why recorded JSON cannot be judged by its experiment.
#[derive(Debug, thiserror::Error)]
pub enum Unreadable {
    #[error("the plan of {id} cannot be read: {source}")]
    Plan {
        id: &'static str,
        source: serde_json::Error,
    },
    #[error("{id} measured nothing (it was skipped)")]
    NothingMeasured { id: &'static str },
    #[error("the raw data of {id} cannot be read: {source}")]
    Raw {
        id: &'static str,
        source: serde_json::Error,
    },
}
