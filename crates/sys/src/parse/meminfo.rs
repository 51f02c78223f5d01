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
    #[serde(default)]
    pub swap_total_bytes: u64,
    #[serde(default)]
    pub swap_free_bytes: u64,
    /// Committed_AS: memory promised to processes (sar kbcommit).
    #[serde(default)]
    pub committed_bytes: u64,
}

/// Parses /proc/meminfo text.
pub fn parse_meminfo(text: &str) -> SysResult<MemSnapshot> {
    refuse_what_procfs_core_panics_on(text)?;
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
        swap_total_bytes: m.swap_total,
        swap_free_bytes: m.swap_free,
        committed_bytes: m.committed_as,
    })
}

/// procfs-core's meminfo parser panics on two things no kernel writes: a field name
/// whose last character is wider than a byte (it cuts the colon off by byte) and a
/// value too large for u64 once multiplied by its unit. Both are errors here.
fn refuse_what_procfs_core_panics_on(text: &str) -> SysResult<()> {
    for line in text.lines() {
        let mut words = line.split_whitespace();
        let (Some(field), Some(value)) = (words.next(), words.next()) else {
            continue;
        };
        let bad = |why: &str| Err(SysError::parse("/proc/meminfo", format!("{why}: '{line}'")));
        if !field.ends_with(|c: char| c.is_ascii()) {
            return bad("a field name that does not end in a colon");
        }
        let mult: u64 = match words.next() {
            Some("KiB" | "kiB" | "kB" | "KB") => 1 << 10,
            Some("MiB" | "miB" | "MB" | "mB") => 1 << 20,
            Some("GiB" | "giB" | "GB" | "gB") => 1 << 30,
            _ => 1,
        };
        if let Ok(n) = value.parse::<u64>()
            && n.checked_mul(mult).is_none()
        {
            return bad("a value too large");
        }
    }
    Ok(())
}

/// Property tests: any text gives a snapshot or an error, never a panic; what the
/// kernel writes is read back exactly. A fuzz-like run with many cases
/// (PROPTEST_CASES wins over the default here; failures are printed, not saved to
/// proptest-regressions/):
/// `PROPTEST_CASES=100000 cargo test -p oslab-sys --lib -- parse::meminfo::props`
#[cfg(test)]
mod props {
    use super::*;
    use crate::testing::proptest_config as config;
    use proptest::prelude::*;

    /// The fields procfs-core insists on.
    const REQUIRED: [&str; 16] = [
        "MemTotal",
        "MemFree",
        "Buffers",
        "Cached",
        "SwapCached",
        "Active",
        "Inactive",
        "SwapTotal",
        "SwapFree",
        "Dirty",
        "Writeback",
        "Mapped",
        "Slab",
        "Committed_AS",
        "VmallocTotal",
        "VmallocUsed",
    ];

    /// One meminfo-shaped line: a name (known or not, any characters), a number
    /// (any u64), and a unit (known or not).
    fn line() -> impl Strategy<Value = String> {
        (
            prop_oneof![
                proptest::sample::select(REQUIRED.to_vec()).prop_map(String::from),
                proptest::sample::select(vec!["VmallocChunk", "MemAvailable", "Hugepagesize"])
                    .prop_map(String::from),
                "\\PC{1,12}",
            ],
            prop_oneof![Just(":"), Just(""), Just("é:"), Just(": :")],
            prop_oneof![any::<u64>().prop_map(|n| n.to_string()), "[0-9a-z-]{0,6}"],
            proptest::sample::select(vec!["", " kB", " B", " MiB", " GB", " pages", " kB x"]),
        )
            .prop_map(|(name, colon, n, unit)| format!("{name}{colon} {n}{unit}"))
    }

    proptest! {
        #![proptest_config(config(512))]

        #[test]
        fn any_text_never_panics(text in "(?s).{0,200}") {
            let _ = parse_meminfo(&text);
        }

        #[test]
        fn meminfo_shaped_text_never_panics(lines in proptest::collection::vec(line(), 0..24)) {
            let _ = parse_meminfo(&lines.join("\n"));
        }

        /// A kernel's meminfo, fields in any order with any values that fit, reads
        /// back to the bytes it says.
        #[test]
        fn the_kernels_text_reads_back(
            kb in proptest::collection::vec(0u64..(u64::MAX >> 10), 19),
            with_available in any::<bool>(),
            order in Just((0..19).collect::<Vec<usize>>()).prop_shuffle(),
        ) {
            let names = [
                "MemTotal", "MemFree", "Buffers", "Cached", "SwapCached", "Active",
                "Inactive", "Dirty", "Writeback", "MemAvailable", "Hugepagesize",
                "SwapTotal", "SwapFree", "Mapped", "Slab", "Committed_AS", "VmallocTotal",
                "VmallocUsed", "VmallocChunk",
            ];
            let text: String = order
                .iter()
                .filter(|&&i| with_available || names[i] != "MemAvailable")
                // as the kernel pads them: "MemTotal:       16318324 kB"
                .map(|&i| format!("{:<16}{:>8} kB\n", format!("{}:", names[i]), kb[i]))
                .collect();
            let m = parse_meminfo(&text).map_err(|e| TestCaseError::fail(e.to_string()))?;
            prop_assert_eq!(m.total_bytes, kb[0] << 10);
            prop_assert_eq!(m.free_bytes, kb[1] << 10);
            prop_assert_eq!(m.buffers_bytes, kb[2] << 10);
            prop_assert_eq!(m.cached_bytes, kb[3] << 10);
            prop_assert_eq!(m.dirty_bytes, kb[7] << 10);
            prop_assert_eq!(m.writeback_bytes, kb[8] << 10);
            prop_assert_eq!(m.available_bytes, with_available.then_some(kb[9] << 10));
            prop_assert_eq!(m.default_huge_page_bytes, Some(kb[10] << 10));
        }
    }

    fn with_required(extra: &str) -> String {
        let mut t: String = REQUIRED.iter().map(|n| format!("{n}: 1 kB\n")).collect();
        t.push_str(extra);
        t
    }

    /// Regression: procfs-core multiplies by the unit unchecked (overflow panic).
    #[test]
    fn a_value_too_large_for_its_unit_is_an_error() {
        assert!(parse_meminfo(&with_required("VmallocChunk: 1 kB\n")).is_ok());
        assert!(parse_meminfo(&with_required("VmallocChunk: 18014398509481984 kB\n")).is_err());
        assert!(parse_meminfo(&with_required("Foo: 17179869184 GB\n")).is_err());
    }

    /// Regression: procfs-core cuts the colon off a field name by byte, which
    /// panics when the name ends in a character wider than a byte.
    #[test]
    fn a_field_name_ending_in_a_wide_character_is_an_error() {
        assert!(parse_meminfo(&with_required("é 5\n")).is_err());
        assert!(parse_meminfo(&with_required("Writebacké: 5 kB\n")).is_err());
    }
}
