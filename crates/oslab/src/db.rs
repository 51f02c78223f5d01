//! Where the results database lives, opening it for a command, and keeping a run's
//! results in it ([`Database`], the database's exporter).

use std::ffi::OsStr;
use std::path::{Path, PathBuf};

use oslab_model::ExperimentResult;
use oslab_model::machine::MachineInfo;
use oslab_report::exporter::{ExportError, Exporter, Piece, Results, Shape, Stage};
use oslab_store::{Store, StoreError, Target};
use oslab_sys::chase::{self, chain, chain::LastFolder};
use oslab_sys::outfile;

use crate::failure::Failure;
use crate::output::say;

fn var(k: &str) -> Option<std::ffi::OsString> {
    std::env::var_os(k).filter(|v| !v.is_empty())
}

/// oslab's data folder: $XDG_DATA_HOME/oslab, else ~/.local/share/oslab.
pub fn data_dir() -> Option<PathBuf> {
    if let Some(d) = var("XDG_DATA_HOME")
        .map(PathBuf::from)
        .filter(|d| d.is_absolute())
    {
        return Some(d.join("oslab"));
    }
    var("HOME").map(|h| PathBuf::from(h).join(".local/share/oslab"))
}

/// A database named on the command line or in $OSLAB_DB: a file, or a
/// postgres:// URL; another `scheme://` is a usage error. A file follows the
/// rule of every output: its folder must exist (none is made for it), and it
/// must be a regular file or a free name, reached through no link another
/// user owns; and [`stable_file`]'s.
fn parse(value: &OsStr, named_by: &str) -> Result<Target, Failure> {
    let target = Target::parse(value).map_err(|e| Failure::usage(format!("{named_by} {e}")))?;
    let Target::File(path) = &target else {
        return Ok(target);
    };
    let sep = if named_by.ends_with('=') { "" } else { " " };
    stable_file(path).map(Target::File).map_err(|why| {
        Failure::usage(format!(
            "cannot use {named_by}{sep}{}: {why}",
            path.display()
        ))
    })
}

/// A database file as SQLite will use it: SQLite opens the file and makes its
/// -wal, -shm and -journal files beside it by name, so the folder that holds it
/// and every folder above must be root's or the caller's, the folder itself
/// writable by nobody else (a sticky /tmp would let another user plant a link
/// at x.db-wal). The path without links, which nobody else can change.
fn stable_file(path: &Path) -> Result<PathBuf, String> {
    let resolved = match outfile::check(path) {
        Ok(outfile::Target::File(p)) => p,
        Ok(_) => return Err("it is not a regular file".into()),
        Err(e) => return Err(e.to_string()),
    };
    let folder = resolved.parent().unwrap_or(Path::new("/"));
    chain::stable_folder(folder, &chase::trusted_owners(), LastFolder::Private)
        .map_err(|e| e.to_string())?;
    Ok(resolved)
}

/// `target` checked as [`stable_file`] when it is a file whose folder exists
/// (the default database's folder is made, checked, before it is opened).
pub fn stable_target(target: &Target) -> Result<Target, String> {
    match target {
        Target::File(p) if p.parent().is_some_and(Path::exists) => stable_file(p)
            .map(Target::File)
            .map_err(|why| format!("cannot use {}: {why}", p.display())),
        t => Ok(t.clone()),
    }
}

/// Makes the data folder when `target` is a database file in it (the default
/// one), folder by folder, never through a link another user owns, and checks
/// that it is this user's own.
pub fn make_data_folder(target: &Target) -> Result<(), String> {
    if let (Target::File(db), Some(dir)) = (target, data_dir())
        && db.parent() == Some(dir.as_path())
    {
        outfile::ensure_folders(&dir, 0o700)
            .map_err(|e| format!("the data folder {}: {e}", dir.display()))?;
    }
    Ok(())
}

/// $OSLAB_DB, else $XDG_DATA_HOME/oslab/results.db, else ~/.local/share/oslab/results.db.
pub fn default_target() -> Result<Option<Target>, Failure> {
    if let Some(v) = var("OSLAB_DB") {
        return parse(&v, "OSLAB_DB=").map(Some);
    }
    Ok(data_dir().map(|d| Target::File(d.join("results.db"))))
}

/// The database named by --db, or the default one.
pub fn chosen(arg: Option<&Path>) -> Result<Target, Failure> {
    match arg {
        Some(p) => parse(p.as_os_str(), "--db"),
        None => default_target()?.ok_or_else(|| {
            Failure::usage("no results database: HOME is not set; give one with --db")
        }),
    }
}

/// Opens an existing database for reading commands (history, compare, export, report).
/// A database the user named that does not exist is a usage error.
pub fn open_existing(arg: Option<&Path>) -> Result<Store, Failure> {
    let target = stable_target(&chosen(arg)?).map_err(Failure::usage)?;
    Store::open_existing(&target).map_err(|e| match e {
        StoreError::Missing(_) | StoreError::BadUrl { .. } if arg.is_some() => {
            Failure::usage(e.to_string())
        }
        e => Failure::runtime(e.to_string()),
    })
}

/// The name a run is stored under: $OSLAB_MACHINE (to tell apart machines that
/// share a host name, or to name a configuration), else the host name.
pub fn machine_name(hostname: &str) -> String {
    var("OSLAB_MACHINE")
        .map(|v| v.to_string_lossy().into_owned())
        .unwrap_or_else(|| hostname.to_string())
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
    /// Named with --db: a database that cannot be used stops the run before it
    /// starts, unless it is a server that cannot be reached.
    Chosen(Target),
    /// The default: a database that cannot be used is reported and the run goes on.
    Default(Target),
}

/// The results database as an exporter: a run's results kept as they come, the run
/// marked complete at the end. A database that cannot be reached, or fails midway,
/// is reported and the run goes on without it; at the end the results are in a
/// JSON file (the run's --json, else one written into the data folder) and one
/// sentence says so and how to import it.
///
/// It lives in the binary, not in `report` (bytes out, no I/O, no database) nor in
/// `store` (storage, which has no business knowing the output formats): the binary
/// is the one crate that knows both, and the run's command line and clock.
pub struct Database {
    store: Option<(Store, i64)>,
    /// The machine's name as the store keeps it, for its history.
    machine: String,
    location: String,
    /// Why the run is not (wholly) stored, once it is not.
    lost: Option<String>,
    /// The run's own --json file, where the results are anyway.
    json_file: Option<PathBuf>,
}

impl Database {
    /// Opens (or makes) the database and begins a run; None where results are not
    /// kept (`--no-db`, or a default database that cannot be used, said on stderr).
    pub fn open(
        target: &DbTarget,
        machine: &MachineInfo,
        command: &str,
        label: Option<String>,
        json_file: Option<&Path>,
    ) -> Result<Option<Database>, Failure> {
        let (target, chosen) = match target {
            DbTarget::Off => return Ok(None),
            DbTarget::Chosen(t) => (t, true),
            DbTarget::Default(t) => (t, false),
        };
        let meta = oslab_store::RunMeta {
            started_at: now_rfc3339(),
            machine: machine_name(&machine.hostname),
            kernel: machine.kernel.release.clone(),
            cpu_model: machine.cpu.model.clone(),
            oslab_version: oslab_harness::runner::OSLAB_VERSION.to_string(),
            command: command.to_string(),
            label,
        };
        let target = match make_data_folder(target).and_then(|()| stable_target(target)) {
            Ok(t) => t,
            Err(why) if chosen => return Err(Failure::usage(why)),
            Err(why) => {
                say(&format!(
                    "results are not kept: {why} (--no-db silences this)"
                ));
                return Ok(None);
            }
        };
        let target = &target;
        let opened = Store::open_or_create(target).and_then(|mut s| {
            let id = s.begin_run(&meta)?;
            Ok((s, id))
        });
        let mut db = Database {
            store: None,
            machine: meta.machine.clone(),
            location: target.to_string(),
            lost: None,
            json_file: json_file
                .filter(|p| p.as_os_str() != "-")
                .map(Path::to_path_buf),
        };
        match opened {
            Ok(s) => db.store = Some(s),
            Err(e @ StoreError::Unreachable { .. }) => {
                say(&format!(
                    "{e}; measuring anyway, and keeping the results for `oslab import`"
                ));
                db.lost = Some(e.to_string());
            }
            Err(e) if chosen => return Err(Failure::usage(e.to_string())),
            Err(e) => {
                say(&format!(
                    "results are not kept: {e} (--no-db silences this)"
                ));
                return Ok(None);
            }
        }
        Ok(Some(db))
    }

    fn add(&mut self, position: usize, r: &ExperimentResult) {
        if let Some((s, _)) = &mut self.store
            && let Some(far) = far_from_usual(s, &self.machine, r)
        {
            say(&far);
        }
        if let Some((s, run)) = &mut self.store
            && let Err(e) = s.add_result(*run, position, r)
        {
            say(&format!("results are no longer kept: {e}"));
            self.lost = Some(e.to_string());
            self.store = None;
        }
    }

    fn finish(&mut self, doc: &Results) {
        if let Some((s, run)) = &mut self.store {
            match s.finish_run(*run, &now_rfc3339()) {
                Ok(()) => say(&format!(
                    "kept as run {run} in {} (`oslab history`, `oslab report {run} --html FILE`)",
                    s.location()
                )),
                Err(e) => say(&format!("the run could not be marked complete: {e}")),
            }
        }
        if let Some(why) = self.lost.take() {
            say(&self.not_stored(&why, doc));
        }
    }

    /// The one sentence for a run that is not (wholly) stored: why, where its
    /// results are, and the command that stores them later.
    fn not_stored(&self, why: &str, doc: &Results) -> String {
        let file = match &self.json_file {
            Some(p) => Ok(p.clone()),
            None => write_unstored(doc),
        };
        let machine = var("OSLAB_MACHINE")
            .map(|m| format!("OSLAB_MACHINE={} ", m.to_string_lossy()))
            .unwrap_or_default();
        match file {
            Ok(f) => format!(
                "this run was not stored ({why}); its results are in {f}: `{machine}oslab import {f} --db {db}` stores them later",
                f = f.display(),
                db = self.location
            ),
            Err(e) => format!(
                "this run was not stored ({why}), and its results could not be written to a file either ({e}); give --json FILE to keep them"
            ),
        }
    }
}

/// The sentence for a result whose headline figure lies further from this
/// machine's usual value (its earlier completed results of the same mode) than
/// its noise, or None. A history that cannot be read says nothing.
fn far_from_usual(s: &mut Store, machine: &str, r: &ExperimentResult) -> Option<String> {
    if r.status != oslab_model::Status::Completed || r.simulated.is_some() {
        return None;
    }
    let registry = oslab_lab::Registry::default();
    let headline = registry.get(&r.experiment)?.headline();
    let measured = if headline.is_empty() {
        r.measurements.first()
    } else {
        r.measurement(headline)
    };
    let (name, value, ci, unit) = match measured {
        Some(m) => {
            let sum = m.summary.as_ref()?;
            let ci = sum.ci95.map(|c| [c.low, c.high]);
            (m.name.clone(), sum.median, ci, m.unit.clone())
        }
        None => {
            let f = r.finding(headline)?;
            (f.name.clone(), f.value, f.range, f.unit.clone())
        }
    };
    let filter = oslab_store::RunFilter {
        experiment: Some(r.experiment.clone()),
        machine: Some(machine.to_string()),
        limit: Some(4 * oslab_model::usual::RUNS),
        headline: Some(name.clone()),
    };
    let mode = serde_json::to_value(r.mode).ok()?;
    let earlier: Vec<f64> = s
        .experiment_history(&filter)
        .ok()?
        .iter()
        .filter(|e| e.status == "completed" && mode == e.mode.as_str())
        .filter_map(|e| e.headline.as_ref().and_then(|h| h.median))
        .collect();
    let usual = oslab_model::usual::usual(&earlier)?;
    let far = oslab_model::usual::beyond(value, ci, &usual, &unit)?;
    Some(format!(
        "{}'s {name} measured {} {unit}, {far}",
        r.experiment,
        oslab_report::num::fmt(value)
    ))
}

/// Writes a run's results as `oslab run --json` would, into the data folder's
/// `unstored/`; the file.
fn write_unstored(doc: &Results) -> Result<PathBuf, String> {
    let dir = data_dir().ok_or("HOME is not set")?.join("unstored");
    outfile::ensure_folders(&dir, 0o700).map_err(|e| format!("{}: {e}", dir.display()))?;
    let stamp: String = now_rfc3339()
        .chars()
        .filter(char::is_ascii_alphanumeric)
        .collect();
    let file = dir.join(format!("run-{stamp}-{}.json", std::process::id()));
    let bytes: Vec<u8> = oslab_report::json::Json
        .serialize(doc, Stage::Done)
        .map_err(|e| e.to_string())?
        .into_iter()
        .flat_map(|p| p.bytes)
        .collect();
    outfile::write_whole(&file, &bytes).map_err(|e| format!("{}: {e}", file.display()))?;
    Ok(file)
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
            (Stage::Done, _) => self.finish(doc),
        }
        Ok(Vec::new())
    }
}
