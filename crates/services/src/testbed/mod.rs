//! The slow-device testbed: a loop device over a sparse file, an ext4 file system on
//! it, and a write-bandwidth cap, every step journaled.
//!
//! Why: the virtio disk here is fast and cached by the host, so write-back effects
//! vanish on it. A throttled loop device behaves like a slow disk both for O_DIRECT
//! and for the flusher's write back. Throttled requests keep their pages under
//! Writeback, so Writeback can grow to tens of MiB while Dirty + Writeback rides at
//! the limit.
//!
//! The cap, by what the machine has ([`Cap`]): the cgroup v1 blkio throttle, which
//! holds for every writer (the flusher runs in the root cgroup, where it applies);
//! else cgroup v2's io.max on a cgroup oslab moves itself into ([`iomax`]), which
//! holds for oslab's writers and, through cgroup writeback, their write back. Tried
//! on Debian 12's 6.1 under QEMU, null_blk's own bandwidth cap (`mbps`) wrote 64 MiB
//! at 5.1-6.2 MiB/s against a cap of 10 where io.max gave 9.8 (O_DIRECT), so it is
//! not used. Without either the testbed says why and nothing is changed.

pub mod iomax;

use std::io::Write;
use std::path::{Path, PathBuf};

use oslab_sys::blockdev;
use oslab_sys::clock::monotonic_ns;
use oslab_sys::journal::{self, Undo};
use oslab_sys::{SysError, SysResult, process, tempname};
use serde::{Deserialize, Serialize};

use oslab_harness::LabError;
use oslab_settings::{Rate, Setting};

pub const THROTTLE_FILE: &str = "/sys/fs/cgroup/blkio/blkio.throttle.write_bps_device";

/// How the testbed's write bandwidth is capped.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Cap {
    /// cgroup v1 blkio.throttle.write_bps_device: every writer of the device.
    #[default]
    BlkioV1,
    /// cgroup v2 io.max on a cgroup of oslab's own: its writers and their write back.
    IoMaxV2(iomax::IoMaxCap),
}

impl Cap {
    /// The slow device's kind in a sentence, for results and `testbed status`.
    pub fn describe(&self) -> String {
        match self {
            Cap::BlkioV1 => "loop device capped by the cgroup v1 blkio throttle".into(),
            Cap::IoMaxV2(c) => format!(
                "loop device capped by cgroup v2 io.max for the writers in {} (cgroup writeback)",
                c.lab.display()
            ),
        }
    }

    /// A warning for a testbed left up inside a delegated cgroup that is not the
    /// root's (a systemd scope): systemd removes a scope, and the testbed's
    /// cgroups in it, once no process is left there.
    pub fn scope_warning(&self) -> Option<String> {
        let Cap::IoMaxV2(c) = self else {
            return None;
        };
        let parent = c.cgroup.parent()?;
        oslab_sys::cgroup_controllers::delegated(parent).then(|| {
            format!(
                "the cap's cgroups are in {}, which its manager removes with them once no process is left there: keep a shell in it (e.g. systemd-run --scope -p Delegate=yes bash, then oslab and the writers from that shell)",
                parent.display()
            )
        })
    }

    /// [`Cap::describe`] of a cap a result may not have recorded.
    pub fn describe_recorded(cap: Option<&Cap>) -> String {
        cap.map_or_else(|| "slow device's kind not recorded".into(), Cap::describe)
    }
}

/// How the loop device reaches its image.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum LoopIo {
    /// Direct I/O: the loop device's writes go to the file system under the image
    /// without a second copy in its page cache.
    #[default]
    Direct,
    /// Buffered: the kernel refused direct I/O on the image (a tmpfs on 6.1, a
    /// ramfs), so the loop device's writes pass through the page cache of the
    /// file system under the image; `why` is losetup's refusal.
    Buffered { why: String },
}

/// A testbed that is up.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Testbed {
    pub dir: PathBuf,
    pub image: PathBuf,
    pub device: PathBuf,
    /// "MAJOR:MINOR" of the loop device.
    pub dev: String,
    pub mount: PathBuf,
    pub size_bytes: u64,
    pub bandwidth_bytes_s: u64,
    /// Sustained write-back throughput measured after creation (buffered + fsync).
    pub measured_bytes_s: f64,
    /// How the bandwidth is capped (a state file from before v2 had v1's).
    #[serde(default)]
    pub cap: Cap,
    /// Direct or buffered I/O on the image.
    #[serde(default)]
    pub io: LoopIo,
    /// The file system under the image where it keeps its files in memory
    /// (tmpfs, ramfs): the image then takes memory, up to its size.
    #[serde(default)]
    pub in_memory: Option<String>,
    /// Journal entries of the steps, in order (for a process-scoped testbed).
    #[serde(skip)]
    pub seqs: Vec<u64>,
}

impl Testbed {
    /// What a user of this testbed must know beyond its cap: a buffered loop
    /// device, an image that lives in memory. Empty for a direct one on a disk.
    pub fn notes(&self) -> Vec<String> {
        let mut out = Vec::new();
        if let LoopIo::Buffered { why } = &self.io {
            out.push(format!(
                "the loop device is buffered: the kernel refused direct I/O on {} ({why}), so its writes pass through the page cache of the file system under the image",
                self.image.display()
            ));
        }
        if let Some(fs) = &self.in_memory {
            out.push(format!(
                "the image is on a {fs}: it lives in memory, up to its {} (--size); give --scratch a folder on a disk, such as /var/tmp, to keep it there",
                oslab_units::human_bytes(self.size_bytes)
            ));
        }
        out
    }

    /// The diskstats name of the loop device (`loop0`).
    pub fn disk_name(&self) -> String {
        self.device
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default()
    }
}

/// Why the testbed cannot be built here, if it cannot.
pub fn unavailable() -> Option<String> {
    if !process::is_root() {
        return Some("the testbed needs root (loop device, mount, blkio throttle)".into());
    }
    if !Path::new("/dev/loop-control").exists() {
        return Some("no loop devices (/dev/loop-control missing)".into());
    }
    v1_or_v2().err()
}

/// The v1 throttle where it is mounted, else where a v2 cap can go, else why neither.
fn v1_or_v2() -> Result<Option<oslab_sys::cgroup_place::Placement>, String> {
    if Path::new(THROTTLE_FILE).exists() {
        return Ok(None);
    }
    iomax::live_placement().map(Some).map_err(|why| {
        format!("no cgroup v1 blkio throttle, and no cgroup v2 io.max cap: {why}; so no slow device can be built")
    })
}

/// Why the testbed could not be built or measured. `Unavailable` is the one a
/// caller decides on (the machine cannot have a testbed: skip, or refuse
/// without changing anything); the others are failures on the way.
#[derive(Debug, thiserror::Error)]
pub enum TestbedError {
    #[error("{0}")]
    Unavailable(String),
    /// The base folder is one another user could change under the testbed.
    #[error("the testbed is not built in {}: {why}", base.display())]
    Base { base: PathBuf, why: String },
    #[error("no random name for the testbed: {0}")]
    NoName(std::io::Error),
    #[error("{}: {source}", path.display())]
    Folder {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("sparse image {}: {source}", path.display())]
    Image {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("bandwidth probe: {0}")]
    Probe(std::io::Error),
    #[error(transparent)]
    Sys(#[from] SysError),
}

/// In an experiment, a testbed that could not be built fails the measurement
/// with the same sentence (experiments check [`unavailable`] first and skip).
impl From<TestbedError> for LabError {
    fn from(e: TestbedError) -> LabError {
        match e {
            TestbedError::Sys(e) => LabError::Sys(e),
            e => LabError::Failed(e.to_string()),
        }
    }
}

/// The least write cap a testbed takes: below it a loop device's requests queue
/// for seconds and the writers measure the queue, not the kernel.
pub const MIN_BANDWIDTH: u64 = 1 << 20;

/// The most: far above any disk a testbed would stand in for.
pub const MAX_BANDWIDTH: u64 = 10 << 30;

/// The testbed's write cap as every experiment that builds one declares it
/// (`--set bandwidth=40MiB/s`): one rate, its bounds here, each experiment
/// giving its own defaults for a quick and a full run.
pub const fn bandwidth_setting(quick: u64, full: u64) -> Setting<Rate> {
    Setting {
        name: "bandwidth",
        help: "testbed write cap per second",
        quick,
        full,
        bounds: Some((MIN_BANDWIDTH, MAX_BANDWIDTH)),
        names: &[],
    }
}

/// Parses "10MiB/s", "40MBps", "5000000" into bytes per second (`oslab testbed
/// up --bandwidth`'s value parser: clap names the option and the value before
/// the error).
pub fn parse_bandwidth(text: &str) -> Result<u64, String> {
    oslab_units::parse_human_rate(text)
        .ok()
        .filter(|b| (MIN_BANDWIDTH..=MAX_BANDWIDTH).contains(b))
        .ok_or_else(|| "not a bandwidth from 1MiB/s to 10GiB/s (e.g. 10MiB/s)".to_string())
}

/// `base` without links, when nobody but root or the caller can change any
/// folder on it (`oslab_sys::chase::chain`: a sticky /tmp passes).
fn stable_base(base: &Path) -> Result<PathBuf, TestbedError> {
    use oslab_sys::chase::{chain, trusted_owners};
    chain::stable_folder(base, &trusted_owners(), chain::LastFolder::MaySticky).map_err(|e| {
        TestbedError::Base {
            base: base.to_path_buf(),
            why: e.to_string(),
        }
    })
}

/// Builds the testbed; `record` journals each step's undo before the step is made.
pub fn up(
    base: &Path,
    size_bytes: u64,
    bandwidth_bytes_s: u64,
    record: &mut dyn FnMut(String, Undo) -> SysResult<u64>,
) -> Result<Testbed, TestbedError> {
    if let Some(why) = unavailable() {
        return Err(TestbedError::Unavailable(why));
    }
    // the image, the mount point and the mount are used by path from here on
    // (losetup, mkfs, mount): only in a base nobody else can change
    let base = stable_base(base)?;
    let mut steps = Steps {
        record,
        seqs: Vec::new(),
    };
    let (dir, mnt, image) = make_image(&base, size_bytes, &mut steps)?;
    let (device, io) = attach_loop(&image, &mut steps)?;
    blockdev::mkfs_ext4(&device)?;
    steps.record(
        format!("mount {} on {}", device.display(), mnt.display()),
        Undo::Unmount {
            target: mnt.clone(),
        },
    )?;
    blockdev::mount_ext4(&device, &mnt)?;
    let dev = blockdev::dev_numbers(&device)?;
    let cap = cap_writes(&dir, &dev, bandwidth_bytes_s, &mut steps)?;
    let in_memory = in_memory_file_system(&image);
    let mut tb = Testbed {
        dir,
        image,
        device,
        dev,
        mount: mnt,
        size_bytes,
        bandwidth_bytes_s,
        measured_bytes_s: 0.0,
        cap,
        io,
        in_memory,
        seqs: steps.seqs,
    };
    tb.measured_bytes_s = measure_bandwidth(&tb)?;
    Ok(tb)
}

/// The journal entries of the testbed's steps, in order, each recorded before
/// its step is made.
struct Steps<'a> {
    record: &'a mut dyn FnMut(String, Undo) -> SysResult<u64>,
    seqs: Vec<u64>,
}

impl Steps<'_> {
    fn record(&mut self, what: String, undo: Undo) -> SysResult<u64> {
        let seq = (self.record)(what, undo)?;
        self.seqs.push(seq);
        Ok(seq)
    }
}

/// The testbed's folder in `base`, its mount point and its sparse image of
/// `size_bytes`: the folder's removal journaled first.
fn make_image(
    base: &Path,
    size_bytes: u64,
    steps: &mut Steps,
) -> Result<(PathBuf, PathBuf, PathBuf), TestbedError> {
    // a random name, made fresh (mode 0755 as before, so the mount can be
    // looked into): nothing another user planted in the base is used
    let name = tempname::fresh_name("oslab-testbed-", "").map_err(TestbedError::NoName)?;
    let dir = base.join(name);
    steps.record(
        format!("testbed directory {}", dir.display()),
        Undo::RemovePath { path: dir.clone() },
    )?;
    let mnt = dir.join("mnt");
    tempname::make_own_dir(&dir, 0o755)
        .and_then(|()| std::fs::create_dir(&mnt))
        .map_err(|source| TestbedError::Folder {
            path: mnt.clone(),
            source,
        })?;
    let image = dir.join("disk.img");
    tempname::create_new_file(&image)
        .and_then(|f| f.set_len(size_bytes))
        .map_err(|source| TestbedError::Image {
            path: image.clone(),
            source,
        })?;
    Ok((dir, mnt, image))
}

/// Reserves a free loop device, journals its detach, then attaches it to `image`;
/// retries if another process took the same device in between. Where the kernel
/// refuses direct I/O on the image (a tmpfs on 6.1), the device is attached
/// buffered, and says so.
fn attach_loop(image: &Path, steps: &mut Steps) -> Result<(PathBuf, LoopIo), TestbedError> {
    const TRIES: u32 = 5;
    let mut tries = 1;
    loop {
        let d = blockdev::free_loop_device()?;
        steps.record(
            format!("loop device {} over {}", d.display(), image.display()),
            Undo::DetachLoop { device: d.clone() },
        )?;
        let attached = blockdev::attach_loop(&d, image, true)
            .map(|()| LoopIo::Direct)
            .or_else(|refused| {
                blockdev::attach_loop(&d, image, false).map(|()| LoopIo::Buffered {
                    why: refused.to_string(),
                })
            });
        match attached {
            Ok(io) => return Ok((d, io)),
            Err(e) if tries == TRIES => return Err(e.into()),
            Err(_) => tries += 1,
        }
    }
}

/// Caps the writes to the device `dev` at `bandwidth_bytes_s`: the v1 blkio
/// throttle where it is mounted, else cgroup v2's io.max on a cgroup named
/// after the testbed's folder `dir`.
fn cap_writes(
    dir: &Path,
    dev: &str,
    bandwidth_bytes_s: u64,
    steps: &mut Steps,
) -> Result<Cap, TestbedError> {
    match v1_or_v2().map_err(TestbedError::Unavailable)? {
        None => {
            steps.record(
                format!("blkio write throttle {dev} {bandwidth_bytes_s} B/s"),
                Undo::WriteFile {
                    path: THROTTLE_FILE.into(),
                    contents: format!("{dev} 0"),
                },
            )?;
            std::fs::write(THROTTLE_FILE, format!("{dev} {bandwidth_bytes_s}")).map_err(
                |source| SysError::Write {
                    path: THROTTLE_FILE.into(),
                    source,
                },
            )?;
            Ok(Cap::BlkioV1)
        }
        Some(at) => {
            let name = dir.file_name().map(|n| n.to_string_lossy().into_owned());
            let cap = iomax::apply(
                &at,
                name.as_deref().unwrap_or("oslab-testbed"),
                dev,
                bandwidth_bytes_s,
                &mut |d, u| steps.record(d, u),
            )?;
            Ok(Cap::IoMaxV2(cap))
        }
    }
}

/// The file system under `image` where it keeps its files in memory (tmpfs, ramfs).
fn in_memory_file_system(image: &Path) -> Option<String> {
    oslab_sys::machine::mount_of(
        &std::fs::read_to_string("/proc/mounts").unwrap_or_default(),
        image,
    )
    .map(|(_, fs)| fs)
    .filter(|fs| matches!(fs.as_str(), "tmpfs" | "ramfs"))
}

/// Sustained write-back throughput: about 2 s worth of data written buffered and
/// synced, timed from the first write to the end of fsync. Under a cgroup v2 cap
/// this process joins the capped cgroup first (`dirty advise --testbed` measures
/// from a process of its own), or the figure would be the uncapped device's.
pub fn measure_bandwidth(tb: &Testbed) -> Result<f64, TestbedError> {
    if let Cap::IoMaxV2(c) = &tb.cap {
        let procs = c.lab.join("cgroup.procs");
        std::fs::write(&procs, std::process::id().to_string()).map_err(|source| {
            SysError::Write {
                path: procs.clone(),
                source,
            }
        })?;
    }
    let bytes = (tb.bandwidth_bytes_s * 2).clamp(8 << 20, 256 << 20);
    let path = tb.mount.join("bandwidth-probe");
    let chunk = oslab_sys::fileio::AlignedBuf::new(1 << 20, 7);
    let t0 = monotonic_ns();
    let r = (|| -> std::io::Result<()> {
        let mut f = std::fs::File::create(&path)?;
        let mut left = bytes;
        while left > 0 {
            f.write_all(chunk.as_slice())?;
            left = left.saturating_sub(1 << 20);
        }
        f.sync_all()
    })();
    let secs = (monotonic_ns() - t0) as f64 / 1e9;
    let _ = std::fs::remove_file(&path);
    r.map_err(TestbedError::Probe)?;
    Ok(bytes as f64 / secs)
}

/// A testbed for the lifetime of one experiment, on the process journal.
pub fn up_for_run(
    base: &Path,
    size_bytes: u64,
    bandwidth_bytes_s: u64,
) -> Result<Testbed, LabError> {
    let mut seqs_made = Vec::new();
    let r = up(base, size_bytes, bandwidth_bytes_s, &mut |d, u| {
        let s = journal::with_global(|j| j.record(d, u))?;
        seqs_made.push(s);
        Ok(s)
    });
    if r.is_err() {
        for s in seqs_made.iter().rev() {
            let _ = journal::with_global(|j| j.undo(*s));
        }
    }
    Ok(r?)
}

/// Takes a process-scoped testbed down (newest step first).
pub fn down_for_run(tb: &Testbed) -> Vec<String> {
    let mut errors = Vec::new();
    for s in tb.seqs.iter().rev() {
        if let Err(e) = journal::with_global(|j| j.undo(*s)) {
            errors.push(e.to_string());
        }
    }
    errors
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bandwidths_parse() {
        assert_eq!(parse_bandwidth("10MiB/s"), Ok(10 << 20));
        assert_eq!(parse_bandwidth("40M/s"), Ok(40 << 20));
        assert!(parse_bandwidth("40M").is_err(), "a size is not a rate");
        assert!(parse_bandwidth("1.5GiB").is_err(), "a size is not a rate");
        assert!(parse_bandwidth("10MiB/s/s").is_err());
        assert!(parse_bandwidth("slow").is_err());
        assert!(parse_bandwidth("1K/s").is_err());
    }
}

/// Property tests of the bandwidth a user gives (`10MiB/s`, `40MBps`, `5000000`): any
/// text gives bytes per second of at least 1 MiB/s or an error, never a panic, and
/// whole units read back exactly. A fuzz-like run with many cases (PROPTEST_CASES
/// wins over the default here; failures are printed, not saved to
/// proptest-regressions/):
/// `PROPTEST_CASES=100000 cargo test -p oslab-lab --lib -- services::testbed::props`
#[cfg(test)]
mod props {
    use super::*;
    use oslab_sys::testing::proptest_config as config;
    use proptest::prelude::*;

    /// Text shaped like a rate: a number, a unit, a per-second suffix, or junk.
    fn rateish() -> impl Strategy<Value = String> {
        (
            prop_oneof![
                "[0-9]{0,22}",
                "[0-9]{0,6}\\.[0-9]{0,4}",
                "-[0-9]{1,4}",
                ".{0,3}"
            ],
            "[ ]{0,1}",
            proptest::sample::select(vec![
                "", "K", "M", "MiB", "G", "GB", "T", "TiB", "B", "x", "É", "iB",
            ]),
            proptest::sample::select(vec!["", "/s", "ps", "/s/s", "/S", " /s"]),
        )
            .prop_map(|(n, s, u, p)| format!("{n}{s}{u}{p}"))
    }

    proptest! {
        #![proptest_config(config(512))]

        #[test]
        fn any_text_gives_a_rate_within_the_bounds_or_an_error(text in prop_oneof![".{0,30}", rateish()]) {
            if let Ok(b) = parse_bandwidth(&text) {
                prop_assert!((MIN_BANDWIDTH..=MAX_BANDWIDTH).contains(&b), "{} -> {}", text, b);
            }
        }

        #[test]
        fn whole_units_per_second_read_back(n in 1u64..1 << 20, unit in 2u32..5, suffix in "(/s|ps)") {
            let text = format!("{n}{}{suffix}", ["", "K", "MiB", "G", "T"][unit as usize]);
            let b = n << (10 * unit);
            if b <= MAX_BANDWIDTH {
                prop_assert_eq!(parse_bandwidth(&text), Ok(b));
            } else {
                prop_assert!(parse_bandwidth(&text).is_err(), "{} is over the cap's bound", text);
            }
        }
    }
}
