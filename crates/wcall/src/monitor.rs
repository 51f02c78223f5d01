//! The paper's monitoring module without a kernel patch: the kernel's own record
//! of who dirties which file (writeback_dirty_folio, traced with eBPF by
//! crates/trace). It sees what the interposer cannot: stores through shared
//! mappings, glibc's stdio, statically linked programs. Root with BTF only;
//! elsewhere the coordinator monitors the files the interposer registered
//! (cachestat) and says so.

use oslab_trace::records::{DirtiedFile, Dirtier, Event};
use oslab_trace::{Tracer, Watch, WritebackOptions};

pub struct KernelMonitor {
    tracer: Tracer,
    /// A read of the per-process counts asked for and not collected yet.
    asked: Option<std::sync::mpsc::Receiver<oslab_trace::Snapshot>>,
}

impl KernelMonitor {
    /// Starts tracing; the reason when it cannot.
    pub fn start() -> Result<KernelMonitor, String> {
        let opts = WritebackOptions {
            // only who dirties what: no program on anyone's system calls
            watch: Watch::Pids(Vec::new()),
            per_file: true,
            dirtiers_only: true,
            ..WritebackOptions::default()
        };
        Tracer::writeback(&opts)
            .map(|tracer| KernelMonitor {
                tracer,
                asked: None,
            })
            .map_err(|e| e.to_string())
    }

    /// The (process, file) pairs dirtied for the first time since the last call.
    pub fn new_files(&self) -> Vec<DirtiedFile> {
        self.tracer
            .drain()
            .into_iter()
            .filter_map(|e| match e {
                Event::File(f) => Some(f),
                _ => None,
            })
            .collect()
    }

    /// Pages dirtied per process so far, and records lost, once a read asked for
    /// earlier is done; asks for the next. Never waits: reading the kernel's map
    /// is the tracer thread's work, and a pass must not wait for it.
    pub fn dirtiers(&mut self) -> Option<(Vec<Dirtier>, u64)> {
        let done = match &self.asked {
            Some(rx) => match rx.try_recv() {
                Ok(s) => Some((s.dirtiers, s.lost)),
                Err(std::sync::mpsc::TryRecvError::Empty) => return None,
                Err(std::sync::mpsc::TryRecvError::Disconnected) => None,
            },
            None => None,
        };
        self.asked = Some(self.tracer.snapshot_later());
        done
    }
}
