//! The scratch directory of one experiment: created fresh and private under the
//! user's scratch base, with a random name another user cannot plant beforehand
//! (the base is often /tmp), journaled so a killed run's files are removed by
//! `oslab restore`, removed when the experiment ends (also on error or Ctrl-C,
//! through the journal).

use std::path::{Path, PathBuf};

use oslab_sys::journal::{self, Undo};
use oslab_sys::machine::free_bytes;
use oslab_sys::parse::size::human_bytes;
use oslab_sys::tempname;

use crate::harness::LabError;

/// Fresh names tried; each fails only when something already stands there.
const TRIES: usize = 8;

/// A fresh random name `BASE/PREFIX<random>` and the journal entry that removes
/// it, recorded before it is made (so a kill right after leaves nothing behind).
fn journaled_name(base: &Path, prefix: &str) -> Result<(PathBuf, u64), LabError> {
    let name = tempname::fresh_name(prefix, "")
        .map_err(|e| LabError::Failed(format!("no random name for a scratch directory: {e}")))?;
    let dir = base.join(name);
    let seq = journal::with_global(|j| {
        j.record(
            format!("scratch directory {}", dir.display()),
            Undo::RemovePath { path: dir.clone() },
        )
    })?;
    Ok((dir, seq))
}

pub struct Scratch {
    dir: PathBuf,
    seq: u64,
}

impl Scratch {
    /// Creates `BASE/oslab-ID-<random>/` (mode 0700, made fresh: a folder or
    /// link already at the name is never used), after checking that
    /// `need_bytes` fit there.
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
        let prefix = format!("oslab-{}-", id.replace('.', "-"));
        let mut taken = None;
        for _ in 0..TRIES {
            let (dir, seq) = journaled_name(base, &prefix)?;
            match tempname::create_private_dir(&dir) {
                Ok(()) => return Ok(Scratch { dir, seq }),
                Err(e) => {
                    // what stands at the name is not ours: never undo (remove) it
                    let _ = journal::with_global(|j| j.forget(seq));
                    if e.kind() != std::io::ErrorKind::AlreadyExists {
                        return Err(LabError::Failed(format!(
                            "cannot create scratch directory {}: {e}",
                            dir.display()
                        )));
                    }
                    taken = Some(dir);
                }
            }
        }
        Err(LabError::Failed(format!(
            "cannot create a scratch directory in {}: fresh names were taken (the last {})",
            base.display(),
            taken.map_or_else(String::new, |d| d.display().to_string())
        )))
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
