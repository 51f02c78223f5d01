//! `oslab sim calibrate`: measures this machine's profile for the simulator and
//! stores it where `sim run`, `sweep` and `advise` find it.

use std::path::{Path, PathBuf};

use clap::Args;
use oslab_sys::fsread::Root;
use oslab_sys::machine::{self, LiveProbes};
use oslab_sys::outfile;
use oslab_wbsim::profile::MachineProfile;

use crate::failure::{CmdResult, Failure};
use crate::output::print;
use crate::scratch::scratch_base;

#[derive(Debug, Args)]
pub struct SimCalibrateArgs {
    /// Measure the device of this folder (it must take direct I/O: not tmpfs)
    #[arg(long, value_name = "DIR", default_value = "/var/tmp")]
    pub scratch: PathBuf,
    /// Write 256 MiB instead of 1 GiB to the device (less sure to pass a VM
    /// host's cache)
    #[arg(long)]
    pub quick: bool,
    /// Store the profile here instead of in oslab's data folder
    #[arg(long, value_name = "FILE")]
    pub out: Option<PathBuf>,
}

/// Where the profile is kept: oslab's data folder, sim-profile.json.
pub fn default_path() -> Option<PathBuf> {
    crate::db::data_dir().map(|d| d.join("sim-profile.json"))
}

pub fn run(a: SimCalibrateArgs) -> CmdResult {
    let dir = scratch_base(Some(&a.scratch))?;
    let path = match a.out.clone().or_else(default_path) {
        Some(p) => p,
        None => {
            return Err(Failure::usage(
                "no data folder ($HOME and $XDG_DATA_HOME unset): give --out FILE",
            ));
        }
    };
    let info = machine::collect(&Root::live(), &LiveProbes::live(&dir));
    let mut progress = |stage: &str| eprintln!("oslab: measuring {stage}");
    let p = oslab_services::machine_profile::measure(&dir, a.quick, &info, &mut progress)
        .map_err(|e| Failure::runtime(e.to_string()))?;
    if a.out.is_none()
        && let Some(parent) = path.parent()
    {
        outfile::ensure_folders(parent, 0o700)
            .map_err(|e| Failure::runtime(format!("{}: {e}", parent.display())))?;
    }
    let text = serde_json::to_string_pretty(&p).expect("serialises") + "\n";
    outfile::write_whole(&path, text.as_bytes())
        .map_err(|e| Failure::runtime(format!("{}: {e}", path.display())))?;
    print(&describe(&p, &path));
    Ok(0)
}

fn describe(p: &MachineProfile, path: &Path) -> String {
    let mib = |b: f64| b / (1u64 << 20) as f64;
    let alloc = oslab_stats::median(&p.page_alloc_ns).unwrap_or(0.0);
    format!(
        "machine profile of {} (kernel {}, HZ {}), measured in {}:\n  device write bandwidth  {:.1} MiB/s (direct I/O, synced)\n  page-cache copy         {:.0} MiB/s\n  a new page beyond that  {:.1} us median ({} samples)\nstored in {}; `oslab sim run`, `sweep` and `advise` use it for the scenarios that leave these to the machine (--no-profile: not)\n",
        p.host,
        p.kernel,
        p.hz,
        p.dir,
        mib(p.device_write_bytes_s),
        mib(p.copy_bytes_s),
        alloc / 1e3,
        p.page_alloc_ns.len(),
        path.display()
    )
}
