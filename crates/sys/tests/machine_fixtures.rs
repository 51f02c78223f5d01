//! The machine description read from captured and constructed /proc + /sys trees.

use std::path::{Path, PathBuf};

use oslab_model::machine::GeometryCheck;
use oslab_model::machine::{Probed, SchedulerKind};
use oslab_sys::fsread::Root;
use oslab_sys::machine::{self, LiveProbes};

fn fixture(name: &str) -> Root {
    Root::at(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures")
            .join(name),
    )
}

fn probes(cpuid: Option<&str>, dev: Option<(u32, u32)>, dir: &str) -> LiveProbes {
    LiveProbes {
        cpuid_hypervisor: cpuid.map(String::from),
        is_root: false,
        scratch_dir: PathBuf::from(dir),
        scratch_dev: dev,
        scratch_free_bytes: Some(1 << 30),
        page_bytes: 4096,
    }
}

#[test]
fn this_kvm_guest_as_captured() {
    let m = machine::collect(
        &fixture("kvm-xeon-2cpu"),
        &probes(Some("KVMKVMKVM"), Some((254, 0)), "/tmp"),
    );
    assert_eq!(m.cpu.logical_cpus, 2);
    assert_eq!(m.cpu.cores, 2);
    assert_eq!(m.cpu.sockets, 1);
    assert_eq!(m.cpu.threads_per_core, 1);
    assert_eq!(m.cpu.vendor, "GenuineIntel");
    assert_eq!(m.cpu.smt_control, Probed::Value("notsupported".into()));
    assert!(m.cpu.tsc.constant_tsc && m.cpu.tsc.nonstop_tsc);

    let sizes: Vec<(String, Option<u64>)> = m
        .caches
        .levels
        .iter()
        .map(|l| (l.name.clone(), l.size_bytes))
        .collect();
    assert_eq!(
        sizes,
        vec![
            ("L1d".into(), Some(48 << 10)),
            ("L1i".into(), Some(64 << 10)),
            ("L2".into(), Some(2 << 20)),
            ("L3".into(), Some(480 << 20)),
        ]
    );
    // two private L1d, L1i, L2 and one shared L3
    assert_eq!(m.caches.distinct.len(), 7);
    let l3 = m.caches.distinct.iter().find(|c| c.level == 3).unwrap();
    assert_eq!(l3.shared_cpus, vec![0, 1]);
    assert!(
        l3.description.contains("shared by all CPUs"),
        "{}",
        l3.description
    );
    assert!(
        m.caches
            .distinct
            .iter()
            .all(|c| c.geometry == GeometryCheck::Consistent)
    );

    assert_eq!(m.kernel.scheduler, SchedulerKind::Eevdf);
    assert_eq!(m.kernel.hz.value().map(|h| h.hz), Some(250));
    assert_eq!(m.kernel.clocksource.as_deref(), Some("tsc"));
    assert!(m.kernel.sched_knobs.contains_key("sched_autogroup_enabled"));
    assert!(matches!(m.kernel.debug_sched, Probed::Unavailable(_)));

    assert!(m.hypervisor.cpu_flag);
    assert_eq!(m.hypervisor.name.as_deref(), Some("KVM"));
    assert_eq!(m.hypervisor.balloon_free_page_reporting, Some(true));
    assert_eq!(m.memory.thp_enabled.as_deref(), Some("madvise"));
    assert_eq!(m.memory.huge_page_sizes_bytes, vec![2 << 20, 1 << 30]);
    assert_eq!(m.dirty.dirty_ratio, Some(20));
    assert_eq!(m.dirty.dirty_expire_centisecs, Some(3000));
    assert!(m.dirty.nr_dirty_threshold_pages.is_some());

    let vda = m.block_devices.iter().find(|b| b.name == "vda").unwrap();
    assert!(vda.holds_scratch);
    assert_eq!(vda.scheduler.as_deref(), Some("mq-deadline"));
    assert_eq!(vda.write_cache.as_deref(), Some("write back"));
    assert_eq!(m.scratch.device.as_deref(), Some("vda"));
    assert_eq!(m.scratch.fs_type.as_deref(), Some("ext4"));
}

#[test]
fn constructed_smt_machine_with_three_levels() {
    let m = machine::collect(
        &fixture("smt8-3level"),
        &probes(None, Some((259, 2)), "/home/user"),
    );
    assert_eq!(m.cpu.logical_cpus, 8);
    assert_eq!(m.cpu.cores, 4);
    assert_eq!(m.cpu.threads_per_core, 2);
    assert_eq!(m.cpu.cpus[5].thread_siblings, vec![1, 5]);
    assert_eq!(m.cpu.smt_control, Probed::Value("on".into()));

    // 4 L1d + 4 L1i (cpu7's index1 is missing, but its sibling cpu3 shows it) + 4 L2 + 1 L3
    assert_eq!(m.caches.distinct.len(), 13);
    assert_eq!(m.caches.per_cpu.len(), 8 * 4 - 1);
    let l1d = m
        .caches
        .distinct
        .iter()
        .find(|c| c.level == 1 && c.kind == "Data")
        .unwrap();
    assert_eq!(l1d.shared_cpus, vec![0, 4]);
    assert!(
        l1d.description.contains("shared by cpus 0,4"),
        "{}",
        l1d.description
    );
    let bad: Vec<_> = m
        .caches
        .distinct
        .iter()
        .filter(|c| matches!(c.geometry, GeometryCheck::Inconsistent { .. }))
        .collect();
    assert_eq!(bad.len(), 1);
    assert_eq!(bad[0].shared_cpus, vec![3, 7]);
    assert_eq!(
        bad[0].geometry,
        GeometryCheck::Inconsistent {
            computed_bytes: 512 << 10
        }
    );
    let l3 = m.caches.levels.iter().find(|l| l.name == "L3").unwrap();
    assert_eq!(
        (l3.size_bytes, l3.instances, l3.cpus_per_instance),
        (Some(16 << 20), 1, 8)
    );
    assert_eq!(m.caches.last_level().map(|l| l.name.as_str()), Some("L3"));

    assert_eq!(m.kernel.scheduler, SchedulerKind::Cfs);
    assert_eq!(m.kernel.hz.value().map(|h| h.hz), Some(1000));
    assert!(!m.hypervisor.cpu_flag);
    assert_eq!(m.hypervisor.name, None);
    assert_eq!(m.hypervisor.balloon_free_page_reporting, None);
    assert_eq!(m.hypervisor.dmi_sys_vendor.as_deref(), Some("Dell Inc."));
    assert_eq!(m.memory.thp_enabled.as_deref(), Some("always"));
    assert_eq!(m.memory.default_huge_page_bytes, Some(2 << 20));

    // the scratch directory is on a partition of nvme0n1
    let holders: Vec<&str> = m
        .block_devices
        .iter()
        .filter(|b| b.holds_scratch)
        .map(|b| b.name.as_str())
        .collect();
    assert_eq!(holders, vec!["nvme0n1"]);
    assert_eq!(
        m.block_devices
            .iter()
            .find(|b| b.name == "sda")
            .unwrap()
            .rotational,
        Some(true)
    );
}

#[test]
fn an_empty_tree_degrades_gracefully() {
    let dir = tempfile::tempdir().unwrap();
    let m = machine::collect(&Root::at(dir.path()), &probes(None, None, "/x"));
    assert_eq!(m.cpu.model, "unknown");
    assert!(m.caches.levels.is_empty());
    assert_eq!(m.kernel.scheduler, SchedulerKind::Unknown);
    assert!(matches!(m.kernel.hz, Probed::Unavailable(_)));
    assert!(m.block_devices.is_empty());
}
