//! `oslab dirty explain`: the dirty limits as the running kernel computes them, and
//! the material's rules (section 4, a-e) checked against this kernel.

use std::time::Duration;

use oslab_model::Claim;
use oslab_sys::dirty::{DirtyInputs, DirtyLimits, compute};
use oslab_sys::fsread::Root;
use oslab_sys::{process, sysctl};
use oslab_units::human_bytes;
use serde::Serialize;

use oslab_harness::LabError;
use oslab_harness::check::{Check, Condition, Rule};

/// The periodic flusher's settings.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct Flusher {
    pub writeback_centisecs: u64,
    pub expire_centisecs: u64,
}

/// Everything `dirty explain` shows.
#[derive(Debug, Clone, Serialize)]
pub struct Explanation {
    pub inputs: DirtyInputs,
    pub total_memory_bytes: u64,
    pub limits: DirtyLimits,
    /// The kernel's nr_dirty_threshold / nr_dirty_background_threshold (pages).
    pub kernel_thresh: Option<u64>,
    pub kernel_bg_thresh: Option<u64>,
    pub flusher: Flusher,
    pub rules: Vec<Claim>,
}

fn vm(name: &str) -> Result<u64, LabError> {
    sysctl::read(&Root::live(), &format!("vm.{name}"))?
        .parse()
        .map_err(|_| LabError::Failed(format!("vm.{name} is not a number")))
}

fn vmstat_value(key: &str) -> Option<u64> {
    let t = Root::live().read("/proc/vmstat").ok()?;
    oslab_sys::parse::vmstat::value(&t, key)
}

/// Reads the inputs on the live system.
pub fn live_inputs() -> Result<DirtyInputs, LabError> {
    oslab_sys::dirty::live_inputs().ok_or_else(|| {
        LabError::Failed(
            "cannot read /proc/meminfo, /proc/vmstat, /proc/zoneinfo or the vm.dirty* sysctls"
                .into(),
        )
    })
}

/// Sets sysctls through the journal, runs `f`, and puts them back.
fn with_sysctls<T>(settings: &[(&str, String)], f: impl FnOnce() -> T) -> Result<T, LabError> {
    let knobs = crate::knobs::Knobs::set(settings)?;
    let out = f();
    drop(knobs);
    Ok(out)
}

const RULE_A: Check = Check {
    id: "rule-a-min-ratio",
    tolerates: &oslab_harness::interference::ANY,
    text: "dirty_ratio has a minimum of 5: smaller values are raised to 5",
    source: "Kang Jin-woo, \"Linux Kernel Story for DevOps and SE\" (in Korean, Insight 2017), ch. 10; 2.6-era mm/page-writeback.c get_dirty_limits",
};
const RULE_B: Check = Check {
    id: "rule-b-bg-halved",
    tolerates: &oslab_harness::interference::ANY,
    text: "If dirty_background_ratio >= dirty_ratio, the background limit becomes half of dirty_ratio",
    source: "Kang Jin-woo, \"Linux Kernel Story for DevOps and SE\" (in Korean, Insight 2017), ch. 10",
};
const RULE_C: Check = Check {
    id: "rule-c-bytes-override",
    tolerates: &oslab_harness::interference::ANY,
    text: "A non-zero *_bytes overrides the matching *_ratio; writing one zeroes the other",
    source: "Kang Jin-woo, \"Linux Kernel Story for DevOps and SE\" (in Korean, Insight 2017), ch. 10",
};
const RULE_D: Check = Check {
    id: "rule-d-writeback-zero",
    tolerates: &oslab_harness::interference::ANY,
    text: "dirty_writeback_centisecs = 0 disables periodic write back",
    source: "Kang Jin-woo, \"Linux Kernel Story for DevOps and SE\" (in Korean, Insight 2017), ch. 10",
};
const RULE_E: Check = Check {
    id: "rule-e-dirtyable",
    tolerates: &oslab_harness::interference::ANY,
    text: "The ratios are percentages of total memory",
    source: "Kang Jin-woo, \"Linux Kernel Story for DevOps and SE\" (in Korean, Insight 2017), ch. 10 (its wording)",
};

const NEEDS_ROOT: &str = "needs root to change the sysctls (run as root to test live)";
const NOT_ASKED: &str = "--no-live: not tested live (drop --no-live to test it by changing the sysctls for a few seconds)";

/// Why the rules are not tested live, if they are not.
fn not_live(live_tests: bool) -> Option<&'static str> {
    if !live_tests {
        Some(NOT_ASKED)
    } else if !process::is_root() {
        Some(NEEDS_ROOT)
    } else {
        None
    }
}

fn rule_a(skip: Option<&str>) -> Result<Claim, LabError> {
    if let Some(why) = skip {
        return Ok(RULE_A.not_testable("writing vm.dirty_ratio = 3 reads back 5", why));
    }
    let (kept, thresh) = with_sysctls(&[("vm.dirty_ratio", "3".into())], || {
        (vm("dirty_ratio").ok(), vmstat_value("nr_dirty_threshold"))
    })?;
    Ok(RULE_A.judge(
        &[Condition::from_option(
            "dirty_ratio as read back",
            "",
            Rule::Exactly(5.0),
            kept.map(|k| k as f64),
            "vm.dirty_ratio could not be read back",
        )],
        &format!(
            "after writing vm.dirty_ratio = 3; nr_dirty_threshold became {} pages",
            thresh.map_or("?".into(), |t| t.to_string())
        ),
        |o| {
            if o.holds() {
                "this kernel still has the 5 % floor".into()
            } else {
                "today's domain_dirty_limits() applies any ratio as given; the 5 % floor of 2.6 kernels is gone".into()
            }
        },
    ))
}

fn rule_b(skip: Option<&str>) -> Result<Claim, LabError> {
    if let Some(why) = skip {
        return Ok(RULE_B.not_testable(
            "with background 15 % and hard 10 %, nr_dirty_background_threshold = nr_dirty_threshold / 2",
            why,
        ));
    }
    let (t, b) = with_sysctls(
        &[
            ("vm.dirty_ratio", "10".into()),
            ("vm.dirty_background_ratio", "15".into()),
        ],
        || {
            (
                vmstat_value("nr_dirty_threshold"),
                vmstat_value("nr_dirty_background_threshold"),
            )
        },
    )?;
    let halved = t.zip(b).map(|(t, b)| b as f64 - (t / 2) as f64);
    Ok(RULE_B.judge(
        &[Condition::from_option(
            "background threshold - hard threshold / 2",
            "pages",
            Rule::Exactly(0.0),
            halved,
            "the kernel's thresholds could not be read from /proc/vmstat",
        )],
        &format!(
            "with background 15 % and hard 10 %: hard {} pages, background {} pages",
            t.unwrap_or(0),
            b.unwrap_or(0)
        ),
        |o| {
            if o.holds() {
                "domain_dirty_limits() halves a background limit that is not below the hard one"
                    .into()
            } else {
                "the kernel did not halve it".into()
            }
        },
    ))
}

fn rule_c(skip: Option<&str>) -> Result<Claim, LabError> {
    if let Some(why) = skip {
        return Ok(RULE_C.not_testable(
            "after vm.dirty_bytes = 64 MiB: dirty_ratio reads 0 and nr_dirty_threshold = 64 MiB in pages",
            why,
        ));
    }
    let page = oslab_sys::machine::page_size();
    let (ratio, thresh) = with_sysctls(&[("vm.dirty_bytes", (64u64 << 20).to_string())], || {
        (vm("dirty_ratio").ok(), vmstat_value("nr_dirty_threshold"))
    })?;
    let want = (64u64 << 20).div_ceil(page);
    Ok(RULE_C.judge(
        &[
            Condition::from_option(
                "dirty_ratio",
                "",
                Rule::Exactly(0.0),
                ratio.map(|r| r as f64),
                "vm.dirty_ratio could not be read back",
            ),
            Condition::from_option(
                "nr_dirty_threshold",
                "pages",
                Rule::Exactly(want as f64),
                thresh.map(|t| t as f64),
                "nr_dirty_threshold could not be read from /proc/vmstat",
            ),
        ],
        &format!("after writing vm.dirty_bytes = 64 MiB, {page}-byte pages"),
        |o| {
            if o.holds() {
                "the sysctl handlers keep the pair exclusive and the bytes value sets the limit"
                    .into()
            } else {
                "the pair did not behave as described".into()
            }
        },
    ))
}

fn rule_d(skip: Option<&str>, scratch: &std::path::Path) -> Result<Claim, LabError> {
    let exp = "with writeback 0 and expire 1 s, a 1 MiB file stays dirty for 3 s";
    if let Some(why) = skip {
        return Ok(RULE_D.not_testable(exp, why));
    }
    // a fresh private folder, journaled: never a name another user could plant
    let dir = oslab_harness::scratch::Scratch::create(scratch, "dirty-explain", 2 << 20)?;
    let path = dir.file("dirty.dat");
    let result = with_sysctls(
        &[
            ("vm.dirty_writeback_centisecs", "0".into()),
            ("vm.dirty_expire_centisecs", "100".into()),
        ],
        || -> std::io::Result<(u64, u64)> {
            std::fs::write(&path, vec![1u8; 1 << 20])?;
            let f = std::fs::File::open(&path)?;
            let before = oslab_sys::fileio::cachestat(&f)
                .map(|c| c.dirty)
                .unwrap_or(0);
            std::thread::sleep(Duration::from_secs(3));
            let after = oslab_sys::fileio::cachestat(&f)
                .map(|c| c.dirty)
                .unwrap_or(0);
            Ok((before, after))
        },
    );
    drop(dir);
    let (before, after) = result?.map_err(|e| LabError::Failed(e.to_string()))?;
    if before == 0 {
        return Ok(RULE_D.not_testable(
            exp,
            "the test file was not dirty right after writing (file system without dirty accounting, or cachestat missing)",
        ));
    }
    Ok(RULE_D.judge(
        &[Condition::new(
            "dirty pages 3 s later / right after writing",
            "x",
            Rule::AtLeast(0.9),
            after as f64 / before as f64,
        )],
        &format!(
            "a 1 MiB file with writeback 0 and expire 1 s: {before} dirty pages after writing, {after} three seconds later (cachestat)"
        ),
        |o| {
            if o.holds() {
                "with the periodic pass off, expired pages stay dirty until a background or explicit flush".into()
            } else {
                "the pages were written back anyway (another flush: sync, memory pressure, or other dirtiers past the background limit)".into()
            }
        },
    ))
}

fn rule_e(e: &Explanation) -> Claim {
    let page = e.inputs.page_bytes;
    let total_pages = e.total_memory_bytes / page;
    let ratio_pp = e.inputs.dirty_ratio * page / 100;
    let of_total = ratio_pp * total_pages / page;
    let of_dirtyable = e.limits.normal.thresh;
    let kernel = e.kernel_thresh.unwrap_or(0);
    let dev = |x: u64| (x as f64 - kernel as f64).abs() / (kernel.max(1) as f64) * 100.0;
    if e.inputs.dirty_bytes > 0 {
        return RULE_E.not_testable(
            "the kernel's threshold equals ratio x total memory",
            "vm.dirty_bytes is set, so no ratio applies now",
        );
    }
    RULE_E.judge(
        &[Condition::from_option(
            "how much nearer the kernel's threshold is to ratio x total memory than to ratio x dirtyable memory",
            "percentage points",
            Rule::Above(0.0),
            e.kernel_thresh.map(|_| dev(of_dirtyable) - dev(of_total)),
            "the kernel's nr_dirty_threshold could not be read",
        )],
        &format!(
            "the kernel's nr_dirty_threshold {kernel} pages; {} % of total memory {of_total} ({:.1} % off), of dirtyable memory {of_dirtyable} ({:.2} % off)",
            e.inputs.dirty_ratio,
            dev(of_total),
            dev(of_dirtyable)
        ),
        |o| {
            if o.holds() {
                "the kernel's threshold is the ratio of total memory".into()
            } else {
                "the kernel applies the ratio to dirtyable memory: free pages above the reserves plus file pages; anonymous memory does not count".into()
            }
        },
    )
}

/// Computes the explanation; with `live_tests` (root) the rules are also tested by
/// changing sysctls through the journal and putting them back.
pub fn explain(live_tests: bool, scratch: &std::path::Path) -> Result<Explanation, LabError> {
    let inputs = live_inputs()?;
    let total =
        oslab_sys::parse::meminfo::parse_meminfo(&Root::live().read("/proc/meminfo")?)?.total_bytes;
    let mut e = Explanation {
        limits: compute(&inputs),
        inputs,
        total_memory_bytes: total,
        kernel_thresh: vmstat_value("nr_dirty_threshold"),
        kernel_bg_thresh: vmstat_value("nr_dirty_background_threshold"),
        flusher: Flusher {
            writeback_centisecs: vm("dirty_writeback_centisecs")?,
            expire_centisecs: vm("dirty_expire_centisecs")?,
        },
        rules: Vec::new(),
    };
    let skip = not_live(live_tests);
    e.rules = vec![
        rule_a(skip)?,
        rule_b(skip)?,
        rule_c(skip)?,
        rule_d(skip, scratch)?,
        rule_e(&e),
    ];
    Ok(e)
}

/// Bytes of `pages` with the page size of the explanation.
pub fn bytes(e: &Explanation, pages: u64) -> String {
    human_bytes(pages * e.inputs.page_bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rules_not_tested_live_say_it_was_asked_even_as_root() {
        let e = explain(false, &std::env::temp_dir()).unwrap();
        for rule in &e.rules[..4] {
            assert_eq!(
                rule.verdict,
                oslab_model::Verdict::NotTestable,
                "{}",
                rule.id
            );
            assert!(
                rule.why.starts_with("--no-live"),
                "{}: {}",
                rule.id,
                rule.why
            );
        }
        assert_eq!(not_live(false), Some(NOT_ASKED));
        let as_user = not_live(true);
        assert_eq!(as_user.is_some(), !process::is_root(), "{as_user:?}");
    }
}
