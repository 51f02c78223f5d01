//! The kernel's own account during an experiment (crates/trace): started before
//! the measurement where tracing is available, finished into a [`TraceOutcome`]
//! that the experiment keeps in its raw data; where it is not available, the
//! outcome says why and the experiment measures as before.

use std::time::Duration;

use oslab_model::machine::MachineInfo;
use oslab_trace::analysis::hz_from_pauses;
use oslab_trace::{SchedOptions, TraceOutcome, Tracer, Watch, WritebackOptions};

pub use oslab_trace::analysis::Captured;

/// A tracer running beside a measurement, or why there is none.
pub struct KernelTrace {
    tracer: Result<Tracer, String>,
    hz: Option<u32>,
}

fn known_hz(machine: &MachineInfo) -> Option<u32> {
    machine.kernel.hz.value().map(|h| h.hz)
}

impl KernelTrace {
    /// Write-back tracing of this process and the children it starts from now on,
    /// every write-like call recorded.
    pub fn writeback(machine: &MachineInfo) -> KernelTrace {
        KernelTrace::with(
            machine,
            WritebackOptions {
                watch: Watch::Pids(vec![std::process::id()]),
                all_writes: true,
                ..WritebackOptions::default()
            },
        )
    }

    /// Write-back tracing of this process and the children it starts from now on:
    /// only calls at least `threshold` long are recorded (a busy database makes
    /// thousands of short calls a second), and the kernel stack of every blocked
    /// stretch of a tenth of that or more inside any watched call.
    pub fn slow_calls(machine: &MachineInfo, threshold: Duration) -> KernelTrace {
        KernelTrace::with(
            machine,
            WritebackOptions {
                watch: Watch::Pids(vec![std::process::id()]),
                write_threshold: threshold,
                stack_threshold: threshold / 10,
                ..WritebackOptions::default()
            },
        )
    }

    fn with(machine: &MachineInfo, opts: WritebackOptions) -> KernelTrace {
        KernelTrace {
            tracer: Tracer::writeback(&opts).map_err(|e| reason(&e)),
            hz: known_hz(machine),
        }
    }

    /// Scheduler tracing of `pids` (and their later children); every switch and
    /// wake-up recorded when `with_events`, else only the counts.
    pub fn sched(machine: &MachineInfo, pids: Vec<u32>, with_events: bool) -> KernelTrace {
        let opts = SchedOptions { pids, with_events };
        KernelTrace {
            tracer: Tracer::sched(&opts).map_err(|e| reason(&e)),
            hz: known_hz(machine),
        }
    }

    /// Follows one more process.
    pub fn watch(&self, pid: u32) {
        if let Ok(t) = &self.tracer {
            let _ = t.watch(pid);
        }
    }

    /// Stops tracing; what it recorded, or why nothing was.
    pub fn finish(self) -> TraceOutcome {
        match self.tracer {
            Ok(t) => {
                let mut c = t.finish(self.hz.unwrap_or(0));
                if c.hz == 0 {
                    c.hz = hz_from_pauses(&c.pauses).unwrap_or(0);
                }
                TraceOutcome::Traced(Box::new(c))
            }
            Err(reason) => TraceOutcome::NotAvailable { reason },
        }
    }
}

fn reason(e: &oslab_trace::TraceError) -> String {
    match e {
        oslab_trace::TraceError::Unavailable(r) | oslab_trace::TraceError::Failed(r) => r.clone(),
    }
}
