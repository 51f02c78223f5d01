//! The kernel's dirty-memory limits, computed the way mm/page-writeback.c does.
//!
//! - dirtyable memory = free pages - min(free, totalreserve_pages) + active file +
//!   inactive file (+ 1 so it is never 0); highmem is not counted (none on 64-bit);
//! - ratios are first converted to parts per PAGE_SIZE (`ratio * PAGE_SIZE / 100`,
//!   integer) and then applied: `thresh = ratio_pp * dirtyable / PAGE_SIZE`;
//! - a non-zero `*_bytes` wins: `thresh = DIV_ROUND_UP(bytes, PAGE_SIZE)`;
//! - if the background limit is not below the hard one it becomes half of it;
//! - real-time and deadline tasks get `x += x/4 + dirty_limit/32` on both, where
//!   dirty_limit is the domain's smoothed hard limit (taken here as the hard limit);
//! - writers run free while dirty + writeback stays under (thresh + bg_thresh) / 2.
//!
//! totalreserve_pages is summed from /proc/zoneinfo as calculate_totalreserve_pages()
//! does: per zone, the largest lowmem_reserve ("protection") plus the high watermark,
//! at most the zone's managed pages. The kernel publishes its own result for a normal
//! task as nr_dirty_threshold and nr_dirty_background_threshold in /proc/vmstat.

use serde::{Deserialize, Serialize};

/// The inputs of the computation, in pages unless named otherwise.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct DirtyInputs {
    pub page_bytes: u64,
    pub free_pages: u64,
    pub totalreserve_pages: u64,
    pub active_file_pages: u64,
    pub inactive_file_pages: u64,
    pub dirty_ratio: u64,
    pub dirty_bytes: u64,
    pub dirty_background_ratio: u64,
    pub dirty_background_bytes: u64,
}

/// The limits for one kind of task, in pages.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Limits {
    pub thresh: u64,
    pub bg_thresh: u64,
    /// (thresh + bg_thresh) / 2: below this a writer is never paused.
    pub freerun: u64,
}

/// Everything [`compute`] derives.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct DirtyLimits {
    pub dirtyable_pages: u64,
    pub normal: Limits,
    pub realtime: Limits,
    /// The background limit was not below the hard one and was halved.
    pub bg_halved: bool,
    pub thresh_from_bytes: bool,
    pub bg_from_bytes: bool,
}

/// dirtyable memory in pages (global_dirtyable_memory()).
pub fn dirtyable_pages(i: &DirtyInputs) -> u64 {
    let free = i.free_pages - i.free_pages.min(i.totalreserve_pages);
    free + i.active_file_pages + i.inactive_file_pages + 1
}

fn limits(thresh: u64, bg: u64) -> Limits {
    Limits {
        thresh,
        bg_thresh: bg,
        freerun: (thresh + bg) / 2,
    }
}

/// The background and hard limits for normal and real-time tasks.
pub fn compute(i: &DirtyInputs) -> DirtyLimits {
    let page = i.page_bytes.max(1);
    let avail = dirtyable_pages(i);
    let ratio = i.dirty_ratio * page / 100;
    let bg_ratio = i.dirty_background_ratio * page / 100;
    let thresh = if i.dirty_bytes > 0 {
        i.dirty_bytes.div_ceil(page)
    } else {
        ratio * avail / page
    };
    let mut bg = if i.dirty_background_bytes > 0 {
        i.dirty_background_bytes.div_ceil(page)
    } else {
        bg_ratio * avail / page
    };
    let bg_halved = bg >= thresh;
    if bg_halved {
        bg = thresh / 2;
    }
    let dirty_limit = thresh;
    let rt_bg = bg + bg / 4 + dirty_limit / 32;
    let rt_thresh = thresh + thresh / 4 + dirty_limit / 32;
    DirtyLimits {
        dirtyable_pages: avail,
        normal: limits(thresh, bg),
        realtime: limits(rt_thresh, rt_bg),
        bg_halved,
        thresh_from_bytes: i.dirty_bytes > 0,
        bg_from_bytes: i.dirty_background_bytes > 0,
    }
}

/// totalreserve_pages from /proc/zoneinfo text.
pub fn totalreserve_pages(zoneinfo: &str) -> u64 {
    let mut total = 0;
    let mut zone: Option<(u64, u64, u64)> = None; // (high, managed, max protection)
    let flush = |z: Option<(u64, u64, u64)>, total: &mut u64| {
        if let Some((high, managed, prot)) = z {
            // saturating: a corrupt zoneinfo must not overflow
            *total = total.saturating_add(prot.saturating_add(high).min(managed));
        }
    };
    for line in zoneinfo.lines() {
        let t = line.trim();
        if line.starts_with("Node ") {
            flush(zone.take(), &mut total);
            zone = Some((0, 0, 0));
        } else if let Some(z) = zone.as_mut() {
            let mut it = t.split_whitespace();
            match (it.next(), it.next()) {
                // "high 54" is the zone watermark; per-cpu lines read "high:"
                (Some("high"), Some(v)) => z.0 = v.parse().unwrap_or(0),
                (Some("managed"), Some(v)) => z.1 = v.parse().unwrap_or(0),
                (Some("protection:"), _) => {
                    z.2 = t
                        .trim_start_matches("protection:")
                        .trim()
                        .trim_matches(|c| c == '(' || c == ')')
                        .split(',')
                        .filter_map(|x| x.trim().parse::<u64>().ok())
                        .max()
                        .unwrap_or(0);
                }
                _ => {}
            }
        }
    }
    flush(zone, &mut total);
    total
}

/// The inputs from /proc texts and the sysctl values. Free memory is MemFree from
/// meminfo (the kernel's NR_FREE_PAGES as si_meminfo reports it).
pub fn inputs_from(
    meminfo: &str,
    vmstat: &str,
    zoneinfo: &str,
    sysctls: [u64; 4],
    page_bytes: u64,
) -> Option<DirtyInputs> {
    let kb = |k: &str| -> Option<u64> {
        meminfo.lines().find_map(|l| {
            l.strip_prefix(&format!("{k}:"))?
                .split_whitespace()
                .next()?
                .parse()
                .ok()
        })
    };
    let [
        dirty_ratio,
        dirty_bytes,
        dirty_background_ratio,
        dirty_background_bytes,
    ] = sysctls;
    Some(DirtyInputs {
        page_bytes,
        // none when the figure does not fit in bytes (a corrupt meminfo)
        free_pages: kb("MemFree")?.checked_mul(1024)? / page_bytes,
        totalreserve_pages: totalreserve_pages(zoneinfo),
        active_file_pages: crate::parse::vmstat::value(vmstat, "nr_active_file")?,
        inactive_file_pages: crate::parse::vmstat::value(vmstat, "nr_inactive_file")?,
        dirty_ratio,
        dirty_bytes,
        dirty_background_ratio,
        dirty_background_bytes,
    })
}

/// The inputs read from this machine now: /proc/meminfo, /proc/vmstat,
/// /proc/zoneinfo and the four vm.dirty* sysctls. None when one cannot be read.
pub fn live_inputs() -> Option<DirtyInputs> {
    let root = crate::fsread::Root::live();
    let r = |p: &str| root.read(p).unwrap_or_default();
    let vm = |name: &str| -> Option<u64> {
        crate::sysctl::read(&root, &format!("vm.{name}"))
            .ok()?
            .trim()
            .parse()
            .ok()
    };
    inputs_from(
        &r("/proc/meminfo"),
        &r("/proc/vmstat"),
        &r("/proc/zoneinfo"),
        [
            vm("dirty_ratio")?,
            vm("dirty_bytes")?,
            vm("dirty_background_ratio")?,
            vm("dirty_background_bytes")?,
        ],
        crate::machine::page_size(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn base() -> DirtyInputs {
        DirtyInputs {
            page_bytes: 4096,
            free_pages: 1_000_000,
            totalreserve_pages: 30_000,
            active_file_pages: 50_000,
            inactive_file_pages: 20_000,
            dirty_ratio: 20,
            dirty_bytes: 0,
            dirty_background_ratio: 10,
            dirty_background_bytes: 0,
        }
    }

    #[test]
    fn ratios_of_dirtyable_memory() {
        let l = compute(&base());
        assert_eq!(l.dirtyable_pages, 1_040_001);
        // 20 % -> 819 per 4096, 10 % -> 409 per 4096 (integer, like the kernel)
        assert_eq!(l.normal.thresh, 819 * 1_040_001 / 4096);
        assert_eq!(l.normal.bg_thresh, 409 * 1_040_001 / 4096);
        assert_eq!(l.normal.freerun, (l.normal.thresh + l.normal.bg_thresh) / 2);
        assert!(!l.bg_halved);
    }

    #[test]
    fn bytes_win_and_round_up() {
        let mut i = base();
        i.dirty_bytes = 64 << 20;
        i.dirty_background_bytes = (32 << 20) + 1;
        let l = compute(&i);
        assert_eq!(l.normal.thresh, 16384);
        assert_eq!(l.normal.bg_thresh, 8193);
        assert!(l.thresh_from_bytes && l.bg_from_bytes);
    }

    #[test]
    fn background_not_below_hard_is_halved() {
        let mut i = base();
        i.dirty_background_ratio = 30;
        let l = compute(&i);
        assert!(l.bg_halved);
        assert_eq!(l.normal.bg_thresh, l.normal.thresh / 2);
    }

    #[test]
    fn realtime_boost_is_a_quarter_plus_a_thirty_second() {
        let mut i = base();
        i.dirty_bytes = 64 << 20;
        i.dirty_background_bytes = 32 << 20;
        let l = compute(&i);
        assert_eq!(l.realtime.thresh, 16384 + 4096 + 512);
        assert_eq!(l.realtime.bg_thresh, 8192 + 2048 + 512);
    }

    #[test]
    fn reserve_never_exceeds_free() {
        let mut i = base();
        i.free_pages = 10;
        assert_eq!(dirtyable_pages(&i), 70_001);
    }

    #[test]
    fn totalreserve_from_zoneinfo() {
        let z = "Node 0, zone      DMA\n  pages free     3840\n        high     54\n        managed  3840\n        protection: (0, 3018, 6858, 6858)\n  pagesets\n              high:     0\nNode 0, zone    DMA32\n  pages free     772808\n        high     11130\n        managed  772808\n        protection: (0, 0, 3840, 3840)\n              high:     4637\nNode 0, zone   Normal\n        high     14156\n        managed  983040\n        protection: (0, 0, 0, 0)\nNode 0, zone  Movable\n        high     32\n        managed  0\n        protection: (0, 0, 0, 0)\n";
        // DMA capped at managed 3840; DMA32 3840 + 11130; Normal 14156; Movable 0
        assert_eq!(totalreserve_pages(z), 3840 + 14970 + 14156);
    }
}

/// Property tests: /proc/meminfo, /proc/vmstat and /proc/zoneinfo text of any shape
/// gives inputs or nothing, never a panic; the kernel's lines read back. A fuzz-like
/// run with many cases (PROPTEST_CASES wins over the default here; failures are
/// printed, not saved to proptest-regressions/):
/// `PROPTEST_CASES=100000 cargo test -p oslab-sys --lib -- dirty::props`
#[cfg(test)]
mod props {
    use super::*;
    use crate::testing::proptest_config as config;
    use proptest::prelude::*;

    fn number() -> impl Strategy<Value = String> {
        prop_oneof![
            any::<u64>().prop_map(|n| n.to_string()),
            (0u64..100_000).prop_map(|n| n.to_string()),
            "[0-9a-z:(),-]{0,6}",
        ]
    }

    /// zoneinfo-shaped text: zones with watermarks, managed pages and protection
    /// lists of any numbers, among other lines.
    fn zoneinfo() -> impl Strategy<Value = String> {
        proptest::collection::vec(
            prop_oneof![
                "Node [0-9], zone +[A-Za-z0-9]{1,8}".prop_map(String::from),
                (
                    proptest::sample::select(vec!["high", "managed", "high:", "min", "pages free"]),
                    number()
                )
                    .prop_map(|(k, v)| format!("        {k} {v}")),
                proptest::collection::vec(number(), 0..5)
                    .prop_map(|v| format!("        protection: ({})", v.join(", "))),
                "\\PC{0,20}",
            ],
            0..16,
        )
        .prop_map(|l| l.join("\n"))
    }

    proptest! {
        #![proptest_config(config(256))]

        #[test]
        fn any_texts_never_panic(
            meminfo in "(?s).{0,80}",
            vmstat in "(?s).{0,80}",
            zone in "(?s).{0,80}",
        ) {
            let _ = inputs_from(&meminfo, &vmstat, &zone, [20, 0, 10, 0], 4096);
        }

        #[test]
        fn kernel_shaped_texts_never_panic(
            free in number(),
            active in number(),
            inactive in number(),
            zone in zoneinfo(),
            page_shift in 12u32..17,
        ) {
            let meminfo = format!("MemTotal: 100 kB\nMemFree:  {free} kB\n");
            let vmstat = format!("nr_active_file {active}\nnr_inactive_file {inactive}\n");
            let _ = totalreserve_pages(&zone);
            let _ = inputs_from(&meminfo, &vmstat, &zone, [20, 0, 10, 0], 1 << page_shift);
        }

        /// Figures that fit read back exactly.
        #[test]
        fn the_kernels_figures_read_back(
            free_kb in 0u64..(u64::MAX >> 10),
            active in any::<u64>(),
            inactive in any::<u64>(),
            zones in proptest::collection::vec((0u64..1 << 40, 0u64..1 << 40, proptest::collection::vec(0u64..1 << 40, 1..5)), 0..5),
            page_shift in 12u32..17,
            sysctls in any::<[u64; 4]>(),
        ) {
            let meminfo = format!("MemTotal:       {free_kb} kB\nMemFree:        {free_kb} kB\n");
            let vmstat = format!("nr_free_pages 1\nnr_inactive_file {inactive}\nnr_active_file {active}\n");
            let mut zoneinfo = String::new();
            let mut reserve = 0;
            for (i, (high, managed, prot)) in zones.iter().enumerate() {
                let list: Vec<String> = prot.iter().map(u64::to_string).collect();
                zoneinfo += &format!(
                    "Node 0, zone {i}\n  pages free 5\n        min      1\n        high     {high}\n        managed  {managed}\n        protection: ({})\n              high:  99999\n",
                    list.join(", ")
                );
                reserve += (prot.iter().max().unwrap() + high).min(*managed);
            }
            let page = 1u64 << page_shift;
            let i = inputs_from(&meminfo, &vmstat, &zoneinfo, sysctls, page).expect("inputs");
            prop_assert_eq!(i.free_pages, free_kb * 1024 / page);
            prop_assert_eq!(i.active_file_pages, active);
            prop_assert_eq!(i.inactive_file_pages, inactive);
            prop_assert_eq!(i.totalreserve_pages, reserve);
            prop_assert_eq!(
                [i.dirty_ratio, i.dirty_bytes, i.dirty_background_ratio, i.dirty_background_bytes],
                sysctls
            );
        }
    }

    /// Regression: MemFree in kB times 1024 overflowed on a corrupt meminfo.
    #[test]
    fn a_free_figure_too_large_for_bytes_gives_no_inputs() {
        let vmstat = "nr_active_file 1\nnr_inactive_file 1\n";
        let huge = format!("MemFree: {} kB\n", u64::MAX >> 9);
        assert_eq!(inputs_from(&huge, vmstat, "", [20, 0, 10, 0], 4096), None);
        assert!(inputs_from("MemFree: 4 kB\n", vmstat, "", [20, 0, 10, 0], 4096).is_some());
    }

    /// Regression: watermark + protection, and the sum over zones, overflowed on a
    /// corrupt zoneinfo; they saturate.
    #[test]
    fn a_huge_zone_reserve_saturates() {
        let m = u64::MAX;
        let z = format!(
            "Node 0, zone A\n        high {m}\n        managed {m}\n        protection: (0, {m})\nNode 0, zone B\n        high 5\n        managed {m}\n"
        );
        assert_eq!(totalreserve_pages(&z), m);
    }
}
