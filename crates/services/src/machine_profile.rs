//! `oslab sim calibrate`: the machine profile the simulator predicts with,
//! measured with micro-benchmarks of the device and the CPU only: the device's
//! sustained write bandwidth (direct I/O, so the page cache and write back play no
//! part, then synced), and what a write into the page cache costs per page
//! ([`super::page_costs`]). Never a run of a workload the simulator predicts.

use std::io::Write;
use std::path::Path;

use oslab_model::MachineInfo;
use oslab_sys::clock::monotonic_ns;
use oslab_wbsim::profile::{MachineProfile, PROFILE_VERSION};

use crate::page_costs;
use oslab_harness::LabError;

/// Bytes the device probe writes: enough to pass the host's and the device's
/// caches on a VM (a 256 MiB burst measured 1.6 GiB/s here, the host's cache).
pub const DEVICE_BYTES: u64 = 1 << 30;
pub const DEVICE_BYTES_QUICK: u64 = 256 << 20;

/// The device under `dir`: `bytes` written with O_DIRECT in 1 MiB requests, then
/// synced; bytes per second from the first write to the end of the sync.
pub fn device_write_bandwidth(dir: &Path, bytes: u64) -> Result<f64, LabError> {
    let io =
        |e: std::io::Error| LabError::Failed(format!("device probe in {}: {e}", dir.display()));
    let (path, file) =
        oslab_sys::tempname::private_file_in(dir, ".oslab-device-probe-", "").map_err(io)?;
    drop(file);
    let r = (|| -> std::io::Result<f64> {
        let mut f = oslab_sys::fileio::open_write(&path, oslab_sys::fileio::O_DIRECT, true)?;
        let buf = oslab_sys::fileio::AlignedBuf::new(1 << 20, 13);
        let t0 = monotonic_ns();
        let mut left = bytes;
        while left > 0 {
            f.write_all(buf.as_slice())?;
            left = left.saturating_sub(1 << 20);
        }
        f.sync_all()?;
        Ok(bytes as f64 / ((monotonic_ns() - t0) as f64 / 1e9))
    })();
    let _ = std::fs::remove_file(&path);
    r.map_err(io)
}

/// The profile of this machine, measured in `dir` (on the device the user's
/// files live on); `progress` hears each stage.
pub fn measure(
    dir: &Path,
    quick: bool,
    machine: &MachineInfo,
    progress: &mut dyn FnMut(&str),
) -> Result<MachineProfile, LabError> {
    let bytes = if quick {
        DEVICE_BYTES_QUICK
    } else {
        DEVICE_BYTES
    };
    progress(&format!(
        "the device's sustained write bandwidth ({} MiB, direct I/O, synced)",
        bytes >> 20
    ));
    let device = device_write_bandwidth(dir, bytes)?;
    progress("what a write into the page cache costs per page (128 paced 512 KiB writes)");
    let (copy, alloc) = page_costs::costs(&page_costs::probe(dir)?);
    Ok(MachineProfile {
        version: PROFILE_VERSION,
        measured_at: oslab_sys::clock::rfc3339_utc(oslab_sys::clock::unix_time_s()),
        kernel: machine.kernel.release.clone(),
        host: machine.hostname.clone(),
        dir: dir.display().to_string(),
        device_write_bytes_s: device,
        copy_bytes_s: copy,
        page_alloc_ns: alloc,
        hz: machine.kernel.hz.value().map_or(250, |h| u64::from(h.hz)),
        cpus: machine.cpu.logical_cpus as u32,
    })
}
