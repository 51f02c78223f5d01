//! The JSON layout of the machine description (`environment.machine`) and of the sar
//! records (`system`) is part of the result schema: results on disk and rows in the
//! database are read back by these names. Every key is listed here, so renaming,
//! adding or removing a field fails this test and shows up in review as a schema
//! change (bump `SCHEMA_VERSION` if old results can no longer be read).

// A test here tells one scenario from start to end: longer than 80 lines.
#![allow(clippy::too_many_lines)]

use std::collections::BTreeMap;

use oslab_model::machine::{
    BlockDevice, CacheIndex, CacheLevel, CacheTopology, CpuSummary, DirtySettings, DistinctCache,
    GeometryCheck, HypervisorInfo, Hz, KernelInfo, LogicalCpu, MachineInfo, MemoryInfo, Probed,
    SchedulerKind, ScratchInfo, TscFlags,
};
use oslab_model::system::{CpuPct, DeviceRates, Memory, Paging, SarRecord};
use serde_json::{Value, json};

/// Every key path of a JSON value: `a.b` for objects, `a[]` for array elements.
/// Map keys chosen by the data (device names, sysctl names) are written `<...>` in
/// the values below, so the paths show where the schema holds a map.
fn paths(v: &Value, prefix: &str, out: &mut Vec<String>) {
    match v {
        Value::Object(m) => {
            for (k, x) in m {
                let p = if prefix.is_empty() {
                    k.clone()
                } else {
                    format!("{prefix}.{k}")
                };
                out.push(p.clone());
                paths(x, &p, out);
            }
        }
        Value::Array(a) => {
            for x in a {
                paths(x, &format!("{prefix}[]"), out);
            }
        }
        _ => {}
    }
}

fn keys_of<T: serde::Serialize>(t: &T) -> Vec<String> {
    let mut out = Vec::new();
    paths(&serde_json::to_value(t).unwrap(), "", &mut out);
    out.sort();
    out.dedup();
    out
}

fn enc<T: serde::Serialize>(t: &T) -> Value {
    serde_json::to_value(t).unwrap()
}

/// A machine with every optional field present.
fn machine() -> MachineInfo {
    let one = |k: &str, v: &str| BTreeMap::from([(k.to_string(), v.to_string())]);
    MachineInfo {
        hostname: "h".into(),
        machine_id: Some("0123456789abcdef".into()),
        cpu: CpuSummary {
            model: "m".into(),
            vendor: "v".into(),
            logical_cpus: 2,
            cores: 1,
            sockets: 1,
            threads_per_core: 2,
            cpus: vec![LogicalCpu {
                cpu: 0,
                core_id: Some(0),
                package_id: Some(0),
                thread_siblings: vec![0, 1],
            }],
            smt_control: Probed::Value("on".into()),
            smt_active: Some(true),
            tsc: TscFlags {
                constant_tsc: true,
                nonstop_tsc: true,
                tsc_known_freq: false,
            },
            mhz: Some(2000.0),
        },
        caches: CacheTopology {
            per_cpu: vec![CacheIndex {
                cpu: 0,
                index: 0,
                level: 1,
                kind: "Data".into(),
                size_bytes: Some(32768),
                line_bytes: Some(64),
                sets: Some(64),
                ways: Some(8),
                partitions: Some(1),
                id: Some(0),
                shared_cpus: vec![0, 1],
            }],
            distinct: vec![DistinctCache {
                level: 1,
                kind: "Data".into(),
                size_bytes: Some(32768),
                line_bytes: Some(64),
                sets: Some(64),
                ways: Some(8),
                partitions: Some(1),
                id: Some(0),
                shared_cpus: vec![0, 1],
                geometry: GeometryCheck::Inconsistent { computed_bytes: 1 },
                description: "d".into(),
            }],
            levels: vec![CacheLevel {
                name: "L1d".into(),
                level: 1,
                kind: "Data".into(),
                size_bytes: Some(32768),
                instances: 1,
                cpus_per_instance: 2,
            }],
        },
        memory: MemoryInfo {
            page_bytes: 4096,
            total_bytes: 1,
            available_bytes: Some(1),
            free_bytes: 1,
            cached_bytes: 1,
            dirty_bytes: 1,
            writeback_bytes: 1,
            huge_page_sizes_bytes: vec![2 << 20],
            default_huge_page_bytes: Some(2 << 20),
            thp_enabled: Some("madvise".into()),
            thp_defrag: Some("madvise".into()),
        },
        kernel: KernelInfo {
            release: "6.6.0".into(),
            version: "#1".into(),
            scheduler: SchedulerKind::Eevdf,
            sched_knobs: one("<sched_knob>", "1"),
            debug_sched: Probed::Value(one("<debug_knob>", "1")),
            hz: Probed::Value(Hz {
                hz: 1000,
                source: "s".into(),
            }),
            clocksource: Some("tsc".into()),
            available_clocksources: vec!["tsc".into()],
        },
        hypervisor: HypervisorInfo {
            cpu_flag: true,
            cpuid_vendor: Some("KVMKVMKVM".into()),
            sys_hypervisor_type: Some("t".into()),
            dmi_sys_vendor: Some("QEMU".into()),
            dmi_product_name: Some("p".into()),
            name: Some("KVM".into()),
            balloon_free_page_reporting: Some(true),
        },
        dirty: DirtySettings {
            dirty_background_ratio: Some(10),
            dirty_background_bytes: Some(0),
            dirty_ratio: Some(20),
            dirty_bytes: Some(0),
            dirty_writeback_centisecs: Some(500),
            dirty_expire_centisecs: Some(3000),
            nr_dirty_threshold_pages: Some(1),
            nr_dirty_background_threshold_pages: Some(1),
        },
        block_devices: vec![BlockDevice {
            name: "vda".into(),
            dev: "254:0".into(),
            size_bytes: Some(1),
            scheduler: Some("none".into()),
            rotational: Some(false),
            write_cache: Some("write back".into()),
            holds_scratch: true,
        }],
        scratch: ScratchInfo {
            dir: "/tmp".into(),
            fs_type: Some("ext4".into()),
            mount_point: Some("/".into()),
            free_bytes: Some(1),
            device: Some("vda".into()),
        },
        root: false,
    }
}

#[test]
fn machine_info_keys() {
    let expected = [
        "block_devices",
        "block_devices[].dev",
        "block_devices[].holds_scratch",
        "block_devices[].name",
        "block_devices[].rotational",
        "block_devices[].scheduler",
        "block_devices[].size_bytes",
        "block_devices[].write_cache",
        "caches",
        "caches.distinct",
        "caches.distinct[].description",
        "caches.distinct[].geometry",
        "caches.distinct[].geometry.computed_bytes",
        "caches.distinct[].geometry.status",
        "caches.distinct[].id",
        "caches.distinct[].level",
        "caches.distinct[].line_bytes",
        "caches.distinct[].partitions",
        "caches.distinct[].sets",
        "caches.distinct[].shared_cpus",
        "caches.distinct[].size_bytes",
        "caches.distinct[].type",
        "caches.distinct[].ways",
        "caches.levels",
        "caches.levels[].cpus_per_instance",
        "caches.levels[].instances",
        "caches.levels[].level",
        "caches.levels[].name",
        "caches.levels[].size_bytes",
        "caches.levels[].type",
        "caches.per_cpu",
        "caches.per_cpu[].cpu",
        "caches.per_cpu[].id",
        "caches.per_cpu[].index",
        "caches.per_cpu[].level",
        "caches.per_cpu[].line_bytes",
        "caches.per_cpu[].partitions",
        "caches.per_cpu[].sets",
        "caches.per_cpu[].shared_cpus",
        "caches.per_cpu[].size_bytes",
        "caches.per_cpu[].type",
        "caches.per_cpu[].ways",
        "cpu",
        "cpu.cores",
        "cpu.cpus",
        "cpu.cpus[].core_id",
        "cpu.cpus[].cpu",
        "cpu.cpus[].package_id",
        "cpu.cpus[].thread_siblings",
        "cpu.logical_cpus",
        "cpu.mhz",
        "cpu.model",
        "cpu.smt_active",
        "cpu.smt_control",
        "cpu.smt_control.value",
        "cpu.sockets",
        "cpu.threads_per_core",
        "cpu.tsc",
        "cpu.tsc.constant_tsc",
        "cpu.tsc.nonstop_tsc",
        "cpu.tsc.tsc_known_freq",
        "cpu.vendor",
        "dirty",
        "dirty.dirty_background_bytes",
        "dirty.dirty_background_ratio",
        "dirty.dirty_bytes",
        "dirty.dirty_expire_centisecs",
        "dirty.dirty_ratio",
        "dirty.dirty_writeback_centisecs",
        "dirty.nr_dirty_background_threshold_pages",
        "dirty.nr_dirty_threshold_pages",
        "hostname",
        "hypervisor",
        "hypervisor.balloon_free_page_reporting",
        "hypervisor.cpu_flag",
        "hypervisor.cpuid_vendor",
        "hypervisor.dmi_product_name",
        "hypervisor.dmi_sys_vendor",
        "hypervisor.name",
        "hypervisor.sys_hypervisor_type",
        "kernel",
        "kernel.available_clocksources",
        "kernel.clocksource",
        "kernel.debug_sched",
        "kernel.debug_sched.value",
        "kernel.debug_sched.value.<debug_knob>",
        "kernel.hz",
        "kernel.hz.value",
        "kernel.hz.value.hz",
        "kernel.hz.value.source",
        "kernel.release",
        "kernel.sched_knobs",
        "kernel.sched_knobs.<sched_knob>",
        "kernel.scheduler",
        "kernel.version",
        "machine_id",
        "memory",
        "memory.available_bytes",
        "memory.cached_bytes",
        "memory.default_huge_page_bytes",
        "memory.dirty_bytes",
        "memory.free_bytes",
        "memory.huge_page_sizes_bytes",
        "memory.page_bytes",
        "memory.thp_defrag",
        "memory.thp_enabled",
        "memory.total_bytes",
        "memory.writeback_bytes",
        "root",
        "scratch",
        "scratch.device",
        "scratch.dir",
        "scratch.free_bytes",
        "scratch.fs_type",
        "scratch.mount_point",
    ];
    assert_eq!(keys_of(&machine()), expected);
}

/// The enums' spellings are schema too.
#[test]
fn machine_info_enum_encodings() {
    assert_eq!(
        enc(&Probed::<String>::Value("on".into())),
        json!({"value": "on"})
    );
    assert_eq!(
        enc(&Probed::<String>::Unavailable("why".into())),
        json!({"unavailable": "why"})
    );
    assert_eq!(enc(&SchedulerKind::Cfs), json!("cfs"));
    assert_eq!(enc(&SchedulerKind::Eevdf), json!("eevdf"));
    assert_eq!(enc(&SchedulerKind::Unknown), json!("unknown"));
    assert_eq!(
        enc(&GeometryCheck::Consistent),
        json!({"status": "consistent"})
    );
    assert_eq!(
        enc(&GeometryCheck::Inconsistent { computed_bytes: 7 }),
        json!({"status": "inconsistent", "computed_bytes": 7})
    );
    assert_eq!(enc(&GeometryCheck::Unknown), json!({"status": "unknown"}));
}

/// The description reads back, also one written before `balloon_free_page_reporting`
/// existed.
#[test]
fn machine_info_reads_back_and_tolerates_the_older_hypervisor_object() {
    let m = machine();
    let mut v = enc(&m);
    assert_eq!(serde_json::from_value::<MachineInfo>(v.clone()).unwrap(), m);
    v["hypervisor"]
        .as_object_mut()
        .unwrap()
        .remove("balloon_free_page_reporting");
    let old: MachineInfo = serde_json::from_value(v).unwrap();
    assert_eq!(old.hypervisor.balloon_free_page_reporting, None);
}

#[test]
fn sar_record_keys() {
    let r = SarRecord {
        t_s: 1.0,
        interval_s: 1.0,
        paging: Paging::default(),
        devices: BTreeMap::from([("<device>".to_string(), DeviceRates::default())]),
        memory: Memory::default(),
        cpu: CpuPct::default(),
        cswch_s: 0.0,
        proc_s: 0.0,
        intr_s: 0.0,
        runq_sz: 0,
        blocked: 0,
        plist_sz: 0,
        ldavg_1: 0.0,
        ldavg_5: 0.0,
        ldavg_15: 0.0,
    };
    let expected = [
        "blocked",
        "cpu",
        "cpu.idle",
        "cpu.iowait",
        "cpu.nice",
        "cpu.steal",
        "cpu.system",
        "cpu.user",
        "cswch_s",
        "devices",
        "devices.<device>",
        "devices.<device>.aqu_sz",
        "devices.<device>.areq_kb",
        "devices.<device>.await_ms",
        "devices.<device>.dkb_s",
        "devices.<device>.rkb_s",
        "devices.<device>.tps",
        "devices.<device>.util_pct",
        "devices.<device>.wkb_s",
        "interval_s",
        "intr_s",
        "ldavg_1",
        "ldavg_15",
        "ldavg_5",
        "memory",
        "memory.kbavail",
        "memory.kbbuffers",
        "memory.kbcached",
        "memory.kbcommit",
        "memory.kbdirty",
        "memory.kbmemfree",
        "memory.kbswpused",
        "memory.kbwriteback",
        "paging",
        "paging.fault_s",
        "paging.majflt_s",
        "paging.pgfree_s",
        "paging.pgpgin_kb_s",
        "paging.pgpgout_kb_s",
        "paging.pgscand_s",
        "paging.pgscank_s",
        "paging.pgsteal_s",
        "paging.pswpin_s",
        "paging.pswpout_s",
        "paging.vmeff_pct",
        "plist_sz",
        "proc_s",
        "runq_sz",
        "t_s",
    ];
    assert_eq!(keys_of(&r), expected);
    let back: SarRecord = serde_json::from_value(enc(&r)).unwrap();
    assert_eq!(back, r);
}
