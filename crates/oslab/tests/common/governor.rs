//! Governors started by a test and stopped as Ctrl-C stops them.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// A child killed when the test ends, also when it fails: a daemon left behind
/// would hold the test's output open.
pub struct Reaped(pub std::process::Child);

impl Drop for Reaped {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// `oslab wcall daemon --name NAME EXTRA` from `oslab` (the test's command with
/// its environment), once it can be found.
pub fn start_daemon(mut oslab: Command, name: &str, extra: &[&str]) -> Reaped {
    let d = Reaped(
        oslab
            .args(["wcall", "daemon", "--every", "0", "--name", name])
            .args(extra)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    wait_for_governor(name);
    d
}

pub fn wait_for_governor(name: &str) -> oslab_wcall::rendezvous::Found {
    let start = Instant::now();
    loop {
        if let Some(f) = oslab_wcall::rendezvous::discover()
            .into_iter()
            .find(|f| f.name == name)
        {
            return f;
        }
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "governor {name} did not show up"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The status of governor `name`, from `oslab wcall status --json`.
pub fn status_of(mut oslab: Command, name: &str) -> serde_json::Value {
    let o = oslab
        .args(["wcall", "status", "--json", "-", "--name", name])
        .output()
        .unwrap();
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    v[0]["status"].clone()
}

pub fn stop(mut daemon: Reaped) {
    // stopped as Ctrl-C would: it removes its cgroups and socket itself
    let _ = Command::new("kill")
        .args(["-TERM", &daemon.0.id().to_string()])
        .status();
    let _ = daemon.0.wait();
}
