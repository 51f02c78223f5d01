//! Files and the page cache: cachestat, mincore, fadvise, O_DIRECT buffers, mmap.

use std::fs::File;
use std::os::fd::AsRawFd;
use std::path::Path;

use crate::error::{SysError, SysResult};
use crate::fsread::Root;

/// Page-cache state of a file range (cachestat(2), Linux 6.5+), in pages.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
pub struct CacheStat {
    pub cached: u64,
    pub dirty: u64,
    pub writeback: u64,
    pub evicted: u64,
    pub recently_evicted: u64,
}

#[repr(C)]
struct CachestatRange {
    off: u64,
    len: u64,
}

#[repr(C)]
#[derive(Default)]
struct RawCachestat {
    nr_cache: u64,
    nr_dirty: u64,
    nr_writeback: u64,
    nr_evicted: u64,
    nr_recently_evicted: u64,
}

#[cfg(target_arch = "x86_64")]
const SYS_CACHESTAT: libc::c_long = 451;
#[cfg(target_arch = "aarch64")]
const SYS_CACHESTAT: libc::c_long = 451;

/// cachestat(2) over the whole file; `Err` on kernels without it (ENOSYS).
pub fn cachestat(file: &File) -> SysResult<CacheStat> {
    cachestat_range(file, 0, 0) // len 0: to the end of the file
}

/// cachestat(2) over `len` bytes from `off` (len 0: to the end of the file).
pub fn cachestat_range(file: &File, off: u64, len: u64) -> SysResult<CacheStat> {
    let range = CachestatRange { off, len };
    let mut cs = RawCachestat::default();
    // SAFETY: range and cs are valid for the call; flags must be 0.
    let rc = unsafe {
        libc::syscall(
            SYS_CACHESTAT,
            file.as_raw_fd(),
            &range as *const CachestatRange,
            &mut cs as *mut RawCachestat,
            0u32,
        )
    };
    if rc != 0 {
        return Err(SysError::last_os("cachestat"));
    }
    Ok(CacheStat {
        cached: cs.nr_cache,
        dirty: cs.nr_dirty,
        writeback: cs.nr_writeback,
        evicted: cs.nr_evicted,
        recently_evicted: cs.nr_recently_evicted,
    })
}

/// Whether this kernel has cachestat(2) (Linux 6.5 and later); probed once.
pub fn has_cachestat() -> bool {
    static HAS: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *HAS.get_or_init(|| {
        File::open("/proc/self/exe").is_ok_and(|f| match cachestat(&f) {
            Ok(_) => true,
            Err(e) => !says_the_call_is_missing(&e),
        })
    })
}

/// ENOSYS, or EPERM from a seccomp filter that refuses calls it does not know.
fn says_the_call_is_missing(e: &SysError) -> bool {
    matches!(e, SysError::Syscall { source, .. }
        if matches!(source.raw_os_error(), Some(libc::ENOSYS) | Some(libc::EPERM)))
}

/// Pages of the file resident in memory, by mmap + mincore(2) (any kernel).
pub fn mincore_pages(file: &File) -> SysResult<u64> {
    let len = file
        .metadata()
        .map_err(|e| SysError::Other(e.to_string()))?
        .len() as usize;
    if len == 0 {
        return Ok(0);
    }
    let map = Mapping::file(file, len)?;
    let page = crate::machine::page_size() as usize;
    let mut vec = vec![0u8; len.div_ceil(page)];
    // SAFETY: map covers len bytes; vec has one byte per page of it.
    let rc = unsafe { libc::mincore(map.ptr as *mut libc::c_void, len, vec.as_mut_ptr()) };
    if rc != 0 {
        return Err(SysError::last_os("mincore"));
    }
    Ok(vec.iter().filter(|b| **b & 1 == 1).count() as u64)
}

/// Cached pages of a file: cachestat where the kernel has it, else mincore.
/// Returns the count and the method used.
pub fn cached_pages(file: &File) -> SysResult<(u64, &'static str)> {
    match cachestat(file) {
        Ok(cs) => Ok((cs.cached, "cachestat")),
        Err(_) => mincore_pages(file).map(|n| (n, "mincore")),
    }
}

/// Drops a file's clean pages from the page cache: fsync first so every page is
/// clean, then posix_fadvise(POSIX_FADV_DONTNEED). Works without root.
pub fn evict(file: &File) -> SysResult<()> {
    file.sync_all()
        .map_err(|e| SysError::Other(format!("fsync: {e}")))?;
    // SAFETY: a valid fd; offset 0, len 0 means the whole file.
    let rc = unsafe { libc::posix_fadvise(file.as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED) };
    if rc != 0 {
        return Err(SysError::Syscall {
            call: "posix_fadvise",
            source: std::io::Error::from_raw_os_error(rc),
        });
    }
    Ok(())
}

/// Drops the longest start of a file that holds no dirty and no writeback page
/// from the page cache, and returns its length in bytes. Nothing is written: the
/// range is checked clean with cachestat() first, because POSIX_FADV_DONTNEED would
/// start write back of any dirty page in it. Meant for files written at their end.
pub fn drop_clean_start(file: &File, page: u64) -> SysResult<u64> {
    let size = file
        .metadata()
        .map_err(|e| SysError::Other(e.to_string()))?
        .len();
    let clean = |pages: u64| -> SysResult<bool> {
        let cs = cachestat_range(file, 0, pages * page)?;
        Ok(cs.dirty == 0 && cs.writeback == 0)
    };
    // the largest whole number of pages from the start that is clean: binary search
    // (a longer start holds every page a shorter one does)
    let (mut lo, mut hi) = (0u64, size / page);
    if hi > 0 && clean(hi)? {
        lo = hi;
    }
    while hi - lo > 1 {
        let mid = lo + (hi - lo) / 2;
        if clean(mid)? { lo = mid } else { hi = mid }
    }
    if lo == 0 {
        return Ok(0);
    }
    let len = lo * page;
    // SAFETY: a valid fd and a range inside the file.
    let rc = unsafe {
        libc::posix_fadvise(
            file.as_raw_fd(),
            0,
            len as libc::off_t,
            libc::POSIX_FADV_DONTNEED,
        )
    };
    if rc != 0 {
        return Err(SysError::Syscall {
            call: "posix_fadvise",
            source: std::io::Error::from_raw_os_error(rc),
        });
    }
    Ok(len)
}

/// Where the file's first hole starts (lseek SEEK_HOLE from 0): its length when it
/// has none. It moves the file's offset there.
pub fn first_hole(file: &File) -> SysResult<u64> {
    // SAFETY: a valid descriptor; SEEK_HOLE only reads the file's extent map.
    let at = unsafe { libc::lseek(file.as_raw_fd(), 0, libc::SEEK_HOLE) };
    if at < 0 {
        return Err(SysError::last_os("lseek"));
    }
    Ok(at as u64)
}

/// fdatasync(2).
pub fn fdatasync(file: &File) -> SysResult<()> {
    // SAFETY: a valid fd.
    if unsafe { libc::fdatasync(file.as_raw_fd()) } != 0 {
        return Err(SysError::last_os("fdatasync"));
    }
    Ok(())
}

/// Opens `path` for writing with extra open flags (O_DIRECT, O_DSYNC), creating it.
pub fn open_write(path: &Path, flags: libc::c_int, truncate: bool) -> std::io::Result<File> {
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(truncate)
        .custom_flags(flags)
        .open(path)
}

pub const O_DIRECT: libc::c_int = libc::O_DIRECT;
pub const O_DSYNC: libc::c_int = libc::O_DSYNC;

/// A heap buffer aligned for O_DIRECT (4 KiB), filled with a non-repeating pattern
/// so neither compression nor deduplication below can shortcut the I/O.
pub struct AlignedBuf {
    ptr: *mut u8,
    len: usize,
    layout: std::alloc::Layout,
}

// SAFETY: the buffer is uniquely owned.
unsafe impl Send for AlignedBuf {}

impl AlignedBuf {
    pub fn new(len: usize, seed: u64) -> AlignedBuf {
        let layout = std::alloc::Layout::from_size_align(len.max(4096), 4096).expect("layout");
        // SAFETY: layout has non-zero size.
        let ptr = unsafe { std::alloc::alloc(layout) };
        assert!(!ptr.is_null(), "out of memory allocating an I/O buffer");
        let mut b = AlignedBuf { ptr, len, layout };
        let mut x = seed | 1;
        for chunk in b.as_mut_slice().chunks_mut(8) {
            // xorshift64: cheap and never constant
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let bytes = x.to_le_bytes();
            chunk.copy_from_slice(&bytes[..chunk.len()]);
        }
        b
    }

    pub fn as_slice(&self) -> &[u8] {
        // SAFETY: ptr is valid for len initialised bytes.
        unsafe { std::slice::from_raw_parts(self.ptr, self.len) }
    }

    pub fn as_mut_slice(&mut self) -> &mut [u8] {
        // SAFETY: ptr is valid for len bytes and uniquely borrowed.
        unsafe { std::slice::from_raw_parts_mut(self.ptr, self.len) }
    }
}

impl Drop for AlignedBuf {
    fn drop(&mut self) {
        // SAFETY: allocated with this layout.
        unsafe { std::alloc::dealloc(self.ptr, self.layout) };
    }
}

/// A memory mapping, unmapped on drop.
pub struct Mapping {
    ptr: *mut u8,
    len: usize,
}

impl Mapping {
    /// Maps `len` bytes of `file` read-only and shared.
    pub fn file(file: &File, len: usize) -> SysResult<Mapping> {
        // SAFETY: a fresh mapping of a valid fd; checked for MAP_FAILED.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ,
                libc::MAP_SHARED,
                file.as_raw_fd(),
                0,
            )
        };
        if p == libc::MAP_FAILED {
            return Err(SysError::last_os("mmap"));
        }
        Ok(Mapping {
            ptr: p as *mut u8,
            len,
        })
    }

    /// Maps `len` bytes of private anonymous memory (not touched yet).
    pub fn anonymous(len: usize) -> SysResult<Mapping> {
        // SAFETY: a fresh anonymous mapping; checked for MAP_FAILED.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        if p == libc::MAP_FAILED {
            return Err(SysError::last_os("mmap"));
        }
        Ok(Mapping {
            ptr: p as *mut u8,
            len,
        })
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Reads one byte of every page (faulting each in); returns their sum.
    pub fn touch_read(&self, page: usize) -> u64 {
        let mut sum = 0u64;
        let mut off = 0;
        while off < self.len {
            // SAFETY: off < len, inside the mapping.
            sum = sum.wrapping_add(u64::from(unsafe {
                std::ptr::read_volatile(self.ptr.add(off))
            }));
            off += page;
        }
        sum
    }

    /// Writes one byte of every page (first touch allocates it). Needs a writable mapping.
    pub fn touch_write(&mut self, page: usize) {
        let mut off = 0;
        while off < self.len {
            // SAFETY: off < len, inside a writable anonymous mapping.
            unsafe { std::ptr::write_volatile(self.ptr.add(off), 1) };
            off += page;
        }
    }
}

impl Drop for Mapping {
    fn drop(&mut self) {
        // SAFETY: the mapping was created with this pointer and length.
        unsafe { libc::munmap(self.ptr as *mut libc::c_void, self.len) };
    }
}

/// The block device (as /proc/diskstats names it) holding `path`: the partition if
/// the file system is on one, from /sys under `root`. `None` for tmpfs, overlay and
/// other virtual file systems.
pub fn device_name_of(root: &Root, path: &Path) -> Option<String> {
    use std::os::unix::fs::MetadataExt;
    let dev = std::fs::metadata(path).ok()?.dev();
    let (ma, mi) = (libc::major(dev), libc::minor(dev));
    if ma == 0 {
        return None;
    }
    let link = std::fs::read_link(root.path(&format!("/sys/dev/block/{ma}:{mi}"))).ok()?;
    link.file_name().map(|n| n.to_string_lossy().into_owned())
}

/// The whole disk a diskstats name belongs to (`vda1` -> `vda`), for its queue
/// settings, from /sys under `root`.
pub fn parent_disk(root: &Root, name: &str) -> String {
    let class = root.path(&format!("/sys/class/block/{name}"));
    if class.join("partition").exists()
        && let Ok(link) = std::fs::read_link(&class)
        && let Some(parent) = link.parent().and_then(|p| p.file_name())
    {
        return parent.to_string_lossy().into_owned();
    }
    name.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    /// /sys/dev/block and /sys/class/block as this guest has them (links into
    /// /sys/devices), for a disk `vdz` with a partition `vdz1`.
    #[test]
    fn block_device_names_come_from_sys_under_the_root() {
        use std::os::unix::fs::{MetadataExt, symlink};
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("f");
        std::fs::write(&file, "x").unwrap();
        let dev = std::fs::metadata(&file).unwrap().dev();
        let (ma, mi) = (libc::major(dev), libc::minor(dev));
        let sys = dir.path().join("sys");
        let part = sys.join("devices/pci0000:00/virtio2/block/vdz/vdz1");
        std::fs::create_dir_all(&part).unwrap();
        std::fs::write(part.join("partition"), "1\n").unwrap();
        std::fs::create_dir_all(sys.join("dev/block")).unwrap();
        std::fs::create_dir_all(sys.join("class/block")).unwrap();
        symlink(
            "../../devices/pci0000:00/virtio2/block/vdz/vdz1",
            sys.join(format!("dev/block/{ma}:{mi}")),
        )
        .unwrap();
        symlink(
            "../../devices/pci0000:00/virtio2/block/vdz/vdz1",
            sys.join("class/block/vdz1"),
        )
        .unwrap();
        symlink(
            "../../devices/pci0000:00/virtio2/block/vdz",
            sys.join("class/block/vdz"),
        )
        .unwrap();
        let root = Root::at(dir.path());
        if ma != 0 {
            assert_eq!(device_name_of(&root, &file).as_deref(), Some("vdz1"));
        }
        assert_eq!(parent_disk(&root, "vdz1"), "vdz");
        assert_eq!(parent_disk(&root, "vdz"), "vdz");
        assert_eq!(parent_disk(&root, "sda"), "sda");
    }

    #[test]
    fn only_the_clean_start_of_a_file_is_dropped() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("f");
        let mut f = std::fs::OpenOptions::new()
            .create(true)
            .truncate(true)
            .read(true)
            .write(true)
            .open(&p)
            .unwrap();
        let page = crate::machine::page_size();
        f.write_all(&vec![7u8; 1 << 20]).unwrap();
        f.sync_all().unwrap();
        f.write_all(&vec![8u8; 64 << 10]).unwrap(); // a dirty tail
        let Ok(before) = cachestat(&f) else {
            return; // no cachestat on this kernel
        };
        let dropped = drop_clean_start(&f, page).unwrap();
        // the flusher may have cleaned some of the tail in between, never less
        assert!(
            (1 << 20..=(1 << 20) + (64 << 10)).contains(&dropped),
            "{dropped}"
        );
        let start = cachestat_range(&f, 0, dropped).unwrap();
        let after = cachestat(&f).unwrap();
        // tmpfs keeps its pages; a real file system drops the clean ones
        assert!(start.cached == 0 || before.cached == after.cached);
        assert_eq!(start.dirty + start.writeback, 0);
        assert!(
            after.dirty <= before.dirty,
            "nothing was dirtied by dropping"
        );
        assert_eq!(
            drop_clean_start(&std::fs::File::create(dir.path().join("e")).unwrap(), page).unwrap(),
            0
        );
        let mut data = Vec::new();
        use std::io::{Read, Seek};
        f.seek(std::io::SeekFrom::Start(0)).unwrap();
        f.read_to_end(&mut data).unwrap();
        assert_eq!(data.len(), (1 << 20) + (64 << 10), "no data is lost");
        assert!(data[..1 << 20].iter().all(|b| *b == 7) && data[1 << 20..].iter().all(|b| *b == 8));
    }

    #[test]
    fn eviction_and_residency_agree() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("f");
        let mut f = std::fs::File::create(&p).unwrap();
        f.write_all(&vec![7u8; 1 << 20]).unwrap();
        f.sync_all().unwrap();
        let f = std::fs::File::open(&p).unwrap();
        let before = mincore_pages(&f).unwrap();
        evict(&f).unwrap();
        let after = mincore_pages(&f).unwrap();
        // tmpfs cannot evict; a real file system drops the clean pages
        assert!(after <= before);
        if let Ok(cs) = cachestat(&f) {
            assert_eq!(cs.cached, after, "cachestat and mincore agree");
        }
    }

    #[test]
    fn aligned_buffers_are_aligned_and_varied() {
        let b = AlignedBuf::new(1 << 16, 5);
        assert_eq!(b.as_slice().as_ptr() as usize % 4096, 0);
        assert_ne!(b.as_slice()[..8], b.as_slice()[8..16]);
    }

    #[test]
    fn anonymous_mappings_touch() {
        let mut m = Mapping::anonymous(1 << 20).unwrap();
        m.touch_write(4096);
        assert_eq!(m.touch_read(4096), 256);
    }
}
