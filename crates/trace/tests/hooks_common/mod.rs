//! What tests/call_hooks.rs needs: the file-call program (the oslab tests'
//! fixture), the kernel's count of program runs (kernel.bpf_stats_enabled,
//! journaled), matching two tracers' records call by call, and booting a
//! Debian kernel of the kernel matrix to run this test binary in.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use oslab_sys::journal::Journal;
use oslab_trace::decode::user_dev;
use oslab_trace::records::WriteCall;
use oslab_trace::{CallHooks, ProgramRuns, RunQueue, Tracer, Watch, WritebackOptions};

/// The options of `oslab stalls` (file calls, every one recorded) with the
/// given sets.
pub fn stalls_options(watch: Watch, hooks: CallHooks, run_queue: RunQueue) -> WritebackOptions {
    WritebackOptions {
        watch,
        all_writes: true,
        stack_threshold: Duration::from_millis(1),
        file_calls: true,
        hooks,
        run_queue,
        ..WritebackOptions::default()
    }
}

/// The program making each file call (write, pwrite, writev, fsync,
/// fdatasync, sync_file_range, stores through a mapping, msync, a cold read):
/// the oslab tests' fixture, built here or taken from OSLAB_CALL_HOOKS_FIXTURE
/// (the guest gets the host's build).
pub fn file_calls_program(scratch: &Path) -> PathBuf {
    if let Some(p) = std::env::var_os("OSLAB_CALL_HOOKS_FIXTURE") {
        return PathBuf::from(p);
    }
    let out = scratch.join("file_calls");
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("../oslab/tests/fixtures/file_calls.c");
    let built = Command::new("cc")
        .args(["-O2", "-o"])
        .arg(&out)
        .arg(&src)
        .status()
        .is_ok_and(|s| s.success());
    assert!(built, "cc builds {}", src.display());
    out
}

/// kernel.bpf_stats_enabled set to 1 for the life of the value, journaled and
/// set back when it goes (a panic included).
pub struct BpfStats {
    journal: Journal,
}

impl BpfStats {
    pub fn enable(journal_dir: &Path) -> BpfStats {
        let mut journal = Journal::new(journal_dir);
        oslab_sys::sysctl::set(&mut journal, "kernel.bpf_stats_enabled", "1")
            .expect("kernel.bpf_stats_enabled can be set");
        BpfStats { journal }
    }
}

impl Drop for BpfStats {
    fn drop(&mut self) {
        for outcome in self.journal.undo_all() {
            if outcome.result.is_err() {
                eprintln!("restoring kernel.bpf_stats_enabled failed: {outcome:?}");
            }
        }
    }
}

/// Runs of each program of `tracer` since `before`.
pub fn runs_since(tracer: &Tracer, before: &[ProgramRuns]) -> Vec<ProgramRuns> {
    tracer
        .snapshot()
        .programs
        .into_iter()
        .map(|p| {
            let old = before.iter().find(|b| b.name == p.name);
            ProgramRuns {
                runs: p.runs - old.map_or(0, |o| o.runs),
                run_ns: p.run_ns - old.map_or(0, |o| o.run_ns),
                name: p.name,
            }
        })
        .collect()
}

/// Whether a program sees a file call begin or end (not the scheduler's,
/// the throttle's or the write-back's).
pub fn is_call_program(name: &str) -> bool {
    name.starts_with("in_") || name.starts_with("out_") || name.starts_with("on_sys_")
}

/// A call's parts: duration, dirty throttle, write-back wait, blocked
/// elsewhere, run queue, on CPU.
pub fn parts(w: &WriteCall) -> [u64; 6] {
    [
        w.dur_ns,
        w.throttle_ns,
        w.wbwait_ns,
        w.blocked_ns,
        w.runq_ns,
        w.on_cpu_ns(),
    ]
}

pub const PART_NAMES: [&str; 6] = [
    "duration",
    "dirty throttle",
    "write-back wait",
    "blocked elsewhere",
    "run queue",
    "on CPU",
];

/// The calls of process `tgid` on files of device `dev` (user-space
/// encoding) or on no file (msync), at least `min_ns` long.
pub fn calls_of(writes: &[WriteCall], tgid: u32, dev: u64, min_ns: u64) -> Vec<&WriteCall> {
    writes
        .iter()
        .filter(|w| w.tgid == tgid && w.dur_ns >= min_ns)
        .filter(|w| w.ino == 0 || user_dev(w.dev) == dev)
        .collect()
}

/// The call of `among` that is the same call as `w`: same thread and call,
/// the longest overlap in time.
pub fn same_call<'a>(w: &WriteCall, among: &[&'a WriteCall]) -> Option<&'a WriteCall> {
    let overlap = |o: &WriteCall| {
        let start = w.start_ns.max(o.start_ns);
        let end = w.end_ns().min(o.end_ns());
        end.saturating_sub(start)
    };
    among
        .iter()
        .filter(|o| o.pid == w.pid && o.call == w.call && overlap(o) > 0)
        .max_by_key(|o| overlap(o))
        .copied()
}

/// The parts of the function set's call `a` that differ from the system call
/// set's `b` beyond what the span outside the function explains: `b` may have
/// more of a part by at most `share` of its duration plus `outside` (the time
/// of the system call before the function was entered and after it returned,
/// which only `b` counts), and less by at most `share`; named, with both
/// figures in ms.
///
/// `a` takes the wait for a CPU after a sleep from the task's run_delay, `b`
/// from a program on wake-ups. run_delay leaves out the stretch between a
/// wake-up that asks for a switch (the woken task preempts the running one, or
/// wakes an idle CPU) and the switch: the scheduler skips the clock update on
/// that switch (rq_clock_skip_update in wakeup_preempt), so the switch in is
/// clocked at the wake-up. `a` charges that stretch to the sleep's cause. Under
/// an emulated CPU it lasts milliseconds (the interrupt's work before the
/// switch); on hardware microseconds. So `a`'s run queue may be short of
/// `b`'s, provided the causes of sleep (throttle, write-back wait, blocked)
/// are over `b`'s by that same time, within `share` (which cause took it is
/// not checked).
pub fn disagreements(a: &WriteCall, b: &WriteCall, outside: u64, share: f64) -> Vec<String> {
    const CAUSES: std::ops::Range<usize> = 1..4;
    const RUN_QUEUE: usize = 4;
    let limit = b.dur_ns as f64 * share;
    let (pa, pb) = (parts(a), parts(b));
    let unclocked = pb[RUN_QUEUE].saturating_sub(pa[RUN_QUEUE]) as f64;
    let moved: f64 = CAUSES.map(|i| pa[i].saturating_sub(pb[i]) as f64).sum();
    let shown = |i: usize| {
        format!(
            "{} {:.3} against {:.3} ms",
            PART_NAMES[i],
            pa[i] as f64 / 1e6,
            pb[i] as f64 / 1e6
        )
    };
    let mut off = Vec::new();
    for i in 0..pa.len() {
        let more = pb[i] as f64 - pa[i] as f64;
        let too_many = -more > limit && !CAUSES.contains(&i);
        let too_few = more > limit + outside as f64 && i != RUN_QUEUE;
        if too_many || too_few {
            off.push(shown(i));
        }
    }
    // more in the causes than the run queue is short cannot be time outside
    // the function, which only `b` counts
    if moved - unclocked > limit || unclocked - moved > limit + outside as f64 {
        off.push(format!(
            "{:.3} ms more in the causes of sleep where the run queue is {:.3} ms short ({}, {})",
            moved / 1e6,
            unclocked / 1e6,
            shown(RUN_QUEUE),
            CAUSES.map(shown).collect::<Vec<_>>().join(", ")
        ));
    }
    off
}

/// One Debian kernel of the kernel matrix, fetched and made bootable
/// (scripts/kernel-matrix/prepare): its release, or why it could not be.
pub fn prepare_kernel(cache: &Path, package: &str) -> Result<String, String> {
    let out = Command::new(scripts().join("prepare"))
        .arg(cache)
        .arg(package)
        .output()
        .map_err(|e| e.to_string())?;
    if !out.status.success() {
        return Err(String::from_utf8_lossy(&out.stderr).trim().to_string());
    }
    let line = String::from_utf8_lossy(&out.stdout).trim().to_string();
    line.split_whitespace()
        .nth(2)
        .map(str::to_string)
        .ok_or(format!("prepare printed '{line}'"))
}

pub fn scripts() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scripts/kernel-matrix")
}

/// Why the guest cannot be booted here, if it cannot.
pub fn guest_missing() -> Option<String> {
    if std::env::var("OSLAB_KERNEL_MATRIX").as_deref() == Ok("off") {
        return Some("OSLAB_KERNEL_MATRIX=off".into());
    }
    for tool in [
        "qemu-system-x86_64",
        "busybox",
        "depmod",
        "apt-get",
        "dpkg-deb",
        "cc",
    ] {
        let found = std::env::var_os("PATH").is_some_and(|p| {
            std::env::split_paths(&p).any(|d| d.join(tool).is_file())
                || Path::new("/usr/sbin").join(tool).is_file()
        });
        if !found {
            return Some(format!("{tool} is not installed"));
        }
    }
    let busybox_static = Command::new("sh")
        .args(["-c", "ldd \"$(command -v busybox)\" 2>&1"])
        .output()
        .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).contains("not a dynamic"));
    if !busybox_static {
        return Some("busybox is not the static one (Debian's busybox-static)".into());
    }
    if !cfg!(target_arch = "x86_64") {
        return Some("the kernel matrix boots x86_64 kernels".into());
    }
    None
}
