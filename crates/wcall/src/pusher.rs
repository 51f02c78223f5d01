//! The coordinator's hands, on a thread of their own: starting write back of a
//! group's files (sync_file_range with SYNC_FILE_RANGE_WRITE, which can block
//! while the device's queue is full) and dropping the written-back start of
//! governed files from the page cache. Neither may hold up a pass: a pass that
//! waited on a throttled device was seen to last 12-21 ms instead of 0.1.
//!
//! One job is taken at a time and at most one waits; a newer job replaces the one
//! waiting, so a slow device never builds a queue of stale work.

use std::fs::File;
use std::os::fd::AsRawFd;
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;

#[derive(Default)]
struct Work {
    push: Vec<Arc<File>>,
    recycle: Vec<Arc<File>>,
    stop: bool,
}

pub struct Pusher {
    work: Arc<(Mutex<Work>, Condvar)>,
    handle: Option<JoinHandle<()>>,
}

/// Starts write back of the whole file without waiting for it.
pub fn push_file(f: &File) {
    // SAFETY: a valid descriptor; offset 0 and length 0 mean the whole file.
    unsafe { libc::sync_file_range(f.as_raw_fd(), 0, 0, libc::SYNC_FILE_RANGE_WRITE) };
}

impl Pusher {
    pub fn start() -> std::io::Result<Pusher> {
        let work: Arc<(Mutex<Work>, Condvar)> = Arc::default();
        let w = work.clone();
        let handle = std::thread::Builder::new()
            .name("wcall-pusher".into())
            .spawn(move || run(&w))?;
        Ok(Pusher {
            work,
            handle: Some(handle),
        })
    }

    /// Write back these files (replacing a push still waiting).
    pub fn push(&self, files: Vec<Arc<File>>) {
        self.give(|w| w.push = files);
    }

    /// Drop the clean start of these files from the page cache.
    pub fn recycle(&self, files: Vec<Arc<File>>) {
        self.give(|w| w.recycle = files);
    }

    fn give(&self, f: impl FnOnce(&mut Work)) {
        let (lock, cv) = &*self.work;
        if let Ok(mut w) = lock.lock() {
            f(&mut w);
            cv.notify_one();
        }
    }
}

fn run(work: &(Mutex<Work>, Condvar)) {
    let page = oslab_sys::machine::page_size();
    let (lock, cv) = work;
    loop {
        let (push, recycle) = {
            let Ok(mut w) = lock.lock() else { return };
            while w.push.is_empty() && w.recycle.is_empty() && !w.stop {
                w = match cv.wait(w) {
                    Ok(w) => w,
                    Err(_) => return,
                };
            }
            if w.stop {
                return;
            }
            (std::mem::take(&mut w.push), std::mem::take(&mut w.recycle))
        };
        for f in &push {
            push_file(f);
        }
        for f in &recycle {
            let _ = oslab_sys::fileio::drop_clean_start(f, page);
        }
    }
}

impl Drop for Pusher {
    fn drop(&mut self) {
        self.give(|w| w.stop = true);
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn pushed_files_get_written_back() {
        let dir = tempfile::tempdir().unwrap();
        let mut f = File::create(dir.path().join("a")).unwrap();
        f.write_all(&vec![3u8; 1 << 20]).unwrap();
        let f = Arc::new(File::open(dir.path().join("a")).unwrap());
        let p = Pusher::start().unwrap();
        p.push(vec![f.clone()]);
        let page = oslab_sys::machine::page_size();
        let t0 = std::time::Instant::now();
        loop {
            let cs = oslab_sys::fileio::cachestat(&f).unwrap();
            if cs.dirty == 0 {
                break;
            }
            assert!(
                t0.elapsed().as_secs() < 60,
                "still {} dirty pages",
                cs.dirty
            );
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        p.recycle(vec![f.clone()]);
        drop(p);
        let _ = page;
    }
}
