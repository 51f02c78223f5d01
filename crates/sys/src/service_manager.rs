//! Telling a service manager (systemd's `Type=notify`) that a service is ready:
//! one datagram, `READY=1`, to the socket `$NOTIFY_SOCKET` names (a path, or an
//! abstract name written with a leading `@`). Without the variable it does
//! nothing: oslab was not started as such a service.

use std::os::linux::net::SocketAddrExt;
use std::os::unix::net::{SocketAddr, UnixDatagram};

/// Says `READY=1` where `$NOTIFY_SOCKET` asks for it; the error, where it could
/// not be said (the manager then reports the service as failing to start).
pub fn notify_ready() -> std::io::Result<()> {
    match std::env::var_os("NOTIFY_SOCKET") {
        Some(target) => ready_to(&target),
        None => Ok(()),
    }
}

fn ready_to(target: &std::ffi::OsStr) -> std::io::Result<()> {
    let bytes = std::os::unix::ffi::OsStrExt::as_bytes(target);
    let addr = match bytes.strip_prefix(b"@") {
        Some(name) => SocketAddr::from_abstract_name(name)?,
        None => SocketAddr::from_pathname(std::path::Path::new(target))?,
    };
    UnixDatagram::unbound()?.send_to_addr(b"READY=1", &addr)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ready_reaches_the_socket_the_variable_names() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("notify");
        let manager = UnixDatagram::bind(&path).unwrap();
        ready_to(path.as_os_str()).unwrap();
        let mut buf = [0u8; 64];
        let n = manager.recv(&mut buf).unwrap();
        assert_eq!(&buf[..n], b"READY=1");
        let name = format!("oslab-notify-{}", std::process::id());
        let abstract_addr = SocketAddr::from_abstract_name(name.as_bytes()).unwrap();
        let manager = UnixDatagram::bind_addr(&abstract_addr).unwrap();
        ready_to(std::ffi::OsStr::new(&format!("@{name}"))).unwrap();
        let n = manager.recv(&mut buf).unwrap();
        assert_eq!(&buf[..n], b"READY=1");
    }
}
