//! A governor daemon started for an experiment's cell, as a user starts one
//! (`oslab wcall daemon`), and stopped (SIGTERM: it releases its writers and
//! removes its cgroups) when dropped; shared by wb.wcall and wb.database.

use std::path::Path;
use std::process::{Child, Stdio};
use std::time::Duration;

use oslab_wcall::cli::{Launch, WcallDaemonArgs, WcallPolicyArgs};
use oslab_wcall::rendezvous::{self, GovernorName};

use oslab_harness::LabError;

pub struct Daemon {
    pub child: Child,
    pub name: GovernorName,
    /// Its board, read-only, once it answered.
    pub board: Option<oslab_wcall::shm::BoardView>,
}

impl Drop for Daemon {
    fn drop(&mut self) {
        oslab_sys::process::signal_process(self.child.id(), oslab_sys::signals::TERM).ok();
        let _ = self.child.wait();
    }
}

impl Daemon {
    /// `exe wcall daemon --name NAME` with `policy`, once its socket answers.
    pub fn start(exe: &Path, name: &str, policy: WcallPolicyArgs) -> Result<Daemon, LabError> {
        let name: GovernorName = name
            .parse()
            .map_err(|why| LabError::Failed(format!("governor name '{name}': {why}")))?;
        let mut cmd = Launch::Daemon(WcallDaemonArgs {
            name: name.clone(),
            policy,
            service: Vec::new(),
            duration: None,
            every: 0.0,
        })
        .command(exe);
        cmd.stdout(Stdio::null()).stderr(Stdio::null());
        let child =
            oslab_sys::signals::child_of_oslab(&mut cmd, oslab_sys::signals::OnParentDeath::Kill)
                .spawn()
                .map_err(|err| {
                    LabError::Failed(format!("cannot start the governor's daemon: {err}"))
                })?;
        let mut d = Daemon {
            child,
            name,
            board: None,
        };
        for _ in 0..200 {
            if let Some(f) = rendezvous::discover()
                .into_iter()
                .find(|f| f.name == d.name.as_str() && f.pid == d.child.id())
                && let Ok(b) = f.board()
            {
                d.board = Some(b);
                return Ok(d);
            }
            if let Ok(Some(status)) = d.child.try_wait() {
                return Err(LabError::Failed(format!(
                    "the governor's daemon exited at once ({status})"
                )));
            }
            std::thread::sleep(Duration::from_millis(25));
        }
        Err(LabError::Failed(
            "the governor's daemon did not come up in 5 s".into(),
        ))
    }
}
