//! Everything `oslab info` shows, collected into one serialisable value.
//!
//! [`collect`] reads a root directory (the live `/`, or a captured fixture tree) plus a
//! few live-only probes ([`LiveProbes`]: CPUID, privileges, the scratch directory's
//! device) that tests fill in by hand.

use std::collections::BTreeMap;
use std::io::Read;
use std::path::{Path, PathBuf};

use crate::fsread::Root;
use crate::parse::{bracketed_choice, kconfig, meminfo, vmstat};
use crate::topology;

// The types are the result schema's (`oslab_model::machine`); this module fills them.
use oslab_model::machine::{
    BlockDevice, CpuSummary, DirtySettings, HypervisorInfo, Hz, KernelInfo, MachineInfo,
    MemoryInfo, Probed, SchedulerKind, ScratchInfo, TscFlags,
};

/// The oldest kernel oslab supports: the oldest the kernel matrix boots
/// (Debian 12's 6.1; crates/oslab/tests/kernel_matrix.rs). On older kernels it
/// still runs: each experiment checks the facilities it needs and skips with the
/// reason where one is missing.
pub const MIN_KERNEL: (u32, u32) = (6, 1);

/// (major, minor) of a kernel release string ("6.1.0-56-amd64" -> (6, 1)).
pub fn release_version(release: &str) -> Option<(u32, u32)> {
    let mut nums = release
        .split(|c: char| !c.is_ascii_digit())
        .filter(|s| !s.is_empty())
        .map(|s| s.parse::<u32>().ok());
    Some((nums.next().flatten()?, nums.next().flatten()?))
}

/// Whether a release is at least [`MIN_KERNEL`] (None: unreadable).
pub fn release_supported(release: &str) -> Option<bool> {
    release_version(release).map(|v| v >= MIN_KERNEL)
}

/// The fair scheduler a kernel release implies: EEVDF replaced CFS in 6.6.
pub fn scheduler_for_release(release: &str) -> SchedulerKind {
    match release_version(release) {
        Some(v) if v >= (6, 6) => SchedulerKind::Eevdf,
        Some(_) => SchedulerKind::Cfs,
        None => SchedulerKind::Unknown,
    }
}

/// Facts only the live system can give; tests supply them by hand.
#[derive(Debug, Clone, Default)]
pub struct LiveProbes {
    pub cpuid_hypervisor: Option<String>,
    pub is_root: bool,
    pub scratch_dir: PathBuf,
    /// (major, minor) of the device holding the scratch directory.
    pub scratch_dev: Option<(u32, u32)>,
    pub scratch_free_bytes: Option<u64>,
    pub page_bytes: u64,
}

impl LiveProbes {
    /// Probes this machine, with the scratch directory at `scratch_dir`.
    pub fn live(scratch_dir: &Path) -> LiveProbes {
        use std::os::unix::fs::MetadataExt;
        let dev = std::fs::metadata(scratch_dir).ok().map(|m| {
            let d = m.dev();
            (libc::major(d), libc::minor(d))
        });
        LiveProbes {
            cpuid_hypervisor: crate::cpuid::hypervisor_vendor(),
            is_root: crate::process::is_root(),
            scratch_dir: scratch_dir.to_path_buf(),
            scratch_dev: dev,
            scratch_free_bytes: free_bytes(scratch_dir),
            page_bytes: page_size(),
        }
    }
}

/// The base page size of this machine.
pub fn page_size() -> u64 {
    // SAFETY: sysconf has no memory effects.
    let p = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    if p > 0 { p as u64 } else { 4096 }
}

/// Bytes available to an unprivileged user on the file system holding `path`.
pub fn free_bytes(path: &Path) -> Option<u64> {
    use std::os::unix::ffi::OsStrExt;
    let c = std::ffi::CString::new(path.as_os_str().as_bytes()).ok()?;
    // SAFETY: an all-zero statvfs is valid output storage.
    let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
    // SAFETY: c is a valid path and st valid storage.
    if unsafe { libc::statvfs(c.as_ptr(), &mut st) } != 0 {
        return None;
    }
    Some(st.f_bavail as u64 * st.f_frsize as u64)
}

fn cpuinfo_fields(text: &str) -> (BTreeMap<String, String>, usize) {
    // The first processor's block is representative; count the blocks for the total.
    let mut first = BTreeMap::new();
    let mut blocks = 0;
    for block in text.split("\n\n").filter(|b| !b.trim().is_empty()) {
        blocks += 1;
        if blocks == 1 {
            for line in block.lines() {
                if let Some((k, v)) = line.split_once(':') {
                    first.insert(k.trim().to_string(), v.trim().to_string());
                }
            }
        }
    }
    (first, blocks)
}

fn cpu_summary(root: &Root) -> CpuSummary {
    let cpuinfo = root.read("/proc/cpuinfo").unwrap_or_default();
    let (f, blocks) = cpuinfo_fields(&cpuinfo);
    let flags: Vec<&str> = f
        .get("flags")
        .map(|s| s.split_whitespace().collect())
        .unwrap_or_default();
    let has = |x: &str| flags.contains(&x);
    let cpus = topology::logical_cpus(root);
    let mut cores: Vec<(Option<u32>, Option<u32>)> =
        cpus.iter().map(|c| (c.package_id, c.core_id)).collect();
    cores.sort();
    cores.dedup();
    let mut sockets: Vec<Option<u32>> = cpus.iter().map(|c| c.package_id).collect();
    sockets.sort();
    sockets.dedup();
    let logical = if cpus.is_empty() { blocks } else { cpus.len() };
    let threads_per_core = cpus
        .iter()
        .map(|c| c.thread_siblings.len())
        .max()
        .unwrap_or(1);
    CpuSummary {
        model: f
            .get("model name")
            .or_else(|| f.get("Model"))
            .cloned()
            .unwrap_or_else(|| "unknown".into()),
        vendor: f
            .get("vendor_id")
            .or_else(|| f.get("CPU implementer"))
            .cloned()
            .unwrap_or_else(|| "unknown".into()),
        logical_cpus: logical,
        cores: cores.len().max(1),
        sockets: sockets.len().max(1),
        threads_per_core,
        cpus,
        smt_control: match root.read_trim("/sys/devices/system/cpu/smt/control") {
            Some(v) => Probed::Value(v),
            None => Probed::Unavailable("no /sys/devices/system/cpu/smt/control".into()),
        },
        smt_active: root
            .read_u64("/sys/devices/system/cpu/smt/active")
            .map(|v| v == 1),
        tsc: TscFlags {
            constant_tsc: has("constant_tsc"),
            nonstop_tsc: has("nonstop_tsc"),
            tsc_known_freq: has("tsc_known_freq"),
        },
        mhz: f.get("cpu MHz").and_then(|m| m.parse().ok()),
    }
}

fn memory_info(root: &Root, page_bytes: u64) -> MemoryInfo {
    let m = root
        .read("/proc/meminfo")
        .ok()
        .and_then(|t| meminfo::parse_meminfo(&t).ok());
    let mut huge: Vec<u64> = root
        .list("/sys/kernel/mm/hugepages")
        .iter()
        .filter_map(|n| {
            n.strip_prefix("hugepages-")?
                .strip_suffix("kB")?
                .parse::<u64>()
                .ok()
        })
        .map(|kb| kb * 1024)
        .collect();
    huge.sort_unstable();
    let thp = |f: &str| {
        root.read_trim(&format!("/sys/kernel/mm/transparent_hugepage/{f}"))
            .and_then(|s| bracketed_choice(&s))
    };
    MemoryInfo {
        page_bytes,
        total_bytes: m.as_ref().map_or(0, |m| m.total_bytes),
        available_bytes: m.as_ref().and_then(|m| m.available_bytes),
        free_bytes: m.as_ref().map_or(0, |m| m.free_bytes),
        cached_bytes: m.as_ref().map_or(0, |m| m.cached_bytes),
        dirty_bytes: m.as_ref().map_or(0, |m| m.dirty_bytes),
        writeback_bytes: m.as_ref().map_or(0, |m| m.writeback_bytes),
        huge_page_sizes_bytes: huge,
        default_huge_page_bytes: m.as_ref().and_then(|m| m.default_huge_page_bytes),
        thp_enabled: thp("enabled"),
        thp_defrag: thp("defrag"),
    }
}

fn read_gz(path: &Path) -> Option<String> {
    let f = std::fs::File::open(path).ok()?;
    let mut s = String::new();
    flate2::read::GzDecoder::new(f)
        .read_to_string(&mut s)
        .ok()?;
    Some(s)
}

/// CONFIG_HZ from the kernel's configuration, where it can be read.
pub fn kernel_hz(root: &Root, release: &str) -> Probed<Hz> {
    let gz = root.path("/proc/config.gz");
    if let Some(cfg) = read_gz(&gz)
        && let Some(hz) = kconfig::config_hz(&cfg)
    {
        return Probed::Value(Hz {
            hz,
            source: "CONFIG_HZ in /proc/config.gz".into(),
        });
    }
    let boot = format!("/boot/config-{release}");
    if let Ok(cfg) = root.read(&boot)
        && let Some(hz) = kconfig::config_hz(&cfg)
    {
        return Probed::Value(Hz {
            hz,
            source: format!("CONFIG_HZ in {boot}"),
        });
    }
    Probed::Unavailable(
        "no kernel config (/proc/config.gz or /boot/config-*); the scheduler experiments infer it from the timer tick".into(),
    )
}

fn kernel_info(root: &Root, is_root: bool) -> KernelInfo {
    let release = root
        .read_trim("/proc/sys/kernel/osrelease")
        .unwrap_or_else(|| "unknown".into());
    let mut sched_knobs = BTreeMap::new();
    for name in root.list("/proc/sys/kernel") {
        if name.starts_with("sched_")
            && let Some(v) = root.read_trim(&format!("/proc/sys/kernel/{name}"))
        {
            sched_knobs.insert(name, v);
        }
    }
    let dbg = "/sys/kernel/debug/sched";
    let debug_sched = if !root.exists(dbg) {
        Probed::Unavailable(if is_root {
            "not readable: debugfs not mounted, or refused under kernel lockdown".into()
        } else {
            "needs root (debugfs)".into()
        })
    } else {
        let mut m = BTreeMap::new();
        for name in root.list(dbg) {
            if let Some(v) = root.read_trim(&format!("{dbg}/{name}"))
                && !v.contains('\n')
            {
                m.insert(name, v);
            }
        }
        if m.is_empty() {
            Probed::Unavailable("present but unreadable (kernel lockdown?)".into())
        } else {
            Probed::Value(m)
        }
    };
    let cs = "/sys/devices/system/clocksource/clocksource0";
    KernelInfo {
        scheduler: scheduler_for_release(&release),
        hz: kernel_hz(root, &release),
        version: root
            .read_trim("/proc/sys/kernel/version")
            .unwrap_or_default(),
        release,
        sched_knobs,
        debug_sched,
        clocksource: root.read_trim(&format!("{cs}/current_clocksource")),
        available_clocksources: root
            .read_trim(&format!("{cs}/available_clocksource"))
            .map(|s| s.split_whitespace().map(String::from).collect())
            .unwrap_or_default(),
    }
}

/// A readable name for a CPUID hypervisor signature.
pub fn hypervisor_name(signature: &str) -> String {
    match signature.trim() {
        "KVMKVMKVM" => "KVM".into(),
        "Microsoft Hv" => "Hyper-V".into(),
        "VMwareVMware" => "VMware".into(),
        "XenVMMXenVMM" => "Xen".into(),
        "TCGTCGTCGTCG" => "QEMU (TCG emulation)".into(),
        "bhyve bhyve" => "bhyve".into(),
        "ACRNACRNACRN" => "ACRN".into(),
        "QNXQVMBSQG" => "QNX".into(),
        "VBoxVBoxVBox" => "VirtualBox".into(),
        "Linux KVM Hv" => "KVM (Hyper-V enlightenments)".into(),
        other => other.to_string(),
    }
}

/// VIRTIO_BALLOON_F_REPORTING (feature bit 5) of a virtio balloon (device id 5).
fn balloon_reporting(root: &Root) -> Option<bool> {
    let dir = "/sys/bus/virtio/devices";
    root.list(dir).into_iter().find_map(|d| {
        let id = root.read_trim(&format!("{dir}/{d}/device"))?;
        if u32::from_str_radix(id.trim_start_matches("0x"), 16).ok()? != 5 {
            return None;
        }
        let bits = root.read_trim(&format!("{dir}/{d}/features"))?;
        Some(bits.as_bytes().get(5) == Some(&b'1'))
    })
}

fn hypervisor_info(root: &Root, cpuid_vendor: Option<String>) -> HypervisorInfo {
    let cpu_flag = crate::parse::cpuinfo::read_has_flag(root, "hypervisor").unwrap_or(false);
    let sys_type = root.read_trim("/sys/hypervisor/type");
    let dmi_vendor = root.read_trim("/sys/class/dmi/id/sys_vendor");
    let dmi_product = root.read_trim("/sys/class/dmi/id/product_name");
    let name = cpuid_vendor
        .as_deref()
        .map(hypervisor_name)
        .or_else(|| sys_type.clone())
        .or_else(|| {
            let d = format!(
                "{} {}",
                dmi_vendor.clone().unwrap_or_default(),
                dmi_product.clone().unwrap_or_default()
            );
            [
                "QEMU",
                "VMware",
                "VirtualBox",
                "Microsoft",
                "Xen",
                "KVM",
                "Amazon EC2",
                "Google",
            ]
            .iter()
            .find(|k| d.contains(*k))
            .map(|k| k.to_string())
        })
        .or_else(|| cpu_flag.then(|| "unknown hypervisor".to_string()));
    HypervisorInfo {
        balloon_free_page_reporting: balloon_reporting(root),
        cpu_flag,
        cpuid_vendor,
        sys_hypervisor_type: sys_type,
        dmi_sys_vendor: dmi_vendor,
        dmi_product_name: dmi_product,
        name,
    }
}

fn dirty_settings(root: &Root) -> DirtySettings {
    let vm = |n: &str| root.read_u64(&format!("/proc/sys/vm/{n}"));
    let vmstat_text = root.read("/proc/vmstat").unwrap_or_default();
    DirtySettings {
        dirty_background_ratio: vm("dirty_background_ratio"),
        dirty_background_bytes: vm("dirty_background_bytes"),
        dirty_ratio: vm("dirty_ratio"),
        dirty_bytes: vm("dirty_bytes"),
        dirty_writeback_centisecs: vm("dirty_writeback_centisecs"),
        dirty_expire_centisecs: vm("dirty_expire_centisecs"),
        nr_dirty_threshold_pages: vmstat::value(&vmstat_text, "nr_dirty_threshold"),
        nr_dirty_background_threshold_pages: vmstat::value(
            &vmstat_text,
            "nr_dirty_background_threshold",
        ),
    }
}

fn parse_dev(s: &str) -> Option<(u32, u32)> {
    let (a, b) = s.trim().split_once(':')?;
    Some((a.parse().ok()?, b.parse().ok()?))
}

fn block_devices(root: &Root, scratch_dev: Option<(u32, u32)>) -> Vec<BlockDevice> {
    root.list("/sys/block")
        .into_iter()
        .map(|name| {
            let b = format!("/sys/block/{name}");
            let dev = root.read_trim(&format!("{b}/dev")).unwrap_or_default();
            // The disk holds the scratch directory if it or one of its partitions does.
            let mut devs = vec![dev.clone()];
            for sub in root.list(&b) {
                if sub.starts_with(&name)
                    && let Some(d) = root.read_trim(&format!("{b}/{sub}/dev"))
                {
                    devs.push(d);
                }
            }
            let holds_scratch =
                scratch_dev.is_some_and(|sd| devs.iter().any(|d| parse_dev(d) == Some(sd)));
            BlockDevice {
                // unknown rather than an overflow when sysfs holds garbage
                size_bytes: root
                    .read_u64(&format!("{b}/size"))
                    .and_then(|s| s.checked_mul(512)),
                scheduler: root
                    .read_trim(&format!("{b}/queue/scheduler"))
                    .and_then(|s| bracketed_choice(&s)),
                rotational: root
                    .read_u64(&format!("{b}/queue/rotational"))
                    .map(|v| v == 1),
                write_cache: root.read_trim(&format!("{b}/queue/write_cache")),
                holds_scratch,
                dev,
                name,
            }
        })
        .collect()
}

/// The mount holding `path`: (mount point, fs type), by longest prefix in /proc/mounts.
pub fn mount_of(mounts: &str, path: &Path) -> Option<(PathBuf, String)> {
    mounts
        .lines()
        .filter_map(|l| {
            let mut it = l.split_whitespace();
            let _src = it.next()?;
            let mp = it.next()?.replace("\\040", " ");
            let ty = it.next()?;
            Some((PathBuf::from(mp), ty.to_string()))
        })
        .filter(|(mp, _)| path.starts_with(mp))
        .max_by_key(|(mp, _)| mp.as_os_str().len())
}

/// Collects the machine description from `root` and the live probes.
/// 16 hex digits naming a machine: FNV-1a over the machine id and the CPU model.
/// The machine id is a secret of the machine (machine-id(5) asks that it not be
/// shown), and 64 bits of a 128-bit random id cannot give it back.
pub fn machine_key(machine_id: &str, cpu_model: &str) -> String {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in "oslab machine\0"
        .bytes()
        .chain(machine_id.trim().bytes())
        .chain([0])
        .chain(cpu_model.bytes())
    {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    format!("{h:016x}")
}

pub fn collect(root: &Root, live: &LiveProbes) -> MachineInfo {
    let cpu = cpu_summary(root);
    let caches = topology::cache_topology(root);
    let mounts = root.read("/proc/mounts").unwrap_or_default();
    let mount = mount_of(&mounts, &live.scratch_dir);
    let block_devices = block_devices(root, live.scratch_dev);
    let scratch_device = block_devices
        .iter()
        .find(|b| b.holds_scratch)
        .map(|b| b.name.clone());
    MachineInfo {
        hostname: root
            .read_trim("/proc/sys/kernel/hostname")
            .unwrap_or_else(|| "unknown".into()),
        machine_id: root
            .read_trim("/etc/machine-id")
            .filter(|id| !id.is_empty())
            .map(|id| machine_key(&id, &cpu.model)),
        memory: memory_info(root, live.page_bytes),
        kernel: kernel_info(root, live.is_root),
        hypervisor: hypervisor_info(root, live.cpuid_hypervisor.clone()),
        dirty: dirty_settings(root),
        scratch: ScratchInfo {
            dir: live.scratch_dir.clone(),
            fs_type: mount.as_ref().map(|m| m.1.clone()),
            mount_point: mount.map(|m| m.0),
            free_bytes: live.scratch_free_bytes,
            device: scratch_device,
        },
        block_devices,
        root: live.is_root,
        cpu,
        caches,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn machine_keys_differ_by_machine_id_and_cpu_and_hide_the_id() {
        let id = "0123456789abcdef0123456789abcdef";
        let k = machine_key(id, "AMD EPYC");
        assert_eq!(k.len(), 16);
        assert_eq!(k, machine_key(&format!("{id}\n"), "AMD EPYC"));
        assert_ne!(
            k,
            machine_key("fedcba9876543210fedcba9876543210", "AMD EPYC")
        );
        assert_ne!(k, machine_key(id, "Intel Xeon"));
        assert!(!k.contains(&id[..8]));
    }

    #[test]
    fn scheduler_follows_the_release() {
        assert_eq!(
            scheduler_for_release("6.18.44-fc-v769"),
            SchedulerKind::Eevdf
        );
        assert_eq!(scheduler_for_release("6.6.0"), SchedulerKind::Eevdf);
        assert_eq!(scheduler_for_release("6.5.13-generic"), SchedulerKind::Cfs);
        assert_eq!(
            scheduler_for_release("5.13.0-52-generic"),
            SchedulerKind::Cfs
        );
        assert_eq!(scheduler_for_release("weird"), SchedulerKind::Unknown);
    }

    #[test]
    fn the_minimum_kernel_is_6_1() {
        assert_eq!(release_supported("6.1.0-56-amd64"), Some(true));
        assert_eq!(release_supported("6.12.117+deb12-rt-amd64"), Some(true));
        assert_eq!(release_supported("5.15.0-91-generic"), Some(false));
        assert_eq!(release_supported("5.14.0-427.el9.x86_64"), Some(false));
        assert_eq!(release_supported("weird"), None);
    }

    #[test]
    fn mount_lookup_takes_the_longest_prefix() {
        let m = "/dev/vda / ext4 rw 0 0\ntmpfs /tmp tmpfs rw 0 0\ntmpfs /tmpx tmpfs rw 0 0\n";
        assert_eq!(
            mount_of(m, Path::new("/tmp/a")),
            Some((PathBuf::from("/tmp"), "tmpfs".into()))
        );
        assert_eq!(
            mount_of(m, Path::new("/var/tmp")),
            Some((PathBuf::from("/"), "ext4".into()))
        );
    }

    #[test]
    fn hypervisor_names() {
        assert_eq!(hypervisor_name("KVMKVMKVM"), "KVM");
        assert_eq!(hypervisor_name("Microsoft Hv"), "Hyper-V");
    }
}

/// Property tests: the machine description's readers of kernel text (/proc/mounts,
/// cpuinfo, release strings, device numbers; /proc/vmstat is `parse::vmstat`'s) never
/// panic on any text,
/// and `collect` over a captured /proc + /sys tree with files replaced by garbage
/// never panics either. A fuzz-like run with many cases (PROPTEST_CASES wins over the
/// default here; failures are printed, not saved to proptest-regressions/):
/// `PROPTEST_CASES=20000 cargo test -p oslab-sys --lib -- machine::props`
#[cfg(test)]
mod props {
    use super::*;
    use crate::testing::proptest_config as config;
    use proptest::prelude::*;

    /// Garbage a /proc or /sys file might hold instead of its value.
    fn garbage() -> impl Strategy<Value = String> {
        prop_oneof![
            Just(String::new()),
            "(?s).{0,40}",
            any::<u64>().prop_map(|n| format!("{n}\n")),
            any::<i64>().prop_map(|n| format!("{n}K\n")),
            (any::<u32>(), any::<u32>()).prop_map(|(a, b)| format!("{a}-{b}\n")),
            "[0-9a-f,:-]{0,12}\n",
        ]
    }

    proptest! {
        #![proptest_config(config(256))]

        #[test]
        fn other_readers_never_panic(text in "(?s).{0,120}", path in "/[a-z/]{0,12}") {
            let _ = scheduler_for_release(&text);
            let _ = mount_of(&text, Path::new(&path));
            let _ = cpuinfo_fields(&text);
            let _ = parse_dev(&text);
            let _ = hypervisor_name(&text);
        }
    }

    proptest! {
        // each case rewrites a few files and reads the whole tree: fewer cases
        #![proptest_config(config(48))]

        #[test]
        fn collect_over_a_corrupted_tree_never_panics(
            picks in proptest::collection::vec((any::<proptest::sample::Index>(), garbage()), 1..6),
        ) {
            let survived = TREE.with(|(root, files)| {
                for (i, text) in &picks {
                    std::fs::write(i.get(files), text).unwrap();
                }
                let r = std::panic::catch_unwind(|| collect(&Root::at(root.path()), &probes()));
                // put the tree back for the next case before judging this one
                for (i, _) in &picks {
                    let f = i.get(files);
                    std::fs::copy(fixture().join(f.strip_prefix(root.path()).unwrap()), f)
                        .unwrap();
                }
                r.is_ok()
            });
            prop_assert!(survived, "collect panicked with {:?}", picks);
        }
    }

    fn probes() -> LiveProbes {
        LiveProbes {
            cpuid_hypervisor: Some("KVMKVMKVM".into()),
            is_root: false,
            scratch_dir: "/tmp".into(),
            scratch_dev: Some((254, 0)),
            scratch_free_bytes: Some(1 << 30),
            page_bytes: 4096,
        }
    }

    fn fixture() -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/smt8-3level")
    }

    /// A copy of the constructed 8-thread machine, and its files.
    fn copy_of_fixture() -> (tempfile::TempDir, Vec<PathBuf>) {
        let dir = tempfile::tempdir().unwrap();
        let mut files = Vec::new();
        let mut stack = vec![fixture()];
        while let Some(d) = stack.pop() {
            for e in std::fs::read_dir(&d).unwrap() {
                let p = e.unwrap().path();
                let to = dir.path().join(p.strip_prefix(fixture()).unwrap());
                if p.is_dir() {
                    std::fs::create_dir_all(&to).unwrap();
                    stack.push(p);
                } else {
                    std::fs::copy(&p, &to).unwrap();
                    files.push(to);
                }
            }
        }
        files.sort();
        (dir, files)
    }

    thread_local! {
        /// The copy the property corrupts and repairs (one test uses it): one per
        /// test thread, removed when the thread ends (a static is never dropped,
        /// and left a copy in the temporary folder after every run).
        static TREE: (tempfile::TempDir, Vec<PathBuf>) = copy_of_fixture();
    }

    /// Regression (found by the property above): sets x ways x line x partitions of
    /// a cache overflowed on a garbage number_of_sets.
    #[test]
    fn a_huge_cache_geometry_is_inconsistent_not_a_panic() {
        let (dir, _) = copy_of_fixture();
        let sets = dir
            .path()
            .join("sys/devices/system/cpu/cpu0/cache/index0/number_of_sets");
        std::fs::write(&sets, format!("{}\n", 1u64 << 60)).unwrap();
        let m = collect(&Root::at(dir.path()), &probes());
        assert!(m.caches.distinct.iter().any(|c| matches!(
            c.geometry,
            oslab_model::machine::GeometryCheck::Inconsistent {
                computed_bytes: u64::MAX
            }
        )));
    }

    /// Regression (found by the property above): a block device's size in sectors
    /// times 512 overflowed on a garbage /sys/block/X/size.
    #[test]
    fn a_huge_block_device_size_is_unknown_not_a_panic() {
        let (dir, _) = copy_of_fixture();
        std::fs::write(
            dir.path().join("sys/block/sda/size"),
            format!("{}\n", u64::MAX / 100),
        )
        .unwrap();
        let m = collect(&Root::at(dir.path()), &probes());
        let sda = m.block_devices.iter().find(|b| b.name == "sda").unwrap();
        assert_eq!(sda.size_bytes, None);
    }
}
