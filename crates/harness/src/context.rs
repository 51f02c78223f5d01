//! How the user asked for a run, and what an experiment sees while it measures.

use std::path::PathBuf;

use oslab_model::Mode;
use oslab_model::machine::MachineInfo;

/// `--set` values, parsed against each experiment's declaration (`super::sets`),
/// keyed by (experiment id, setting name).
pub type Sets = std::collections::BTreeMap<(String, String), oslab_settings::SetValue>;

/// How the user asked for a run.
#[derive(Debug, Clone)]
pub struct RunConfig {
    pub mode: Mode,
    /// Samples per measurement, overriding the experiment's own count.
    pub repeat: Option<usize>,
    pub seed: u64,
    pub scratch_dir: PathBuf,
    pub sets: Sets,
    /// The oslab binary an experiment starts (its governor daemons, `oslab
    /// wcall run`, its writers): the binary names itself by /proc/self/exe
    /// (`oslab_sys::program::own_exe`, never a path another user could swap); a
    /// test or another front end names the oslab it built.
    pub oslab_exe: PathBuf,
}

impl RunConfig {
    pub fn quick(&self) -> bool {
        self.mode == Mode::Quick
    }
}

/// Reports progress of a long run; the binary draws it, tests ignore it.
pub trait Progress: Sync {
    /// A new stage began ("gettid").
    fn stage(&self, _message: &str) {}
    /// Share of this experiment done, 0..=1.
    fn fraction(&self, _done: f64) {}
}

/// A progress sink that shows nothing.
pub struct NoProgress;
impl Progress for NoProgress {}

/// What an experiment sees while it measures.
pub struct Context<'a> {
    /// The id of the experiment running.
    pub experiment: &'static str,
    pub config: &'a RunConfig,
    pub machine: &'a MachineInfo,
    pub progress: &'a dyn Progress,
}
