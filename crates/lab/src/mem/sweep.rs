//! Sizes to sweep and the pointer-chase measurement of one size.

use oslab_sys::machine::MachineInfo;
use oslab_sys::memprobe::{Buffer, sattolo};

use crate::experiment::LabError;

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

/// The data and unified caches sysfs describes: (name, bytes), smallest first.
pub fn sysfs_levels(m: &MachineInfo) -> Vec<(String, u64)> {
    let mut v: Vec<(String, u64)> = m
        .caches
        .levels
        .iter()
        .filter(|l| l.kind != "Instruction")
        .filter_map(|l| Some((l.name.clone(), l.size_bytes?)))
        .collect();
    v.sort_by_key(|x| x.1);
    v
}

/// ns per dependent load over a random single cycle of the lines of `size` bytes
/// (`stride` apart; `offset_of` places the word within each stride), `samples`
/// figures, and the fraction of the buffer the kernel backed with huge pages.
pub fn chase_size(
    size: u64,
    stride: usize,
    offset_of: impl Fn(usize) -> usize,
    huge: bool,
    samples: usize,
    seed: u64,
) -> Result<(Vec<f64>, f64), LabError> {
    let lines = (size as usize / stride).max(2);
    // a huge page needs a 2 MiB region: smaller working sets live at the start of one
    let len = if huge {
        (lines * stride).max(2 << 20)
    } else {
        lines * stride
    };
    let mut buf = Buffer::new(len, huge).map_err(|e| LabError::Failed(e.to_string()))?;
    let huge_fraction = buf.anon_huge_bytes().unwrap_or(0) as f64 / buf.len() as f64;
    let order = sattolo(lines, seed.wrapping_add(size));
    let chase = buf
        .link(&order, stride, offset_of)
        .map_err(|e| LabError::Failed(e.to_string()))?;
    // one pass to warm the caches (bounded for big buffers), then the samples
    chase.time((lines as u64).min(4_000_000));
    let steps = (lines as u64).clamp(100_000, 400_000);
    let v = (0..samples).map(|_| chase.time(steps)).collect();
    Ok((v, huge_fraction.min(1.0)))
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
}
