//! Writing to standard output and to files, with errors phrased for the user; the
//! one path every exporter's bytes take ([`Output`]).

use std::io::Write;
use std::path::{Path, PathBuf};

use oslab_report::exporter::{Exporter, Shape, Stage};
use oslab_sys::parse::size::human_bytes;

use crate::failure::Failure;

/// Prints to stdout; a closed pipe (`oslab ... | head`) ends the program quietly.
pub fn print(text: &str) {
    print_bytes(text.as_bytes());
}

/// [`print`] for bytes.
pub fn print_bytes(bytes: &[u8]) {
    let mut out = std::io::stdout().lock();
    if let Err(e) = out.write_all(bytes).and_then(|_| out.flush())
        && e.kind() == std::io::ErrorKind::BrokenPipe
    {
        crate::guard::exit(0);
    }
}

/// Where an exporter's bytes go.
pub enum Destination {
    /// Standard output, through [`print`]: what is new as it comes, a whole
    /// document once, at the end.
    Stdout,
    /// One file, written whole and atomically: after every result (`each_result`,
    /// so an interrupted run keeps what it finished), or once at the end.
    File { path: PathBuf, each_result: bool },
    /// A folder (made beforehand) that each piece goes into under its name.
    Folder(PathBuf),
    /// Nowhere: the exporter keeps the results itself (the database).
    Kept,
}

impl Destination {
    /// A file written once, at the end.
    pub fn file(path: &Path) -> Destination {
        Destination::File {
            path: path.to_path_buf(),
            each_result: false,
        }
    }

    /// A file rewritten after every result of a run.
    pub fn file_per_result(path: &Path) -> Destination {
        Destination::File {
            path: path.to_path_buf(),
            each_result: true,
        }
    }
}

/// An exporter the command chose, and where its bytes go.
pub struct Output<D: ?Sized> {
    exporter: Box<dyn Exporter<D>>,
    to: Destination,
    /// What went to a file or folder so far: files written, size of the last.
    written: (usize, usize),
}

impl<D: ?Sized> Output<D> {
    pub fn new(exporter: impl Exporter<D> + 'static, to: Destination) -> Output<D> {
        Output {
            exporter: Box::new(exporter),
            to,
            written: (0, 0),
        }
    }

    /// Where the files went, in one line for standard error, once all is written.
    fn where_written(&self) -> Option<String> {
        let (files, last) = self.written;
        match &self.to {
            Destination::File { path, .. } if files > 0 => Some(format!(
                "wrote {} ({})",
                path.display(),
                human_bytes(last as u64)
            )),
            Destination::Folder(dir) if files > 0 => Some(format!(
                "wrote {files} file{} into {}",
                if files == 1 { "" } else { "s" },
                dir.display()
            )),
            _ => None,
        }
    }

    /// Asks the exporter for `doc` at `stage` (unless its destination takes nothing
    /// then) and writes what it makes.
    pub fn write(&mut self, doc: &D, stage: Stage) -> Result<(), Failure> {
        let wanted = match (&self.to, self.exporter.shape()) {
            (Destination::Stdout, Shape::Document) => stage == Stage::Done,
            (Destination::File { each_result, .. }, Shape::Document) => {
                stage
                    == if *each_result {
                        Stage::Added
                    } else {
                        Stage::Done
                    }
            }
            _ => true,
        };
        if wanted {
            let pieces = self
                .exporter
                .serialize(doc, stage)
                .map_err(|e| Failure::runtime(e.to_string()))?;
            match &self.to {
                Destination::Stdout => pieces.iter().for_each(|p| print_bytes(&p.bytes)),
                Destination::File { path, .. } if !pieces.is_empty() => {
                    let bytes: Vec<u8> = pieces.into_iter().flat_map(|p| p.bytes).collect();
                    write_file(path, &bytes)?;
                    self.written = (1, bytes.len());
                }
                Destination::File { .. } | Destination::Kept => {}
                Destination::Folder(dir) => {
                    for p in &pieces {
                        write_file(&dir.join(&p.name), &p.bytes)?;
                    }
                    self.written.0 += pieces.len();
                }
            }
        }
        if stage == Stage::Done
            && let Some(line) = self.where_written()
        {
            eprintln!("oslab: {line}");
        }
        Ok(())
    }
}

/// Writes `doc` at `stage` to every output, in order.
pub fn write_all<D: ?Sized>(
    outputs: &mut [Output<D>],
    doc: &D,
    stage: Stage,
) -> Result<(), Failure> {
    outputs.iter_mut().try_for_each(|o| o.write(doc, stage))
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
