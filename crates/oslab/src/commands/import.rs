//! `oslab import`: results kept elsewhere into the database. A result file becomes
//! one run (named by $OSLAB_MACHINE, else the host name its results record); an
//! oslab SQLite database gives every run it holds, as it was stored. A run already
//! in the database (same start, machine and command) is not stored twice, so an
//! import can be repeated.

use crate::args::{DbArg, MaxInputArg};
use clap::Args;
use std::path::PathBuf;

use std::path::Path;

use oslab_store::{Imported, RunFilter, RunMeta, Store, StoreError, Target};
use oslab_sys::{infile, tempname};

use crate::db;
use crate::failure::CmdResult;
use crate::failure::Failure;
use crate::sources::read_set;

#[derive(Debug, Args)]
pub struct ImportArgs {
    /// Result files written by `oslab run --json`, or oslab SQLite databases
    #[arg(required = true, value_name = "SOURCE")]
    pub sources: Vec<PathBuf>,
    /// A note stored with each run imported from a result file
    #[arg(long, value_name = "TEXT")]
    pub label: Option<String>,
    #[command(flatten)]
    pub db: DbArg,
    #[command(flatten)]
    pub input: MaxInputArg,
}

/// A run to store: what is known of it, its state and end, its results.
struct Run {
    meta: RunMeta,
    state: String,
    finished_at: Option<String>,
    results: Vec<oslab_model::ExperimentResult>,
}

/// Whether `path` is an SQLite database: a regular file (else refused, as any
/// input, without opening what it names) of at most `max` bytes that begins as one.
fn is_sqlite(path: &Path, max: u64) -> Result<bool, Failure> {
    if infile::is_stdin(path) {
        return Ok(false);
    }
    let mut head = [0u8; 16];
    let mut f = infile::open_regular(path, max)?;
    Ok(std::io::Read::read_exact(&mut f, &mut head).is_ok_and(|()| &head == b"SQLite format 3\0"))
}

/// Every run of an oslab SQLite database, oldest first. The database is
/// another user's file as likely as not, and SQLite makes files beside one it
/// opens: its bytes are read as any input is (bounded, through no link of
/// another user's) into a private folder of this process, and that copy is
/// opened.
fn runs_of_database(path: &Path, max: u64) -> Result<Vec<Run>, Failure> {
    let bytes = infile::read_bounded(path, max)?;
    let dir = tempname::private_dir_in(&std::env::temp_dir(), "oslab-import-").map_err(|e| {
        Failure::runtime(format!(
            "no private folder to read {} in: {e}",
            path.display()
        ))
    })?;
    let copy = dir.join("source.db");
    let runs = tempname::create_new_file(&copy)
        .and_then(|mut f| std::io::Write::write_all(&mut f, &bytes))
        .map_err(|e| Failure::runtime(format!("cannot copy {}: {e}", path.display())))
        .and_then(|()| {
            let mut source = Store::open_existing(&Target::File(copy.clone()))
                .map_err(|e| Failure::usage(format!("{}: {e}", path.display())))?;
            source
                .export(&RunFilter::default())
                .map_err(|e| Failure::runtime(e.to_string()))
        });
    let _ = std::fs::remove_dir_all(&dir);
    Ok(runs?
        .into_iter()
        .map(|(row, results)| Run {
            meta: row.meta,
            state: row.state,
            finished_at: row.finished_at,
            results,
        })
        .collect())
}

/// The run a result file holds.
fn run_of_file(path: &Path, label: Option<&String>, max: u64) -> Result<Run, Failure> {
    let set = read_set(path, max)?;
    let first = set.results.first().ok_or_else(|| {
        Failure::runtime(format!(
            "{} holds no results to import",
            infile::display_name(path)
        ))
    })?;
    let machine = &first.environment.machine;
    let started_at = set
        .results
        .iter()
        .map(|r| r.started_at.clone())
        .min()
        .unwrap_or_default();
    Ok(Run {
        meta: RunMeta {
            started_at,
            machine: db::machine_name(&machine.hostname),
            kernel: machine.kernel.release.clone(),
            cpu_model: machine.cpu.model.clone(),
            oslab_version: set.oslab_version.clone(),
            command: set.command.clone(),
            label: label.cloned(),
        },
        state: "complete".into(),
        finished_at: None,
        results: set.results,
    })
}

pub fn run(a: ImportArgs) -> CmdResult {
    let target = db::chosen(a.db.db.as_deref())?;
    let mut runs: Vec<(String, Run)> = Vec::new();
    let max = a.input.max_input;
    for source in &a.sources {
        let name = infile::display_name(source);
        if is_sqlite(source, max)? {
            runs.extend(
                runs_of_database(source, max)?
                    .into_iter()
                    .map(|r| (name.clone(), r)),
            );
        } else {
            runs.push((name, run_of_file(source, a.label.as_ref(), max)?));
        }
    }
    db::make_data_folder(&target).map_err(Failure::runtime)?;
    let target = db::stable_target(&target).map_err(Failure::usage)?;
    let mut store = Store::open_or_create(&target).map_err(|e| match e {
        StoreError::BadUrl { .. } => Failure::usage(e.to_string()),
        e => Failure::runtime(e.to_string()),
    })?;
    let (mut added, mut there) = (Vec::new(), Vec::new());
    for (source, run) in &runs {
        let outcome = store
            .import_run(
                &run.meta,
                &run.state,
                run.finished_at.as_deref(),
                &run.results,
            )
            .map_err(|e| Failure::runtime(format!("{source}: {e}")))?;
        match outcome {
            Imported::Added(id) => added.push(id),
            Imported::AlreadyThere(id) => there.push(id),
        }
    }
    let ids = |v: &[i64]| match v {
        [first, .., last] if v.len() > 10 => format!("{first} to {last}"),
        _ => v.iter().map(i64::to_string).collect::<Vec<_>>().join(", "),
    };
    let mut line = format!("{} run(s) stored in {}", added.len(), store.location());
    if !added.is_empty() {
        line += &format!(" (run {})", ids(&added));
    }
    if !there.is_empty() {
        line += &format!("; {} were there already (run {})", there.len(), ids(&there));
    }
    crate::output::say(&line);
    Ok(0)
}
