//! What `report` and `compare` read: result files written by `oslab run --json`, or
//! run ids of the results database.

use std::path::Path;

use oslab_model::{ExperimentResult, ResultSet};
use oslab_store::Store;

use crate::db;
use crate::failure::Failure;

/// Results from one named source.
pub struct Loaded {
    /// How to name it to the user: the file name or "run N".
    pub label: String,
    pub results: Vec<ExperimentResult>,
}

/// Opens the database once, on the first run id.
pub struct LazyStore<'a> {
    arg: Option<&'a Path>,
    store: Option<Store>,
}

impl<'a> LazyStore<'a> {
    pub fn new(arg: Option<&'a Path>) -> LazyStore<'a> {
        LazyStore { arg, store: None }
    }

    pub fn get(&mut self) -> Result<&Store, Failure> {
        if self.store.is_none() {
            self.store = Some(db::open_existing(self.arg)?);
        }
        Ok(self.store.as_ref().expect("opened above"))
    }
}

/// Reads a results file: a result set (`oslab run --json`) or a single result.
pub fn read_file(path: &Path) -> Result<Vec<ExperimentResult>, Failure> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| Failure::usage(format!("cannot read {}: {e}", path.display())))?;
    if let Ok(set) = serde_json::from_str::<ResultSet>(&text) {
        return Ok(set.results);
    }
    serde_json::from_str::<ExperimentResult>(&text)
        .map(|r| vec![r])
        .map_err(|e| {
            Failure::usage(format!(
                "{} is not an oslab results file (the JSON that `oslab run --json` writes): {e}",
                path.display()
            ))
        })
}

/// Loads one source: an existing file, else a run id.
pub fn load(arg: &str, store: &mut LazyStore) -> Result<Loaded, Failure> {
    let path = Path::new(arg);
    if path.is_dir() {
        return Err(Failure::usage(format!(
            "{arg} is a directory, not a results file"
        )));
    }
    if path.exists() {
        return Ok(Loaded {
            label: arg.to_string(),
            results: read_file(path)?,
        });
    }
    let id = if arg == "latest" {
        let s = store.get()?;
        let newest = s
            .runs(&oslab_store::RunFilter {
                limit: Some(1),
                ..Default::default()
            })
            .map_err(|e| Failure::runtime(e.to_string()))?;
        match newest.first() {
            Some(r) => r.id,
            None => {
                return Err(Failure::usage(format!(
                    "there are no runs in {} yet",
                    s.path().display()
                )));
            }
        }
    } else {
        arg.trim_start_matches('#').parse::<i64>().map_err(|_| {
            Failure::usage(format!(
                "{arg} is neither a results file nor a run id (see `oslab history`; `latest` names the newest run)"
            ))
        })?
    };
    let s = store.get()?;
    match s.run(id).map_err(|e| Failure::runtime(e.to_string()))? {
        Some((_, results)) => Ok(Loaded {
            label: format!("run {id}"),
            results,
        }),
        None => Err(Failure::usage(format!(
            "there is no run {id} in {} (`oslab history` lists the runs)",
            s.path().display()
        ))),
    }
}
