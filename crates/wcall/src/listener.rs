//! The governor's socket: a thread that accepts one connection at a time, reads
//! one request within a short timeout, asks `crate::admission` and answers, handing
//! the board (and, to a joining process, its own table) over with SCM_RIGHTS.
//!
//! A client that connects and says nothing costs the others at most the
//! timeout; a governed program that cannot join within its own timeout runs
//! ungoverned and says so. The socket is journaled and removed when the governor
//! stops, on Ctrl-C and by `oslab restore`.

use std::os::fd::{AsRawFd, RawFd};
use std::os::unix::fs::{FileTypeExt, MetadataExt, PermissionsExt};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use oslab_sys::journal::{Undo, with_global};

use crate::admission::{Granted, Peer, admit};
use crate::registry::Registry;
use crate::shm::BoardMap;
use crate::shm::wire::{self, REQUEST_BYTES, Reply, Request};

/// How long one client may take to send its request and read the reply.
const CLIENT_TIMEOUT: Duration = Duration::from_millis(250);

pub struct Listener {
    path: PathBuf,
    stop: Arc<AtomicBool>,
    handle: Option<std::thread::JoinHandle<()>>,
    journal_seq: Option<u64>,
}

/// Takes `path` for a new socket: refused when a governor answers there; a socket
/// of ours that nobody listens on (one left by a killed governor) is removed.
fn claim_path(path: &Path) -> std::io::Result<()> {
    let Ok(m) = std::fs::symlink_metadata(path) else {
        return Ok(());
    };
    if UnixStream::connect(path).is_ok() {
        return Err(std::io::Error::new(
            std::io::ErrorKind::AddrInUse,
            format!("a governor already listens on {}", path.display()),
        ));
    }
    if !m.file_type().is_socket() || m.uid() != oslab_sys::process::uid() {
        return Err(std::io::Error::other(format!(
            "{} is in the way (not a socket of this user's)",
            path.display()
        )));
    }
    std::fs::remove_file(path)
}

/// How old a socket nobody listens on must be before a new governor removes it:
/// older than any governor's gap between bind and listen.
const STALE_AFTER: Duration = Duration::from_secs(10);

/// Removes, from the folder `dir`, the governor sockets of `uid` that nobody
/// listens on (connect refused) and that are older than `min_age`: those of
/// governors killed before they could remove theirs (SIGKILL, a journal nobody
/// restores). Anything else (another user's file, not a socket, one that
/// answers) is left alone. The names removed.
pub fn sweep_stale(dir: &Path, uid: u32, min_age: Duration) -> Vec<String> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let now = std::time::SystemTime::now();
    let mut removed = Vec::new();
    for e in entries.flatten() {
        let path = e.path();
        let Ok(m) = std::fs::symlink_metadata(&path) else {
            continue;
        };
        let old = m
            .modified()
            .ok()
            .and_then(|t| now.duration_since(t).ok())
            .is_some_and(|age| age >= min_age);
        let ours = m.file_type().is_socket() && m.uid() == uid;
        let named = path.extension().is_some_and(|x| x == "sock");
        if !(old && ours && named) {
            continue;
        }
        let refused = matches!(
            UnixStream::connect(&path),
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionRefused
        );
        if refused && std::fs::remove_file(&path).is_ok() {
            removed.push(e.file_name().to_string_lossy().into_owned());
        }
    }
    removed
}

impl Listener {
    pub fn start(
        path: &Path,
        board: Arc<BoardMap>,
        registry: Arc<Mutex<Registry>>,
    ) -> std::io::Result<Listener> {
        if let Some(dir) = path.parent() {
            sweep_stale(dir, oslab_sys::process::uid(), STALE_AFTER);
        }
        claim_path(path)?;
        let seq = with_global(|j| {
            j.record_private(
                format!("the governor's socket {}", path.display()),
                Undo::RemovePath {
                    path: path.to_path_buf(),
                },
            )
        })
        .ok();
        let sock = match UnixListener::bind(path) {
            // the last governor of the folder took it away between our check and bind
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                crate::rendezvous::own_dir().map_err(std::io::Error::other)?;
                UnixListener::bind(path)?
            }
            r => r?,
        };
        // root's governors take every user's programs; a user's only their own
        // (their folder is theirs alone anyway)
        let mode = if oslab_sys::process::is_root() {
            0o666
        } else {
            0o600
        };
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode))?;
        sock.set_nonblocking(true)?;
        let stop = Arc::new(AtomicBool::new(false));
        let s = stop.clone();
        let handle = std::thread::Builder::new()
            .name("wcall-listener".into())
            .spawn(move || serve(sock, &s, &board, &registry))?;
        Ok(Listener {
            path: path.to_path_buf(),
            stop,
            handle: Some(handle),
            journal_seq: seq,
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for Listener {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
        if let Some(seq) = self.journal_seq {
            let _ = with_global(|j| j.undo(seq));
        } else {
            let _ = std::fs::remove_file(&self.path);
        }
        // the sockets' folder goes with the last socket in it (remove_dir leaves a
        // folder that still holds another governor's socket)
        if let Some(folder) = self.path.parent() {
            let _ = std::fs::remove_dir(folder);
        }
    }
}

fn serve(sock: UnixListener, stop: &AtomicBool, board: &BoardMap, registry: &Mutex<Registry>) {
    while !stop.load(Ordering::Relaxed) {
        let mut pfd = libc::pollfd {
            fd: sock.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        };
        // SAFETY: poll on one pollfd of ours, 100 ms at most.
        if unsafe { libc::poll(&mut pfd, 1, 100) } <= 0 {
            continue;
        }
        if let Ok((stream, _)) = sock.accept() {
            let _ = answer(&stream, board, registry);
        }
    }
}

/// Reads one request from `stream` and answers it.
fn answer(
    stream: &UnixStream,
    board: &BoardMap,
    registry: &Mutex<Registry>,
) -> std::io::Result<()> {
    stream.set_nonblocking(false)?;
    let fd = stream.as_raw_fd();
    wire::set_timeouts(fd, CLIENT_TIMEOUT)?;
    let cred = wire::peer_cred(fd)?;
    let pidfd = wire::peer_pidfd(fd);
    let mut buf = [0u8; REQUEST_BYTES];
    // descriptors a client sends along are closed as they are dropped
    let _sent = wire::receive(fd, &mut buf)?;
    let refuse = |why: String| {
        board.board().header.refused.fetch_add(1, Ordering::Relaxed);
        reply(fd, &Reply::no(why), &[])
    };
    let req = match Request::from_bytes(&buf) {
        Ok(r) => r,
        Err(why) => return refuse(why.into()),
    };
    let peer = Peer {
        pid: cred.pid as u32,
        uid: cred.uid,
        pidfd,
    };
    match admit(peer, &req, board, registry) {
        Ok(Granted::Member { index, group, own }) => reply(
            fd,
            &Reply::yes(index, group),
            &[board.fd(), own.as_raw_fd()],
        ),
        Ok(Granted::Slot { index, group }) => reply(fd, &Reply::yes(index, group), &[]),
        Ok(Granted::Counted) => reply(fd, &Reply::yes(0, 0), &[]),
        Ok(Granted::Launcher | Granted::Look) => reply(fd, &Reply::yes(0, 0), &[board.fd()]),
        Err(why) => refuse(why),
    }
}

fn reply(fd: RawFd, r: &Reply, fds: &[RawFd]) -> std::io::Result<()> {
    wire::send(fd, &r.to_bytes(), fds)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sockets_nobody_listens_on_are_swept_and_nothing_else() {
        let dir = tempfile::tempdir().unwrap();
        let me = oslab_sys::process::uid();
        // a killed governor's socket: bound, never removed
        let dead = dir.path().join("dead.sock");
        drop(UnixListener::bind(&dead).unwrap());
        // a live one, a plain file with the name, and a young dead socket
        let live_path = dir.path().join("live.sock");
        let _live = UnixListener::bind(&live_path).unwrap();
        std::fs::write(dir.path().join("file.sock"), "").unwrap();
        assert_eq!(
            sweep_stale(dir.path(), me, Duration::from_secs(3600)),
            Vec::<String>::new()
        );
        assert!(dead.exists(), "younger than the age asked for");
        assert_eq!(
            sweep_stale(dir.path(), me, Duration::ZERO),
            vec!["dead.sock".to_string()]
        );
        assert!(!dead.exists() && live_path.exists());
        assert!(dir.path().join("file.sock").exists());
        // another user's socket is not ours to remove
        let other = dir.path().join("other.sock");
        drop(UnixListener::bind(&other).unwrap());
        assert!(sweep_stale(dir.path(), me + 1, Duration::ZERO).is_empty());
        assert!(other.exists());
    }
}
