//! debugfs' /sys/kernel/debug/bdi/MAJ:MIN/stats: what the kernel keeps of one
//! backing device's write back, here its estimate of the write bandwidth
//! (`BdiWriteBandwidth: N kBps`; mm/backing-dev.c, bdi_debug_stats_show). Readable
//! only with debugfs mounted (root, no lockdown).

use crate::fsread::Root;

/// The stats file of the backing device `bdi` ("MAJ:MIN").
pub fn stats_path(bdi: &str) -> String {
    format!("/sys/kernel/debug/bdi/{bdi}/stats")
}

/// BdiWriteBandwidth, kB per second.
pub fn write_bandwidth_kbps(stats: &str) -> Option<u64> {
    stats
        .lines()
        .find_map(|l| l.strip_prefix("BdiWriteBandwidth:"))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
}

/// [`write_bandwidth_kbps`] of the device `bdi` under `root`.
pub fn read_write_bandwidth_kbps(root: &Root, bdi: &str) -> Option<u64> {
    write_bandwidth_kbps(&root.read(&stats_path(bdi)).ok()?)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// In the format of bdi_debug_stats_show (kernel 6.x); this guest mounts no
    /// debugfs, so the sample is written from the kernel's format string.
    const STATS: &str = "BdiWriteback:            0 kB\nBdiReclaimable:        512 kB\nBdiDirtyThresh:     102400 kB\nDirtyThresh:        409600 kB\nBackgroundThresh:   204800 kB\nBdiDirtied:       1048576 kB\nBdiWritten:       1047552 kB\nBdiWriteBandwidth:   20480 kBps\nb_dirty:                 3\nb_io:                    0\nb_more_io:               0\nb_dirty_time:            0\nbdi_list:                1\nstate:                   1\n";

    #[test]
    fn the_write_bandwidth_in_kbps() {
        assert_eq!(write_bandwidth_kbps(STATS), Some(20480));
        assert_eq!(write_bandwidth_kbps("BdiWriteBandwidth: x kBps"), None);
        assert_eq!(write_bandwidth_kbps(""), None);
    }

    #[test]
    fn the_reader_takes_a_root() {
        let dir = tempfile::tempdir().unwrap();
        let f = Root::at(dir.path()).path(&stats_path("7:3"));
        std::fs::create_dir_all(f.parent().unwrap()).unwrap();
        std::fs::write(&f, STATS).unwrap();
        assert_eq!(
            read_write_bandwidth_kbps(&Root::at(dir.path()), "7:3"),
            Some(20480)
        );
        assert_eq!(
            read_write_bandwidth_kbps(&Root::at(dir.path()), "7:4"),
            None
        );
    }
}
