//! `oslab dirty explain`: the dirty limits as the running kernel computes them, and
//! the material's rules (section 4, a-e) checked against this kernel.

use std::time::Duration;

use oslab_model::{Claim, Verdict};
use oslab_sys::dirty::{DirtyInputs, DirtyLimits, compute};
use oslab_sys::fsread::Root;
use oslab_sys::journal;
use oslab_sys::parse::size::human_bytes;
use oslab_sys::{process, sysctl};
use serde::Serialize;

use crate::experiment::LabError;

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
    let knobs = super::knobs::Knobs::set(settings)?;
    let out = f();
    drop(knobs);
    Ok(out)
}

fn not_testable(id: &str, text: &str, expectation: &str, why: &str) -> Claim {
    Claim {
        id: id.into(),
        text: text.into(),
        source: "material 4 (seed 001)".into(),
        expectation: expectation.into(),
        observed: "-".into(),
        verdict: Verdict::NotTestable,
        why: why.into(),
    }
}

fn rule_a(root: bool) -> Result<Claim, LabError> {
    let text = "dirty_ratio has a minimum of 5: smaller values are raised to 5";
    let exp = "writing vm.dirty_ratio = 3 reads back 5";
    if !root {
        return Ok(not_testable(
            "rule-a-min-ratio",
            text,
            exp,
            "needs root to write vm.dirty_ratio (run as root to test live)",
        ));
    }
    let (kept, thresh) = with_sysctls(&[("vm.dirty_ratio", "3".into())], || {
        (vm("dirty_ratio").ok(), vmstat_value("nr_dirty_threshold"))
    })?;
    let floor = kept == Some(5);
    Ok(Claim {
        id: "rule-a-min-ratio".into(),
        text: text.into(),
        source: "material 4 (seed 001; 2.6-era get_dirty_limits)".into(),
        expectation: exp.into(),
        observed: format!(
            "the kernel kept dirty_ratio = {}; nr_dirty_threshold became {} pages",
            kept.map_or("?".into(), |k| k.to_string()),
            thresh.map_or("?".into(), |t| t.to_string())
        ),
        verdict: if floor {
            Verdict::Holds
        } else {
            Verdict::Differs
        },
        why: if floor {
            "this kernel still has the 5 % floor".into()
        } else {
            "today's domain_dirty_limits() applies any ratio as given; the 5 % floor of 2.6 kernels is gone".into()
        },
    })
}

fn rule_b(root: bool) -> Result<Claim, LabError> {
    let text = "If dirty_background_ratio >= dirty_ratio, the background limit becomes half of dirty_ratio";
    let exp = "with background 15 % and hard 10 %, nr_dirty_background_threshold = nr_dirty_threshold / 2";
    if !root {
        return Ok(not_testable(
            "rule-b-bg-halved",
            text,
            exp,
            "needs root (run as root to test live)",
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
    let (t, b) = (t.unwrap_or(0), b.unwrap_or(0));
    let holds = t > 0 && b == t / 2;
    Ok(Claim {
        id: "rule-b-bg-halved".into(),
        text: text.into(),
        source: "material 4 (seed 001)".into(),
        expectation: exp.into(),
        observed: format!("hard {t} pages, background {b} pages"),
        verdict: if holds {
            Verdict::Holds
        } else {
            Verdict::Differs
        },
        why: if holds {
            "domain_dirty_limits() halves a background limit that is not below the hard one".into()
        } else {
            "the kernel did not halve it".into()
        },
    })
}

fn rule_c(root: bool) -> Result<Claim, LabError> {
    let text = "A non-zero *_bytes overrides the matching *_ratio; writing one zeroes the other";
    let exp = "after vm.dirty_bytes = 64 MiB: dirty_ratio reads 0 and nr_dirty_threshold = 16384 pages of 4 KiB";
    if !root {
        return Ok(not_testable(
            "rule-c-bytes-override",
            text,
            exp,
            "needs root (run as root to test live)",
        ));
    }
    let page = oslab_sys::machine::page_size();
    let (ratio, thresh) = with_sysctls(&[("vm.dirty_bytes", (64u64 << 20).to_string())], || {
        (vm("dirty_ratio").ok(), vmstat_value("nr_dirty_threshold"))
    })?;
    let want = (64u64 << 20).div_ceil(page);
    let holds = ratio == Some(0) && thresh == Some(want);
    Ok(Claim {
        id: "rule-c-bytes-override".into(),
        text: text.into(),
        source: "material 4 (seed 001)".into(),
        expectation: exp.into(),
        observed: format!(
            "dirty_ratio read {}; nr_dirty_threshold {} (expected {want})",
            ratio.map_or("?".into(), |r| r.to_string()),
            thresh.map_or("?".into(), |t| t.to_string())
        ),
        verdict: if holds {
            Verdict::Holds
        } else {
            Verdict::Differs
        },
        why: if holds {
            "the sysctl handlers keep the pair exclusive and the bytes value sets the limit".into()
        } else {
            "the pair did not behave as described".into()
        },
    })
}

fn rule_d(root: bool, scratch: &std::path::Path) -> Result<Claim, LabError> {
    let text = "dirty_writeback_centisecs = 0 disables periodic write back";
    let exp = "with writeback 0 and expire 1 s, a 1 MiB file stays dirty for 3 s";
    if !root {
        return Ok(not_testable(
            "rule-d-writeback-zero",
            text,
            exp,
            "needs root (run as root to test live)",
        ));
    }
    let path = scratch.join(format!("oslab-explain-{}.dat", std::process::id()));
    let seq = journal::with_global(|j| {
        j.record(
            format!("test file {}", path.display()),
            journal::Undo::RemovePath { path: path.clone() },
        )
    })?;
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
    let _ = journal::with_global(|j| j.undo(seq));
    let (before, after) = result?.map_err(|e| LabError::Failed(e.to_string()))?;
    if before == 0 {
        return Ok(not_testable(
            "rule-d-writeback-zero",
            text,
            exp,
            "the test file was not dirty right after writing (file system without dirty accounting, or cachestat missing)",
        ));
    }
    let holds = after * 10 >= before * 9;
    Ok(Claim {
        id: "rule-d-writeback-zero".into(),
        text: text.into(),
        source: "material 4 (seed 001)".into(),
        expectation: exp.into(),
        observed: format!(
            "{before} dirty pages after writing, {after} three seconds later (cachestat)"
        ),
        verdict: if holds {
            Verdict::Holds
        } else {
            Verdict::Differs
        },
        why: if holds {
            "with the periodic pass off, expired pages stay dirty until a background or explicit flush".into()
        } else {
            "the pages were written back anyway (another flush: sync, memory pressure, or other dirtiers past the background limit)".into()
        },
    })
}

fn rule_e(e: &Explanation) -> Claim {
    let page = e.inputs.page_bytes;
    let total_pages = e.total_memory_bytes / page;
    let ratio_pp = e.inputs.dirty_ratio * page / 100;
    let of_total = ratio_pp * total_pages / page;
    let of_dirtyable = e.limits.normal.thresh;
    let kernel = e.kernel_thresh.unwrap_or(0);
    let dev = |x: u64| (x as f64 - kernel as f64).abs() / (kernel.max(1) as f64) * 100.0;
    let text = "The ratios are percentages of total memory";
    if e.inputs.dirty_bytes > 0 {
        return not_testable(
            "rule-e-dirtyable",
            text,
            "the kernel's threshold equals ratio x total memory",
            "vm.dirty_bytes is set, so no ratio applies now",
        );
    }
    let total_closer = dev(of_total) < dev(of_dirtyable);
    Claim {
        id: "rule-e-dirtyable".into(),
        text: text.into(),
        source: "material 4 (seed 001 notes)".into(),
        expectation: format!("nr_dirty_threshold = {} % of total memory = {of_total} pages", e.inputs.dirty_ratio),
        observed: format!(
            "kernel {kernel} pages; {} % of total {of_total} ({:.1} % off), of dirtyable memory {of_dirtyable} ({:.2} % off)",
            e.inputs.dirty_ratio,
            dev(of_total),
            dev(of_dirtyable)
        ),
        verdict: if total_closer { Verdict::Holds } else { Verdict::Differs },
        why: "the kernel applies the ratio to dirtyable memory: free pages above the reserves plus file pages; anonymous memory does not count".into(),
    }
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
    let root = live_tests && process::is_root();
    e.rules = vec![
        rule_a(root)?,
        rule_b(root)?,
        rule_c(root)?,
        rule_d(root, scratch)?,
        rule_e(&e),
    ];
    Ok(e)
}

/// Bytes of `pages` with the page size of the explanation.
pub fn bytes(e: &Explanation, pages: u64) -> String {
    human_bytes(pages * e.inputs.page_bytes)
}
