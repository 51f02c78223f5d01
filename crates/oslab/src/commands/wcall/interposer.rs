//! `oslab wcall interposer --write FILE`: installs the interposer this binary
//! carries (`oslab_wcall::embedded`), for services that preload it by path
//! (dist/systemd, dist/postgresql) on a machine that has only the binary.

use std::path::{Path, PathBuf};

use clap::Args;
use oslab_sys::outfile;

use crate::failure::{CmdResult, Failure};

#[derive(Debug, Args)]
pub struct WcallInterposerArgs {
    /// Where to install it, e.g. /usr/local/lib/oslab/liboslab_wcall.so: a file
    /// (replaced whole) or a free name; missing folders are made (mode 0755, less
    /// the umask). The file is made the caller's, mode 0644, in folders only root
    /// or the caller can change
    #[arg(long, value_name = "FILE", required = true)]
    pub write: PathBuf,
}

/// The mode of an installed library: everyone's to load, its owner's to change.
const MODE: u32 = 0o644;

pub fn run(a: WcallInterposerArgs) -> CmdResult {
    let path = &a.write;
    let refused = |e: outfile::OutputError| {
        Failure::usage(format!(
            "cannot install the interposer at {}: {e}",
            path.display()
        ))
    };
    make_folders(path).map_err(refused)?;
    let target = outfile::check_install(path).map_err(refused)?;
    let lib = oslab_wcall::embedded::bytes();
    outfile::install(path, lib, MODE).map_err(|e| {
        Failure::runtime(format!(
            "cannot install the interposer at {}: {e}",
            path.display()
        ))
    })?;
    eprintln!(
        "oslab: wrote the interposer ({}) to {}",
        oslab_units::human_bytes(lib.len() as u64),
        target.display()
    );
    Ok(0)
}

/// The folders above `path` that are missing, made as `install -D` makes them.
fn make_folders(path: &Path) -> Result<(), outfile::OutputError> {
    match path.parent() {
        Some(up) if !up.as_os_str().is_empty() && std::fs::symlink_metadata(up).is_err() => {
            outfile::ensure_folders(up, 0o755).map(drop)
        }
        _ => Ok(()),
    }
}
