//! The records of an `oslab stalls` interval as trace events for ui.perfetto.dev:
//! each slow call as a slice with its causes in the arguments, dirty-throttle
//! pauses and blocked stretches as slices on the same thread, flusher passes, and
//! counters for Dirty against the limits and for the device's bandwidth estimate.

use oslab_model::trace::{Bandwidth, Cause, StallLine};

use crate::analysis::{blocker, jiffies_ns};
use crate::chrome::{self, TraceEvent};
use crate::records::{FlushPass, OffCpu, Pause};
use crate::session::Tick;
use std::collections::HashSet;

/// The kernel's own tracks: flusher passes and bandwidth estimates live under
/// this made-up process, the rest under the real pids and tids.
pub const KERNEL_TRACK_PID: u32 = 0;

const MIB: f64 = 1024.0 * 1024.0;

/// Trace events for an interval's records, in the order: stalls, pauses, blocked
/// stretches, flusher passes, bandwidth estimates.
pub fn trace_events(
    stalls: &[StallLine],
    pauses: &[Pause],
    offcpu: &[OffCpu],
    flushes: &[FlushPass],
    bandwidth: &[Bandwidth],
    hz: u32,
    page_size: u64,
) -> Vec<TraceEvent> {
    let to_mib = |p: u64| (p * page_size) as f64 / MIB;
    let mut ev: Vec<TraceEvent> = stalls.iter().map(stall_slice).collect();
    for p in pauses {
        ev.extend(pause_events(p, hz, &to_mib));
    }
    ev.extend(offcpu.iter().map(blocked_slice));
    ev.extend(flushes.iter().map(|f| flush_slice(f, &to_mib)));
    ev.extend(bandwidth.iter().map(|b| bandwidth_counter(b, &to_mib)));
    ev
}

fn stall_slice(s: &StallLine) -> TraceEvent {
    chrome::slice(&s.call, "stall", s.tgid, s.pid, s.start_ns, s.dur_ns)
        .arg("fd", s.fd)
        .arg("file", s.file.as_str())
        .arg("cgroup", s.cgroup.as_str())
        .arg("bytes", s.bytes)
        .arg("main_cause", Cause::label(s.main_cause))
        .arg("throttle_ms", s.throttle_ns as f64 / 1e6)
        .arg("writeback_wait_ms", s.wbwait_ns as f64 / 1e6)
        .arg("blocked_ms", s.blocked_ns as f64 / 1e6)
        .arg("run_queue_ms", s.runq_ns as f64 / 1e6)
        .arg("on_cpu_ms", s.on_cpu_ns as f64 / 1e6)
        .arg("queued_write_bytes", s.queued_write_bytes)
        .arg("writers_there", s.writers_there.join(", "))
        .arg("read_wait", s.read_wait.clone().unwrap_or_default())
}

/// A pause as a slice on its thread (when it slept), and the dirty counter.
fn pause_events(p: &Pause, hz: u32, to_mib: &dyn Fn(u64) -> f64) -> Vec<TraceEvent> {
    let mut ev = Vec::with_capacity(2);
    if p.pause_jiffies > 0 {
        let dur = jiffies_ns(p.pause_jiffies, hz).max(0) as u64;
        ev.push(
            chrome::slice(
                "dirty throttle pause",
                "throttle",
                p.tgid,
                p.pid,
                p.ts_ns,
                dur,
            )
            .arg("dirty_mib", to_mib(p.dirty))
            .arg("setpoint_mib", to_mib(p.setpoint()))
            .arg("limit_mib", to_mib(p.thresh))
            .arg("task_ratelimit_mib_s", to_mib(p.task_ratelimit))
            .arg("pause_jiffies", p.pause_jiffies),
        );
    }
    ev.push(chrome::counter(
        "dirty + writeback (MiB)",
        KERNEL_TRACK_PID,
        p.ts_ns,
        &[
            ("dirty", to_mib(p.dirty)),
            ("setpoint", to_mib(p.setpoint())),
            ("limit", to_mib(p.thresh)),
        ],
    ));
    ev
}

fn blocked_slice(o: &OffCpu) -> TraceEvent {
    let place = blocker(&o.stack);
    chrome::slice(
        &format!("blocked: {place}"),
        "blocked",
        o.tgid,
        o.pid,
        o.start_ns,
        o.dur_ns,
    )
    .arg("stack", o.stack.join(" <- "))
}

fn flush_slice(f: &FlushPass, to_mib: &dyn Fn(u64) -> f64) -> TraceEvent {
    chrome::slice(
        &format!("flush {}", f.reason.name()),
        "flusher",
        KERNEL_TRACK_PID,
        f.bdi_id as u32 + 1,
        f.start_ns,
        f.end_ns.saturating_sub(f.start_ns),
    )
    .arg("device", f.bdi.as_str())
    .arg("mib", to_mib(f.pages))
}

fn bandwidth_counter(b: &Bandwidth, to_mib: &dyn Fn(u64) -> f64) -> TraceEvent {
    chrome::counter(
        &format!("bandwidth {} (MiB/s)", b.bdi),
        KERNEL_TRACK_PID,
        b.ts_ns,
        &[
            ("write", to_mib(b.write_bw)),
            ("avg_write", to_mib(b.avg_write_bw)),
            ("dirty_rate", to_mib(b.dirty_rate)),
            ("dirty_ratelimit", to_mib(b.dirty_ratelimit)),
        ],
    )
}

/// A Chrome/Perfetto trace written as it comes, one chunk per interval: each
/// process and thread named once, the kernel's write-back on a track of its own.
#[derive(Default)]
pub struct TraceStream {
    writer: chrome::Writer,
    named: HashSet<(u32, u32)>,
    /// Events written so far.
    pub events: usize,
}

impl TraceStream {
    /// The text of one interval's events.
    pub fn interval(&mut self, tick: &Tick) -> String {
        let mut events = Vec::new();
        for l in &tick.lines {
            if self.named.insert((l.tgid, l.pid)) {
                events.push(chrome::name(l.tgid, l.pid, false, &l.comm));
                let thread = tick.thread_names.get(&l.pid).unwrap_or(&l.comm);
                events.push(chrome::name(l.tgid, l.pid, true, thread));
            }
        }
        if self.named.insert((KERNEL_TRACK_PID, 0)) {
            events.push(chrome::name(
                KERNEL_TRACK_PID,
                0,
                false,
                "kernel: write back",
            ));
        }
        let c = &tick.captured;
        events.extend(trace_events(
            &tick.lines,
            &c.pauses,
            &c.offcpu,
            &c.flushes,
            &c.bandwidth,
            tick.hz,
            tick.page_size,
        ));
        self.events += events.len();
        self.writer.chunk(&events)
    }

    /// The text that closes the trace.
    pub fn end(&mut self) -> String {
        self.writer.end()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use oslab_model::trace::{Cause, FlushReason, IntervalSummary};

    #[test]
    fn blocked_stretches_stay_on_their_thread_and_the_flusher_on_the_kernel_track() {
        let offcpu = OffCpu {
            pid: 11,
            tgid: 10,
            call: "write".into(),
            start_ns: 5_000,
            dur_ns: 2_000,
            stack: vec!["folio_wait_bit".into(), "ext4_write_begin".into()],
        };
        let flush = FlushPass {
            start_ns: 1_000,
            end_ns: 4_000,
            bdi_id: 2,
            bdi: "7:0".into(),
            reason: FlushReason::Background,
            pages: 256,
            avg_write_bw: 0,
            write_bw: 0,
            dirty_ratelimit: 0,
        };
        let ev = trace_events(&[], &[], &[offcpu], &[flush], &[], 250, 4096);
        assert_eq!(ev.len(), 2);
        assert_eq!(
            (ev[0].pid, ev[0].tid, ev[0].cat.as_str()),
            (10, 11, "blocked")
        );
        assert_eq!(ev[0].args["stack"], "folio_wait_bit <- ext4_write_begin");
        assert_eq!(ev[1].name, "flush background");
        assert_eq!((ev[1].pid, ev[1].tid), (KERNEL_TRACK_PID, 3));
        assert_eq!((ev[1].ts, ev[1].dur), (1.0, Some(3.0)));
        assert_eq!(ev[1].args["mib"], 1.0);
    }

    fn line(pid: u32) -> StallLine {
        StallLine {
            tgid: 7,
            pid,
            comm: "writer".into(),
            cgroup: "/".into(),
            call: "write".into(),
            fd: 3,
            file: "/f".into(),
            bytes: 4096,
            start_ns: 1_000,
            dur_ns: 50_000_000,
            main_cause: Cause::DirtyThrottle,
            throttle_ns: 50_000_000,
            wbwait_ns: 0,
            blocked_ns: 0,
            runq_ns: 0,
            on_cpu_ns: 0,
            pauses: 1,
            blocked_in: Vec::new(),
            queued_write_bytes: 0,
            queued_read_bytes: 0,
            writers_there: Vec::new(),
            read_wait: None,
        }
    }

    fn tick(lines: Vec<StallLine>) -> Tick {
        Tick {
            stacks: Vec::new(),
            summary: IntervalSummary::default(),
            thread_names: lines
                .iter()
                .map(|l| (l.pid, format!("t{}", l.pid)))
                .collect(),
            lines,
            captured: Default::default(),
            hz: 250,
            page_size: 4096,
        }
    }

    #[test]
    fn a_trace_names_each_thread_and_the_kernel_track_once() {
        let mut stream = TraceStream::default();
        let first = stream.interval(&tick(vec![line(8)]));
        assert_eq!(first.matches("\"process_name\"").count(), 2, "{first}");
        assert!(first.contains("\"t8\""), "{first}");
        let second = stream.interval(&tick(vec![line(8), line(9)]));
        assert_eq!(second.matches("\"thread_name\"").count(), 1, "{second}");
        assert_eq!(second.matches("\"process_name\"").count(), 1, "{second}");
        assert_eq!(stream.events, (3 + 1) + (2 + 2));
        let whole = format!("{first}{second}{}", stream.end());
        let events: serde_json::Value = serde_json::from_str(&whole).unwrap();
        assert_eq!(events.as_array().map(Vec::len), Some(stream.events));
    }
}
