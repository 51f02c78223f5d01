//! Closing, off the listener's thread, what a client may have left with the
//! governor: a descriptor it sent, or a connection with bytes still unread (a
//! descriptor rides on a byte). The last close of a descriptor runs its file's
//! release on the closing thread, and some releases wait as long as another
//! process lets them (a TCP socket lingering over data its peer never reads, a
//! FUSE file whose server does not answer); the listener must never wait.
//!
//! Where the kernel refuses descriptors to the governor's socket (SO_PASSRIGHTS,
//! Linux 6.16) nothing that reaches here can wait. Elsewhere a close may: a
//! closer that waits is joined by another, up to [`MAX_CLOSERS`], so one stuck
//! close holds up no other; each waits for as long as the descriptor's release
//! does, and goes when the governor's process exits.

use std::os::fd::OwnedFd;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::{Receiver, Sender, channel};
use std::sync::{Arc, Mutex};

/// Threads closing at once, at most.
pub const MAX_CLOSERS: usize = 8;

pub struct Reaper {
    tx: Sender<Vec<OwnedFd>>,
    rx: Arc<Mutex<Receiver<Vec<OwnedFd>>>>,
    /// Closers started, and those in the middle of a close.
    closers: Arc<AtomicUsize>,
    busy: Arc<AtomicUsize>,
}

impl Reaper {
    pub fn new() -> Reaper {
        let (tx, rx) = channel();
        Reaper {
            tx,
            rx: Arc::new(Mutex::new(rx)),
            closers: Arc::new(AtomicUsize::new(0)),
            busy: Arc::new(AtomicUsize::new(0)),
        }
    }

    /// Closes `fds` on a closer thread, starting one when every closer is busy.
    pub fn close(&self, fds: Vec<OwnedFd>) {
        if fds.is_empty() {
            return;
        }
        let closers = self.closers.load(Ordering::Acquire);
        if self.busy.load(Ordering::Acquire) >= closers && closers < MAX_CLOSERS {
            self.start_closer();
        }
        // no closer could start (none runs): the descriptors stay queued, held
        // until the governor stops, rather than closed here
        let _ = self.tx.send(fds);
    }

    /// Closers started so far.
    pub fn closers(&self) -> usize {
        self.closers.load(Ordering::Acquire)
    }

    fn start_closer(&self) {
        let (rx, busy) = (self.rx.clone(), self.busy.clone());
        let started = std::thread::Builder::new()
            .name("wcall-closer".into())
            .spawn(move || {
                loop {
                    let next = match rx.lock() {
                        Ok(rx) => rx.recv(),
                        Err(_) => return,
                    };
                    let Ok(fds) = next else { return };
                    busy.fetch_add(1, Ordering::AcqRel);
                    drop(fds);
                    busy.fetch_sub(1, Ordering::AcqRel);
                }
            });
        if started.is_ok() {
            self.closers.fetch_add(1, Ordering::AcqRel);
        }
    }
}

impl Default for Reaper {
    fn default() -> Self {
        Reaper::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::fd::AsRawFd;
    use std::time::Duration;

    /// One end of a socket pair closed by the reaper: the other sees the end.
    #[test]
    fn what_is_handed_over_is_closed_and_a_stuck_close_holds_up_no_other() {
        let r = Reaper::new();
        // a closer "stuck": busy as long as the test likes
        r.start_closer();
        r.busy.fetch_add(1, Ordering::AcqRel);
        let (ours, theirs) = std::os::unix::net::UnixStream::pair().unwrap();
        theirs
            .set_read_timeout(Some(Duration::from_secs(10)))
            .unwrap();
        let ours: OwnedFd = ours.into();
        let raw = ours.as_raw_fd();
        r.close(vec![ours]);
        assert_eq!(r.closers(), 2, "a second closer joined the busy one");
        let mut b = [0u8; 1];
        // the end: its only other end was closed
        assert_eq!(
            std::io::Read::read(&mut &theirs, &mut b).unwrap(),
            0,
            "fd {raw}"
        );
        for _ in 0..3 * MAX_CLOSERS {
            r.busy.fetch_add(1, Ordering::AcqRel);
            r.close(vec![std::fs::File::open("/dev/null").unwrap().into()]);
        }
        assert_eq!(r.closers(), MAX_CLOSERS, "never more than the bound");
    }
}
