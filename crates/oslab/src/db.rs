//! Where the results database lives, and opening it for a command.

use std::path::{Path, PathBuf};

use oslab_store::Store;

use crate::failure::Failure;

/// $OSLAB_DB, else $XDG_DATA_HOME/oslab/results.db, else ~/.local/share/oslab/results.db.
pub fn default_path() -> Option<PathBuf> {
    let var = |k: &str| {
        std::env::var_os(k)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    };
    if let Some(p) = var("OSLAB_DB") {
        return Some(p);
    }
    if let Some(d) = var("XDG_DATA_HOME").filter(|d| d.is_absolute()) {
        return Some(d.join("oslab/results.db"));
    }
    var("HOME").map(|h| h.join(".local/share/oslab/results.db"))
}

/// The database named by --db, or the default one.
pub fn chosen(arg: Option<&Path>) -> Result<PathBuf, Failure> {
    arg.map(Path::to_path_buf)
        .or_else(default_path)
        .ok_or_else(|| Failure::usage("no results database: HOME is not set; give one with --db"))
}

/// Opens an existing database for reading commands (history, compare, export, report).
pub fn open_existing(arg: Option<&Path>) -> Result<Store, Failure> {
    let path = chosen(arg)?;
    Store::open_existing(&path).map_err(|e| Failure::runtime(e.to_string()))
}

/// The time now, as stored.
pub fn now_rfc3339() -> String {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64());
    oslab_sys::clock::rfc3339_utc(now)
}
