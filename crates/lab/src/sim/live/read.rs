//! The readable part of the live state: files under /proc and /sys (and
//! debugfs, where it is mounted), read through a [`Root`] so that a captured
//! machine can stand in for this one in tests.

use std::path::Path;

use oslab_sys::fsread::Root;
use oslab_sys::parse::{bdi, meminfo, vmstat};

use super::FileState;
use oslab_services::sawtooth::measure::DIRTY_SYSCTLS;

/// The bdi settings kept: they bound the device's share of the limits.
const BDI_SETTINGS: [&str; 3] = ["min_ratio", "max_ratio", "strict_limit"];

/// What the files say about the machine's write back and the device `bdi`
/// ("MAJ:MIN"); what cannot be read is left out.
pub fn read_files(root: &Root, bdi_name: &str) -> FileState {
    let mem = root
        .read("/proc/meminfo")
        .ok()
        .and_then(|t| meminfo::parse_meminfo(&t).ok());
    let vm = root.read("/proc/vmstat").unwrap_or_default();
    let page = oslab_sys::machine::page_size();
    let pages = |name: &str| vmstat::value(&vm, name).map(|p| p * page);
    FileState {
        dirty_bytes: mem.as_ref().map_or(0, |m| m.dirty_bytes),
        writeback_bytes: mem.as_ref().map_or(0, |m| m.writeback_bytes),
        dirty_threshold_bytes: pages("nr_dirty_threshold"),
        background_threshold_bytes: pages("nr_dirty_background_threshold"),
        sysctls: DIRTY_SYSCTLS
            .iter()
            .filter_map(|n| {
                oslab_sys::sysctl::read(root, n)
                    .ok()
                    .map(|v| (n.to_string(), v))
            })
            .collect(),
        bdi_settings: BDI_SETTINGS
            .iter()
            .filter_map(|s| {
                root.read_trim(&format!("/sys/class/bdi/{bdi_name}/{s}"))
                    .map(|v| (s.to_string(), v))
            })
            .collect(),
        // BdiWriteBandwidth is K(pages): KiB per second
        debugfs_write_bw: bdi::read_write_bandwidth_kbps(root, bdi_name).map(|k| (k * 1024) as f64),
    }
}

/// The disk holding `dir` and its bdi ("MAJ:MIN"), or why there is none.
pub fn device_of(dir: &Path) -> Result<(String, String), String> {
    let root = Root::live();
    let device = oslab_sys::fileio::device_name_of(&root, dir).ok_or_else(|| {
        format!(
            "{} is on no block device (a tmpfs or a network file system has no bdi to read)",
            dir.display()
        )
    })?;
    let disk = oslab_sys::fileio::parent_disk(&root, &device);
    let bdi = root
        .read_trim(&format!("/sys/block/{disk}/dev"))
        .ok_or_else(|| format!("/sys/block/{disk}/dev is not readable"))?;
    Ok((disk, bdi))
}
