//! How a process joins a governor: one request and one reply over the governor's
//! Unix socket, the reply carrying memory files (SCM_RIGHTS). The coordinator knows
//! who asks from the kernel (SO_PEERCRED, SO_PEERPIDFD), never from the request,
//! and a process learns from the kernel that the governor is root's or its own
//! user's before it maps anything it was given.
//!
//! Both sides are fixed-size little-endian records with a magic and a version; a
//! record of another size or version is refused.

use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::path::Path;
use std::time::Duration;

pub const WIRE_MAGIC: u64 = u64::from_le_bytes(*b"oslabwj1");
pub const WIRE_VERSION: u32 = 1;
pub const REQUEST_BYTES: usize = 64;
pub const REPLY_BYTES: usize = 256;
const REASON_BYTES: usize = REPLY_BYTES - 32;

/// What a process asks of a governor.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ask {
    /// Govern me: the interposer, at exec. Reply: the board and a table of its own.
    Member = 1,
    /// I start programs for this group (`oslab wcall run`). Reply: the board.
    Launcher = 2,
    /// My child `pid` cannot join itself (a static program): govern it.
    Launched = 3,
    /// Show me the board (`oslab wcall status`).
    Look = 4,
    /// My child `pid` has exited and is not reaped yet: count what it wrote now,
    /// while the kernel still has its counts.
    Count = 5,
    /// My scheduling changed: look at it again (the coordinator decides the group
    /// from what the kernel says, as in every pass; this only asks it to look now).
    Regroup = 6,
}

impl Ask {
    fn from_u32(v: u32) -> Option<Ask> {
        Some(match v {
            1 => Ask::Member,
            2 => Ask::Launcher,
            3 => Ask::Launched,
            4 => Ask::Look,
            5 => Ask::Count,
            6 => Ask::Regroup,
            _ => return None,
        })
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Request {
    pub ask: Ask,
    /// Launcher: the group asked for its programs (a group number or AUTO).
    pub group: u32,
    /// Launched: the child.
    pub pid: u32,
}

fn put_u32(b: &mut [u8], at: usize, v: u32) {
    b[at..at + 4].copy_from_slice(&v.to_le_bytes());
}

fn get_u32(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

fn head_ok(b: &[u8]) -> bool {
    b[..8] == WIRE_MAGIC.to_le_bytes() && get_u32(b, 8) == WIRE_VERSION
}

impl Request {
    pub fn to_bytes(&self) -> [u8; REQUEST_BYTES] {
        let mut b = [0u8; REQUEST_BYTES];
        b[..8].copy_from_slice(&WIRE_MAGIC.to_le_bytes());
        put_u32(&mut b, 8, WIRE_VERSION);
        put_u32(&mut b, 12, self.ask as u32);
        put_u32(&mut b, 16, self.group);
        put_u32(&mut b, 20, self.pid);
        b
    }

    pub fn from_bytes(b: &[u8]) -> Result<Request, &'static str> {
        if b.len() != REQUEST_BYTES || !head_ok(b) {
            return Err("not a request of this version");
        }
        Ok(Request {
            ask: Ask::from_u32(get_u32(b, 12)).ok_or("an unknown request")?,
            group: get_u32(b, 16),
            pid: get_u32(b, 20),
        })
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reply {
    pub ok: bool,
    /// Member: its slot on the board.
    pub index: u32,
    /// Member: the group the coordinator decided for it (it may change later: the
    /// board's slot says).
    pub group: u32,
    /// Why not, when not ok.
    pub reason: String,
}

impl Reply {
    pub fn yes(index: u32, group: u32) -> Reply {
        Reply {
            ok: true,
            index,
            group,
            reason: String::new(),
        }
    }

    pub fn no(reason: impl Into<String>) -> Reply {
        Reply {
            ok: false,
            index: 0,
            group: 0,
            reason: reason.into(),
        }
    }

    pub fn to_bytes(&self) -> [u8; REPLY_BYTES] {
        let mut b = [0u8; REPLY_BYTES];
        b[..8].copy_from_slice(&WIRE_MAGIC.to_le_bytes());
        put_u32(&mut b, 8, WIRE_VERSION);
        put_u32(&mut b, 12, self.ok as u32);
        put_u32(&mut b, 16, self.index);
        put_u32(&mut b, 20, self.group);
        let mut n = self.reason.len().min(REASON_BYTES);
        while !self.reason.is_char_boundary(n) {
            n -= 1;
        }
        put_u32(&mut b, 24, n as u32);
        b[32..32 + n].copy_from_slice(&self.reason.as_bytes()[..n]);
        b
    }

    pub fn from_bytes(b: &[u8]) -> Result<Reply, &'static str> {
        if b.len() != REPLY_BYTES || !head_ok(b) {
            return Err("not a reply of this version");
        }
        let n = (get_u32(b, 24) as usize).min(REASON_BYTES);
        Ok(Reply {
            ok: get_u32(b, 12) == 1,
            index: get_u32(b, 16),
            group: get_u32(b, 20),
            reason: String::from_utf8_lossy(&b[32..32 + n]).into_owned(),
        })
    }
}

/// Sends one record and up to two descriptors.
pub fn send(sock: RawFd, bytes: &[u8], fds: &[RawFd]) -> std::io::Result<()> {
    let fds = &fds[..fds.len().min(2)];
    // room for a cmsg header and two ints, aligned
    let mut control = [0u64; 8];
    let mut iov = libc::iovec {
        iov_base: bytes.as_ptr() as *mut libc::c_void,
        iov_len: bytes.len(),
    };
    // SAFETY: a zeroed msghdr is valid; every pointer set below outlives sendmsg.
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    msg.msg_iov = &mut iov;
    msg.msg_iovlen = 1;
    if !fds.is_empty() {
        let data_len = std::mem::size_of_val(fds) as u32;
        // SAFETY: CMSG_SPACE is arithmetic.
        msg.msg_controllen = unsafe { libc::CMSG_SPACE(data_len) } as usize;
        msg.msg_control = control.as_mut_ptr().cast();
        // SAFETY: the control buffer is 64 bytes, enough for CMSG_SPACE of two
        // ints; CMSG_FIRSTHDR points into it.
        unsafe {
            let c = libc::CMSG_FIRSTHDR(&msg);
            (*c).cmsg_level = libc::SOL_SOCKET;
            (*c).cmsg_type = libc::SCM_RIGHTS;
            (*c).cmsg_len = libc::CMSG_LEN(data_len) as usize;
            std::ptr::copy_nonoverlapping(
                fds.as_ptr(),
                libc::CMSG_DATA(c) as *mut RawFd,
                fds.len(),
            );
        }
    }
    // SAFETY: a valid msghdr; MSG_NOSIGNAL: a closed peer is an error, not SIGPIPE.
    let n = unsafe { libc::sendmsg(sock, &msg, libc::MSG_NOSIGNAL) };
    if n < 0 {
        return Err(std::io::Error::last_os_error());
    }
    if n as usize != bytes.len() {
        return Err(std::io::Error::other("a short send"));
    }
    Ok(())
}

/// Receives one record of exactly `buf.len()` bytes and the descriptors sent with
/// it (at most two; any beyond, or of another kind, are closed and refused).
pub fn receive(sock: RawFd, buf: &mut [u8]) -> std::io::Result<Vec<OwnedFd>> {
    let mut fds = Vec::new();
    let mut got = 0;
    while got < buf.len() {
        let mut control = [0u64; 8];
        let mut iov = libc::iovec {
            iov_base: buf[got..].as_mut_ptr().cast(),
            iov_len: buf.len() - got,
        };
        // SAFETY: a zeroed msghdr is valid; every pointer set outlives recvmsg.
        let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
        msg.msg_iov = &mut iov;
        msg.msg_iovlen = 1;
        msg.msg_control = control.as_mut_ptr().cast();
        msg.msg_controllen = std::mem::size_of_val(&control);
        // SAFETY: a valid msghdr; descriptors arrive close-on-exec.
        let n = unsafe { libc::recvmsg(sock, &mut msg, libc::MSG_CMSG_CLOEXEC) };
        if n < 0 {
            let e = std::io::Error::last_os_error();
            if e.kind() == std::io::ErrorKind::Interrupted {
                continue;
            }
            return Err(e);
        }
        take_fds(&msg, &mut fds);
        if msg.msg_flags & libc::MSG_CTRUNC != 0 {
            return Err(std::io::Error::other("too many descriptors sent"));
        }
        if n == 0 {
            return Err(std::io::Error::new(
                std::io::ErrorKind::UnexpectedEof,
                "the other side closed the connection",
            ));
        }
        got += n as usize;
    }
    if fds.len() > 2 {
        return Err(std::io::Error::other("too many descriptors sent"));
    }
    Ok(fds)
}

/// Takes ownership of every SCM_RIGHTS descriptor in `msg` (so each is closed
/// when dropped, whatever happens next).
pub(crate) fn take_fds(msg: &libc::msghdr, fds: &mut Vec<OwnedFd>) {
    // SAFETY: walking the control messages recvmsg filled in, within its length.
    unsafe {
        let mut c = libc::CMSG_FIRSTHDR(msg);
        while !c.is_null() {
            if (*c).cmsg_level == libc::SOL_SOCKET && (*c).cmsg_type == libc::SCM_RIGHTS {
                let data = libc::CMSG_DATA(c) as *const RawFd;
                let n = ((*c).cmsg_len - libc::CMSG_LEN(0) as usize) / std::mem::size_of::<RawFd>();
                for k in 0..n {
                    let fd = std::ptr::read_unaligned(data.add(k));
                    if fd >= 0 {
                        fds.push(OwnedFd::from_raw_fd(fd));
                    }
                }
            }
            c = libc::CMSG_NXTHDR(msg, c);
        }
    }
}

/// The kernel's word on the process at the other end: pid, uid and gid as they
/// were when it connected (for a listening socket's peer, when it listened).
pub fn peer_cred(sock: RawFd) -> std::io::Result<libc::ucred> {
    let mut cred = libc::ucred {
        pid: 0,
        uid: 0,
        gid: 0,
    };
    let mut len = std::mem::size_of::<libc::ucred>() as libc::socklen_t;
    // SAFETY: getsockopt into a ucred of the stated length.
    let r = unsafe {
        libc::getsockopt(
            sock,
            libc::SOL_SOCKET,
            libc::SO_PEERCRED,
            (&mut cred as *mut libc::ucred).cast(),
            &mut len,
        )
    };
    if r != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(cred)
}

/// SO_PEERPIDFD (Linux 6.5): a pidfd of the very process that connected, so a
/// pid reused since cannot be mistaken for it. None where the kernel lacks it.
pub fn peer_pidfd(sock: RawFd) -> Option<OwnedFd> {
    const SO_PEERPIDFD: libc::c_int = 77;
    let fd = int_option(sock, SO_PEERPIDFD).filter(|fd| *fd >= 0)?;
    // SAFETY: a fresh descriptor the kernel made for us.
    Some(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// An int-valued SOL_SOCKET option of `sock`; None where the kernel has no such
/// option.
pub(crate) fn int_option(sock: RawFd, opt: libc::c_int) -> Option<libc::c_int> {
    let mut v: libc::c_int = -1;
    let mut len = std::mem::size_of::<libc::c_int>() as libc::socklen_t;
    // SAFETY: getsockopt into an int of the stated length.
    let r = unsafe {
        libc::getsockopt(
            sock,
            libc::SOL_SOCKET,
            opt,
            (&mut v as *mut libc::c_int).cast(),
            &mut len,
        )
    };
    (r == 0).then_some(v)
}

/// Sets a receive and a send timeout on a socket.
pub fn set_timeouts(sock: RawFd, t: Duration) -> std::io::Result<()> {
    let tv = libc::timeval {
        tv_sec: t.as_secs() as libc::time_t,
        tv_usec: t.subsec_micros() as libc::suseconds_t,
    };
    for opt in [libc::SO_RCVTIMEO, libc::SO_SNDTIMEO] {
        // SAFETY: setsockopt with a timeval of the stated length.
        let r = unsafe {
            libc::setsockopt(
                sock,
                libc::SOL_SOCKET,
                opt,
                (&tv as *const libc::timeval).cast(),
                std::mem::size_of::<libc::timeval>() as libc::socklen_t,
            )
        };
        if r != 0 {
            return Err(std::io::Error::last_os_error());
        }
    }
    Ok(())
}

/// A Unix socket address for `path` (at most 107 bytes).
pub fn address(path: &Path) -> std::io::Result<(libc::sockaddr_un, libc::socklen_t)> {
    let bytes = path.as_os_str().as_encoded_bytes();
    // SAFETY: a zeroed sockaddr_un is valid.
    let mut addr: libc::sockaddr_un = unsafe { std::mem::zeroed() };
    if bytes.is_empty() || bytes.len() >= addr.sun_path.len() || bytes.contains(&0) {
        return Err(std::io::Error::other(format!(
            "{} is too long for a Unix socket (at most {} bytes)",
            path.display(),
            addr.sun_path.len() - 1
        )));
    }
    addr.sun_family = libc::AF_UNIX as libc::sa_family_t;
    for (d, s) in addr.sun_path.iter_mut().zip(bytes) {
        *d = *s as libc::c_char;
    }
    let len = std::mem::size_of::<libc::sa_family_t>() + bytes.len() + 1;
    Ok((addr, len as libc::socklen_t))
}

/// What a governor answered, who it is (the kernel's word), and what it sent.
pub struct Answer {
    pub reply: Reply,
    pub server: libc::ucred,
    pub fds: Vec<OwnedFd>,
}

/// The socket a governor of root's that every user may join keeps for root
/// alone (mode 0600) beside its socket `path`: no other user can queue a
/// connection ahead of root's there. The same name with a dot before it, which
/// no governor's name has, so it is never taken for a governor of its own.
pub fn root_path(path: &Path) -> Option<std::path::PathBuf> {
    let name = path.file_name()?.to_str()?;
    Some(path.with_file_name(format!(".{name}")))
}

/// A connection to the socket at `path`, each step within `timeout`.
fn dial(path: &Path, timeout: Duration) -> std::io::Result<OwnedFd> {
    let (addr, len) = address(path)?;
    // SAFETY: a plain socket(2); the descriptor is checked and then owned.
    let raw = unsafe { libc::socket(libc::AF_UNIX, libc::SOCK_STREAM | libc::SOCK_CLOEXEC, 0) };
    if raw < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: a fresh descriptor that nothing else owns.
    let sock = unsafe { OwnedFd::from_raw_fd(raw) };
    set_timeouts(sock.as_raw_fd(), timeout)?;
    // SAFETY: connect with an address of the stated length.
    if unsafe {
        libc::connect(
            sock.as_raw_fd(),
            (&addr as *const libc::sockaddr_un).cast(),
            len,
        )
    } != 0
    {
        return Err(std::io::Error::last_os_error());
    }
    Ok(sock)
}

/// Asks the governor at `path`: connects (root through the governor's socket
/// for root, where it keeps one: see [`root_path`]), checks that it runs as root
/// or as this process's own user, sends `req` and reads the reply, each step
/// within `timeout`.
pub fn ask(path: &Path, req: &Request, timeout: Duration) -> std::io::Result<Answer> {
    // SAFETY: geteuid cannot fail.
    let me = unsafe { libc::geteuid() };
    let own = root_path(path).filter(|_| me == 0);
    let sock = match own.and_then(|p| dial(&p, timeout).ok()) {
        Some(s) => s,
        None => dial(path, timeout)?,
    };
    let server = peer_cred(sock.as_raw_fd())?;
    if server.uid != 0 && server.uid != me {
        return Err(std::io::Error::other(format!(
            "the governor at {} runs as uid {}, neither root nor this user",
            path.display(),
            server.uid
        )));
    }
    send(sock.as_raw_fd(), &req.to_bytes(), &[])?;
    let mut buf = [0u8; REPLY_BYTES];
    let fds = receive(sock.as_raw_fd(), &mut buf)?;
    let reply = Reply::from_bytes(&buf).map_err(std::io::Error::other)?;
    Ok(Answer { reply, server, fds })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_round_trip_and_strangers_are_refused() {
        let r = Request {
            ask: Ask::Launched,
            group: 2,
            pid: 77,
        };
        assert_eq!(Request::from_bytes(&r.to_bytes()), Ok(r));
        let mut bad = r.to_bytes();
        bad[12] = 9;
        assert!(Request::from_bytes(&bad).is_err(), "unknown ask");
        bad = r.to_bytes();
        bad[8] = 2;
        assert!(Request::from_bytes(&bad).is_err(), "another version");
        assert!(Request::from_bytes(&[0u8; 10]).is_err());
        let long = "é".repeat(400);
        let back = Reply::from_bytes(&Reply::no(long).to_bytes()).unwrap();
        assert!(!back.ok);
        assert!(back.reason.len() <= REASON_BYTES && back.reason.starts_with('é'));
        let yes = Reply::yes(5, 1);
        assert_eq!(Reply::from_bytes(&yes.to_bytes()).unwrap(), yes);
    }

    #[test]
    fn descriptors_travel_with_a_record() {
        let mut sv = [0; 2];
        // SAFETY: socketpair into a two-int array.
        assert_eq!(
            unsafe { libc::socketpair(libc::AF_UNIX, libc::SOCK_STREAM, 0, sv.as_mut_ptr()) },
            0
        );
        // SAFETY: fresh descriptors we now own.
        let (a, b) = unsafe { (OwnedFd::from_raw_fd(sv[0]), OwnedFd::from_raw_fd(sv[1])) };
        let f = tempfile::tempfile().unwrap();
        let rep = Reply::yes(3, 2);
        send(a.as_raw_fd(), &rep.to_bytes(), &[f.as_raw_fd()]).unwrap();
        let mut buf = [0u8; REPLY_BYTES];
        let fds = receive(b.as_raw_fd(), &mut buf).unwrap();
        assert_eq!(fds.len(), 1);
        assert_eq!(Reply::from_bytes(&buf).unwrap(), rep);
        let cred = peer_cred(b.as_raw_fd()).unwrap();
        assert_eq!(cred.pid as u32, std::process::id());
        assert!(address(Path::new(&"x".repeat(200))).is_err());
    }
}
