//! Where governors are found: each listens on a Unix socket `NAME.sock` in its
//! user's folder, root's in /run/oslab-wcall (root's own, mode 0755, so every user
//! can reach root's governors and nobody else can put a socket there), another
//! user's in `$XDG_RUNTIME_DIR/oslab-wcall` or `$TMPDIR/oslab-wcall-UID` (mode
//! 0700). Every folder is checked as `oslab_sys::owned` does before it is used or
//! listed, and a governor is believed only after the kernel says it runs as root
//! or as this user (SO_PEERCRED on the connection). A daemon of root's also
//! listens on `.NAME.sock`, for root alone (`wire::root_path`): no governor's
//! name starts with a dot, so it is never listed as one.

use std::path::{Path, PathBuf};
use std::time::Duration;

use oslab_sys::owned;

use crate::shm::BoardView;
use crate::shm::wire::{self, Ask, Request};

/// Root's governors.
pub const ROOT_DIR: &str = "/run/oslab-wcall";
const SUFFIX: &str = ".sock";

fn uid() -> u32 {
    oslab_sys::process::uid()
}

/// What a governor's name may be.
const NAME_RULE: &str = "use 1 to 64 letters, digits, '.', '_' or '-', not starting with '.'";

/// A governor name is a file name: 1 to 64 letters, digits, '.', '_' or '-', not
/// starting with a dot.
pub fn check_name(name: &str) -> Result<(), String> {
    let ok = !name.is_empty()
        && name.len() <= 64
        && !name.starts_with('.')
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'));
    if ok {
        Ok(())
    } else {
        Err(format!("governor name '{name}': {NAME_RULE}"))
    }
}

/// A governor's name as `--name` takes it: only a name [`check_name`] passes,
/// so never a path out of the governors' folder.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GovernorName(String);

impl GovernorName {
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl std::str::FromStr for GovernorName {
    type Err = String;

    fn from_str(text: &str) -> Result<GovernorName, String> {
        check_name(text).map_err(|_| NAME_RULE.to_string())?;
        Ok(GovernorName(text.to_string()))
    }
}

impl std::fmt::Display for GovernorName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// This user's folder, made when missing and checked (owned by this user,
/// writable by nobody else, no link); None with the reason when it cannot be used.
pub fn own_dir() -> Result<PathBuf, String> {
    let me = uid();
    let (dir, mode) = if me == 0 {
        (PathBuf::from(ROOT_DIR), 0o755)
    } else if let Some(x) = std::env::var_os("XDG_RUNTIME_DIR").filter(|x| !x.is_empty()) {
        (PathBuf::from(x).join("oslab-wcall"), 0o700)
    } else {
        (
            std::env::temp_dir().join(format!("oslab-wcall-{me}")),
            0o700,
        )
    };
    owned::check_ancestors(&dir, me).map_err(|e| e.to_string())?;
    owned::ensure_dir(&dir, me, mode)
        .map_err(|e| format!("cannot keep the governor's socket there: {e}"))?;
    Ok(dir)
}

/// The socket path of this user's governor `name`.
pub fn socket_path(name: &str) -> Result<PathBuf, String> {
    check_name(name)?;
    let p = own_dir()?.join(format!("{name}{SUFFIX}"));
    wire::address(&p).map_err(|e| e.to_string())?;
    Ok(p)
}

/// The folders to look in: root's, and this user's where it exists and passes
/// the checks.
fn dirs_to_search() -> Vec<PathBuf> {
    let me = uid();
    let mut dirs = vec![PathBuf::from(ROOT_DIR)];
    if me != 0 {
        let own = match std::env::var_os("XDG_RUNTIME_DIR").filter(|x| !x.is_empty()) {
            Some(x) => PathBuf::from(x).join("oslab-wcall"),
            None => std::env::temp_dir().join(format!("oslab-wcall-{me}")),
        };
        dirs.push(own);
    }
    dirs.into_iter()
        .filter(|d| {
            let owner = if d == Path::new(ROOT_DIR) { 0 } else { me };
            owned::check_dir(d, owner).is_ok()
        })
        .collect()
}

/// A governor found running.
#[derive(Debug, Clone, PartialEq)]
pub struct Found {
    pub name: String,
    /// The coordinator's pid and user, as the kernel gave them.
    pub pid: u32,
    pub uid: u32,
    pub socket: PathBuf,
}

impl Found {
    /// The governor's board, read-only.
    pub fn board(&self) -> std::io::Result<BoardView> {
        look(&self.socket).map(|(b, _)| b)
    }
}

const LOOK_TIMEOUT: Duration = Duration::from_secs(2);

/// Asks the governor at `socket` for its board; also who answered.
pub fn look(socket: &Path) -> std::io::Result<(BoardView, libc::ucred)> {
    let req = Request {
        ask: Ask::Look,
        group: 0,
        pid: 0,
    };
    let a = wire::ask(socket, &req, LOOK_TIMEOUT)?;
    if !a.reply.ok || a.fds.is_empty() {
        return Err(std::io::Error::other(a.reply.reason));
    }
    let board = BoardView::open(std::os::fd::AsRawFd::as_raw_fd(&a.fds[0]))?;
    Ok((board, a.server))
}

/// Why a governor named on the command line cannot be joined.
#[derive(Debug)]
pub enum NotJoinable {
    /// Not a governor name (a path, a dot file, too long).
    BadName(String),
    /// No socket of that name in any folder searched, or one nobody listens on.
    NotRunning,
    /// Its socket answered with a refusal (another user's governor, say).
    Refused(String),
    /// Its socket is there, but nobody answered on it within the patience given
    /// (a daemon starved of CPU by real-time writers answers late).
    NoAnswer(String),
}

/// The governor named `name`, asked again while it is slow to answer, until
/// `patience` is spent: one whose socket is there is worth waiting for, where
/// [`discover`] gives each governor one look. `run-` governors are private to
/// their command and are not found by name, as [`discover`]'s callers skip them.
pub fn find(name: &str, patience: Duration) -> Result<Found, NotJoinable> {
    check_name(name).map_err(NotJoinable::BadName)?;
    if name.starts_with("run-") {
        return Err(NotJoinable::NotRunning);
    }
    find_in(&dirs_to_search(), name, patience)
}

/// Whether an error of [`look`] is the governor being slow, worth asking again.
fn slow(e: &std::io::Error) -> bool {
    use std::io::ErrorKind as K;
    matches!(
        e.kind(),
        K::WouldBlock | K::TimedOut | K::ConnectionReset | K::BrokenPipe | K::UnexpectedEof
    )
}

fn find_in(dirs: &[PathBuf], name: &str, patience: Duration) -> Result<Found, NotJoinable> {
    use std::os::unix::fs::FileTypeExt;
    let mut sockets: Vec<PathBuf> = dirs
        .iter()
        .map(|d| d.join(format!("{name}{SUFFIX}")))
        .filter(|p| std::fs::symlink_metadata(p).is_ok_and(|m| m.file_type().is_socket()))
        .collect();
    let deadline = std::time::Instant::now() + patience;
    let mut last = String::new();
    while !sockets.is_empty() && std::time::Instant::now() < deadline {
        let mut still_slow = Vec::new();
        for socket in sockets {
            match look(&socket) {
                Ok((_, server)) => {
                    return Ok(Found {
                        name: name.to_string(),
                        pid: server.pid as u32,
                        uid: server.uid,
                        socket,
                    });
                }
                Err(e) if slow(&e) => {
                    last = e.to_string();
                    still_slow.push(socket);
                }
                Err(e) if e.kind() == std::io::ErrorKind::ConnectionRefused => {}
                Err(e) => return Err(NotJoinable::Refused(e.to_string())),
            }
            if std::time::Instant::now() >= deadline {
                break;
            }
        }
        sockets = still_slow;
        std::thread::sleep(Duration::from_millis(100));
    }
    if last.is_empty() {
        Err(NotJoinable::NotRunning)
    } else {
        Err(NotJoinable::NoAnswer(last))
    }
}

/// Governors running now that this user may join: root's and its own, each
/// confirmed by a connection (a socket nobody listens on is left alone).
pub fn discover() -> Vec<Found> {
    let mut out = Vec::new();
    for dir in dirs_to_search() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        let mut names: Vec<String> = entries
            .flatten()
            .filter_map(|e| {
                let n = e.file_name().into_string().ok()?;
                let name = n.strip_suffix(SUFFIX)?.to_string();
                check_name(&name).is_ok().then_some(name)
            })
            .collect();
        names.sort();
        for name in names {
            let socket = dir.join(format!("{name}{SUFFIX}"));
            if let Ok((_, server)) = look(&socket) {
                out.push(Found {
                    name,
                    pid: server.pid as u32,
                    uid: server.uid,
                    socket,
                });
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A named governor whose socket is there but silent is told apart from one
    /// that is not running, after the patience given.
    #[test]
    fn a_silent_governor_is_not_called_absent() {
        let dir = tempfile::tempdir().unwrap();
        let dirs = [dir.path().to_path_buf()];
        let patience = Duration::from_millis(200);
        assert!(matches!(
            find_in(&dirs, "absent", patience),
            Err(NotJoinable::NotRunning)
        ));
        // bound and listening, never answering: a daemon kept off the CPU
        let _listener =
            std::os::unix::net::UnixListener::bind(dir.path().join(format!("silent{SUFFIX}")))
                .unwrap();
        let t0 = std::time::Instant::now();
        assert!(matches!(
            find_in(&dirs, "silent", patience),
            Err(NotJoinable::NoAnswer(_))
        ));
        assert!(t0.elapsed() >= patience);
        // a socket nobody listens on (a daemon killed by SIGKILL): not running, at once
        let stale = dir.path().join(format!("stale{SUFFIX}"));
        drop(std::os::unix::net::UnixListener::bind(&stale).unwrap());
        assert!(matches!(
            find_in(&dirs, "stale", Duration::from_secs(30)),
            Err(NotJoinable::NotRunning)
        ));
        // a plain file of that name is no governor
        std::fs::write(dir.path().join(format!("plain{SUFFIX}")), "").unwrap();
        assert!(matches!(
            find_in(&dirs, "plain", patience),
            Err(NotJoinable::NotRunning)
        ));
    }

    /// A name that is a path, or a command's private governor, is never looked up.
    #[test]
    fn only_governor_names_are_found_by_name() {
        for bad in ["../../tmp/x", "/tmp/x", ".x", ""] {
            assert!(
                matches!(find(bad, Duration::ZERO), Err(NotJoinable::BadName(_))),
                "{bad}"
            );
        }
        assert!(matches!(
            find("run-1234", Duration::ZERO),
            Err(NotJoinable::NotRunning)
        ));
    }

    #[test]
    fn governor_names_are_plain_file_names() {
        for good in ["rootd", "wb-wcall-12-late.rt45", "a_b", "x"] {
            check_name(good).unwrap();
        }
        for bad in ["", ".hidden", "..", "a/b", "a b", "ü", &"x".repeat(65)] {
            assert!(check_name(bad).is_err(), "{bad:?}");
            assert_eq!(bad.parse::<GovernorName>(), Err(NAME_RULE.to_string()));
        }
        for good in ["rootd", "wb-wcall-12-late.rt45", &"x".repeat(64)] {
            let name: GovernorName = good.parse().unwrap();
            assert_eq!(name.to_string().parse(), Ok(name.clone()), "reads back");
            assert_eq!(name.as_str(), good);
        }
    }
}
