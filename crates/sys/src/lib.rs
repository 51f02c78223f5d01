//! Linux as oslab reads and changes it: parsers of /proc and /sys, thin safe
//! wrappers over system calls and files, and the journal of every change.
//!
//! - pure parsers of /proc and /sys text ([`parse`]), tested on captured samples;
//! - thin safe wrappers over system calls ([`process`], [`clock`], [`cpuid`],
//!   [`signals`], [`fileio`]) and over the files oslab reads and writes for the
//!   user ([`infile`], [`outfile`], [`owned`], [`tempname`]), all reached by
//!   [`chase`], the one walk that follows no other user's link; the programs
//!   oslab runs by name ([`program`]);
//! - the [`journal`] through which every change to the system is made and undone
//!   ([`sysctl`], [`blockdev`]);
//! - what the kernel derives from those files, computed its way ([`dirty`]'s
//!   limits, [`sar`]'s rates).
//!
//! The measurement engines that fork and time workloads are `oslab-probe`'s, the
//! result types these readers fill are `oslab-model`'s.
//!
//! Readers of the live system ([`topology`], [`machine`]) take a root directory so the
//! same code reads this machine (`/`) or a captured tree under `tests/fixtures/`.

pub mod blockdev;
pub mod cgroup_controllers;
pub mod cgroup_names;
pub mod cgroup_place;
pub mod chase;
pub mod child_group;
pub mod clock;
pub mod cpuid;
pub mod dirty;
pub mod error;
pub mod fileio;
pub mod fsread;
pub mod infile;
pub mod journal;
pub mod machine;
pub mod outfile;
pub mod owned;
pub mod parse;
pub mod pidinfo;
pub mod process;
pub mod program;
pub mod sar;
pub mod sar_record;
pub mod service_manager;
pub mod signals;
pub mod sysctl;
pub mod tempname;
#[cfg(any(test, feature = "testing"))]
pub mod testing;
pub mod topology;

pub use error::{SysError, SysResult};
