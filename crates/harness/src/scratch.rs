//! The scratch directory of one experiment: created fresh and private under the
//! user's scratch base, with a random name another user cannot plant beforehand
//! (the base is often /tmp), journaled so a killed run's files are removed by
//! `oslab restore`, removed when the experiment ends (also on error or Ctrl-C,
//! through the journal).

use std::path::{Path, PathBuf};

use oslab_sys::chase::{chain, trusted_owners};
use oslab_sys::journal::{self, Undo};
use oslab_sys::machine::free_bytes;
use oslab_sys::tempname;
use oslab_units::human_bytes;

/// Why a scratch directory could not be made. `TooLittleSpace` is the one a
/// caller can act on (another `--scratch`); the others are failures of the
/// system.
#[derive(Debug, thiserror::Error)]
pub enum ScratchError {
    #[error(
        "the scratch directory {} has {} free, {} are needed (choose another with --scratch)",
        base.display(),
        human_bytes(*free),
        human_bytes(*needed)
    )]
    TooLittleSpace {
        base: PathBuf,
        free: u64,
        needed: u64,
    },
    #[error("no random name for a scratch directory: {0}")]
    NoName(std::io::Error),
    /// The base is a folder another user could change under the scratch.
    #[error("the scratch directory {} cannot be used: {why} (choose another with --scratch)", base.display())]
    Unsafe { base: PathBuf, why: String },
    #[error("cannot create scratch directory {}: {source}", dir.display())]
    Create {
        dir: PathBuf,
        source: std::io::Error,
    },
    #[error(
        "cannot create a scratch directory in {}: fresh names were taken (the last {})",
        base.display(),
        last.as_ref().map_or_else(String::new, |d| d.display().to_string())
    )]
    NamesTaken {
        base: PathBuf,
        last: Option<PathBuf>,
    },
    /// Its removal could not be journaled.
    #[error(transparent)]
    Journal(#[from] oslab_sys::SysError),
}

/// Fresh names tried; each fails only when something already stands there.
const TRIES: usize = 8;

/// A fresh random name `BASE/PREFIX<random>` and the journal entry that removes
/// it, recorded before it is made (so a kill right after leaves nothing behind).
fn journaled_name(base: &Path, prefix: &str) -> Result<(PathBuf, u64), ScratchError> {
    let name = tempname::fresh_name(prefix, "").map_err(ScratchError::NoName)?;
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
    pub fn create(base: &Path, id: &str, need_bytes: u64) -> Result<Scratch, ScratchError> {
        // what is made in it is used by path afterwards (by programs oslab
        // starts, too): only in a base nobody but root or the caller can change
        let base = &chain::stable_folder(base, &trusted_owners(), chain::LastFolder::MaySticky)
            .map_err(|e| ScratchError::Unsafe {
                base: base.to_path_buf(),
                why: e.to_string(),
            })?;
        if let Some(free) = free_bytes(base)
            && free < need_bytes
        {
            return Err(ScratchError::TooLittleSpace {
                base: base.to_path_buf(),
                free,
                needed: need_bytes,
            });
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
                        return Err(ScratchError::Create { dir, source: e });
                    }
                    taken = Some(dir);
                }
            }
        }
        Err(ScratchError::NamesTaken {
            base: base.to_path_buf(),
            last: taken,
        })
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::LabError;

    #[test]
    fn too_little_space_is_its_own_error_with_the_words_it_had() {
        let base = std::env::temp_dir();
        let e = Scratch::create(&base, "test.scratch", u64::MAX)
            .err()
            .expect("no file system has 16 EiB free");
        assert!(matches!(e, ScratchError::TooLittleSpace { .. }), "{e:?}");
        let text = e.to_string();
        assert!(
            text.starts_with(&format!("the scratch directory {} has ", base.display()))
                && text.ends_with("are needed (choose another with --scratch)"),
            "{text}"
        );
        // as a measurement's error, the same sentence
        assert_eq!(LabError::from(e).to_string(), text);
    }
}
