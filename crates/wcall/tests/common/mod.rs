//! A governor's listener served on a thread of the test, as `oslab wcall
//! daemon` serves it (the real loop and the real answers), and clients that play
//! other users from threads of their own; and what a test checks it left behind.

#![allow(dead_code)]

use std::os::unix::fs::PermissionsExt;
use std::os::unix::net::UnixListener;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use oslab_wcall::listener::{REQUEST_DEADLINE, REQUEST_PATIENCE, RT_SHARE, answer};
use oslab_wcall::reaper::Reaper;
use oslab_wcall::registry::Registry;
use oslab_wcall::serve::{Limits, serve_with};
use oslab_wcall::shm::BoardMap;
use oslab_wcall::shm::conn;
use oslab_wcall::shm::wire::{self, Ask, Request};

/// The uid the tests play another user with.
pub const NOBODY: u32 = 65534;

/// The production limits, real-time's CPU share included.
pub fn production() -> Limits {
    Limits {
        patience: REQUEST_PATIENCE,
        request: REQUEST_DEADLINE,
        share: Some(RT_SHARE),
        coordinator_uid: oslab_sys::process::uid(),
    }
}

/// A socket any user can reach, served until dropped.
pub struct Served {
    _dir: tempfile::TempDir,
    pub path: PathBuf,
    pub reaper: Arc<Reaper>,
    stop: Arc<AtomicBool>,
    server: Option<std::thread::JoinHandle<()>>,
}

impl Served {
    /// Serves with `limits`; `refuse`: descriptors refused by the kernel
    /// (SO_PASSRIGHTS) where it can, else as on a kernel without it.
    pub fn start(limits: Limits, refuse: bool) -> Served {
        let dir = tempfile::tempdir().unwrap();
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
        let path = dir.path().join("g.sock");
        let sock = if refuse {
            conn::listen(&path, 0o600).unwrap().0
        } else {
            let s = UnixListener::bind(&path).unwrap();
            s.set_nonblocking(true).unwrap();
            s
        };
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o666)).unwrap();
        // root's own beside it, as a daemon of root's keeps
        let own = wire::root_path(&path).map(|p| conn::listen(&p, 0o600).unwrap().0);
        let stop = Arc::new(AtomicBool::new(false));
        let reaper = Arc::new(Reaper::new());
        let (s, r) = (stop.clone(), reaper.clone());
        let server = std::thread::spawn(move || {
            // real-time as root, as the daemon's listener runs
            if oslab_sys::process::is_root() {
                let _ = oslab_sys::process::set_fifo(oslab_wcall::service::COORDINATOR_FIFO);
            }
            let board = BoardMap::create("test", 2).unwrap();
            let registry = Mutex::new(Registry::new(limits.coordinator_uid));
            serve_with(sock, own, &s, &limits, &r, |a| {
                let _ = answer(a, &board, &registry);
            });
        });
        Served {
            _dir: dir,
            path,
            reaper,
            stop,
            server: Some(server),
        }
    }

    /// Stops the loop: it must not be stuck in anything a client did.
    pub fn stop_within(mut self, limit: Duration) {
        self.stop.store(true, Ordering::Relaxed);
        let server = self.server.take().unwrap();
        let start = Instant::now();
        while !server.is_finished() {
            assert!(start.elapsed() < limit, "the listener did not stop");
            std::thread::sleep(Duration::from_millis(10));
        }
        server.join().expect("the listener panicked");
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(s) = self.server.take()
            && !std::thread::panicking()
        {
            s.join().expect("the listener panicked");
        }
    }
}

/// Root's look at the board: how long it took to be answered (an error when it
/// was not, within `limit`).
pub fn look(path: &Path, limit: Duration) -> std::io::Result<Duration> {
    let start = Instant::now();
    let req = Request {
        ask: Ask::Look,
        group: 0,
        pid: 0,
    };
    let a = wire::ask(path, &req, limit)?;
    if !a.reply.ok || a.fds.is_empty() {
        return Err(std::io::Error::other(a.reply.reason));
    }
    Ok(start.elapsed())
}

/// Asserts that root's look is answered within the listener's promise, 1 s.
pub fn root_is_answered(path: &Path, what: &str) {
    let took = look(path, Duration::from_secs(1))
        .unwrap_or_else(|e| panic!("root's look was not answered ({what}): {e}"));
    assert!(
        took < Duration::from_secs(1),
        "root waited {took:?} ({what})"
    );
}

/// Runs `f` on a thread whose effective user is `uid`: the raw system call
/// changes that thread alone (libc's setresuid changes every thread), and the
/// kernel names that user as the peer of each connection the thread makes.
pub fn as_user<T: Send + 'static>(
    uid: u32,
    f: impl FnOnce() -> T + Send + 'static,
) -> std::thread::JoinHandle<T> {
    std::thread::spawn(move || {
        let keep = u32::MAX as libc::c_long;
        // SAFETY: setresuid(keep, uid, keep) of this thread only.
        let r = unsafe { libc::syscall(libc::SYS_setresuid, keep, uid as libc::c_long, keep) };
        assert_eq!(r, 0, "setresuid: {}", std::io::Error::last_os_error());
        f()
    })
}

pub fn is_root() -> bool {
    oslab_sys::process::is_root()
}

/// Whether the journal folder `dir` holds no journal (`*.jsonl`): every change
/// the test made was undone.
pub fn no_journal_in(dir: &Path) -> bool {
    std::fs::read_dir(dir)
        .unwrap()
        .all(|e| !e.unwrap().file_name().to_string_lossy().ends_with(".jsonl"))
}
