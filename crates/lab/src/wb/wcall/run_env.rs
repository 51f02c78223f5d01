//! What every cell of one run shares, as the measuring and the writers' launch
//! read it.

use std::path::PathBuf;

use super::Plan;
use oslab_services::testbed::Testbed;

/// What every cell of one run shares.
pub struct Env<'a> {
    pub tb: &'a Testbed,
    pub machine: &'a oslab_model::machine::MachineInfo,
    /// oslab itself, which runs the daemon and `wcall run`.
    pub exe: PathBuf,
    /// The paced writer, built for this run.
    pub paced: PathBuf,
    pub scratch: PathBuf,
    pub plan: &'a Plan,
}
