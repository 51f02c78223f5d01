//! Memory probes: a buffer on 4 KiB or transparent huge pages, a dependent pointer
//! chase through one random cycle (so no prefetcher can guess the next line), and
//! sequential read and write sweeps.

use oslab_sys::fsread::Root;
use oslab_sys::{SysError, SysResult};

const HUGE: usize = 2 << 20;

/// An anonymous, private, prefaulted buffer aligned to 2 MiB.
pub struct Buffer {
    base: *mut u8,
    map_len: usize,
    ptr: *mut u8,
    len: usize,
    pub huge_requested: bool,
}

impl Buffer {
    /// Maps `len` bytes; `huge` asks for transparent huge pages (MADV_HUGEPAGE),
    /// otherwise they are refused (MADV_NOHUGEPAGE) so the buffer is on 4 KiB pages.
    pub fn new(len: usize, huge: bool) -> SysResult<Buffer> {
        let len = len.max(4096).next_multiple_of(4096);
        let map_len = len + HUGE;
        // SAFETY: a fresh private anonymous mapping; checked for failure.
        let base = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                map_len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        if base == libc::MAP_FAILED {
            return Err(SysError::last_os("mmap"));
        }
        let base = base as *mut u8;
        let offset = (HUGE - (base as usize % HUGE)) % HUGE;
        // SAFETY: offset < HUGE and map_len = len + HUGE, so ptr..ptr+len is mapped.
        let ptr = unsafe { base.add(offset) };
        let advice = if huge {
            libc::MADV_HUGEPAGE
        } else {
            libc::MADV_NOHUGEPAGE
        };
        // SAFETY: advising our own mapping; failure only means no huge pages.
        unsafe { libc::madvise(ptr.cast(), len, advice) };
        // SAFETY: prefault every page of our mapping by writing it.
        unsafe { std::ptr::write_bytes(ptr, 0, len) };
        Ok(Buffer {
            base,
            map_len,
            ptr,
            len,
            huge_requested: huge,
        })
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    pub fn as_mut_slice(&mut self) -> &mut [u8] {
        // SAFETY: ptr..ptr+len is our mapping, borrowed mutably through self.
        unsafe { std::slice::from_raw_parts_mut(self.ptr, self.len) }
    }

    pub fn as_slice(&self) -> &[u8] {
        // SAFETY: as above, shared.
        unsafe { std::slice::from_raw_parts(self.ptr, self.len) }
    }

    /// Bytes of this buffer the kernel backs with huge pages now
    /// (AnonHugePages of its mapping in /proc/self/smaps under `root`).
    pub fn anon_huge_bytes(&self, root: &Root) -> Option<u64> {
        oslab_sys::parse::smaps::read_own_anon_huge(
            root,
            self.base as u64,
            self.base as u64 + self.map_len as u64,
        )
    }

    /// Links `lines` (line indices, all below len / stride) into one chase: the
    /// word at line `order[i]` points to line `order[i + 1]`, the last to the first.
    /// Offsets must be multiples of 8 and keep every word inside the buffer (lines
    /// and offsets that do not are clamped into it). An empty order links nothing
    /// and is an error: there is no chase to follow.
    pub fn link(
        &mut self,
        order: &[u32],
        stride: usize,
        offset_of: impl Fn(usize) -> usize,
    ) -> SysResult<Chase<'_>> {
        if order.is_empty() {
            return Err(SysError::Other(
                "a pointer chase needs at least one line".into(),
            ));
        }
        let base = self.ptr;
        let last = self.len.saturating_sub(8);
        let addr = |i: usize| {
            let line = order[i] as usize;
            let at = ((line * stride + offset_of(line)) & !7).min(last);
            // SAFETY: at is within the buffer and 8-aligned (the buffer is 2 MiB aligned).
            unsafe { base.add(at) }
        };
        for i in 0..order.len() {
            let here = addr(i) as *mut usize;
            let next = addr((i + 1) % order.len()) as usize;
            // SAFETY: an aligned word inside the buffer (offsets are multiples of 8).
            unsafe { here.write(next) };
        }
        // Every word of the cycle now holds the address of another word of it.
        Ok(Chase {
            start: addr(0) as *const usize,
            _buf: std::marker::PhantomData,
        })
    }
}

/// A linked chase through a buffer, valid while the buffer is borrowed.
pub struct Chase<'a> {
    start: *const usize,
    _buf: std::marker::PhantomData<&'a mut Buffer>,
}

impl Chase<'_> {
    /// Follows the chase `steps` times; returns ns per step.
    pub fn time(&self, steps: u64) -> f64 {
        chase(self.start, steps)
    }
}

impl Drop for Buffer {
    fn drop(&mut self) {
        // SAFETY: unmapping our own mapping once.
        unsafe { libc::munmap(self.base.cast(), self.map_len) };
    }
}

/// A single random cycle over 0..n (Sattolo's algorithm), from a seed.
pub fn sattolo(n: usize, seed: u64) -> Vec<u32> {
    let mut next: Vec<u32> = (0..n as u32).collect();
    let mut s = seed | 1;
    let mut rnd = || {
        // xorshift64*: enough to defeat prefetchers, reproducible from the seed
        s ^= s >> 12;
        s ^= s << 25;
        s ^= s >> 27;
        s.wrapping_mul(0x2545_f491_4f6c_dd1d)
    };
    for i in (1..n).rev() {
        let j = (rnd() % i as u64) as usize;
        next.swap(i, j);
    }
    // next[] is a permutation with one cycle; walk it to get the visiting order
    let mut order = Vec::with_capacity(n);
    let mut at = 0usize;
    for _ in 0..n {
        order.push(at as u32);
        at = next[at] as usize;
    }
    order
}

#[inline(never)]
fn chase(start: *const usize, steps: u64) -> f64 {
    let mut p = start;
    let t0 = oslab_sys::clock::monotonic_ns();
    for _ in 0..steps {
        // SAFETY: every word of the chase holds the address of the next one.
        p = unsafe { *p } as *const usize;
    }
    let t1 = oslab_sys::clock::monotonic_ns();
    std::hint::black_box(p);
    (t1 - t0) as f64 / steps.max(1) as f64
}

/// A loop that reads every 8-byte word of a buffer once and returns a checksum to
/// keep it alive, chosen once for this CPU so that no timed pass checks the CPU.
///
/// With 256-bit loads where the CPU has AVX2, the width compilers choose for such a
/// loop with -march=native there: with the baseline x86-64 build's 16-byte loads,
/// reading from L1 and L2 looked half as fast as `write_sweep`'s memset (glibc's
/// 32-byte stores, or rep stosb), a limit of the instructions, not of the caches.
#[derive(Clone, Copy)]
pub struct ReadSweep {
    pub sweep: fn(&[u8]) -> u64,
    /// The width of its loads, bytes.
    pub load_bytes: u32,
}

impl ReadSweep {
    pub fn for_this_cpu() -> ReadSweep {
        #[cfg(target_arch = "x86_64")]
        if std::arch::is_x86_feature_detected!("avx2") {
            return ReadSweep {
                sweep: read_avx2,
                load_bytes: 32,
            };
        }
        ReadSweep {
            sweep: read_baseline,
            load_bytes: if cfg!(any(
                target_arch = "x86_64",
                target_arch = "x86",
                target_arch = "aarch64"
            )) {
                16
            } else {
                8
            },
        }
    }
}

#[inline(never)]
fn read_baseline(b: &[u8]) -> u64 {
    sum_words(b)
}

/// Handed out only by [`ReadSweep::for_this_cpu`] after it found AVX2.
#[cfg(target_arch = "x86_64")]
#[inline(never)]
fn read_avx2(b: &[u8]) -> u64 {
    // SAFETY: only reachable through ReadSweep::for_this_cpu, which checked for AVX2.
    unsafe { sum_words_avx2(b) }
}

/// # Safety
/// Only on a CPU with AVX2 (unsafe, not a safe target_feature fn: that needs Rust
/// 1.86 and the workspace builds with 1.85).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn sum_words_avx2(b: &[u8]) -> u64 {
    sum_words(b)
}

/// The wrapping sum of the aligned 8-byte words of `b`; inlined so that the
/// caller's target features decide the vector width.
#[inline(always)]
fn sum_words(b: &[u8]) -> u64 {
    let (_, words, _) = // SAFETY: u8 to u64 reinterpretation of aligned plain data.
        unsafe { b.align_to::<u64>() };
    words.iter().fold(0u64, |a, w| a.wrapping_add(*w))
}

/// Writes every byte of `b`.
#[inline(never)]
pub fn write_sweep(b: &mut [u8], v: u8) {
    b.fill(v);
    std::hint::black_box(b);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sattolo_is_one_cycle_over_everything() {
        for n in [1, 2, 3, 10, 1000] {
            let o = sattolo(n, 42);
            let mut seen = vec![false; n];
            for &x in &o {
                assert!(!seen[x as usize], "visited twice");
                seen[x as usize] = true;
            }
            assert!(seen.iter().all(|s| *s));
        }
        assert_ne!(sattolo(100, 1), sattolo(100, 2));
        assert_eq!(sattolo(100, 7), sattolo(100, 7));
    }

    #[test]
    fn the_read_sweep_sums_every_aligned_word() {
        let read = ReadSweep::for_this_cpu();
        assert!([8, 16, 32].contains(&read.load_bytes));
        let bytes: Vec<u8> = (0..4099u32).map(|i| (i * 7 + 3) as u8).collect();
        for start in 0..9 {
            let b = &bytes[start..];
            // SAFETY: u8 to u64 reinterpretation of aligned plain data.
            let (_, words, _) = unsafe { b.align_to::<u64>() };
            let mut want = 0u64;
            for w in words {
                want = want.wrapping_add(*w);
            }
            assert_eq!((read.sweep)(b), want, "from byte {start}");
            assert_eq!(read_baseline(b), want, "from byte {start}");
        }
        assert_eq!((read.sweep)(&[]), 0);
    }

    #[test]
    fn a_chase_visits_the_cycle() {
        let mut b = Buffer::new(64 * 64, false).unwrap();
        let order = sattolo(64, 3);
        let c = b.link(&order, 64, |_| 0).unwrap();
        // after 64 steps the chase is back where it started
        let mut p = c.start;
        for _ in 0..64 {
            p = unsafe { *p } as *const usize;
        }
        assert_eq!(p, c.start);
        assert!(c.time(1000) > 0.0);
    }

    /// Regression: an empty order used to leave the chase starting at a zero word,
    /// so following it dereferenced null from safe code.
    #[test]
    fn an_empty_chase_is_an_error_not_a_null_pointer() {
        let mut b = Buffer::new(4096, false).unwrap();
        assert!(b.link(&[], 64, |_| 0).is_err());
        // one line is a cycle of one: it points to itself
        let c = b.link(&[0], 64, |_| 0).unwrap();
        assert!(c.time(10) >= 0.0);
    }

    #[test]
    fn sweeps_touch_everything() {
        let mut b = Buffer::new(4096, false).unwrap();
        write_sweep(b.as_mut_slice(), 1);
        assert!(b.as_slice().iter().all(|x| *x == 1));
        // every aligned word read once: 512 words of 0x0101010101010101
        assert_eq!(
            (ReadSweep::for_this_cpu().sweep)(b.as_slice()),
            512u64.wrapping_mul(0x0101_0101_0101_0101)
        );
    }
}
