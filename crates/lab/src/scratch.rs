//! The scratch directory of one experiment: created under the user's scratch base,
//! journaled so a killed run's files are removed by `oslab restore`, removed when
//! the experiment ends (also on error or Ctrl-C, through the journal).

use std::path::{Path, PathBuf};

use oslab_sys::journal::{self, Undo};
use oslab_sys::machine::free_bytes;
use oslab_sys::parse::size::human_bytes;

use crate::experiment::LabError;

pub struct Scratch {
    dir: PathBuf,
    seq: u64,
}

impl Scratch {
    /// Creates `BASE/oslab-PID-ID/`, after checking that `need_bytes` fit there.
    pub fn create(base: &Path, id: &str, need_bytes: u64) -> Result<Scratch, LabError> {
        if let Some(free) = free_bytes(base)
            && free < need_bytes
        {
            return Err(LabError::Failed(format!(
                "the scratch directory {} has {} free, {} are needed (choose another with --scratch)",
                base.display(),
                human_bytes(free),
                human_bytes(need_bytes)
            )));
        }
        let dir = base.join(format!(
            "oslab-{}-{}",
            std::process::id(),
            id.replace('.', "-")
        ));
        let seq = journal::with_global(|j| {
            j.record(
                format!("scratch directory {}", dir.display()),
                Undo::RemovePath { path: dir.clone() },
            )
        })?;
        std::fs::create_dir_all(&dir).map_err(|e| {
            LabError::Failed(format!(
                "cannot create scratch directory {}: {e}",
                dir.display()
            ))
        })?;
        Ok(Scratch { dir, seq })
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    pub fn file(&self, name: &str) -> PathBuf {
        self.dir.join(name)
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = journal::with_global(|j| j.undo(self.seq));
    }
}
