//! The sync guard's write back: the guarded groups' files written back by the
//! governor itself, one chunk at a time, paced to what the device has left, on a
//! thread of its own.
//!
//! Why: an fsync or fdatasync of an rt-high program (a database's commit) queues
//! at the device behind whatever write back is queued there. The flusher writes a
//! bulk copy's dirty pages in requests of up to the device's largest (1.25 MiB on
//! a loop device, 32 ms at 40 MiB/s) and, on a throttled device, queues tens of
//! MiB of them: commits measured 1.5-2.4 s behind a `dd`. Kept under the
//! background threshold by the guard's hold, a bulk writer's pages are never the
//! flusher's to write; this thread writes them one chunk at a time (the kernel
//! writes whole folios: a chunk of a file written 1 MiB at a time is 1 MiB) and
//! waits for each, so at most one chunk of theirs is ever queued, and it rests
//! between chunks for as long as they wait at the device ([`Pace`]): a full
//! device (on blk-throttle, a spent budget that holds every request to the end of
//! its 100 ms slice) is what a commit must never meet.

use std::fs::File;
use std::os::fd::AsRawFd;
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use oslab_sys::fileio::cachestat_range;

/// The size of one chunk of write back.
pub const CHUNK: u64 = 128 << 10;
/// How long the thread sleeps when nothing guarded is dirty.
const IDLE: Duration = Duration::from_millis(5);

#[derive(Default)]
struct Work {
    /// The files to guard from now on, when the coordinator has said.
    files: Option<Vec<Arc<File>>>,
    stop: bool,
}

pub struct Trickle {
    work: Arc<(Mutex<Work>, Condvar)>,
    handle: Option<JoinHandle<()>>,
}

impl Trickle {
    pub fn start() -> std::io::Result<Trickle> {
        let work: Arc<(Mutex<Work>, Condvar)> = Arc::default();
        let w = work.clone();
        let handle = std::thread::Builder::new()
            .name("wcall-trickle".into())
            .spawn(move || run(&w))?;
        Ok(Trickle {
            work,
            handle: Some(handle),
        })
    }

    /// The files to write back from now on (none: the thread idles).
    pub fn set(&self, files: Vec<Arc<File>>) {
        let (lock, cv) = &*self.work;
        if let Ok(mut w) = lock.lock() {
            w.files = Some(files);
            cv.notify_one();
        }
    }
}

/// A file being written back, with where its next chunk starts.
struct Cursor {
    file: Arc<File>,
    at: u64,
}

fn sync_range(f: &File, off: u64, len: u64, flags: libc::c_uint) -> bool {
    // SAFETY: a valid descriptor; the kernel checks the range.
    unsafe { libc::sync_file_range(f.as_raw_fd(), off as i64, len as i64, flags) == 0 }
}

fn dirty_in(f: &File, off: u64, len: u64) -> u64 {
    cachestat_range(f, off, len).map_or(0, |c| c.dirty)
}

/// The next chunk of `c` with dirty pages, from its cursor to the end, then from
/// the start when pages below the cursor were dirtied again; None when clean.
fn next_dirty_chunk(c: &mut Cursor) -> Option<u64> {
    let len = c.file.metadata().ok()?.len();
    for _ in 0..2 {
        if c.at < len && dirty_in(&c.file, c.at, 0) > 0 {
            while c.at < len {
                let off = c.at;
                c.at += CHUNK;
                if dirty_in(&c.file, off, CHUNK) > 0 {
                    return Some(off);
                }
            }
        }
        if dirty_in(&c.file, 0, 0) == 0 {
            return None;
        }
        c.at = 0;
    }
    None
}

/// How long the thread rests after a chunk, as a multiple of the time the chunk
/// took: it grows while chunks wait at the device (the device is full, so an
/// rt-high commit would wait too) and shrinks while they do not, so the guarded
/// groups take what the device has left and no more.
#[derive(Debug, Clone, Copy)]
pub struct Pace {
    rest: f64,
    fastest: Duration,
}

/// The most the thread rests: 8 times a chunk's time (a ninth of the device).
const MAX_REST: f64 = 8.0;

impl Default for Pace {
    fn default() -> Pace {
        Pace {
            rest: 0.0,
            fastest: Duration::MAX,
        }
    }
}

impl Pace {
    /// The rest after a chunk that took `took` from submission to completion.
    pub fn after(&mut self, took: Duration) -> Duration {
        self.fastest = self.fastest.min(took);
        // a chunk that took four times the fastest (and a millisecond more) waited
        // behind other I/O or a throttle
        if took > self.fastest * 4 + Duration::from_millis(1) {
            self.rest = (self.rest * 1.5).clamp(0.25, MAX_REST);
        } else {
            self.rest *= 0.9;
        }
        took.mul_f64(self.rest)
    }
}

fn run(work: &(Mutex<Work>, Condvar)) {
    let (lock, _) = work;
    let mut cursors: Vec<Cursor> = Vec::new();
    let mut pace = Pace::default();
    loop {
        {
            let Ok(mut w) = lock.lock() else { return };
            if w.stop {
                return;
            }
            // keep the cursors of files still guarded, start new ones at 0
            if let Some(files) = w.files.take() {
                cursors.retain(|c| files.iter().any(|f| Arc::ptr_eq(f, &c.file)));
                for f in files {
                    if !cursors.iter().any(|c| Arc::ptr_eq(&f, &c.file)) {
                        cursors.push(Cursor { file: f, at: 0 });
                    }
                }
            }
        }
        let mut wrote = false;
        for c in &mut cursors {
            let Some(off) = next_dirty_chunk(c) else {
                continue;
            };
            let t = std::time::Instant::now();
            let ok = sync_range(&c.file, off, CHUNK, libc::SYNC_FILE_RANGE_WRITE)
                && sync_range(&c.file, off, CHUNK, libc::SYNC_FILE_RANGE_WAIT_AFTER);
            // a chunk the kernel refused (the file system full, say) stays dirty:
            // rest at least a little, or the loop would spin on it
            let rest = pace
                .after(t.elapsed())
                .max(if ok { Duration::ZERO } else { IDLE });
            if rest_or_stop(work, rest) {
                return;
            }
            wrote = true;
        }
        if !wrote && rest_or_stop(work, IDLE) {
            return;
        }
    }
}

/// Waits `d` unless told to stop first; true when told to stop.
fn rest_or_stop(work: &(Mutex<Work>, Condvar), d: Duration) -> bool {
    let (lock, cv) = work;
    let Ok(w) = lock.lock() else { return true };
    if w.stop {
        return true;
    }
    if d.is_zero() {
        return false;
    }
    match cv.wait_timeout_while(w, d, |w| !w.stop) {
        Ok((w, _)) => w.stop,
        Err(_) => true,
    }
}

impl Drop for Trickle {
    fn drop(&mut self) {
        {
            let (lock, cv) = &*self.work;
            if let Ok(mut w) = lock.lock() {
                w.stop = true;
                cv.notify_one();
            }
        }
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
    fn guarded_files_are_written_back_chunk_by_chunk_to_the_end() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a");
        let mut f = File::create(&path).unwrap();
        f.write_all(&vec![5u8; 3 << 20]).unwrap();
        let f = Arc::new(File::open(&path).unwrap());
        let t = Trickle::start().unwrap();
        t.set(vec![f.clone()]);
        let t0 = std::time::Instant::now();
        while dirty_in(&f, 0, 0) > 0 {
            assert!(t0.elapsed().as_secs() < 60, "still dirty");
            std::thread::sleep(Duration::from_millis(10));
        }
        drop(t);
        assert_eq!(std::fs::read(&path).unwrap(), vec![5u8; 3 << 20]);
    }

    #[test]
    fn the_pace_rests_while_chunks_wait_and_runs_while_they_do_not() {
        let ms = Duration::from_millis;
        let mut p = Pace::default();
        assert_eq!(p.after(ms(2)), Duration::ZERO, "a free device: no rest");
        // a chunk that waited 100 ms (a spent throttle slice): rest a quarter of it
        assert_eq!(p.after(ms(100)), ms(25));
        assert_eq!(p.after(ms(100)), ms(100).mul_f64(0.375));
        for _ in 0..20 {
            p.after(ms(100));
        }
        assert_eq!(p.after(ms(100)), ms(800), "at most eight times the chunk");
        // quick chunks again: the rest shrinks by a tenth each
        let rest = p.after(ms(2)).as_secs_f64();
        assert!((rest - 0.0144).abs() < 1e-9, "{rest}");
        for _ in 0..100 {
            p.after(ms(2));
        }
        assert!(p.after(ms(2)) < Duration::from_micros(10));
    }

    #[test]
    fn a_cursor_finds_pages_dirtied_again_below_it() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("b");
        let mut w = File::create(&path).unwrap();
        // written a page at a time: the page cache's folios follow the size of
        // the writes, and a folio is dirtied (and written back) whole
        for _ in 0..4 * CHUNK / 4096 {
            w.write_all(&[1u8; 4096]).unwrap();
        }
        w.sync_all().unwrap();
        let mut c = Cursor {
            file: Arc::new(File::open(&path).unwrap()),
            at: 3 * CHUNK,
        };
        assert_eq!(next_dirty_chunk(&mut c), None, "all clean");
        use std::os::unix::fs::FileExt;
        w.write_all_at(b"x", CHUNK + 5).unwrap();
        assert_eq!(next_dirty_chunk(&mut c), Some(CHUNK));
        assert_eq!(c.at, 2 * CHUNK);
    }
}
