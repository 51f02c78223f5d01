//! The scratch folder experiments and measurements write into.

use crate::failure::Failure;

/// The folder asked for (`--scratch`), else $TMPDIR; it must exist.
pub fn scratch_base(arg: Option<&std::path::Path>) -> Result<std::path::PathBuf, Failure> {
    let dir = arg
        .map(|p| p.to_path_buf())
        .unwrap_or_else(std::env::temp_dir);
    if !dir.is_dir() {
        return Err(Failure::usage(format!(
            "scratch directory {} does not exist",
            dir.display()
        )));
    }
    Ok(dir)
}
