//! The listener's loop: every connection is accepted, read and answered on one
//! thread that never waits on a client.
//!
//! - Root reaches a daemon that every user may join through a socket of its
//!   own beside the shared one (`wire::root_path`, mode 0600), so no other user
//!   can fill the kernel's queue of connections ahead of root's; it is watched
//!   in every round, whatever the CPU bound below.
//! - Who connected is read when the connection is accepted (SO_PEERCRED), so
//!   root's and the coordinator's user's connections are known at once: they
//!   have room kept among the waiting connections ([`WAITING`]), their bytes are
//!   read and their requests answered first in every round, and their work is
//!   never held back by the CPU bound below.
//! - Bytes are read as they come, without waiting, into a buffer of the
//!   connection's own. A connection has [`Limits::patience`] from its accept to
//!   its first byte, and [`Limits::request`] from its first byte to its last,
//!   whatever the pace of its bytes; past either it is dropped unanswered.
//! - No request takes a descriptor: one sent along makes the request refused,
//!   and the descriptors, and any connection left with bytes unread (a
//!   descriptor rides on a byte), are closed by `crate::reaper`, off this thread.
//! - Others' work (accepting, reading, answering, and the poll that finds it) is
//!   held to [`Limits::share`] of a CPU, as credit earned with time
//!   ([`Credit`]): a flood of connections from any user slows their joins, not
//!   the machine, and not root's answer.

use std::os::fd::{AsRawFd, RawFd};
use std::os::unix::net::{UnixListener, UnixStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use oslab_sys::clock::{monotonic_ns, thread_cpu_ns};

use crate::quota::{Quota, Tally, privileged};
use crate::reaper::Reaper;
use crate::shm::conn::{self, Got};
use crate::shm::wire::{self, REQUEST_BYTES};

/// Connections waiting for their request to arrive whole.
pub const WAITING: Quota = Quota {
    total: 512,
    reserved: 128,
    per_uid: 128,
};

/// Connections accepted between two looks at the CPU bound.
const ACCEPT_BATCH: usize = 64;
/// The longest a round waits for something to happen.
const ROUND_NS: u64 = 100_000_000;

/// How the loop serves.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// From a connection's accept to its first byte.
    pub patience: Duration,
    /// From a request's first byte to its last.
    pub request: Duration,
    /// The most of a CPU others' work may take; None: no bound.
    pub share: Option<f64>,
    /// The user served beside root from the reserved room and first.
    pub coordinator_uid: u32,
}

/// A request that arrived: whole, or cut short by a descriptor sent with it.
pub struct Arrived<'a> {
    /// The connection, for the reply.
    pub fd: RawFd,
    /// Who connected, as the kernel said at connect.
    pub cred: libc::ucred,
    pub bytes: &'a [u8],
    /// A descriptor came with it (already handed to the reaper).
    pub descriptors: bool,
}

struct Conn {
    stream: UnixStream,
    cred: libc::ucred,
    privileged: bool,
    buf: [u8; REQUEST_BYTES],
    got: usize,
    deadline_ns: u64,
    descriptors: bool,
}

/// What a read left a connection at.
#[derive(Debug, PartialEq, Eq)]
enum Step {
    Wait,
    Answer,
    Drop,
}

/// Others' CPU time the loop may still spend: earned at `share` of the time
/// that passes, up to a burst of [`Credit::BURST_NS`], spent by the CPU time
/// others' work takes. Over any stretch of time others' work takes at most
/// `share` of it, plus the burst and the one piece of work that overdrew it.
#[derive(Debug, Clone, Copy)]
pub struct Credit {
    share: Option<f64>,
    ns: f64,
    at: u64,
}

impl Credit {
    pub const BURST_NS: f64 = 20e6;

    pub fn new(share: Option<f64>, now: u64) -> Credit {
        Credit {
            share: share.filter(|s| *s > 0.0 && *s < 1.0),
            ns: Credit::BURST_NS,
            at: now,
        }
    }

    pub fn refill(&mut self, now: u64) {
        if let Some(s) = self.share {
            let earned = now.saturating_sub(self.at) as f64 * s;
            self.ns = (self.ns + earned).min(Credit::BURST_NS);
        }
        self.at = self.at.max(now);
    }

    /// Whether others' work may go on now.
    pub fn allows(&self) -> bool {
        self.share.is_none() || self.ns > 0.0
    }

    pub fn spend(&mut self, cpu_ns: u64) {
        if self.share.is_some() {
            self.ns -= cpu_ns as f64;
        }
    }

    /// How long until others' work may go on again.
    pub fn wait_ns(&self) -> u64 {
        match self.share {
            Some(s) if self.ns <= 0.0 => (-self.ns / s).ceil() as u64 + 1,
            _ => 0,
        }
    }
}

struct Server<'a> {
    sock: &'a UnixListener,
    /// Root's own socket, which no other user can reach.
    own: Option<&'a UnixListener>,
    limits: &'a Limits,
    reaper: &'a Reaper,
    waiting: Vec<Conn>,
    credit: Credit,
}

/// Serves `sock`, and root's own socket `own` where there is one, until `stop`,
/// handing each request that arrives to `handle` (which replies on its
/// connection, without waiting).
pub fn serve_with(
    sock: UnixListener,
    own: Option<UnixListener>,
    stop: &AtomicBool,
    limits: &Limits,
    reaper: &Reaper,
    mut handle: impl FnMut(&Arrived),
) {
    let mut s = Server {
        sock: &sock,
        own: own.as_ref(),
        limits,
        reaper,
        waiting: Vec::new(),
        credit: Credit::new(limits.share, monotonic_ns()),
    };
    while !stop.load(Ordering::Relaxed) {
        s.round(&mut handle);
    }
    for c in std::mem::take(&mut s.waiting) {
        s.close(c.stream);
    }
    // connections not accepted yet go with the listening sockets, with what
    // their clients sent
    reaper.close(std::iter::once(sock).chain(own).map(Into::into).collect());
}

impl Server<'_> {
    fn round(&mut self, handle: &mut impl FnMut(&Arrived)) {
        let now = monotonic_ns();
        let cpu0 = thread_cpu_ns();
        self.credit.refill(now);
        self.expire(now);
        let others = self.credit.allows();
        // the listening socket and others' connections only while others may be
        // served; root's connections always
        let polled: Vec<usize> = (0..self.waiting.len())
            .filter(|&i| others || self.waiting[i].privileged)
            .collect();
        let sockets = [self.own, others.then_some(self.sock)];
        let mut pfds: Vec<libc::pollfd> = sockets
            .iter()
            .flatten()
            .map(|s| conn::readable(*s))
            .chain(
                polled
                    .iter()
                    .map(|&i| conn::readable(&self.waiting[i].stream)),
            )
            .collect();
        conn::poll(&mut pfds, self.timeout_ms(now, others));
        let at = sockets.iter().flatten().count();
        let ready_socket = |k: usize| {
            let before = sockets[..k].iter().flatten().count();
            sockets[k].is_some() && pfds[before].revents != 0
        };
        let (own_ready, shared_ready) = (ready_socket(0), ready_socket(1));
        let (root_first, rest): (Vec<usize>, Vec<usize>) = polled
            .iter()
            .zip(&pfds[at..])
            .filter(|(_, p)| p.revents != 0)
            .map(|(&i, _)| i)
            .partition(|&i| self.waiting[i].privileged);
        let now = monotonic_ns();
        let mut done = Vec::new();
        let cpu1 = thread_cpu_ns();
        self.credit.spend(cpu1.saturating_sub(cpu0));
        if let Some(own) = self.own.filter(|_| own_ready) {
            self.accept(own, false);
        }
        for i in root_first {
            self.serve_one(i, now, handle, &mut done);
        }
        for i in rest {
            if !self.credit.allows() {
                break;
            }
            let c = thread_cpu_ns();
            self.serve_one(i, now, handle, &mut done);
            self.credit.spend(thread_cpu_ns().saturating_sub(c));
        }
        let c = thread_cpu_ns();
        self.remove(done);
        self.credit.spend(thread_cpu_ns().saturating_sub(c));
        if shared_ready {
            self.accept(self.sock, true);
        }
    }

    /// Reads connection `i`, and answers it once its request is there; `done`
    /// gets it when it is finished with.
    fn serve_one(
        &mut self,
        i: usize,
        now: u64,
        handle: &mut impl FnMut(&Arrived),
        done: &mut Vec<usize>,
    ) {
        let request_ns = self.limits.request.as_nanos() as u64;
        let c = &mut self.waiting[i];
        match read_more(c, now, request_ns, self.reaper) {
            Step::Wait => return,
            Step::Drop => {}
            Step::Answer => handle(&Arrived {
                fd: c.stream.as_raw_fd(),
                cred: c.cred,
                bytes: &c.buf[..c.got],
                descriptors: c.descriptors,
            }),
        }
        done.push(i);
    }

    /// Drops the connections past their deadline, unanswered.
    fn expire(&mut self, now: u64) {
        let late: Vec<usize> = (0..self.waiting.len())
            .filter(|&i| self.waiting[i].deadline_ns <= now)
            .collect();
        self.remove(late);
    }

    /// Takes connections `idx` off the waiting list and closes them.
    fn remove(&mut self, mut idx: Vec<usize>) {
        idx.sort_unstable();
        idx.dedup();
        for i in idx.into_iter().rev() {
            let c = self.waiting.remove(i);
            self.close(c.stream);
        }
    }

    /// Closes a connection here when its client can have left nothing in it,
    /// else on the reaper.
    fn close(&self, stream: UnixStream) {
        match conn::stop_reading(stream.as_raw_fd()) {
            Ok(0) => drop(stream),
            _ => self.reaper.close(vec![stream.into()]),
        }
    }

    /// Accepts the connections waiting on `sock`, batch by batch, each user's
    /// within its room; `charged`: others' work, done while the CPU bound allows
    /// (root's own socket is not).
    fn accept(&mut self, sock: &UnixListener, charged: bool) {
        let uids = self.waiting.iter().map(|c| c.cred.uid);
        let mut tally = Tally::of(uids, self.limits.coordinator_uid);
        while !charged || self.credit.allows() {
            let cpu = thread_cpu_ns();
            let mut accepted = 0;
            while accepted < ACCEPT_BATCH {
                let Ok((stream, _)) = sock.accept() else {
                    break;
                };
                accepted += 1;
                self.take(stream, &mut tally);
            }
            if charged {
                self.credit.spend(thread_cpu_ns().saturating_sub(cpu));
            }
            if accepted < ACCEPT_BATCH {
                return;
            }
        }
    }

    fn take(&mut self, stream: UnixStream, tally: &mut Tally) {
        let Ok(cred) = wire::peer_cred(stream.as_raw_fd()) else {
            return self.close(stream);
        };
        let fits = WAITING.fits_in(tally, cred.uid).is_ok();
        if !fits || stream.set_nonblocking(true).is_err() {
            return self.close(stream);
        }
        tally.add(cred.uid);
        let patience = self.limits.patience.as_nanos() as u64;
        self.waiting.push(Conn {
            stream,
            cred,
            privileged: privileged(cred.uid, self.limits.coordinator_uid),
            buf: [0; REQUEST_BYTES],
            got: 0,
            deadline_ns: monotonic_ns().saturating_add(patience),
            descriptors: false,
        });
    }

    /// How long to wait for the next thing to do: a connection's deadline, the
    /// CPU bound's next credit, a round at most.
    fn timeout_ms(&self, now: u64, others: bool) -> i32 {
        let mut ns = ROUND_NS;
        for c in &self.waiting {
            ns = ns.min(c.deadline_ns.saturating_sub(now));
        }
        if !others {
            ns = ns.min(self.credit.wait_ns());
        }
        ns.div_ceil(1_000_000) as i32
    }
}

/// Reads what connection `c` has now.
fn read_more(c: &mut Conn, now: u64, request_ns: u64, reaper: &Reaper) -> Step {
    let fd = c.stream.as_raw_fd();
    match conn::read_now(fd, &mut c.buf[c.got..]) {
        Ok(Got::Bytes(n, fds)) => {
            if c.got == 0 {
                c.deadline_ns = c.deadline_ns.min(now.saturating_add(request_ns));
            }
            c.got += n;
            if !fds.is_empty() {
                reaper.close(fds);
                c.descriptors = true;
                return Step::Answer;
            }
            if c.got == REQUEST_BYTES {
                Step::Answer
            } else {
                Step::Wait
            }
        }
        Ok(Got::Nothing) => Step::Wait,
        Ok(Got::End) | Err(_) => Step::Drop,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn credit_is_earned_with_time_and_spent_by_work() {
        let mut c = Credit::new(Some(0.1), 0);
        assert!(c.allows());
        c.spend(Credit::BURST_NS as u64 + 1_000_000);
        assert!(!c.allows());
        // 1 ms overdrawn at a tenth: 10 ms to wait
        assert!((10_000_000..=10_000_002).contains(&c.wait_ns()));
        c.refill(10_000_001);
        assert!(c.allows());
        // no bound asked (or a nonsense one): always allowed
        for share in [None, Some(0.0), Some(1.0), Some(f64::NAN)] {
            let mut c = Credit::new(share, 0);
            c.spend(u64::MAX);
            assert!(c.allows() && c.wait_ns() == 0);
        }
    }

    proptest! {
        /// However work and time come, work done only while allowed takes at
        /// most the share of the time, the burst and one piece of work.
        #[test]
        fn others_work_stays_within_the_share(steps in prop::collection::vec((0u64..50_000_000, 0u64..5_000_000), 1..300)) {
            let share = 0.1;
            let mut c = Credit::new(Some(share), 0);
            let (mut now, mut spent, mut largest) = (0u64, 0u64, 0u64);
            for (elapsed, work) in steps {
                now += elapsed;
                c.refill(now);
                if c.allows() {
                    c.spend(work);
                    spent += work;
                    largest = largest.max(work);
                }
                let bound = now as f64 * share + Credit::BURST_NS + largest as f64;
                prop_assert!(spent as f64 <= bound + 1.0, "{} > {}", spent, bound);
            }
        }
    }
}
