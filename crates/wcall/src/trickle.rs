//! The sync guard's write back: governed files written back by the governor
//! itself, one chunk at a time, on threads of their own.
//!
//! Why: an fsync or fdatasync of an rt-high program (a database's commit) queues
//! at the device behind whatever write back is queued there. The flusher writes a
//! bulk copy's dirty pages in requests of up to the device's largest (1.25 MiB on
//! a loop device, 32 ms at 40 MiB/s) and, on a throttled device, queues tens of
//! MiB of them: commits measured 1.5-2.4 s behind a `dd`. Kept under the
//! background threshold by the guard's hold, a bulk writer's pages are never the
//! flusher's to write; the paced lane writes them one chunk at a time (the kernel
//! writes whole folios: a chunk of a file written 1 MiB at a time is 1 MiB) and
//! waits for each, so at most one chunk of theirs is ever queued, and it rests
//! between chunks for as long as they wait at the device ([`Pace`]): a full
//! device (on blk-throttle, a spent budget that holds every request to the end of
//! its 100 ms slice) is what a commit must never meet. The unpaced lane writes
//! rt-high's own files the same way without resting: a database's evicted data
//! pages would otherwise gather for the flusher's long runs, ahead of its own
//! commits.

use std::collections::{HashMap, HashSet};
use std::fs::File;
use std::os::fd::AsRawFd;
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use oslab_sys::fileio::cachestat_range;

/// The most dirty bytes in one chunk of write back.
pub const CHUNK: u64 = 128 << 10;
/// The most file one chunk spans (scattered pages gathered into one call).
const MAX_SPAN: u64 = 32 * CHUNK;
/// How long the thread sleeps when nothing guarded is dirty.
const IDLE: Duration = Duration::from_millis(5);

/// A file for a lane: who it is, and whether it had dirty pages at the
/// coordinator's last pass (a clean file is not scanned).
#[derive(Clone)]
pub struct Guarded {
    /// (device, inode): one cursor per file, however many processes write it.
    pub id: (u64, u64),
    pub file: Arc<File>,
    pub dirty: bool,
}

#[derive(Default)]
struct Work {
    /// The files to guard from now on, when the coordinator has said.
    files: Option<Vec<Guarded>>,
    stop: bool,
}

pub struct Trickle {
    work: Arc<(Mutex<Work>, Condvar)>,
    handle: Option<JoinHandle<()>>,
}

/// The bandwidth each device showed the lanes' chunks, shared with the
/// coordinator, which sizes the sync guard from it.
pub type SharedBandwidths = Arc<Mutex<crate::guard::Bandwidths>>;

/// How a trickle thread spaces its chunks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lane {
    /// Rests after each chunk as [`Pace`] says: the lower groups' files, which
    /// take what the device has left.
    Paced,
    /// One chunk after another, each waited for: rt-high's own files, whose
    /// pages would otherwise wait for the flusher's long runs (the database's
    /// evicted data pages), ahead of its own commits.
    Unpaced,
}

impl Trickle {
    /// Starts a lane; the time each chunk takes is recorded in `bandwidths`.
    pub fn start(lane: Lane, bandwidths: SharedBandwidths) -> std::io::Result<Trickle> {
        let work: Arc<(Mutex<Work>, Condvar)> = Arc::default();
        let w = work.clone();
        let name = match lane {
            Lane::Paced => "wcall-trickle",
            Lane::Unpaced => "wcall-trickle-hi",
        };
        let handle = std::thread::Builder::new()
            .name(name.into())
            .spawn(move || run(&w, lane, &bandwidths))?;
        Ok(Trickle {
            work,
            handle: Some(handle),
        })
    }

    /// The files to write back from now on (none: the thread idles).
    pub fn set(&self, files: Vec<Guarded>) {
        let (lock, cv) = &*self.work;
        if let Ok(mut w) = lock.lock() {
            w.files = Some(files);
            cv.notify_one();
        }
    }
}

/// A file being written back, with where its next chunk starts.
struct Cursor {
    /// The device it is on.
    dev: u64,
    file: Arc<File>,
    at: u64,
    /// Dirty at the coordinator's last pass.
    dirty: bool,
}

fn sync_range(f: &File, off: u64, len: u64, flags: libc::c_uint) -> bool {
    // SAFETY: a valid descriptor; the kernel checks the range.
    unsafe { libc::sync_file_range(f.as_raw_fd(), off as i64, len as i64, flags) == 0 }
}

/// Dirty bytes of `f` in `len` bytes from `off` (len 0: to the end).
fn dirty_in(f: &File, off: u64, len: u64) -> u64 {
    cachestat_range(f, off, len).map_or(0, |c| c.dirty * oslab_sys::machine::page_size())
}

/// The next chunk of `c` to write back, from its cursor to the end, then from the
/// start when pages below the cursor were dirtied again; None when clean. A chunk
/// starts at the first dirty [`CHUNK`]-sized step and takes in the steps after it
/// while they add up to at most `CHUNK` of dirty pages, up to [`MAX_SPAN`] of
/// file: one step of a file written in order, many of one whose pages are
/// dirtied here and there (a database's table).
fn next_dirty_chunk(c: &mut Cursor) -> Option<(u64, u64)> {
    let len = c.file.metadata().ok()?.len();
    for _ in 0..2 {
        if c.at < len && dirty_in(&c.file, c.at, 0) > 0 {
            while c.at < len {
                let off = c.at;
                c.at += CHUNK;
                let mut dirty = dirty_in(&c.file, off, CHUNK);
                if dirty == 0 {
                    continue;
                }
                while c.at < len && dirty < CHUNK && c.at - off < MAX_SPAN {
                    let more = dirty_in(&c.file, c.at, CHUNK);
                    if dirty + more > CHUNK {
                        break;
                    }
                    dirty += more;
                    c.at += CHUNK;
                }
                return Some((off, c.at - off));
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

fn run(work: &(Mutex<Work>, Condvar), lane: Lane, bandwidths: &SharedBandwidths) {
    let (lock, _) = work;
    let mut cursors: HashMap<(u64, u64), Cursor> = HashMap::new();
    let mut pace = Pace::default();
    loop {
        {
            let Ok(mut w) = lock.lock() else { return };
            if w.stop {
                return;
            }
            if let Some(files) = w.files.take() {
                take_files(&mut cursors, files);
            }
        }
        if cursors.is_empty() && wait_for_files(work) {
            return;
        }
        let mut wrote = false;
        for c in cursors.values_mut().filter(|c| c.dirty) {
            let Some((off, len)) = next_dirty_chunk(c) else {
                continue;
            };
            let bytes = dirty_in(&c.file, off, len);
            let t = std::time::Instant::now();
            let ok = sync_range(&c.file, off, len, libc::SYNC_FILE_RANGE_WRITE)
                && sync_range(&c.file, off, len, libc::SYNC_FILE_RANGE_WAIT_AFTER);
            if ok && let Ok(mut b) = bandwidths.lock() {
                b.record(c.dev, bytes, t.elapsed());
            }
            let rest = match lane {
                Lane::Paced => pace.after(t.elapsed()),
                Lane::Unpaced => Duration::ZERO,
            };
            // a chunk the kernel refused (the file system full, say) stays dirty:
            // rest at least a little, or the loop would spin on it
            let rest = rest.max(if ok { Duration::ZERO } else { IDLE });
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

/// The cursors of files still guarded kept where they are (with the latest word
/// on whether they are dirty), new ones started at 0, the rest dropped.
fn take_files(cursors: &mut HashMap<(u64, u64), Cursor>, files: Vec<Guarded>) {
    let keep: HashSet<(u64, u64)> = files.iter().map(|g| g.id).collect();
    cursors.retain(|id, _| keep.contains(id));
    for g in files {
        cursors
            .entry(g.id)
            .and_modify(|c| c.dirty = g.dirty)
            .or_insert(Cursor {
                dev: g.id.0,
                file: g.file,
                at: 0,
                dirty: g.dirty,
            });
    }
}

/// Sleeps until the coordinator hands over files or says stop (a governor
/// whose guard has never acted keeps its lanes asleep); true when told to stop.
fn wait_for_files(work: &(Mutex<Work>, Condvar)) -> bool {
    let (lock, cv) = work;
    let Ok(w) = lock.lock() else { return true };
    match cv.wait_while(w, |w| !w.stop && w.files.as_ref().is_none_or(Vec::is_empty)) {
        Ok(w) => w.stop,
        Err(_) => true,
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
    use std::os::unix::fs::MetadataExt;

    fn guarded(f: &Arc<File>) -> Guarded {
        let m = f.metadata().unwrap();
        Guarded {
            id: (m.dev(), m.ino()),
            file: f.clone(),
            dirty: true,
        }
    }

    /// A file of `steps` chunks written a page at a time (the page cache's folios
    /// follow the size of the writes, and a folio is dirtied and written back
    /// whole) and synced: its writer, path and folder.
    fn written_clean(steps: u64) -> (File, std::path::PathBuf, tempfile::TempDir) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        let mut w = File::create(&path).unwrap();
        for _ in 0..steps * CHUNK / 4096 {
            w.write_all(&[1u8; 4096]).unwrap();
        }
        w.sync_all().unwrap();
        (w, path, dir)
    }

    /// Waits until the trickle has written every dirty page of `f` back.
    fn wait_clean(f: &File) {
        let t0 = std::time::Instant::now();
        while dirty_in(f, 0, 0) > 0 {
            assert!(t0.elapsed().as_secs() < 60, "still dirty");
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// Whether this kernel reports dirty pages (cachestat, Linux 6.5).
    fn sees_dirty_pages() -> bool {
        let ok = oslab_sys::fileio::has_cachestat();
        if !ok {
            eprintln!("skipped: no cachestat(2) on this kernel");
        }
        ok
    }

    #[test]
    fn guarded_files_are_written_back_chunk_by_chunk_to_the_end() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a");
        let mut f = File::create(&path).unwrap();
        f.write_all(&vec![5u8; 3 << 20]).unwrap();
        let f = Arc::new(File::open(&path).unwrap());
        let bw = SharedBandwidths::default();
        let t = Trickle::start(Lane::Paced, bw.clone()).unwrap();
        t.set(vec![guarded(&f)]);
        wait_clean(&f);
        drop(t);
        assert_eq!(std::fs::read(&path).unwrap(), vec![5u8; 3 << 20]);
        if sees_dirty_pages() {
            let dev = f.metadata().unwrap().dev();
            assert!(
                bw.lock().unwrap().of(dev).is_some_and(|b| b > 0.0),
                "the chunks' bandwidth was measured"
            );
        }
    }

    #[test]
    fn the_unpaced_lane_writes_back_pages_dirtied_here_and_there() {
        if !sees_dirty_pages() {
            return;
        }
        let (w, path, _dir) = written_clean(64);
        use std::os::unix::fs::FileExt;
        // a table's pages updated in place: one page in every third step
        for step in (0..64).step_by(3) {
            w.write_all_at(&[9u8; 4096], step * CHUNK + 8192).unwrap();
        }
        let f = Arc::new(File::open(&path).unwrap());
        assert!(dirty_in(&f, 0, 0) >= 22 * 4096, "the updates are dirty");
        let t = Trickle::start(Lane::Unpaced, SharedBandwidths::default()).unwrap();
        t.set(vec![guarded(&f)]);
        wait_clean(&f);
        drop(t);
        let back = std::fs::read(&path).unwrap();
        for step in 0..64u64 {
            let at = (step * CHUNK + 8192) as usize;
            let want = if step % 3 == 0 { 9 } else { 1 };
            assert_eq!(back[at], want, "step {step}");
        }
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
        if !sees_dirty_pages() {
            return;
        }
        let (w, path, _dir) = written_clean(4);
        let mut c = Cursor {
            dev: 0,
            file: Arc::new(File::open(&path).unwrap()),
            at: 3 * CHUNK,
            dirty: true,
        };
        assert_eq!(next_dirty_chunk(&mut c), None, "all clean");
        use std::os::unix::fs::FileExt;
        w.write_all_at(b"x", CHUNK + 5).unwrap();
        // the steps after it add no dirty page: the chunk runs to the end
        assert_eq!(next_dirty_chunk(&mut c), Some((CHUNK, 3 * CHUNK)));
        assert_eq!(c.at, 4 * CHUNK);
    }

    #[test]
    fn a_chunk_gathers_scattered_pages_and_stops_at_a_full_step() {
        if !sees_dirty_pages() {
            return;
        }
        let (w, path, _dir) = written_clean(8);
        use std::os::unix::fs::FileExt;
        // a page here and there in steps 1, 3 and 4, then step 6 rewritten whole
        for step in [1, 3, 4] {
            w.write_all_at(&[2u8; 4096], step * CHUNK + 4096).unwrap();
        }
        for page in 0..CHUNK / 4096 {
            w.write_all_at(&[3u8; 4096], 6 * CHUNK + page * 4096)
                .unwrap();
        }
        let mut c = Cursor {
            dev: 0,
            file: Arc::new(File::open(&path).unwrap()),
            at: 0,
            dirty: true,
        };
        assert_eq!(next_dirty_chunk(&mut c), Some((CHUNK, 5 * CHUNK)));
        assert_eq!(next_dirty_chunk(&mut c), Some((6 * CHUNK, CHUNK)));
        w.sync_all().unwrap();
        assert_eq!(next_dirty_chunk(&mut c), None);
    }

    #[test]
    fn a_chunk_spans_at_most_max_span_of_file() {
        if !sees_dirty_pages() {
            return;
        }
        let (w, path, _dir) = written_clean(64);
        use std::os::unix::fs::FileExt;
        // one page in every step: 64 pages, far under CHUNK, over 8 MiB of file
        for step in 0..64 {
            w.write_all_at(&[4u8; 4096], step * CHUNK).unwrap();
        }
        let mut c = Cursor {
            dev: 0,
            file: Arc::new(File::open(&path).unwrap()),
            at: 0,
            dirty: true,
        };
        assert_eq!(next_dirty_chunk(&mut c), Some((0, MAX_SPAN)));
        assert_eq!(next_dirty_chunk(&mut c), Some((MAX_SPAN, MAX_SPAN)));
    }

    #[test]
    fn files_handed_over_keep_their_cursors_and_news_of_being_dirty() {
        let dir = tempfile::tempdir().unwrap();
        let open = |name: &str| {
            let path = dir.path().join(name);
            File::create(&path).unwrap();
            Arc::new(File::open(&path).unwrap())
        };
        let (a, b) = (open("a"), open("b"));
        let mut cursors = HashMap::new();
        take_files(&mut cursors, vec![guarded(&a), guarded(&b)]);
        assert_eq!(cursors.len(), 2);
        let id_a = guarded(&a).id;
        cursors.get_mut(&id_a).unwrap().at = 5 * CHUNK;
        // a again (from a second process's handle: the same file), b gone
        let again = Guarded {
            dirty: false,
            ..guarded(&a)
        };
        take_files(&mut cursors, vec![again.clone(), again]);
        assert_eq!(cursors.len(), 1, "one cursor a file, b dropped");
        let c = &cursors[&id_a];
        assert_eq!((c.at, c.dirty), (5 * CHUNK, false));
    }
}
