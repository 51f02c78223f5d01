//! The kernel's own account: eBPF programs on the write-back and scheduler
//! tracepoints, loaded with libbpf-rs (CO-RE, so one build runs on many kernels),
//! and what they recorded as plain records.
//!
//! Two tracers, each a thread that owns its loaded programs and drains their ring
//! buffer continuously (so a busy caller loses nothing):
//! - [`Tracer::writeback`]: write stalls split by cause, balance_dirty_pages
//!   decisions, the device's bandwidth estimates, flusher passes, the global
//!   limits, and pages dirtied per process;
//! - [`Tracer::sched`]: switches and wake-ups of watched processes, and per
//!   thread the switch counts getrusage() gives.
//!
//! Tracing needs root (CAP_BPF and CAP_PERFMON), a kernel with BTF
//! (/sys/kernel/btf/vmlinux) and a build with clang; [`available`] says which
//! is missing, and every caller carries on without it.

#![deny(unsafe_code)]

pub mod analysis;
pub mod attach;
pub mod chrome;
pub mod decode;
pub mod folded;
#[cfg(oslab_bpf)]
mod hooks;
#[cfg(oslab_bpf)]
mod live;
pub mod records;
pub mod session;
pub mod stalls;
pub mod timeline;

use std::sync::mpsc::{Receiver, Sender};
use std::thread::JoinHandle;
use std::time::Duration;

use records::{Dirtier, Event, OffCpu, SwitchCounts};

pub use analysis::{Captured, TraceOutcome};
pub use attach::{Attached, CallHooks, CallSet, RunQueue};

#[derive(Debug, thiserror::Error)]
pub enum TraceError {
    #[error("kernel tracing is not available: {0}")]
    Unavailable(String),
    #[error("kernel tracing failed: {0}")]
    Failed(String),
}

/// Whether this process can trace the kernel here; the reason when not.
pub fn available() -> Result<(), String> {
    if !cfg!(oslab_bpf) {
        return Err(
            "this oslab was built without kernel tracing (clang was missing at build time)"
                .to_string(),
        );
    }
    if !oslab_sys::process::is_root() {
        return Err("needs root (CAP_BPF and CAP_PERFMON)".to_string());
    }
    if !std::path::Path::new("/sys/kernel/btf/vmlinux").exists() {
        return Err(
            "the kernel has no BTF (/sys/kernel/btf/vmlinux is missing: CONFIG_DEBUG_INFO_BTF)"
                .to_string(),
        );
    }
    Ok(())
}

/// Which processes a tracer follows. Children forked later are followed too.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Watch {
    All,
    Pids(Vec<u32>),
}

#[derive(Debug, Clone)]
pub struct WritebackOptions {
    pub watch: Watch,
    /// Report every watched call, not only those over the threshold.
    pub all_writes: bool,
    pub write_threshold: Duration,
    /// Keep the kernel stack of blocked stretches at least this long.
    pub stack_threshold: Duration,
    /// Report each (process, file) pair the first time the process dirties the
    /// file ([`records::DirtiedFile`]).
    pub per_file: bool,
    /// Watch reads and page faults on files' mappings too, and only calls on
    /// regular files and block devices (`oslab stalls`).
    pub file_calls: bool,
    /// Trace only who dirties what (the governor's monitor): no system call,
    /// fault, sleep or throttling decision is followed. The other programs run
    /// on every system call and context switch of the machine, watched or not,
    /// so leaving them out is what keeps the monitor off every other program's
    /// path.
    pub dirtiers_only: bool,
    /// Where a call is seen to begin and end.
    pub hooks: CallHooks,
    /// Where a blocked stretch's wait for a CPU after its wake-up comes from.
    pub run_queue: RunQueue,
}

impl Default for WritebackOptions {
    fn default() -> Self {
        WritebackOptions {
            watch: Watch::All,
            all_writes: false,
            write_threshold: Duration::from_millis(10),
            stack_threshold: Duration::from_millis(1),
            per_file: false,
            file_calls: false,
            dirtiers_only: false,
            hooks: CallHooks::Syscalls,
            run_queue: RunQueue::Auto,
        }
    }
}

#[derive(Debug, Clone)]
pub struct SchedOptions {
    pub pids: Vec<u32>,
    /// Record every switch and wake-up, not only the counts.
    pub with_events: bool,
}

/// What the kernel-side maps hold at one moment.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Snapshot {
    pub dirtiers: Vec<Dirtier>,
    pub counts: Vec<SwitchCounts>,
    /// Records the ring buffer had no room for (must be 0).
    pub lost: u64,
    /// Records this code could not read.
    pub undecoded: u64,
    /// Each loaded program's runs (the write-back tracer's).
    pub programs: Vec<ProgramRuns>,
}

/// How often one loaded program ran and for how long, as the kernel counts
/// them: only while kernel.bpf_stats_enabled is 1.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ProgramRuns {
    pub name: String,
    pub runs: u64,
    pub run_ns: u64,
}

pub(crate) enum Cmd {
    Watch(u32, Sender<Result<(), String>>),
    Snapshot(Sender<Snapshot>),
    Stop(Sender<Snapshot>),
}

/// A running tracer: its programs stay attached until it is stopped or dropped.
pub struct Tracer {
    cmds: Sender<Cmd>,
    events: Receiver<Event>,
    thread: Option<JoinHandle<()>>,
    symbols: Option<oslab_sys::parse::kallsyms::Kallsyms>,
    /// What could not be traced on this kernel, one sentence each.
    pub limits: Vec<String>,
    /// Which programs the write-back tracer attached for calls (None for the
    /// scheduler's tracer and the governor's monitor).
    pub attached: Option<Attached>,
}

impl Tracer {
    /// Loads and attaches the write-back programs.
    pub fn writeback(opts: &WritebackOptions) -> Result<Tracer, TraceError> {
        available().map_err(TraceError::Unavailable)?;
        #[cfg(oslab_bpf)]
        return live::start_writeback(opts.clone());
        #[cfg(not(oslab_bpf))]
        {
            let _ = opts;
            unreachable!("available() is false without the programs")
        }
    }

    /// Loads and attaches the scheduler programs.
    pub fn sched(opts: &SchedOptions) -> Result<Tracer, TraceError> {
        available().map_err(TraceError::Unavailable)?;
        #[cfg(oslab_bpf)]
        return live::start_sched(opts.clone());
        #[cfg(not(oslab_bpf))]
        {
            let _ = opts;
            unreachable!("available() is false without the programs")
        }
    }

    #[cfg_attr(not(oslab_bpf), allow(dead_code))]
    pub(crate) fn from_parts(
        cmds: Sender<Cmd>,
        events: Receiver<Event>,
        thread: JoinHandle<()>,
        loaded: attach::Loaded,
    ) -> Tracer {
        Tracer {
            cmds,
            events,
            thread: Some(thread),
            symbols: None,
            limits: loaded.limits,
            attached: loaded.attached,
        }
    }

    /// Follows one more process (and the children it forks from now on).
    pub fn watch(&self, tgid: u32) -> Result<(), TraceError> {
        let (tx, rx) = std::sync::mpsc::channel();
        self.cmds
            .send(Cmd::Watch(tgid, tx))
            .map_err(|_| TraceError::Failed("the tracer stopped".into()))?;
        rx.recv()
            .map_err(|_| TraceError::Failed("the tracer stopped".into()))?
            .map_err(TraceError::Failed)
    }

    /// Every record received so far, without waiting.
    pub fn drain(&self) -> Vec<Event> {
        self.events.try_iter().collect()
    }

    /// The next record, waiting at most `timeout`.
    pub fn next(&self, timeout: Duration) -> Option<Event> {
        self.events.recv_timeout(timeout).ok()
    }

    /// The kernel-side counters now.
    pub fn snapshot(&self) -> Snapshot {
        let (tx, rx) = std::sync::mpsc::channel();
        if self.cmds.send(Cmd::Snapshot(tx)).is_err() {
            return Snapshot::default();
        }
        rx.recv().unwrap_or_default()
    }

    /// The kernel-side counters, delivered on the returned channel once the
    /// tracer's thread has read them (for a caller that must not wait).
    pub fn snapshot_later(&self) -> std::sync::mpsc::Receiver<Snapshot> {
        let (tx, rx) = std::sync::mpsc::channel();
        let _ = self.cmds.send(Cmd::Snapshot(tx));
        rx
    }

    /// Detaches the programs; the records not yet drained and the final counters.
    pub fn stop(mut self) -> (Vec<Event>, Snapshot) {
        let snap = self.shut_down();
        (self.events.try_iter().collect(), snap)
    }

    fn shut_down(&mut self) -> Snapshot {
        let (tx, rx) = std::sync::mpsc::channel();
        let snap = if self.cmds.send(Cmd::Stop(tx)).is_ok() {
            rx.recv().unwrap_or_default()
        } else {
            Snapshot::default()
        };
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
        snap
    }

    /// Moves the records received so far into `into` (naming stack frames).
    pub fn collect(&mut self, into: &mut Captured) {
        for ev in self.drain() {
            self.absorb(ev, into);
        }
    }

    /// Stops the tracer and returns everything it recorded.
    pub fn finish(mut self, hz: u32) -> Captured {
        let mut c = Captured {
            hz,
            page_size: oslab_sys::machine::page_size(),
            ..Captured::default()
        };
        self.collect(&mut c);
        let snap = self.shut_down();
        self.collect(&mut c);
        c.dirtiers = snap.dirtiers;
        c.counts = snap.counts;
        c.lost = snap.lost;
        c.undecoded = snap.undecoded;
        c
    }

    fn absorb(&mut self, ev: Event, into: &mut Captured) {
        match ev {
            Event::Write(w) => into.writes.push(w),
            Event::Pause(p) => into.pauses.push(p),
            Event::Bandwidth(b) => into.bandwidth.push(b),
            Event::Flush(f) => into.flushes.push(f),
            Event::OffCpu(o) => {
                let named = self.symbolize(&o);
                into.offcpu.push(named);
            }
            Event::Limits(l) => into.limits.push(l),
            Event::Switch(s) => into.switches.push(s),
            Event::Wakeup(w) => into.wakeups.push(w),
            Event::File(f) => into.files.push(f),
        }
    }

    /// Names an off-CPU record's frames from /proc/kallsyms (read once).
    pub fn symbolize(&mut self, raw: &records::OffCpuRaw) -> OffCpu {
        let symbols = self.symbols.get_or_insert_with(|| {
            let text = std::fs::read_to_string("/proc/kallsyms").unwrap_or_default();
            oslab_sys::parse::kallsyms::Kallsyms::parse(&text)
        });
        OffCpu {
            pid: raw.pid,
            tgid: raw.tgid,
            call: decode::syscall_name(raw.sysno).to_string(),
            start_ns: raw.start_ns,
            dur_ns: raw.dur_ns,
            stack: raw
                .frames
                .iter()
                .map(|&a| {
                    symbols
                        .function(a)
                        .map_or_else(|| format!("{a:#x}"), String::from)
                })
                .skip_while(|f| is_tracing_frame(f))
                .collect(),
        }
    }
}

/// The program's own frames at the top of a stack it took.
fn is_tracing_frame(name: &str) -> bool {
    name.starts_with("bpf_prog_")
        || name.starts_with("bpf_trace_run")
        || name.starts_with("__bpf_trace")
}

impl Drop for Tracer {
    fn drop(&mut self) {
        if self.thread.is_some() {
            self.shut_down();
        }
    }
}
