//! Writing to standard output and to files, with errors phrased for the user; the
//! one path every exporter's bytes take ([`Output`]).

use std::io::Write;
use std::path::{Path, PathBuf};

use oslab_report::exporter::{Exporter, Shape, Stage};
use oslab_sys::outfile;
use oslab_units::human_bytes;

use crate::failure::{EXIT_RUNTIME, Failure};

/// Prints to stdout; a closed pipe (`oslab ... | head`) ends the program quietly,
/// any other error (a full device) with one sentence and exit 1.
pub fn print(text: &str) {
    print_bytes(text.as_bytes());
}

/// [`print`] for bytes.
pub fn print_bytes(bytes: &[u8]) {
    let mut out = std::io::stdout().lock();
    if let Err(e) = out.write_all(bytes).and_then(|_| out.flush()) {
        stdout_failed(&e);
    }
}

/// One line on standard error after `oslab: `, shown through
/// `oslab_term_text::one_line`: a message that quotes a file, the database or
/// another program must not reach the terminal raw.
pub fn say(message: &str) {
    eprintln!("oslab: {}", oslab_term_text::one_line(message));
}

/// Ends the program for an error writing standard output: quietly for a closed
/// pipe (exit 0), else with one sentence (exit 1).
pub fn stdout_failed(e: &std::io::Error) -> ! {
    if e.kind() == std::io::ErrorKind::BrokenPipe {
        crate::guard::exit(0);
    }
    eprintln!("oslab: cannot write standard output: {}", outfile::plain(e));
    crate::guard::exit(EXIT_RUNTIME)
}

/// Whether `path` names standard output: `-`, or a path that leads to this
/// process's descriptor 1 (/dev/stdout, /proc/self/fd/1, a link to them).
pub fn is_stdout(path: &Path) -> bool {
    path.as_os_str() == "-" || outfile::check(path).is_ok_and(|t| t.is_stdout())
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
    /// A file written once, at the end (standard output where the path leads there).
    pub fn file(path: &Path) -> Destination {
        if is_stdout(path) {
            return Destination::Stdout;
        }
        Destination::File {
            path: path.to_path_buf(),
            each_result: false,
        }
    }

    /// A file rewritten after every result of a run; a device or FIFO, which
    /// would take the whole document again each time, is written once at the end.
    pub fn file_per_result(path: &Path) -> Destination {
        match Destination::file(path) {
            Destination::File { path, .. } => Destination::File {
                each_result: outfile::check(&path).is_ok_and(|t| t.is_file()),
                path,
            },
            other => other,
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
        Output::boxed(Box::new(exporter), to)
    }

    pub fn boxed(exporter: Box<dyn Exporter<D>>, to: Destination) -> Output<D> {
        Output {
            exporter,
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

/// Writes a whole output file: atomically over a regular file (keeping its owner
/// and mode), through a device or FIFO; see `oslab_sys::outfile`.
pub fn write_file(path: &Path, bytes: &[u8]) -> Result<(), Failure> {
    outfile::write_whole(path, bytes)
        .map_err(|e| Failure::runtime(format!("cannot write {}: {e}", path.display())))
}

fn unfit(flag: &str, path: &Path, e: outfile::OutputError) -> Failure {
    Failure::usage(format!("cannot write {flag} {}: {e}", path.display()))
}

/// Checks before any work that an output directory can be made or used: it may
/// exist, or be a new folder in a directory that exists. Nothing is created here.
pub fn check_dir_target(path: &Path, flag: &str) -> Result<(), Failure> {
    outfile::check_folder(path)
        .map(drop)
        .map_err(|e| unfit(flag, path, e))
}

/// Makes the output directory checked by [`check_dir_target`] (only the last
/// folder), or takes the one there; never through a link another user owns.
pub fn make_dir(path: &Path, flag: &str) -> Result<(), Failure> {
    outfile::make_folder(path)
        .map(drop)
        .map_err(|e| unfit(flag, path, e))
}

/// Checks before any work that a file can be written where asked: its folder
/// exists, and it is no folder, block device or link of another user.
pub fn check_file_target(path: &Path, flag: &str) -> Result<(), Failure> {
    outfile::check(path)
        .map(drop)
        .map_err(|e| unfit(flag, path, e))
}

/// An output written as it comes (JSON lines, a trace): an open file, or
/// standard output for `-`.
pub enum Stream {
    Stdout,
    /// The file, its name, and the first error writing it, if any.
    File(std::fs::File, PathBuf, Option<String>),
}

impl Stream {
    pub fn open(path: &Path, flag: &str) -> Result<Stream, Failure> {
        if is_stdout(path) {
            return Ok(Stream::Stdout);
        }
        outfile::open_stream(path)
            .map(|f| Stream::File(f, path.to_path_buf(), None))
            .map_err(|e| Failure::usage(format!("cannot write {flag} {}: {e}", path.display())))
    }

    /// Writes `text`; an error on a file is kept for [`Stream::close`] and ends
    /// the writing to it (the trace goes on).
    pub fn put(&mut self, text: &str) {
        match self {
            Stream::Stdout => print(text),
            Stream::File(f, path, failed @ None) => {
                if let Err(e) = f.write_all(text.as_bytes()) {
                    *failed = Some(format!(
                        "cannot write {}: {}",
                        path.display(),
                        outfile::plain(&e)
                    ));
                }
            }
            Stream::File(..) => {}
        }
    }

    /// The error writing the file, if there was one.
    pub fn close(self) -> Result<(), Failure> {
        match self {
            Stream::File(_, _, Some(why)) => Err(Failure::runtime(why)),
            _ => Ok(()),
        }
    }
}
