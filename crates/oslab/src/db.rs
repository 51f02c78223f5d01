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
    let path = arg
        .map(Path::to_path_buf)
        .or_else(default_path)
        .ok_or_else(|| {
            Failure::usage("no results database: HOME is not set; give one with --db")
        })?;
    check_not_url(&path)?;
    Ok(path)
}

/// A database given as a URL (`postgres://...`) is not a file name: refused in one
/// sentence rather than made into a folder named `postgres:`.
pub fn check_not_url(path: &Path) -> Result<(), Failure> {
    let text = path.to_string_lossy();
    if let Some((scheme, _)) = text.split_once("://")
        && !scheme.is_empty()
        && scheme.starts_with(|c: char| c.is_ascii_alphabetic())
        && scheme
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "+-.".contains(c))
    {
        return Err(Failure::usage(format!(
            "--db {text}: oslab keeps results in an SQLite file; '{scheme}://' databases are not supported"
        )));
    }
    Ok(())
}

/// Opens an existing database for reading commands (history, compare, export, report).
/// A database the user named that does not exist is a usage error.
pub fn open_existing(arg: Option<&Path>) -> Result<Store, Failure> {
    let path = chosen(arg)?;
    Store::open_existing(&path).map_err(|e| match e {
        oslab_store::StoreError::Missing(_) if arg.is_some() => Failure::usage(e.to_string()),
        e => Failure::runtime(e.to_string()),
    })
}

/// The time now, as stored.
pub fn now_rfc3339() -> String {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64());
    oslab_sys::clock::rfc3339_utc(now)
}
