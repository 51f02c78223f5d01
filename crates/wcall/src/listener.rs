//! The governor's socket: a thread that accepts connections and answers each
//! once its request has arrived (asking `crate::admission`), handing the board
//! (and, to a joining process, its own table) over with SCM_RIGHTS. The loop
//! itself is `crate::serve`: it never waits on a client, serves root's (and the
//! coordinator's user's) connections first and from room kept for them, gives a
//! request [`REQUEST_DEADLINE`] from its first byte to its last, refuses every
//! descriptor sent to it, and holds others' work to a CPU share.
//!
//! A client that connects and says nothing holds up no other: connections wait
//! side by side (for [`REQUEST_PATIENCE`] each); a governed program that cannot
//! join within its own timeout runs ungoverned and says so. Run as root, the
//! thread is real-time at the coordinator's priority, so real-time writers
//! cannot keep a program that starts beside them from joining (on one CPU, two
//! FIFO writers starved a normal thread past every client's timeout); since it
//! then serves any user's requests ahead of normal work, it holds others' work
//! to [`RT_SHARE`] of a CPU. A governor of root's that every user may join
//! (a daemon, mode 0666) also listens on a socket for root alone beside it
//! (`wire::root_path`), so no other user can fill the kernel's queue of
//! connections ahead of root's; a command's own governor is its user's alone
//! (mode 0600) unless asked otherwise ([`Access`]). The sockets are journaled
//! and removed when the governor stops, on Ctrl-C and by `oslab restore`.

use std::os::fd::{AsRawFd, RawFd};
use std::os::unix::fs::{FileTypeExt, MetadataExt, PermissionsExt};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use oslab_sys::journal::{Undo, with_global};

use crate::admission::{Granted, Peer, admit};
use crate::reaper::Reaper;
use crate::registry::Registry;
use crate::serve::{Arrived, Limits, serve_with};
use crate::shm::BoardMap;
use crate::shm::conn;
use crate::shm::wire::{self, Reply, Request};

/// How long a client has from the first byte of its request to the last,
/// whatever their pace.
pub const REQUEST_DEADLINE: Duration = Duration::from_millis(250);

/// How long an accepted client has to start its request: long enough for a
/// program that real-time writers keep off the CPU (under the kernel's real-time
/// throttling normal tasks get 5 % of each second, so a turn can be 0.95 s away).
pub const REQUEST_PATIENCE: Duration = Duration::from_secs(3);

/// The most of a CPU the listener spends on others' requests while real-time: a
/// flood of requests from any user then slows the joins down, not the machine
/// (root's own are served whatever others cost).
pub const RT_SHARE: f64 = 0.1;

/// Who may connect to a governor's socket.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    /// Every user (mode 0666) where the governor is root's: a daemon, whose
    /// programs may run as any user.
    Shared,
    /// The governor's own user alone (mode 0600): a command's own governor.
    Owner,
}

pub struct Listener {
    path: PathBuf,
    stop: Arc<AtomicBool>,
    handle: Option<std::thread::JoinHandle<()>>,
    /// The socket files made (the socket, and root's own beside it), each with
    /// its journal entry.
    made: Vec<Made>,
}

/// A socket file made, and its journal entry.
struct Made {
    path: PathBuf,
    journal_seq: Option<u64>,
}

impl Made {
    fn remove(&self) {
        if let Some(seq) = self.journal_seq {
            let _ = with_global(|j| j.undo(seq));
        } else {
            let _ = std::fs::remove_file(&self.path);
        }
    }
}

/// A listening socket of this user's alone at `path` (see `conn::listen`),
/// journaled (`oslab restore` removes it).
fn bind(path: &Path, made: &mut Vec<Made>) -> std::io::Result<UnixListener> {
    claim_path(path)?;
    let journal_seq = with_global(|j| {
        j.record_private(
            format!("the governor's socket {}", path.display()),
            Undo::RemovePath {
                path: path.to_path_buf(),
            },
        )
    })
    .ok();
    made.push(Made {
        path: path.to_path_buf(),
        journal_seq,
    });
    let (sock, _) = match conn::listen(path, 0o600) {
        // the last governor of the folder took it away between our check and bind
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            crate::rendezvous::own_dir().map_err(std::io::Error::other)?;
            conn::listen(path, 0o600)?
        }
        r => r?,
    };
    Ok(sock)
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
    /// `fifo`: the SCHED_FIFO priority to serve at (root's governors), or none.
    pub fn start(
        path: &Path,
        board: Arc<BoardMap>,
        registry: Arc<Mutex<Registry>>,
        fifo: Option<i32>,
        access: Access,
    ) -> std::io::Result<Listener> {
        if let Some(dir) = path.parent() {
            sweep_stale(dir, oslab_sys::process::uid(), STALE_AFTER);
        }
        let mut made = Vec::new();
        let sockets = bind_all(path, access, &mut made);
        let (sock, own) = match sockets {
            Ok(s) => s,
            Err(e) => {
                made.iter().for_each(Made::remove);
                return Err(e);
            }
        };
        let stop = Arc::new(AtomicBool::new(false));
        let s = stop.clone();
        let handle = std::thread::Builder::new()
            .name("wcall-listener".into())
            .spawn(move || {
                let rt = fifo.is_some_and(|p| oslab_sys::process::set_fifo(p).is_ok());
                serve(sock, own, &s, &board, &registry, rt)
            })?;
        Ok(Listener {
            path: path.to_path_buf(),
            stop,
            handle: Some(handle),
            made,
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
        self.made.iter().for_each(Made::remove);
        // the sockets' folder goes with the last socket in it (remove_dir leaves a
        // folder that still holds another governor's socket)
        if let Some(folder) = self.path.parent() {
            let _ = std::fs::remove_dir(folder);
        }
    }
}

/// The socket at `path` and, for a governor of root's that every user may join,
/// root's own beside it (`wire::root_path`), so that no other user can queue a
/// connection ahead of root's.
fn bind_all(
    path: &Path,
    access: Access,
    made: &mut Vec<Made>,
) -> std::io::Result<(UnixListener, Option<UnixListener>)> {
    let sock = bind(path, made)?;
    // root's daemons take every user's programs; a user's only their own
    // (their folder is theirs alone anyway)
    if access == Access::Owner || !oslab_sys::process::is_root() {
        return Ok((sock, None));
    }
    let own = match wire::root_path(path) {
        Some(p) if wire::address(&p).is_ok() => Some(bind(&p, made)?),
        _ => None,
    };
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o666))?;
    Ok((sock, own))
}

fn serve(
    sock: UnixListener,
    own: Option<UnixListener>,
    stop: &AtomicBool,
    board: &BoardMap,
    registry: &Mutex<Registry>,
    rt: bool,
) {
    let limits = Limits {
        patience: REQUEST_PATIENCE,
        request: REQUEST_DEADLINE,
        share: rt.then_some(RT_SHARE),
        coordinator_uid: oslab_sys::process::uid(),
    };
    let reaper = Reaper::new();
    serve_with(sock, own, stop, &limits, &reaper, |arrived| {
        let _ = answer(arrived, board, registry);
    });
}

/// Answers a request that arrived: the listener's handler (`crate::serve`).
pub fn answer(a: &Arrived, board: &BoardMap, registry: &Mutex<Registry>) -> std::io::Result<()> {
    let refuse = |why: String| {
        board.board().header.refused.fetch_add(1, Ordering::Relaxed);
        reply(a.fd, &Reply::no(why), &[])
    };
    if a.descriptors {
        return refuse("no request takes a descriptor".into());
    }
    let req = match Request::from_bytes(a.bytes) {
        Ok(r) => r,
        Err(why) => return refuse(why.into()),
    };
    let peer = Peer {
        pid: a.cred.pid as u32,
        uid: a.cred.uid,
        pidfd: wire::peer_pidfd(a.fd),
    };
    match admit(peer, &req, board, registry) {
        Ok(Granted::Member { index, group, own }) => reply(
            a.fd,
            &Reply::yes(index, group),
            &[board.fd(), own.as_raw_fd()],
        ),
        Ok(Granted::Slot { index, group }) => reply(a.fd, &Reply::yes(index, group), &[]),
        Ok(Granted::Counted) => reply(a.fd, &Reply::yes(0, 0), &[]),
        Ok(Granted::Launcher | Granted::Look) => reply(a.fd, &Reply::yes(0, 0), &[board.fd()]),
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
