//! Reading small text files of /proc and /sys relative to a root directory.

use std::path::{Path, PathBuf};

use crate::error::{SysError, SysResult};

/// A root directory under which /proc and /sys are read: `/` for the live system,
/// a fixture directory in tests.
#[derive(Debug, Clone)]
pub struct Root(PathBuf);

impl Root {
    pub fn live() -> Self {
        Root(PathBuf::from("/"))
    }

    pub fn at(path: impl Into<PathBuf>) -> Self {
        Root(path.into())
    }

    pub fn is_live(&self) -> bool {
        self.0 == Path::new("/")
    }

    /// The path of an absolute system path such as `/proc/meminfo` under this root.
    pub fn path(&self, abs: &str) -> PathBuf {
        self.0.join(abs.trim_start_matches('/'))
    }

    /// The whole file as text.
    pub fn read(&self, abs: &str) -> SysResult<String> {
        let p = self.path(abs);
        std::fs::read_to_string(&p).map_err(|source| SysError::Read { path: p, source })
    }

    /// The file's text trimmed, or `None` if it cannot be read.
    pub fn read_trim(&self, abs: &str) -> Option<String> {
        self.read(abs).ok().map(|s| s.trim().to_string())
    }

    /// The file parsed as an unsigned integer, or `None`.
    pub fn read_u64(&self, abs: &str) -> Option<u64> {
        self.read_trim(abs)?.parse().ok()
    }

    /// Names of the entries of a directory, sorted; empty if it cannot be read.
    pub fn list(&self, abs: &str) -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(self.path(abs))
            .map(|rd| {
                rd.filter_map(|e| e.ok())
                    .map(|e| e.file_name().to_string_lossy().into_owned())
                    .collect()
            })
            .unwrap_or_default();
        names.sort();
        names
    }

    pub fn exists(&self, abs: &str) -> bool {
        self.path(abs).exists()
    }
}
