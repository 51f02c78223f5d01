//! Sysctls set for the length of an experiment, through the journal.

use oslab_sys::fsread::Root;
use oslab_sys::{SysError, journal, sysctl};

use oslab_harness::LabError;

/// Sysctls changed for as long as this value lives; put back (newest first) on drop,
/// and by the journal on Ctrl-C or `oslab restore` after a crash.
pub struct Knobs {
    seqs: Vec<u64>,
}

impl Knobs {
    /// Sets each `(name, value)` in order. The dirty pairs are exclusive, so set the
    /// `*_bytes` you want after any `*_ratio`.
    pub fn set(settings: &[(&str, String)]) -> Result<Knobs, LabError> {
        let mut k = Knobs { seqs: Vec::new() };
        for (name, value) in settings {
            let seq = journal::with_global(|j| {
                let undo = sysctl::undo_for(&Root::live(), name)?;
                let seq = j.record(format!("sysctl {name} = {value}"), undo)?;
                let path = Root::live().path(&sysctl::sysctl_path(name));
                std::fs::write(&path, value).map_err(|source| SysError::Write { path, source })?;
                Ok(seq)
            })?;
            k.seqs.push(seq);
        }
        Ok(k)
    }
}

impl Drop for Knobs {
    fn drop(&mut self) {
        for s in self.seqs.iter().rev() {
            let _ = journal::with_global(|j| j.undo(*s));
        }
    }
}
