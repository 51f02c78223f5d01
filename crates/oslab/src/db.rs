//! Where the results database lives, opening it for a command, and keeping a run's
//! results in it ([`Database`], the database's exporter).

use std::path::{Path, PathBuf};

use oslab_model::ExperimentResult;
use oslab_report::exporter::{ExportError, Exporter, Piece, Results, Shape, Stage};
use oslab_store::Store;
use oslab_sys::machine::MachineInfo;

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

/// Whether and where results are kept in the database.
pub enum DbTarget {
    Off,
    /// Named with --db: a database that cannot be used stops the run before it starts.
    Chosen(PathBuf),
    /// The default: a database that cannot be used is reported and the run goes on.
    Default(PathBuf),
}

/// The results database as an exporter: a run's results kept as they come, the run
/// marked complete at the end. A database that fails midway is reported once and
/// the run goes on without it.
///
/// It lives in the binary, not in `report` (bytes out, no I/O, no SQLite) nor in
/// `store` (storage, which has no business knowing the output formats): the binary
/// is the one crate that knows both, and the run's command line and clock.
pub struct Database {
    store: Option<(Store, i64)>,
}

impl Database {
    /// Opens (or makes) the database and begins a run; None where results are not
    /// kept (`--no-db`, or a default database that cannot be used, said on stderr).
    pub fn open(
        target: &DbTarget,
        machine: &MachineInfo,
        command: &str,
        label: Option<String>,
    ) -> Result<Option<Database>, Failure> {
        let (path, chosen) = match target {
            DbTarget::Off => return Ok(None),
            DbTarget::Chosen(p) => (p, true),
            DbTarget::Default(p) => (p, false),
        };
        let meta = oslab_store::RunMeta {
            started_at: now_rfc3339(),
            machine: machine.hostname.clone(),
            kernel: machine.kernel.release.clone(),
            cpu_model: machine.cpu.model.clone(),
            oslab_version: oslab_lab::runner::OSLAB_VERSION.to_string(),
            command: command.to_string(),
            label,
        };
        let opened = Store::open_or_create(path).and_then(|mut s| {
            let id = s.begin_run(&meta)?;
            Ok((s, id))
        });
        match opened {
            Ok(s) => Ok(Some(Database { store: Some(s) })),
            Err(e) if chosen => Err(Failure::usage(e.to_string())),
            Err(e) => {
                eprintln!("oslab: results are not kept: {e} (--no-db silences this)");
                Ok(None)
            }
        }
    }

    fn add(&mut self, position: usize, r: &ExperimentResult) {
        if let Some((s, run)) = &mut self.store
            && let Err(e) = s.add_result(*run, position, r)
        {
            eprintln!("oslab: results are no longer kept: {e}");
            self.store = None;
        }
    }

    fn finish(&mut self) {
        if let Some((s, run)) = &mut self.store {
            match s.finish_run(*run, &now_rfc3339()) {
                Ok(()) => eprintln!(
                    "oslab: kept as run {run} in {} (`oslab history`, `oslab report {run} --html FILE`)",
                    s.path().display()
                ),
                Err(e) => eprintln!("oslab: the run could not be marked complete: {e}"),
            }
        }
    }
}

impl Exporter<Results> for Database {
    fn shape(&self) -> Shape {
        Shape::Pieces
    }
    /// Keeps the newest result (`Added`) or marks the run complete (`Done`); makes
    /// no bytes.
    fn serialize(&mut self, doc: &Results, stage: Stage) -> Result<Vec<Piece>, ExportError> {
        match (stage, doc.newest()) {
            (Stage::Added, Some(r)) => self.add(doc.all.len() - 1, r),
            (Stage::Added, None) => {}
            (Stage::Done, _) => self.finish(),
        }
        Ok(Vec::new())
    }
}
