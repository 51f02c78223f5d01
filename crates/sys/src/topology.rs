//! CPU and cache topology from sysfs (`/sys/devices/system/cpu`).
//!
//! No library covers the cache topology, so it is read here: for every CPU and every
//! `cache/indexN`, all the fields the kernel exports, then de-duplicated into the
//! distinct caches of the machine. Every field is optional because kernels, VMs and
//! architectures leave some out.

use std::collections::BTreeMap;

use oslab_units::human_bytes;

use crate::fsread::Root;
use crate::parse::cpulist::{format_cpulist, parse_cpulist};
use crate::parse::size::parse_sysfs_size;

const CPU_DIR: &str = "/sys/devices/system/cpu";

// The types are the result schema's (`oslab_model::machine`); this module fills them.
use oslab_model::machine::{
    CacheIndex, CacheLevel, CacheTopology, DistinctCache, GeometryCheck, LogicalCpu,
};

/// Online CPUs (from `online`, or every `cpuN` directory when that file is missing).
pub fn online_cpus(root: &Root) -> Vec<u32> {
    if let Some(list) = root.read_trim(&format!("{CPU_DIR}/online"))
        && let Ok(cpus) = parse_cpulist(&list)
        && !cpus.is_empty()
    {
        return cpus;
    }
    let mut cpus: Vec<u32> = root
        .list(CPU_DIR)
        .iter()
        .filter_map(|n| n.strip_prefix("cpu")?.parse().ok())
        .collect();
    cpus.sort_unstable();
    cpus
}

/// Topology of every online CPU.
pub fn logical_cpus(root: &Root) -> Vec<LogicalCpu> {
    online_cpus(root)
        .into_iter()
        .map(|cpu| {
            let t = |f: &str| format!("{CPU_DIR}/cpu{cpu}/topology/{f}");
            let thread_siblings = root
                .read_trim(&t("thread_siblings_list"))
                .and_then(|s| parse_cpulist(&s).ok())
                .unwrap_or_else(|| vec![cpu]);
            LogicalCpu {
                cpu,
                core_id: root.read_u64(&t("core_id")).map(|v| v as u32),
                package_id: root.read_u64(&t("physical_package_id")).map(|v| v as u32),
                thread_siblings,
            }
        })
        .collect()
}

/// Every cache index of every online CPU.
pub fn cache_indices(root: &Root) -> Vec<CacheIndex> {
    let mut out = Vec::new();
    for cpu in online_cpus(root) {
        let dir = format!("{CPU_DIR}/cpu{cpu}/cache");
        for name in root.list(&dir) {
            let Some(index) = name.strip_prefix("index").and_then(|n| n.parse().ok()) else {
                continue;
            };
            let f = |field: &str| format!("{dir}/{name}/{field}");
            let Some(level) = root.read_u64(&f("level")) else {
                continue;
            };
            out.push(CacheIndex {
                cpu,
                index,
                level: level as u8,
                kind: root
                    .read_trim(&f("type"))
                    .unwrap_or_else(|| "Unknown".into()),
                size_bytes: root
                    .read_trim(&f("size"))
                    .and_then(|s| parse_sysfs_size(&s).ok()),
                line_bytes: root.read_u64(&f("coherency_line_size")),
                sets: root.read_u64(&f("number_of_sets")),
                ways: root.read_u64(&f("ways_of_associativity")),
                partitions: root.read_u64(&f("physical_line_partition")),
                id: root.read_u64(&f("id")),
                shared_cpus: root
                    .read_trim(&f("shared_cpu_list"))
                    .and_then(|s| parse_cpulist(&s).ok())
                    .unwrap_or_else(|| vec![cpu]),
            });
        }
    }
    out
}

fn level_name(level: u8, kind: &str) -> String {
    match kind {
        "Data" => format!("L{level}d"),
        "Instruction" => format!("L{level}i"),
        _ => format!("L{level}"),
    }
}

fn geometry(c: &CacheIndex) -> GeometryCheck {
    match (c.size_bytes, c.sets, c.ways, c.line_bytes, c.partitions) {
        (Some(size), Some(s), Some(w), Some(l), p) => {
            // saturating: garbage in sysfs must not overflow
            let computed = s
                .saturating_mul(w)
                .saturating_mul(l)
                .saturating_mul(p.unwrap_or(1).max(1));
            if computed == size {
                GeometryCheck::Consistent
            } else {
                GeometryCheck::Inconsistent {
                    computed_bytes: computed,
                }
            }
        }
        _ => GeometryCheck::Unknown,
    }
}

fn describe(c: &CacheIndex, all_cpus: usize) -> String {
    let mut parts = vec![format!(
        "{} {}",
        level_name(c.level, &c.kind),
        c.size_bytes
            .map(human_bytes)
            .unwrap_or_else(|| "size unknown".into())
    )];
    parts.push(c.kind.to_lowercase());
    if let Some(w) = c.ways {
        parts.push(format!("{w}-way"));
    }
    if let Some(l) = c.line_bytes {
        parts.push(format!("{l} B lines"));
    }
    let list = format_cpulist(&c.shared_cpus);
    parts.push(if c.shared_cpus.len() == 1 {
        format!("private to cpu{list}")
    } else if c.shared_cpus.len() == all_cpus {
        format!("shared by all CPUs ({list})")
    } else {
        format!("shared by cpus {list}")
    });
    parts.join(", ")
}

/// Groups per-CPU indices into the distinct caches and the per-level summary.
pub fn build_cache_topology(per_cpu: Vec<CacheIndex>, all_cpus: usize) -> CacheTopology {
    // A cache instance is identified by level, type and the CPUs that share it; the
    // `id` field is not exported by every kernel, the sharing list always is.
    let mut seen: BTreeMap<(u8, String, Vec<u32>), &CacheIndex> = BTreeMap::new();
    for c in &per_cpu {
        seen.entry((c.level, c.kind.clone(), c.shared_cpus.clone()))
            .or_insert(c);
    }
    let distinct: Vec<DistinctCache> = seen
        .values()
        .map(|c| DistinctCache {
            level: c.level,
            kind: c.kind.clone(),
            size_bytes: c.size_bytes,
            line_bytes: c.line_bytes,
            sets: c.sets,
            ways: c.ways,
            partitions: c.partitions,
            id: c.id,
            shared_cpus: c.shared_cpus.clone(),
            geometry: geometry(c),
            description: describe(c, all_cpus),
        })
        .collect();
    let mut levels: BTreeMap<(u8, String), CacheLevel> = BTreeMap::new();
    for d in &distinct {
        let e = levels
            .entry((d.level, d.kind.clone()))
            .or_insert_with(|| CacheLevel {
                name: level_name(d.level, &d.kind),
                level: d.level,
                kind: d.kind.clone(),
                size_bytes: d.size_bytes,
                instances: 0,
                cpus_per_instance: d.shared_cpus.len(),
            });
        e.instances += 1;
        e.size_bytes = e.size_bytes.max(d.size_bytes);
    }
    let mut levels: Vec<CacheLevel> = levels.into_values().collect();
    // Data before instruction within a level: L1d, L1i, L2, L3.
    levels.sort_by_key(|l| (l.level, l.kind != "Data", l.kind != "Instruction"));
    CacheTopology {
        per_cpu,
        distinct,
        levels,
    }
}

/// The cache topology of the machine under `root`.
pub fn cache_topology(root: &Root) -> CacheTopology {
    build_cache_topology(cache_indices(root), online_cpus(root).len())
}
