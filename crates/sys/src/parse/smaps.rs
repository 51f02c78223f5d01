//! /proc/PID/smaps: per-mapping memory figures, here the transparent huge pages
//! backing a range of addresses (AnonHugePages; proc(5)).

use crate::fsread::Root;

/// AnonHugePages (bytes) of the mappings of an smaps text that lie in [from, to).
pub fn anon_huge_in(smaps: &str, from: u64, to: u64) -> Option<u64> {
    let mut inside = false;
    let mut total = None;
    for l in smaps.lines() {
        if let Some((range, _)) = l.split_once(' ')
            && let Some((a, b)) = range.split_once('-')
            && let (Ok(a), Ok(b)) = (u64::from_str_radix(a, 16), u64::from_str_radix(b, 16))
        {
            inside = a < to && b > from;
            continue;
        }
        if inside && let Some(v) = l.strip_prefix("AnonHugePages:") {
            let kb: u64 = v.split_whitespace().next()?.parse().ok()?;
            total = Some(total.unwrap_or(0u64).checked_add(kb.checked_mul(1024)?)?);
        }
    }
    total
}

/// [`anon_huge_in`] of this process's smaps under `root`.
pub fn read_own_anon_huge(root: &Root, from: u64, to: u64) -> Option<u64> {
    anon_huge_in(&root.read("/proc/self/smaps").ok()?, from, to)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two mappings as this KVM guest prints them (`/proc/self/smaps`, trimmed to
    /// the lines that matter and the addresses changed).
    const SMAPS: &str = "55ec8e6c4000-55ec8e6c8000 r--p 00000000 fe:00 247260                     /usr/bin/grep\nSize:                 16 kB\nRss:                  16 kB\nAnonHugePages:         0 kB\n7f0000000000-7f0000400000 rw-p 00000000 00:00 0 \nSize:               4096 kB\nRss:                4096 kB\nAnonHugePages:      2048 kB\n";

    #[test]
    fn huge_pages_of_a_range() {
        assert_eq!(
            anon_huge_in(SMAPS, 0x7f00_0000_0000, 0x7f00_0040_0000),
            Some(2 << 20)
        );
        assert_eq!(
            anon_huge_in(SMAPS, 0x55ec_8e6c_4000, 0x55ec_8e6c_5000),
            Some(0)
        );
        assert_eq!(anon_huge_in(SMAPS, 0x1000, 0x2000), None);
        // a range over two mappings adds them
        let two = "7f0000000000-7f0000400000 rw-p 00000000 00:00 0\nAnonHugePages:   2048 kB\n7f0000400000-7f0000800000 rw-p 00000000 00:00 0\nAnonHugePages:   4096 kB\n";
        assert_eq!(
            anon_huge_in(two, 0x7f00_0000_0000, 0x7f00_0080_0000),
            Some(6144 * 1024)
        );
    }

    #[test]
    fn the_reader_takes_a_root() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("proc/self")).unwrap();
        std::fs::write(dir.path().join("proc/self/smaps"), SMAPS).unwrap();
        let root = Root::at(dir.path());
        assert_eq!(
            read_own_anon_huge(&root, 0x7f00_0000_0000, 0x7f00_0000_1000),
            Some(2 << 20)
        );
    }
}

/// Property tests: any text and range give a figure or `None`, never a panic (an
/// absurd AnonHugePages figure included).
#[cfg(test)]
mod props {
    use super::*;
    use crate::testing::proptest_config as config;
    use proptest::prelude::*;

    proptest! {
        #![proptest_config(config(512))]

        #[test]
        fn any_text_never_panics(text in "(?s).{0,200}", from in any::<u64>(), to in any::<u64>()) {
            let _ = anon_huge_in(&text, from, to);
        }

        #[test]
        fn any_figure_never_panics(kb in any::<u64>()) {
            let text = format!("1000-2000 rw-p 0 00:00 0\nAnonHugePages: {kb} kB\nAnonHugePages: {kb} kB\n");
            let _ = anon_huge_in(&text, 0x1000, 0x2000);
        }
    }
}
