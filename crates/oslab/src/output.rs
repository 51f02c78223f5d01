//! Writing to standard output and to files, with errors phrased for the user.

use std::io::Write;
use std::path::Path;

use crate::failure::Failure;

/// Prints to stdout; a closed pipe (`oslab ... | head`) ends the program quietly.
pub fn print(text: &str) {
    let mut out = std::io::stdout().lock();
    if let Err(e) = out.write_all(text.as_bytes()).and_then(|_| out.flush())
        && e.kind() == std::io::ErrorKind::BrokenPipe
    {
        crate::guard::exit(0);
    }
}

/// Writes a whole file atomically (temp file + rename), so a reader never sees half.
pub fn write_file(path: &Path, bytes: &[u8]) -> Result<(), Failure> {
    let tmp = path.with_extension(format!(
        "{}.tmp-{}",
        path.extension().and_then(|e| e.to_str()).unwrap_or(""),
        std::process::id()
    ));
    std::fs::write(&tmp, bytes)
        .and_then(|_| std::fs::rename(&tmp, path))
        .map_err(|e| {
            let _ = std::fs::remove_file(&tmp);
            Failure::runtime(format!("cannot write {}: {e}", path.display()))
        })
}

/// Checks before any work that an output directory can be made or used: it may
/// exist, or be a new folder in a directory that exists. Nothing is created here.
pub fn check_dir_target(path: &Path, flag: &str) -> Result<(), Failure> {
    if path.exists() {
        return if path.is_dir() {
            Ok(())
        } else {
            Err(Failure::usage(format!(
                "{flag} {} is a file, not a directory",
                path.display()
            )))
        };
    }
    let parent = parent_of(path);
    if !parent.is_dir() {
        return Err(Failure::usage(format!(
            "cannot write {flag} {}: directory {} does not exist",
            path.display(),
            parent.display()
        )));
    }
    Ok(())
}

/// Makes the output directory checked by [`check_dir_target`] (only the last folder).
pub fn make_dir(path: &Path, flag: &str) -> Result<(), Failure> {
    match std::fs::create_dir(path) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists && path.is_dir() => Ok(()),
        Err(e) => Err(Failure::usage(format!(
            "cannot create {flag} directory {}: {e}",
            path.display()
        ))),
    }
}

fn parent_of(path: &Path) -> &Path {
    path.parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."))
}

/// Checks before any work that a file can be written where asked.
pub fn check_file_target(path: &Path, flag: &str) -> Result<(), Failure> {
    let parent = parent_of(path);
    if !parent.is_dir() {
        return Err(Failure::usage(format!(
            "cannot write {flag} {}: directory {} does not exist",
            path.display(),
            parent.display()
        )));
    }
    if path.is_dir() {
        return Err(Failure::usage(format!(
            "{flag} {} is a directory; give a file name",
            path.display()
        )));
    }
    Ok(())
}
