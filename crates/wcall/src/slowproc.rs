//! Reads of another process's /proc files that the kernel serves under that
//! process's own locks, which it can hold as long as it likes.
//!
//! /proc/PID/io waits on the process's exec_update_lock, and so, on some
//! releases, does following its /proc/PID/fd links; a process holds that lock
//! through an exec, and an exec can be kept from finishing (a close-on-exec file
//! on a FUSE file system whose FLUSH is never answered). A governor that read
//! such a file on its listener's or coordinator's thread would stop answering
//! anyone, root included, for as long as the process chose. So those threads
//! never make the read themselves: a worker thread makes it and they wait for it
//! at most a deadline; a read that is not back in time is refused (the process
//! is not admitted, or not looked at in that pass). A worker held up is left to
//! come back whenever the lock is let go and a fresh one takes its place; at most
//! [`MAX_HELD`] are held at once, beyond which such reads are refused at once,
//! so another user's stuck execs cost the governor a few threads, never its
//! answers. A pid whose read was held is not asked again for [`SHUNNED`].

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::mpsc::{self, Sender};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// How long a caller waits for one read.
pub const DEADLINE: Duration = Duration::from_millis(50);
/// Workers that may be held up at once.
pub const MAX_HELD: usize = 8;
/// How long a pid whose read was held is refused without being asked.
pub const SHUNNED: Duration = Duration::from_secs(10);

type Job = Box<dyn FnOnce() + Send>;

struct Worker {
    jobs: Sender<Job>,
    retired: Arc<AtomicBool>,
}

static WORKER: Mutex<Option<Worker>> = Mutex::new(None);
static HELD: AtomicUsize = AtomicUsize::new(0);
static SHUNNED_PIDS: Mutex<Option<HashMap<u32, Instant>>> = Mutex::new(None);

fn spawn() -> Option<Worker> {
    let (jobs, rx) = mpsc::channel::<Job>();
    let retired = Arc::new(AtomicBool::new(false));
    let r = retired.clone();
    std::thread::Builder::new()
        .name("wcall-proc".into())
        .spawn(move || {
            for job in rx {
                job();
                if r.load(Ordering::Acquire) {
                    HELD.fetch_sub(1, Ordering::AcqRel);
                    return;
                }
            }
        })
        .ok()?;
    Some(Worker { jobs, retired })
}

/// Whether `pid` was held up lately.
fn shunned(pid: u32) -> bool {
    let Ok(mut s) = SHUNNED_PIDS.lock() else {
        return true;
    };
    let map = s.get_or_insert_with(HashMap::new);
    map.retain(|_, at| at.elapsed() < SHUNNED);
    map.contains_key(&pid)
}

fn shun(pid: u32) {
    if let Ok(mut s) = SHUNNED_PIDS.lock() {
        let map = s.get_or_insert_with(HashMap::new);
        // bounded: one entry a held worker, and those are bounded
        if map.len() < 4 * MAX_HELD {
            map.insert(pid, Instant::now());
        }
    }
}

/// Runs `read` (a read of `pid`'s /proc files) on the worker and waits for it
/// at most `deadline`; None when it did not come back in time, when `pid` was
/// held up lately, or when too many workers are held up already.
pub fn read_of<T: Send + 'static>(
    pid: u32,
    deadline: Duration,
    read: impl FnOnce() -> T + Send + 'static,
) -> Option<T> {
    if shunned(pid) || HELD.load(Ordering::Acquire) >= MAX_HELD {
        return None;
    }
    let (tx, rx) = mpsc::channel();
    let retired = {
        let mut w = WORKER.lock().ok()?;
        if w.is_none() {
            *w = spawn();
        }
        let worker = w.as_ref()?;
        let job: Job = Box::new(move || {
            let _ = tx.send(read());
        });
        worker.jobs.send(job).ok()?;
        worker.retired.clone()
    };
    match rx.recv_timeout(deadline) {
        Ok(v) => Some(v),
        Err(_) => {
            shun(pid);
            if let Ok(mut w) = WORKER.lock()
                && w.as_ref()
                    .is_some_and(|x| Arc::ptr_eq(&x.retired, &retired))
            {
                // this worker is held: it leaves once its read comes back
                retired.store(true, Ordering::Release);
                HELD.fetch_add(1, Ordering::AcqRel);
                *w = None;
            }
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_read_held_up_is_given_up_on_and_the_next_one_is_served() {
        let (release, held) = mpsc::channel::<()>();
        let pid = 4_000_001;
        let t = Instant::now();
        let r = read_of(pid, Duration::from_millis(20), move || {
            let _ = held.recv();
            1
        });
        assert_eq!(r, None, "the held read is given up on");
        assert!(t.elapsed() < Duration::from_secs(5));
        assert_eq!(
            read_of(pid, Duration::from_secs(5), || 2),
            None,
            "the same pid is not asked again at once"
        );
        assert_eq!(
            read_of(4_000_002, Duration::from_secs(5), || 3),
            Some(3),
            "another pid is served by a fresh worker"
        );
        release.send(()).unwrap();
    }
}
