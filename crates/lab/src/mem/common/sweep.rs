//! What the memory experiments share: the sizes to sweep, the order to visit them
//! in, the caches sysfs describes, and the pointer-chase measurement of one size.

use oslab_probe::memprobe::{Buffer, sattolo};
use serde::{Deserialize, Serialize};

use oslab_harness::LabError;

pub const LINE: usize = 64;

/// Sizes from `from` to `to` bytes, `per_octave` points per doubling, rounded to
/// whole cache lines, without repeats.
pub fn log_sizes(from: u64, to: u64, per_octave: u32) -> Vec<u64> {
    let mut out: Vec<u64> = Vec::new();
    let octaves = (to as f64 / from as f64).log2();
    let n = (octaves * per_octave as f64).round() as u32;
    for i in 0..=n {
        let s = from as f64 * 2f64.powf(i as f64 / per_octave as f64);
        let s = ((s as u64) / LINE as u64).max(1) * LINE as u64;
        if out.last() != Some(&s) {
            out.push(s);
        }
    }
    out
}

/// Extra sizes between half and twice each of `around`, 16 per octave.
pub fn dense_around(around: &[u64], limit: u64) -> Vec<u64> {
    around
        .iter()
        .flat_map(|s| log_sizes((s / 2).max(1024), (s * 2).min(limit), 16))
        .collect()
}

/// Sorted, without duplicates.
pub fn merged(mut v: Vec<u64>) -> Vec<u64> {
    v.sort_unstable();
    v.dedup();
    v
}

/// A permutation of 0..n from a seed (to visit sizes in a shuffled order, so a
/// drift of the host's speed does not look like a cache edge).
pub fn shuffled(n: usize, seed: u64) -> Vec<usize> {
    sattolo(n, seed ^ 0x5eed)
        .into_iter()
        .map(|x| x as usize)
        .collect()
}

/// One cache level as sysfs describes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SysfsLevel {
    /// "L1d", "L2", "L3".
    pub name: String,
    pub bytes: u64,
}

/// The data and unified caches among `(name, kind, size)` (sysfs' levels, from the
/// machine the run saw), smallest first; instruction caches and levels without a
/// size are left out.
pub fn sysfs_levels<'a>(
    levels: impl IntoIterator<Item = (&'a str, &'a str, Option<u64>)>,
) -> Vec<SysfsLevel> {
    let mut v: Vec<SysfsLevel> = levels
        .into_iter()
        .filter(|(_, kind, _)| *kind != "Instruction")
        .filter_map(|(name, _, size)| {
            Some(SysfsLevel {
                name: name.to_string(),
                bytes: size?,
            })
        })
        .collect();
    v.sort_by_key(|l| l.bytes);
    v
}

/// The sysfs levels of a machine description (`MachineInfo`, whichever crate
/// defines it: only its `caches.levels` fields are read).
macro_rules! sysfs_of {
    ($machine:expr) => {
        $crate::mem::common::sweep::sysfs_levels(
            $machine
                .caches
                .levels
                .iter()
                .map(|l| (l.name.as_str(), l.kind.as_str(), l.size_bytes)),
        )
    };
}
pub(crate) use sysfs_of;

/// What one size of a pointer chase gave: ns per dependent load, sample by sample,
/// and what the kernel backed the buffer with.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Chased {
    /// The working set asked for.
    pub bytes: u64,
    /// ns per load, one figure per sample.
    pub ns: Vec<f64>,
    /// The buffer mapped (a huge-page buffer is at least 2 MiB).
    pub buffer_bytes: u64,
    /// AnonHugePages of the buffer in /proc/self/smaps, when it could be read.
    pub anon_huge_bytes: Option<u64>,
}

impl Chased {
    /// The share of the buffer backed by huge pages (0 when smaps was unreadable).
    pub fn huge_fraction(&self) -> f64 {
        (self.anon_huge_bytes.unwrap_or(0) as f64 / self.buffer_bytes.max(1) as f64).min(1.0)
    }

    pub fn median(&self) -> Option<f64> {
        oslab_stats::median(&self.ns)
    }
}

/// ns per dependent load over a random single cycle of the lines of `size` bytes
/// (`stride` apart; `offset_of` places the word within each stride), `samples`
/// figures, and how much of the buffer the kernel backed with huge pages.
pub fn chase_size(
    size: u64,
    stride: usize,
    offset_of: impl Fn(usize) -> usize,
    huge: bool,
    samples: usize,
    seed: u64,
) -> Result<Chased, LabError> {
    let lines = (size as usize / stride).max(2);
    // a huge page needs a 2 MiB region: smaller working sets live at the start of one
    let len = if huge {
        (lines * stride).max(2 << 20)
    } else {
        lines * stride
    };
    let mut buf = Buffer::new(len, huge).map_err(|e| LabError::Failed(e.to_string()))?;
    let anon_huge_bytes = buf.anon_huge_bytes(&oslab_sys::fsread::Root::live());
    let buffer_bytes = buf.len() as u64;
    let order = sattolo(lines, seed.wrapping_add(size));
    let chase = buf
        .link(&order, stride, offset_of)
        .map_err(|e| LabError::Failed(e.to_string()))?;
    // one pass to warm the caches (bounded for big buffers), then the samples
    chase.time((lines as u64).min(4_000_000));
    let steps = (lines as u64).clamp(100_000, 400_000);
    let ns = (0..samples).map(|_| chase.time(steps)).collect();
    Ok(Chased {
        bytes: size,
        ns,
        buffer_bytes,
        anon_huge_bytes,
    })
}

/// Points of a plot from x and y, leaving out the y that are not finite.
pub fn points(x: &[f64], y: &[f64]) -> Vec<[f64; 2]> {
    x.iter()
        .zip(y)
        .filter(|(_, b)| b.is_finite())
        .map(|(a, b)| [*a, *b])
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_per_octave() {
        let s = log_sizes(1024, 8192, 4);
        assert_eq!(s.len(), 13);
        assert_eq!((s[0], s[4], s[12]), (1024, 2048, 8192));
        assert!(s.iter().all(|x| x % 64 == 0));
        let d = dense_around(&[1 << 20], 1 << 30);
        assert_eq!((d[0], *d.last().unwrap()), (512 << 10, 2 << 20));
        assert_eq!(merged(vec![3, 1, 3, 2]), vec![1, 2, 3]);
        let mut sh = shuffled(10, 1);
        sh.sort();
        assert_eq!(sh, (0..10).collect::<Vec<_>>());
    }

    #[test]
    fn sysfs_levels_leave_out_instruction_caches() {
        let l = sysfs_levels([
            ("L2", "Unified", Some(1 << 20)),
            ("L1i", "Instruction", Some(32 << 10)),
            ("L1d", "Data", Some(48 << 10)),
            ("L3", "Unified", None),
        ]);
        let names: Vec<&str> = l.iter().map(|l| l.name.as_str()).collect();
        assert_eq!(names, ["L1d", "L2"]);
    }

    #[test]
    fn huge_fraction_of_a_buffer() {
        let c = Chased {
            bytes: 1 << 20,
            ns: vec![1.0],
            buffer_bytes: 4 << 20,
            anon_huge_bytes: Some(2 << 20),
        };
        assert_eq!(c.huge_fraction(), 0.5);
        let none = Chased {
            anon_huge_bytes: None,
            ..c
        };
        assert_eq!(none.huge_fraction(), 0.0);
    }
}
