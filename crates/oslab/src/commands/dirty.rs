//! `oslab dirty explain` and `oslab dirty advise` (the text: `oslab_report::dirty`).

use clap::{Args, Subcommand};
use std::path::PathBuf;

use oslab_report::dirty::{Advised, Explained};
use oslab_services::dirty_explain::explain;

use crate::failure::CmdResult;
use crate::failure::Failure;
use crate::output::print;
use crate::scratch::scratch_base;
use oslab_arg_values::{rate, seconds};

#[derive(Debug, Subcommand)]
pub enum DirtyCommand {
    /// The background and hard dirty limits as the running kernel computes them,
    /// checked against the kernel's own figures, and the dirty-page rules of Kang Jin-woo's
    /// Linux kernel book (ch. 10) tested
    Explain(ExplainArgs),
    /// Recommend vm.dirty_* settings from the device's bandwidth and the workload's
    /// dirtying rate, with the reasoning and the predicted Dirty curve
    Advise(AdviseArgs),
}

#[derive(Debug, Args)]
pub struct AdviseArgs {
    /// The device's sustained write bandwidth, e.g. 50MiB/s (default: measured by
    /// writing 256 MiB and syncing it in the scratch directory)
    #[arg(
        long,
        value_name = "RATE",
        conflicts_with = "testbed",
        allow_hyphen_values = true,
        value_parser = device_rate
    )]
    pub device_bandwidth: Option<f64>,
    /// Advise for the testbed that is up ('oslab testbed up')
    #[arg(long)]
    pub testbed: bool,
    /// The workload's dirtying rate, e.g. 4MiB/s (default: measured from
    /// /proc/vmstat nr_dirtied over --window seconds)
    #[arg(long, value_name = "RATE", allow_hyphen_values = true, value_parser = rate)]
    pub rate: Option<f64>,
    /// How long to watch the running system for its dirtying rate, e.g. 10s
    #[arg(long, value_name = "DURATION", default_value = "5s", allow_negative_numbers = true, value_parser = seconds(0.5, 600.0))]
    pub window: f64,
    /// The longest a writer should be held back at the hard limit, e.g. 500ms
    #[arg(long, value_name = "DURATION", default_value = "1s", allow_negative_numbers = true, value_parser = seconds(0.05, 60.0))]
    pub target_latency: f64,
    /// Apply the settings (root; journaled: 'oslab restore' puts the old ones back)
    #[arg(long)]
    pub apply: bool,
    #[command(flatten)]
    pub json: crate::args::JsonArg,
    /// Where to measure the device [default: $TMPDIR]
    #[arg(long, value_name = "DIR")]
    pub scratch: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct ExplainArgs {
    #[command(flatten)]
    pub json: crate::args::JsonArg,
    /// Do not test the rules live (as root they are tested by changing sysctls
    /// through the journal for a few seconds)
    #[arg(long)]
    pub no_live: bool,
    /// Where rule d writes its 1 MiB test file [default: $TMPDIR]
    #[arg(long, value_name = "DIR")]
    pub scratch: Option<PathBuf>,
}

pub fn run(c: DirtyCommand) -> CmdResult {
    match c {
        DirtyCommand::Explain(a) => run_explain(a),
        DirtyCommand::Advise(a) => run_advise(a),
    }
}

fn run_explain(a: ExplainArgs) -> CmdResult {
    a.json.check()?;
    let scratch = scratch_base(a.scratch.as_deref())?;
    let e = explain(!a.no_live, &scratch).map_err(|e| Failure::runtime(e.to_string()))?;
    if !a.json.write(&e)? {
        print(&oslab_report::dirty::explain(&Explained {
            inputs: &e.inputs,
            total_memory_bytes: e.total_memory_bytes,
            limits: &e.limits,
            kernel_thresh: e.kernel_thresh,
            kernel_bg_thresh: e.kernel_bg_thresh,
            writeback_centisecs: e.flusher.writeback_centisecs,
            expire_centisecs: e.flusher.expire_centisecs,
            rules: &e.rules,
        }));
    }
    Ok(0)
}

/// `--device-bandwidth`: a rate no lower than the advice is for.
fn device_rate(text: &str) -> Result<f64, String> {
    use oslab_services::dirty_advice::MIN_DEVICE_BYTES_S;
    let bw = rate(text)?;
    if bw < MIN_DEVICE_BYTES_S {
        return Err("below the least this advice is for: give 1MiB/s or more, e.g. 50MiB/s".into());
    }
    Ok(bw)
}

/// Writes 256 MiB into `dir` and syncs it: the sustained write-back bandwidth.
fn measure_device(dir: &std::path::Path) -> Result<f64, Failure> {
    use std::io::Write;
    let bytes: u64 = 256 << 20;
    // journaled, so a kill leaves nothing behind that `oslab restore` misses
    let scratch = oslab_harness::scratch::Scratch::create(dir, "dirty-advise", bytes + (16 << 20))
        .map_err(|e| Failure::runtime(e.to_string()))?;
    let path = scratch.file("device-probe.dat");
    let chunk = vec![0x5au8; 1 << 20];
    let t0 = oslab_sys::clock::monotonic_ns();
    let r = (|| -> std::io::Result<()> {
        let mut f = std::fs::File::create(&path)?;
        for _ in 0..(bytes >> 20) {
            f.write_all(&chunk)?;
        }
        f.sync_all()
    })();
    let secs = (oslab_sys::clock::monotonic_ns() - t0) as f64 / 1e9;
    drop(scratch);
    r.map_err(|e| Failure::runtime(format!("measuring the device in {}: {e}", dir.display())))?;
    Ok(bytes as f64 / secs)
}

fn nr_dirtied() -> Option<u64> {
    oslab_sys::parse::vmstat::read_value(&oslab_sys::fsread::Root::live(), "nr_dirtied")
}

/// The device's write bandwidth for `dirty advise`: given, measured on the
/// testbed, or measured in the scratch folder; and where it came from.
fn device_bandwidth(a: &AdviseArgs) -> Result<(f64, String), Failure> {
    Ok(if let Some(bw) = a.device_bandwidth {
        (bw, "given".to_string())
    } else if a.testbed {
        let tb = crate::testbed_state::current().ok_or_else(|| {
            Failure::usage(
                "no testbed is up: start one with 'oslab testbed up --bandwidth 10MiB/s'",
            )
        })?;
        (
            oslab_services::testbed::measure_bandwidth(&tb)
                .map_err(|e| Failure::runtime(e.to_string()))?,
            format!("measured on the testbed {}", tb.device.display()),
        )
    } else {
        let dir = scratch_base(a.scratch.as_deref())?;
        eprintln!(
            "oslab: measuring the device under {} (256 MiB written and synced)",
            dir.display()
        );
        (
            measure_device(&dir)?,
            format!(
                "measured in {}: one 256 MiB burst written and synced, which a cache in front of the disk (a VM's host, a RAID controller) can absorb; give --device-bandwidth for the sustained figure",
                dir.display()
            ),
        )
    })
}

/// The workload's dirtying rate: given, or watched over `--window`; and where it
/// came from.
fn dirtying_rate(a: &AdviseArgs) -> Result<(f64, String), Failure> {
    Ok(if let Some(r) = a.rate {
        (r, "given".to_string())
    } else {
        eprintln!("oslab: watching the dirtying rate for {} s", a.window);
        let before =
            nr_dirtied().ok_or_else(|| Failure::runtime("no nr_dirtied in /proc/vmstat"))?;
        std::thread::sleep(std::time::Duration::from_secs_f64(a.window));
        let after = nr_dirtied().unwrap_or(before);
        (
            (after.saturating_sub(before) * oslab_sys::machine::page_size()) as f64 / a.window,
            format!("measured over {} s (nr_dirtied)", a.window),
        )
    })
}

/// `--apply`: the advised sysctls set through a journal that `oslab restore` undoes.
fn apply(sysctl_lines: &[(String, String)]) -> Result<(), Failure> {
    if !oslab_sys::process::is_root() {
        return Err(Failure {
            code: crate::failure::EXIT_PRIVILEGE,
            message: "--apply needs root; nothing was changed".into(),
        });
    }
    let dir = oslab_sys::journal::named_dir("advise");
    if oslab_sys::journal::Journal::load(&dir, "advise")
        .ok()
        .flatten()
        .is_some()
    {
        return Err(Failure::usage(
            "advice applied earlier is still in force; 'oslab restore' puts the old settings back first",
        ));
    }
    let mut j = oslab_sys::journal::Journal::named(&dir, "advise");
    for (k, v) in sysctl_lines {
        oslab_sys::sysctl::set(&mut j, k, v).map_err(|e| Failure::runtime(format!("{k}: {e}")))?;
    }
    // applied on purpose: not an interrupted run's changes
    j.mark_complete()
        .map_err(|e| Failure::runtime(e.to_string()))?;
    print("applied; 'oslab restore' puts the previous settings back\n");
    Ok(())
}

fn run_advise(a: AdviseArgs) -> CmdResult {
    use oslab_services::dirty_advice::{AdviceInputs, advise};
    a.json.check()?;
    if !(a.target_latency.is_finite() && (0.05..=60.0).contains(&a.target_latency)) {
        return Err(Failure::usage(format!(
            "--target-latency {} is out of range: give 0.05 to 60 seconds",
            a.target_latency
        )));
    }
    if !(a.window.is_finite() && (0.5..=600.0).contains(&a.window)) {
        return Err(Failure::usage("--window must be 0.5 to 600 seconds"));
    }
    let (device_bw, device_src) = device_bandwidth(&a)?;
    let (rate, rate_src) = dirtying_rate(&a)?;
    let advice = advise(AdviceInputs {
        device_bytes_s: device_bw,
        dirty_rate_bytes_s: rate,
        target_latency_s: a.target_latency,
    });
    if !a.json.write(&advice)? {
        print(&oslab_report::dirty::advice(&Advised {
            device_bytes_s: device_bw,
            device_source: &device_src,
            dirty_rate_bytes_s: rate,
            rate_source: &rate_src,
            target_latency_s: a.target_latency,
            reasons: &advice.reasons,
            prediction: &advice.prediction,
            warnings: &advice.warnings,
            sysctl_lines: &advice.sysctl_lines(),
        }));
    }
    if a.apply {
        apply(&advice.sysctl_lines())?;
    }
    Ok(0)
}
