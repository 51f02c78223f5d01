//! The governor's socket: a thread that accepts connections, answers each once its
//! request has arrived (asking `crate::admission`), handing the board (and, to a
//! joining process, its own table) over with SCM_RIGHTS.
//!
//! A client that connects and says nothing holds up no other: connections wait
//! side by side (at most [`MAX_WAITING`], for [`REQUEST_PATIENCE`] each); a
//! governed program that cannot join within its own timeout runs ungoverned and
//! says so. Run as root, the thread is real-time at the coordinator's priority,
//! so real-time writers cannot keep a program that starts beside them from
//! joining (on one CPU, two FIFO writers starved a normal thread past every
//! client's timeout); since it then serves any user's requests ahead of normal
//! work, it holds itself to [`RT_SHARE`] of a CPU, resting after each round of
//! accepts and answers in proportion to the CPU time the round took. The socket
//! is journaled and removed when the governor stops, on Ctrl-C and by `oslab
//! restore`.

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

/// How long one client may take to finish its request and read the reply, once
/// it began.
const CLIENT_TIMEOUT: Duration = Duration::from_millis(250);

/// The most of a CPU the listener takes while real-time: a flood of requests from
/// any user then slows the joins down, not the machine.
pub const RT_SHARE: f64 = 0.1;

/// How long to rest after a request that took `cpu_ns` of CPU so that the
/// listener's busy share stays at most `share` (never more than a second: no
/// request costs that much, and a wrong clock must not stop the listener).
pub fn rest_after(cpu_ns: u64, share: f64) -> Duration {
    if !(share > 0.0 && share < 1.0) {
        return Duration::ZERO;
    }
    let rest = cpu_ns as f64 * (1.0 / share - 1.0);
    Duration::from_nanos(rest.min(1e9) as u64)
}

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
    /// `fifo`: the SCHED_FIFO priority to serve at (root's governors), or none.
    pub fn start(
        path: &Path,
        board: Arc<BoardMap>,
        registry: Arc<Mutex<Registry>>,
        fifo: Option<i32>,
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
            .spawn(move || {
                let rt = fifo.is_some_and(|p| oslab_sys::process::set_fifo(p).is_ok());
                serve(sock, &s, &board, &registry, rt)
            })?;
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

fn serve(
    sock: UnixListener,
    stop: &AtomicBool,
    board: &BoardMap,
    registry: &Mutex<Registry>,
    rt: bool,
) {
    let share = rt.then_some(RT_SHARE);
    serve_with(sock, stop, REQUEST_PATIENCE, share, |stream| {
        let _ = answer(stream, board, registry);
    });
}

/// How long an accepted client has to start its request: long enough for a
/// program that real-time writers keep off the CPU (under the kernel's real-time
/// throttling normal tasks get 5 % of each second, so a turn can be 0.95 s away).
const REQUEST_PATIENCE: Duration = Duration::from_secs(3);

/// Connections waiting for their request at once; a newer one drops the oldest.
const MAX_WAITING: usize = 64;

/// Accepts connections and hands each to `handle` once its request has arrived
/// (or it hung up), so a client that says nothing holds up no other; one that
/// says nothing for `patience` is dropped. With a `share`, each round (its
/// accepts and answers) is followed by a rest that keeps the thread's busy time
/// within that share of a CPU, however fast connections come.
fn serve_with(
    sock: UnixListener,
    stop: &AtomicBool,
    patience: Duration,
    share: Option<f64>,
    mut handle: impl FnMut(&UnixStream),
) {
    let patience_ns = patience.as_nanos() as u64;
    let mut waiting: std::collections::VecDeque<(UnixStream, u64)> = Default::default();
    while !stop.load(Ordering::Relaxed) {
        let now = oslab_sys::clock::monotonic_ns();
        waiting.retain(|(_, deadline)| *deadline > now);
        let mut pfds: Vec<libc::pollfd> = std::iter::once(sock.as_raw_fd())
            .chain(waiting.iter().map(|(s, _)| s.as_raw_fd()))
            .map(|fd| libc::pollfd {
                fd,
                events: libc::POLLIN,
                revents: 0,
            })
            .collect();
        // SAFETY: poll on pollfds of ours, 100 ms at most.
        if unsafe { libc::poll(pfds.as_mut_ptr(), pfds.len() as libc::nfds_t, 100) } <= 0 {
            continue;
        }
        let cpu0 = oslab_sys::clock::thread_cpu_ns();
        // those ready, newest first, so removing one leaves the others' places
        let ready: Vec<usize> = (1..pfds.len())
            .rev()
            .filter(|&i| pfds[i].revents != 0)
            .map(|i| i - 1)
            .collect();
        for i in ready {
            if let Some((stream, _)) = waiting.remove(i) {
                handle(&stream);
            }
        }
        if pfds[0].revents != 0 {
            for _ in 0..MAX_WAITING {
                let Ok((stream, _)) = sock.accept() else {
                    break;
                };
                if waiting.len() == MAX_WAITING {
                    waiting.pop_front();
                }
                waiting.push_back((stream, now.saturating_add(patience_ns)));
            }
        }
        if let Some(share) = share {
            let spent = oslab_sys::clock::thread_cpu_ns().saturating_sub(cpu0);
            std::thread::sleep(rest_after(spent, share));
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

    /// A socket served by `serve_with` on a thread of its own, until dropped.
    struct Served {
        _dir: tempfile::TempDir,
        path: PathBuf,
        stop: Arc<AtomicBool>,
        server: Option<std::thread::JoinHandle<()>>,
    }

    impl Served {
        fn start(
            patience: Duration,
            share: Option<f64>,
            handle: impl FnMut(&UnixStream) + Send + 'static,
        ) -> Served {
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().join("g.sock");
            let sock = UnixListener::bind(&path).unwrap();
            sock.set_nonblocking(true).unwrap();
            let stop = Arc::new(AtomicBool::new(false));
            let s = stop.clone();
            let server = std::thread::spawn(move || serve_with(sock, &s, patience, share, handle));
            Served {
                _dir: dir,
                path,
                stop,
                server: Some(server),
            }
        }
    }

    impl Drop for Served {
        fn drop(&mut self) {
            self.stop.store(true, Ordering::Relaxed);
            if let Some(s) = self.server.take() {
                let served = s.join();
                if !std::thread::panicking() {
                    served.expect("the server thread panicked");
                }
            }
        }
    }

    /// Clients that connect and say nothing, however many, do not hold up one
    /// that asks.
    #[test]
    fn a_silent_client_holds_up_no_other() {
        use std::io::{Read, Write};
        let served = Served::start(Duration::from_secs(3600), Some(RT_SHARE), |stream| {
            let mut b = [0u8; 4];
            let mut stream = stream;
            if stream.read_exact(&mut b).is_ok() {
                let _ = stream.write_all(&b);
            }
        });
        let path = &served.path;
        // more silent connections than may wait: the oldest make room
        let crowd: Vec<UnixStream> = (0..MAX_WAITING + 5)
            .map(|_| UnixStream::connect(path).unwrap())
            .collect();
        let silent = UnixStream::connect(path).unwrap();
        let mut asking = UnixStream::connect(path).unwrap();
        asking.write_all(b"ping").unwrap();
        let mut back = [0u8; 4];
        asking.read_exact(&mut back).unwrap();
        assert_eq!(&back, b"ping");
        // answered while the silent one still waits, not after it was dropped
        silent.set_nonblocking(true).unwrap();
        let e = (&silent).read(&mut back).unwrap_err();
        assert_eq!(e.kind(), std::io::ErrorKind::WouldBlock);
        // the first of the crowd was dropped to make room
        assert_eq!((&crowd[0]).read(&mut back).unwrap(), 0);
    }

    #[test]
    fn a_client_silent_past_the_patience_is_dropped() {
        use std::io::Read;
        let served = Served::start(Duration::ZERO, None, |_| panic!("nothing was asked"));
        let mut silent = UnixStream::connect(&served.path).unwrap();
        // the server closes it: the read sees the end, not a hang
        let mut b = [0u8; 1];
        assert_eq!(silent.read(&mut b).unwrap(), 0);
    }

    #[test]
    fn the_rest_keeps_the_busy_share_at_the_bound() {
        // 100 us of work at a 10 % share: 900 us of rest, 10 % busy
        assert_eq!(rest_after(100_000, 0.1), Duration::from_micros(900));
        assert_eq!(rest_after(0, 0.1), Duration::ZERO);
        // no bound asked (or a nonsense one): no rest
        for share in [0.0, 1.0, -1.0, f64::NAN] {
            assert_eq!(rest_after(100_000, share), Duration::ZERO);
        }
        // a huge CPU figure rests a second, not forever
        assert_eq!(rest_after(u64::MAX, 0.1), Duration::from_secs(1));
    }

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
