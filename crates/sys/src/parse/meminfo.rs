//! /proc/meminfo through the procfs-core parser, reduced to what oslab reports.

use procfs_core::{FromRead, Meminfo};
use serde::{Deserialize, Serialize};

use crate::error::{SysError, SysResult};

/// Memory figures in bytes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MemSnapshot {
    pub total_bytes: u64,
    pub free_bytes: u64,
    pub available_bytes: Option<u64>,
    pub buffers_bytes: u64,
    pub cached_bytes: u64,
    pub dirty_bytes: u64,
    pub writeback_bytes: u64,
    pub default_huge_page_bytes: Option<u64>,
}

/// Parses /proc/meminfo text.
pub fn parse_meminfo(text: &str) -> SysResult<MemSnapshot> {
    let m = Meminfo::from_read(text.as_bytes())
        .map_err(|e| SysError::parse("/proc/meminfo", e.to_string()))?;
    Ok(MemSnapshot {
        total_bytes: m.mem_total,
        free_bytes: m.mem_free,
        available_bytes: m.mem_available,
        buffers_bytes: m.buffers,
        cached_bytes: m.cached,
        dirty_bytes: m.dirty,
        writeback_bytes: m.writeback,
        default_huge_page_bytes: m.hugepagesize,
    })
}
