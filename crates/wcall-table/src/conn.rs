//! The governor's side of its socket, for a listener that must never wait on a
//! client: a listening socket whose file is never open to others before its
//! mode says so and that refuses descriptors where the kernel can
//! (SO_PASSRIGHTS, Linux 6.16), reads that never block and notice any
//! descriptor sent along, and a way to close a connection knowing that nothing
//! it holds can make the close wait.
//!
//! Why descriptors matter: the last close of a descriptor runs its file's
//! release on the closing thread, and some releases wait as long as another
//! process lets them (a TCP socket lingering over data its peer never reads, a
//! FUSE file whose server does not answer). A client that sends one to the
//! governor, or leaves one unread in its connection, must not make the listener
//! wait: no request takes a descriptor, so all are refused, and whatever might
//! hold one is closed on another thread.

use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::net::UnixListener;
use std::path::Path;

use crate::wire::{address, int_option, take_fds};

/// SO_PASSRIGHTS in include/uapi/asm-generic/socket.h (Linux 6.16).
const SO_PASSRIGHTS: libc::c_int = 83;
/// The most descriptors one message can carry (SCM_MAX_FD): room for all of
/// them, so the kernel never closes the rest itself, on this thread.
const MAX_FDS: usize = 253;
/// Connections waiting to be accepted: the kernel's own bound (somaxconn).
const BACKLOG: libc::c_int = -1;

fn check(r: libc::c_int) -> std::io::Result<libc::c_int> {
    if r < 0 {
        Err(std::io::Error::last_os_error())
    } else {
        Ok(r)
    }
}

/// A listening socket at `path`, non-blocking, its file made with `mode` (the
/// mode is set on the socket before it is bound, so the file never has a wider
/// one), refusing descriptors where the kernel can (see [`refuse_descriptors`]).
/// Also whether it does.
pub fn listen(path: &Path, mode: u32) -> std::io::Result<(UnixListener, bool)> {
    let (addr, len) = address(path)?;
    let flags = libc::SOCK_STREAM | libc::SOCK_CLOEXEC | libc::SOCK_NONBLOCK;
    // SAFETY: a plain socket(2); the descriptor is checked and then owned.
    let raw = check(unsafe { libc::socket(libc::AF_UNIX, flags, 0) })?;
    // SAFETY: a fresh descriptor that nothing else owns.
    let sock = unsafe { OwnedFd::from_raw_fd(raw) };
    // SAFETY: fchmod of our own socket: the file bind makes takes its mode.
    check(unsafe { libc::fchmod(raw, mode as libc::mode_t) })?;
    // SAFETY: bind with an address of the stated length.
    check(unsafe { libc::bind(raw, (&addr as *const libc::sockaddr_un).cast(), len) })?;
    let refused = refuse_descriptors(raw);
    // SAFETY: listen on our bound socket.
    check(unsafe { libc::listen(raw, BACKLOG) })?;
    Ok((UnixListener::from(sock), refused))
}

/// Turns off descriptor passing to `sock` (SO_PASSRIGHTS, Linux 6.16): on a
/// listening socket, every connection to it takes the setting when it connects,
/// before its client can send anything, and a client that sends a descriptor
/// gets EPERM. False where the kernel lacks it.
pub fn refuse_descriptors(sock: RawFd) -> bool {
    let off: libc::c_int = 0;
    // SAFETY: setsockopt with an int of the stated length.
    let r = unsafe {
        libc::setsockopt(
            sock,
            libc::SOL_SOCKET,
            SO_PASSRIGHTS,
            (&off as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    r == 0
}

/// Whether `sock` takes descriptors; None where the kernel cannot say (before
/// Linux 6.16 every Unix socket takes them).
pub fn takes_descriptors(sock: RawFd) -> Option<bool> {
    int_option(sock, SO_PASSRIGHTS).map(|on| on != 0)
}

/// What one read of a connection found.
#[derive(Debug)]
pub enum Got {
    /// Bytes, and the descriptors that came with them (for the caller to close
    /// where a close may wait).
    Bytes(usize, Vec<OwnedFd>),
    /// Nothing yet.
    Nothing,
    /// The client hung up.
    End,
}

/// Reads what `sock` holds now into `buf`, without waiting.
pub fn read_now(sock: RawFd, buf: &mut [u8]) -> std::io::Result<Got> {
    // room for a control header and MAX_FDS ints, aligned
    let mut control = [0u64; (MAX_FDS * 4 + 64) / 8];
    let mut iov = libc::iovec {
        iov_base: buf.as_mut_ptr().cast(),
        iov_len: buf.len(),
    };
    // SAFETY: a zeroed msghdr is valid; every pointer set outlives recvmsg.
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    msg.msg_iov = &mut iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control.as_mut_ptr().cast();
    msg.msg_controllen = std::mem::size_of_val(&control);
    let flags = libc::MSG_DONTWAIT | libc::MSG_CMSG_CLOEXEC;
    loop {
        // SAFETY: a valid msghdr over our buffers.
        let n = unsafe { libc::recvmsg(sock, &mut msg, flags) };
        if n >= 0 {
            let mut fds = Vec::new();
            take_fds(&msg, &mut fds);
            return Ok(match n {
                0 if fds.is_empty() => Got::End,
                n => Got::Bytes(n as usize, fds),
            });
        }
        let e = std::io::Error::last_os_error();
        match e.kind() {
            std::io::ErrorKind::Interrupted => continue,
            std::io::ErrorKind::WouldBlock => return Ok(Got::Nothing),
            _ => return Err(e),
        }
    }
}

/// Stops the client of `sock` from sending more (its sends fail from now on)
/// and says how many bytes it left unread. A connection with none holds no
/// descriptor (each rides on at least one byte), so dropping it cannot wait.
pub fn stop_reading(sock: RawFd) -> std::io::Result<usize> {
    // SAFETY: shutdown of our own socket.
    check(unsafe { libc::shutdown(sock, libc::SHUT_RD) })?;
    let mut unread: libc::c_int = 0;
    // SAFETY: SIOCINQ (FIONREAD) into an int.
    check(unsafe { libc::ioctl(sock, libc::FIONREAD, &mut unread) })?;
    Ok(unread.max(0) as usize)
}

/// Waits up to `timeout_ms` for any of `fds` to be ready (their `revents` say
/// which); the number ready.
pub fn poll(fds: &mut [libc::pollfd], timeout_ms: i32) -> usize {
    // SAFETY: poll over a slice of pollfds of the stated length.
    let n = unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, timeout_ms) };
    n.max(0) as usize
}

/// A pollfd asking whether `fd` has something to read.
pub fn readable(fd: &impl AsRawFd) -> libc::pollfd {
    libc::pollfd {
        fd: fd.as_raw_fd(),
        events: libc::POLLIN,
        revents: 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire;
    use std::io::Write;
    use std::os::unix::fs::PermissionsExt;
    use std::os::unix::net::UnixStream;

    #[test]
    fn a_socket_made_for_its_user_alone_never_has_a_wider_mode() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("g.sock");
        let (sock, _) = listen(&path, 0o600).unwrap();
        let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        drop(sock);
    }

    /// A descriptor sent to a socket that refuses them is refused to its sender
    /// (Linux 6.16+); elsewhere it arrives, and the reader is told.
    #[test]
    fn descriptors_are_refused_or_noticed_and_nothing_blocks() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("g.sock");
        let (sock, refused) = listen(&path, 0o600).unwrap();
        let client = UnixStream::connect(&path).unwrap();
        let (server, _) = sock.accept().unwrap();
        assert_eq!(
            takes_descriptors(server.as_raw_fd()),
            refused.then_some(false)
        );
        let f = tempfile::tempfile().unwrap();
        let sent = wire::send(client.as_raw_fd(), b"abc", &[f.as_raw_fd()]);
        let mut buf = [0u8; 8];
        if refused {
            let e = sent.unwrap_err();
            assert_eq!(e.raw_os_error(), Some(libc::EPERM), "{e}");
            assert!(matches!(
                read_now(server.as_raw_fd(), &mut buf),
                Ok(Got::Nothing)
            ));
        } else {
            sent.unwrap();
            let Got::Bytes(3, fds) = read_now(server.as_raw_fd(), &mut buf).unwrap() else {
                panic!("the bytes and the descriptor")
            };
            assert_eq!(fds.len(), 1);
        }
        // bytes left unread are told; the client can send no more
        (&client).write_all(b"xy").unwrap();
        assert_eq!(stop_reading(server.as_raw_fd()).unwrap(), 2);
        assert!((&client).write_all(b"z").is_err());
        drop(client);
        let Got::Bytes(2, _) = read_now(server.as_raw_fd(), &mut buf).unwrap() else {
            panic!("the two bytes")
        };
        assert!(matches!(
            read_now(server.as_raw_fd(), &mut buf),
            Ok(Got::End)
        ));
    }
}
